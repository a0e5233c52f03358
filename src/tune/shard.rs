//! `learnbook tune` as rounds of a job array: one SPSA iteration a round.
//! Iteration `k` is a function of the seed, `k` and theta alone
//! ([`settings::draw`]), and with a node limit every game of it is a function of
//! the two sides and its opening, so N tasks can each play a share of the
//! iteration's pairs from the same checkpoint ([`play_shard`], `tune-shard
//! --shard I/N`: the pairs `p` with `p % N == I`, played by the run's
//! [`Player`] as `tune` plays a whole iteration), each writing a small part
//! file, and one step ([`step`], `tune-step`) adds the parts up and steps
//! theta through [`run::record_iteration`], the very step `tune` takes. A
//! progress match (`--match-every`) due before the iteration is shared out
//! the same way in the same round, as `tune` plays it before the iteration.
//!
//! A part names its round (the checkpoint's iteration count), its shard and
//! a fingerprint of the checkpoint it was drawn from; the step refuses a
//! missing, doubled or foreign part and then changes nothing.

use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::{
    checkpoint::{parse_framed, save_framed, State},
    external,
    player::{self, InProcess, Player},
    run, settings,
};
use crate::{
    fnv::fnv1a,
    play::{game::Opening, stats::Wdl},
    shard::{check_complete, Shard},
};

const MAGIC: &str = "learnbook-tune-part";
const VERSION: u32 = 1;

/// What a round plays, from a checkpoint's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Round {
    /// Iterations done before it: the round plays iteration `k + 1`
    /// (1-based, as the checkpoint numbers them) if `iteration`.
    pub k: u64,
    /// Whether an iteration is left to play (not after the last one).
    pub iteration: bool,
    /// The pairs of the progress match due after iteration `k`, if one is.
    pub match_pairs: Option<usize>,
}

/// The round `state` is at, or `None` when the run is over (every
/// iteration played, and the match due after the last one too).
pub fn round_of(state: &State) -> Option<Round> {
    let k = state.iteration();
    let iteration = k < state.settings.schedule.iterations;
    let match_pairs = run::match_due(state);
    (iteration || match_pairs.is_some()).then_some(Round {
        k,
        iteration,
        match_pairs,
    })
}

impl std::fmt::Display for Round {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "round {}", self.k)?;
        let mut what = Vec::new();
        if self.match_pairs.is_some() {
            what.push(format!("the progress match after iteration {}", self.k));
        }
        if self.iteration {
            what.push(format!("iteration {}", self.k + 1));
        }
        write!(f, " ({})", what.join(", then "))
    }
}

/// A checkpoint's state as 16 hex digits (FNV-1a of its serialization):
/// parts drawn from it carry it, and the step takes only those.
pub fn fingerprint(state: &State) -> Result<String> {
    let body = serde_json::to_string(state).context("cannot serialize the tuner state")?;
    Ok(format!("{:016x}", fnv1a(body.as_bytes())))
}

/// A pair a shard played: the score of the side the run measures (theta +
/// c in an iteration, the current values in a match) in its game as White,
/// then as Black.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairScore {
    /// The pair's number in the iteration (or match), from 0.
    pub pair: usize,
    pub scores: [f64; 2],
}

/// What one task of a round wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// The round: the checkpoint's iterations when it was drawn.
    pub round: u64,
    pub shard: u32,
    pub shards: u32,
    /// [`fingerprint`] of the checkpoint's state.
    pub state: String,
    /// Its pairs of the iteration (empty in a round after the last one).
    pub pairs: Vec<PairScore>,
    /// Its pairs of the progress match, if one was due.
    pub match_pairs: Vec<PairScore>,
}

/// Where shard `shard` of round `k` writes its part in `dir`.
pub fn part_path(dir: &Path, k: u64, shard: Shard) -> PathBuf {
    dir.join(format!(
        "round-{k}.shard-{}-of-{}.part",
        shard.index, shard.count
    ))
}

impl Part {
    fn save(&self, path: &Path) -> Result<()> {
        let body = serde_json::to_string(self).context("cannot serialize the part")?;
        save_framed(path, MAGIC, VERSION, &body)
    }

    /// Reads and checks a part written by [`play_shard`].
    pub fn load(path: &Path) -> Result<Part> {
        let inner = || -> Result<Part> {
            let text = fs::read_to_string(path).context("cannot read it")?;
            let body = parse_framed(&text, MAGIC, VERSION)?;
            let part: Part = serde_json::from_str(body).context("bad part")?;
            if part.shards == 0 || part.shard >= part.shards {
                bail!("shard {} of {}", part.shard, part.shards);
            }
            for p in part.pairs.iter().chain(&part.match_pairs) {
                if p.scores.iter().any(|s| ![0.0, 0.5, 1.0].contains(s)) {
                    bail!(
                        "pair {}: scores {:?} are not game results",
                        p.pair,
                        p.scores
                    );
                }
            }
            Ok(part)
        };
        inner().with_context(|| format!("part file {}", path.display()))
    }

    fn shard(&self) -> Shard {
        Shard {
            index: self.shard,
            count: self.shards,
        }
    }
}

/// The pairs of `total` a shard owns: every N-th from its index.
fn owned(shard: Shard, total: usize) -> Vec<usize> {
    (0..total).filter(|&p| shard.owns(p as u64)).collect()
}

/// Games in pair order, as [`PairScore`]s of the pairs `pairs`.
fn pair_scores(pairs: &[usize], games: &[f64]) -> Result<Vec<PairScore>> {
    if games.len() != 2 * pairs.len() {
        bail!(
            "{} games were played for {} pairs",
            games.len(),
            pairs.len()
        );
    }
    Ok(pairs
        .iter()
        .zip(games.chunks_exact(2))
        .map(|(&pair, g)| PairScore {
            pair,
            scores: [g[0], g[1]],
        })
        .collect())
}

/// How a task ended.
#[derive(Debug, PartialEq)]
pub enum ShardOutcome {
    /// Its part was written: its games.
    Played { round: Round, games: usize },
    /// Its part of this round was already there (a task run again).
    AlreadyPlayed(Round),
    /// The run is over: nothing to play.
    Finished,
    /// SIGINT during an `--engine` round: nothing written.
    Interrupted,
}

/// `tune-shard`: plays shard `shard`'s pairs of the round the checkpoint is
/// at and writes its part into `dir` (created if missing). The checkpoint
/// is only read.
pub fn play_shard(
    checkpoint: &Path,
    shard: Shard,
    dir: &Path,
    threads: usize,
) -> Result<ShardOutcome> {
    let state = State::load(checkpoint)?;
    let Some(round) = round_of(&state) else {
        return Ok(ShardOutcome::Finished);
    };
    let fp = fingerprint(&state)?;
    let path = part_path(dir, round.k, shard);
    if path.exists() {
        let old = Part::load(&path)?;
        if old.state == fp && old.round == round.k && old.shard() == shard {
            return Ok(ShardOutcome::AlreadyPlayed(round));
        }
        bail!(
            "{} is not a part of this state of {} (another run, or the same folder used twice): \
             remove it, or give each run its own --part folder",
            path.display(),
            checkpoint.display()
        );
    }
    let openings = run::reopen(&state)?;
    let s = &state.settings;
    let match_pairs = owned(shard, round.match_pairs.unwrap_or(0));
    let pairs = if round.iteration {
        owned(shard, s.pairs_per_iteration)
    } else {
        Vec::new()
    };
    let share = Share {
        round,
        pairs: &pairs,
        match_pairs: &match_pairs,
    };
    let played = match &s.engine {
        None => {
            let mut player = InProcess::new(threads, state.base(), state.net()?)?;
            share.play(&mut player, &state, &openings)?
        }
        Some(target) => {
            target.check_engine()?;
            let mut player = external::Arena::new(target, threads);
            share.play(&mut player, &state, &openings)?
        }
    };
    let Some((match_games, games)) = played else {
        return Ok(ShardOutcome::Interrupted);
    };
    let part = Part {
        round: round.k,
        shard: shard.index,
        shards: shard.count,
        state: fp,
        pairs: pair_scores(&pairs, &games)?,
        match_pairs: pair_scores(&match_pairs, &match_games)?,
    };
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    part.save(&path)?;
    Ok(ShardOutcome::Played {
        round,
        games: games.len() + match_games.len(),
    })
}

/// A shard's pairs of a round.
struct Share<'a> {
    round: Round,
    /// Its pairs of the iteration (none after the last one).
    pairs: &'a [usize],
    /// Its pairs of the progress match due, if one is.
    match_pairs: &'a [usize],
}

impl Share<'_> {
    /// The match's games, then the iteration's, the measured side's score
    /// in each, in pair order (as [`pair_scores`] takes them); `None` if
    /// SIGINT came first.
    fn play<P: Player>(
        &self,
        player: &mut P,
        state: &State,
        openings: &[Opening],
    ) -> Result<Option<(Vec<f64>, Vec<f64>)>> {
        let s = &state.settings;
        let k = self.round.k;
        let match_games = match self.round.match_pairs {
            // As `tune` draws them: the match after iteration k, from its stream.
            Some(m) => {
                let played = player::play_match(
                    player,
                    s,
                    &state.theta,
                    (k - 1, m),
                    openings,
                    Some(self.match_pairs),
                )?;
                let Some(games) = played else {
                    return Ok(None);
                };
                games
            }
            None => Vec::new(),
        };
        // After the last iteration there is none to draw.
        if self.pairs.is_empty() {
            return Ok(Some((match_games, Vec::new())));
        }
        let played =
            player::play_iteration(player, s, &state.theta, k, openings, Some(self.pairs))?;
        Ok(played.map(|(_, games)| (match_games, games)))
    }
}

/// What a step did.
#[derive(Debug, PartialEq)]
pub enum StepOutcome {
    /// The round's parts were added up and recorded: its iteration's
    /// results and its match's, if any; `next`, the round to play now.
    Stepped {
        round: Round,
        parts: usize,
        iteration: Option<Wdl>,
        progress_match: Option<Wdl>,
        next: Option<Round>,
    },
    /// The run is over: nothing to step.
    Finished,
}

/// The parts of round `k` in `dir`, by file name.
fn parts_of_round(dir: &Path, k: u64) -> Result<Vec<(String, Part)>> {
    let prefix = format!("round-{k}.");
    let entries = fs::read_dir(dir)
        .with_context(|| format!("cannot read the part folder {}", dir.display()))?;
    let mut parts = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&prefix) && name.ends_with(".part") {
            parts.push((name, Part::load(&entry.path())?));
        }
    }
    parts.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(parts)
}

/// The results of the pairs `total` of a round, each once, from every part.
fn sum_pairs<'a>(
    parts: impl Iterator<Item = (&'a str, Shard, &'a [PairScore])>,
    total: usize,
    what: &str,
) -> Result<Wdl> {
    let mut wdl = Wdl::default();
    let mut seen = 0;
    for (name, shard, pairs) in parts {
        let got: Vec<usize> = pairs.iter().map(|p| p.pair).collect();
        if got != owned(shard, total) {
            bail!(
                "{name} holds the {what} pairs {got:?}; shard {shard} of {total} pairs plays {:?}",
                owned(shard, total)
            );
        }
        for p in pairs {
            for &s in &p.scores {
                wdl.add(s);
            }
        }
        seen += pairs.len();
    }
    if seen != total {
        bail!("the parts hold {seen} of the {total} {what} pairs");
    }
    Ok(wdl)
}

/// `tune-step`: adds up the N parts of the round the checkpoint is at,
/// records the round as `tune` does (the match, then the iteration: theta
/// steps), and saves the checkpoint and `out`. A missing, doubled or
/// foreign part is refused and nothing is written.
pub fn step(checkpoint: &Path, dir: &Path, out: &Path) -> Result<StepOutcome> {
    let mut state = State::load(checkpoint)?;
    let Some(round) = round_of(&state) else {
        return Ok(StepOutcome::Finished);
    };
    let fp = fingerprint(&state)?;
    let parts = parts_of_round(dir, round.k)?;
    if parts.is_empty() {
        bail!(
            "no part of {round} of {} in {}: run `learnbook tune-shard --checkpoint {} --shard I/N \
             --part {}` for every I first",
            checkpoint.display(),
            dir.display(),
            checkpoint.display(),
            dir.display()
        );
    }
    for (name, part) in &parts {
        if part.round != round.k || part.state != fp {
            bail!(
                "{name} in {} is not a part of this state of {} (round {}, checkpoint {}; this is \
                 round {} of checkpoint {fp}): it comes from another run or was played before the \
                 checkpoint changed; remove it",
                dir.display(),
                checkpoint.display(),
                part.round,
                part.state,
                round.k
            );
        }
        let expected = part_path(Path::new(""), round.k, part.shard());
        if Path::new(name) != expected {
            bail!("{name} holds shard {} under another name", part.shard());
        }
    }
    check_complete(parts.iter().map(|(name, p)| (p.shard(), name.as_str())))
        .with_context(|| format!("the parts of {round} in {}", dir.display()))?;
    let progress_match = round
        .match_pairs
        .map(|m| {
            sum_pairs(
                parts
                    .iter()
                    .map(|(n, p)| (n.as_str(), p.shard(), p.match_pairs.as_slice())),
                m,
                "match",
            )
        })
        .transpose()?;
    let total = if round.iteration {
        state.settings.pairs_per_iteration
    } else {
        0
    };
    let wdl = sum_pairs(
        parts
            .iter()
            .map(|(n, p)| (n.as_str(), p.shard(), p.pairs.as_slice())),
        total,
        "iteration",
    )?;
    if let Some(m) = &progress_match {
        run::record_match(&mut state, m);
    }
    let iteration = round.iteration.then(|| {
        let s = &state.settings;
        let flip = settings::draw(s, &state.theta, round.k, s.openings_count).flip;
        run::record_iteration(&mut state, &flip, &wdl);
        wdl
    });
    state.save(checkpoint)?;
    run::write_weights(&state, out)?;
    Ok(StepOutcome::Stepped {
        round,
        parts: parts.len(),
        iteration,
        progress_match,
        next: round_of(&state),
    })
}

impl ShardOutcome {
    /// What `tune-shard` says about it: shard `shard`'s part in `dir` of
    /// the run in `checkpoint`, played in `seconds`.
    pub fn line(&self, shard: Shard, dir: &Path, checkpoint: &Path, seconds: f64) -> String {
        match self {
            ShardOutcome::Played { round, games } => format!(
                "{round}: shard {shard} played {games} games in {seconds:.1} s, written to {}\n",
                part_path(dir, round.k, shard).display()
            ),
            ShardOutcome::AlreadyPlayed(round) => format!(
                "{round}: {} is already shard {shard}'s part: nothing to do\n",
                part_path(dir, round.k, shard).display()
            ),
            ShardOutcome::Finished => {
                format!("{} is finished: nothing to play\n", checkpoint.display())
            }
            ShardOutcome::Interrupted => "interrupted: no part written\n".into(),
        }
    }
}

/// What `tune-step` says after a step: the round and its parts, its match,
/// its iteration, then the next round, or the run's summary and its end.
/// `state` is the checkpoint as the step left it.
pub fn step_report(outcome: &StepOutcome, state: &State, checkpoint: &Path, out: &Path) -> String {
    let total = state.settings.schedule.iterations;
    let mut text = String::new();
    if let StepOutcome::Stepped {
        round,
        parts,
        iteration,
        progress_match,
        next,
    } = outcome
    {
        text += &format!("{round}: {parts} parts\n");
        if progress_match.is_some() {
            if let Some(m) = state.matches.last() {
                text += &format!("{}\n", run::match_line(m));
            }
        }
        if let Some(wdl) = iteration {
            text += &format!(
                "iteration {} of {total}: +{} ={} -{}, theta stepped; {} and {} written\n",
                round.k + 1,
                wdl.wins,
                wdl.draws,
                wdl.losses,
                checkpoint.display(),
                out.display()
            );
        }
        if let Some(next) = next {
            text += &format!("next round: {next}\n");
            return text;
        }
        text += &run::summary(state);
    }
    text += &format!(
        "finished: {} iterations of {total}, {} games\n",
        state.iteration(),
        state.games()
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_own_every_pair_once() {
        for count in 1..5u32 {
            let mut all: Vec<usize> = (0..count)
                .flat_map(|index| owned(Shard { index, count }, 7))
                .collect();
            all.sort();
            assert_eq!(all, (0..7).collect::<Vec<_>>());
        }
    }

    #[test]
    fn pair_scores_keep_the_order_of_the_games() {
        let p = pair_scores(&[1, 3], &[1.0, 0.5, 0.0, 1.0]).unwrap();
        assert_eq!(p[1].pair, 3);
        assert_eq!(p[1].scores, [0.0, 1.0]);
        assert!(pair_scores(&[1], &[1.0]).is_err());
    }
}
