//! The tuning loop: each iteration plays its game pairs through the run's
//! [`Player`] (in-process engines in parallel, or an external engine's
//! processes), steps theta, and checkpoints. With a node limit every game
//! depends only on the two sides and the opening, so results do not depend
//! on machine load or on the number of threads.

use std::{path::Path, time::Instant};

use anyhow::{bail, Context, Result};

use super::{
    checkpoint::{Iteration, MatchPoint, State},
    external, paramfile,
    player::{self, InProcess, Player},
    settings::{
        limit_of, AdjudicationSpec, EngineTarget, LimitSpec, MatchPlan, Settings, TunedEngine,
        TunedNet,
    },
    spsa::{self, Schedule, TuneParam},
};
use crate::{
    engine::params::Weights,
    play::{game::Opening, runner::read_openings, stats::Wdl},
};

/// What `learnbook tune` was asked for, before there is a state.
pub struct Plan {
    pub start: Weights,
    pub params: Vec<TuneParam>,
    pub limit: LimitSpec,
    pub pairs_per_iteration: usize,
    pub iterations: u64,
    pub openings: std::path::PathBuf,
    pub seed: u64,
    pub adjudication: AdjudicationSpec,
    /// `--engine`: tune this engine's options (`start` is then unused).
    pub engine: Option<EngineTarget>,
    /// `--match-every`: progress matches of the current values against the start.
    pub progress_match: Option<MatchPlan>,
    /// `--net`: the net the in-process sides evaluate with.
    pub net: Option<TunedNet>,
}

/// `--start`: a weights file, or the name of a preset.
pub fn load_start(start: &str) -> Result<Weights> {
    crate::engine::presets::load(start).context("--start")
}

/// `--params`: the parameter file's choice, or every parameter.
pub fn load_params(path: Option<&Path>, start: &Weights) -> Result<Vec<TuneParam>> {
    match path {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read {}", p.display()))?;
            paramfile::toml::read_param_file(&text, start)
                .with_context(|| format!("in parameter file {}", p.display()))
        }
        None => Ok(spsa::all_params(start)),
    }
}

/// The state in `checkpoint` and its openings, ready to go on. `engine`:
/// the `--engine` given with `--resume`, which must be the checkpoint's.
pub fn resume(checkpoint: &Path, engine: Option<&TunedEngine>) -> Result<(State, Vec<Opening>)> {
    let state = State::load(checkpoint)?;
    match (&state.settings.engine, engine) {
        (None, Some(spec)) => bail!(
            "{} is an in-process run over the evaluation weights, not a run of --engine {:?}; \
             resume it without --engine",
            checkpoint.display(),
            spec.text()
        ),
        (Some(target), Some(spec)) if target.spec != *spec => bail!(
            "{} is a run of --engine {:?}, not of {:?}; resume it without --engine \
             (or with the same one)",
            checkpoint.display(),
            target.spec.text(),
            spec.text()
        ),
        (Some(target), _) => {
            eprintln!("engine: {}", target.spec);
            target
                .check_engine()
                .with_context(|| format!("cannot resume {}", checkpoint.display()))?;
        }
        (None, None) => {}
    }
    let openings = reopen(&state)?;
    eprintln!(
        "resuming {} at iteration {} of {}",
        checkpoint.display(),
        state.iteration(),
        state.settings.schedule.iterations
    );
    Ok((state, openings))
}

impl Plan {
    /// A new run: checks everything, then writes its first checkpoint
    /// (never over an existing one).
    pub fn begin(self, checkpoint: &Path) -> Result<(State, Vec<Opening>)> {
        if checkpoint.exists() {
            bail!(
                "{} exists: give --resume to continue it, or remove it",
                checkpoint.display()
            );
        }
        let (state, openings) = self.into_state()?;
        state.save(checkpoint)?;
        Ok((state, openings))
    }

    /// The initial state; the openings are read to check and count them.
    fn into_state(self) -> Result<(State, Vec<Opening>)> {
        if self.pairs_per_iteration == 0 || self.iterations == 0 {
            bail!("--pairs-per-iteration and --iterations must be at least 1");
        }
        limit_of(&self.limit)?;
        let openings = read_openings(&self.openings)?;
        // Absolute, so a resume from another directory finds the same file.
        let path = std::fs::canonicalize(&self.openings)
            .with_context(|| format!("cannot resolve {}", self.openings.display()))?;
        let settings = Settings {
            limit: self.limit,
            pairs_per_iteration: self.pairs_per_iteration,
            schedule: Schedule::new(self.iterations),
            seed: self.seed,
            openings_count: openings.len(),
            openings: path,
            adjudication: self.adjudication,
            base: if self.engine.is_some() {
                Vec::new()
            } else {
                self.start.values()
            },
            params: self.params,
            engine: self.engine,
            progress_match: self.progress_match,
            net: self.net,
        };
        Ok((State::new(settings), openings))
    }
}

/// The openings of a checkpoint, checked against what it recorded.
pub fn reopen(state: &State) -> Result<Vec<Opening>> {
    let s = &state.settings;
    let openings = read_openings(&s.openings)
        .with_context(|| format!("the checkpoint's openings {}", s.openings.display()))?;
    if openings.len() != s.openings_count {
        bail!(
            "{} now holds {} openings, the checkpoint was made with {}",
            s.openings.display(),
            openings.len(),
            s.openings_count
        );
    }
    Ok(openings)
}

/// How a run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Finished,
    /// SIGINT: the last finished iteration is checkpointed.
    Interrupted,
}

/// From now on SIGINT asks [`run`] to stop after the current iteration.
pub fn stop_on_sigint() {
    crate::interrupt::stop_on_sigint();
}

/// Runs the remaining iterations of `state`, checkpointing to `checkpoint`
/// and writing the current weights to `out` after each; `progress` sees the
/// state and the games per second since the start of this run.
pub fn run(
    state: &mut State,
    openings: &[Opening],
    threads: usize,
    checkpoint: &Path,
    out: &Path,
    progress: impl FnMut(&State, f64),
) -> Result<Outcome> {
    match state.settings.engine.clone() {
        None => {
            let mut player = InProcess::new(threads, state.base(), state.net()?)?;
            run_with(&mut player, state, openings, checkpoint, out, progress)
        }
        Some(target) => {
            let mut player = external::Arena::new(&target, threads);
            run_with(&mut player, state, openings, checkpoint, out, progress)
        }
    }
}

/// [`run`] with `player`.
fn run_with<P: Player>(
    player: &mut P,
    state: &mut State,
    openings: &[Opening],
    checkpoint: &Path,
    out: &Path,
    mut progress: impl FnMut(&State, f64),
) -> Result<Outcome> {
    let start = Instant::now();
    let mut games = 0u64;
    loop {
        if crate::interrupt::interrupted() {
            return Ok(Outcome::Interrupted);
        }
        // The progress match due after the last iteration, played here so
        // that a run stopped before it (or resumed with --match-every) plays it.
        if let Some(pairs) = match_due(state) {
            let k = state.iteration() - 1;
            let played = player::play_match(
                player,
                &state.settings,
                &state.theta,
                (k, pairs),
                openings,
                None,
            )?;
            let Some(scores) = played else {
                return Ok(Outcome::Interrupted);
            };
            let result = total(&scores);
            games += u64::from(result.games());
            record_match(state, &result);
            state.save(checkpoint)?;
            progress(
                state,
                games as f64 / start.elapsed().as_secs_f64().max(1e-9),
            );
        }
        if state.iteration() >= state.settings.schedule.iterations {
            break;
        }
        let k = state.iteration();
        let played =
            player::play_iteration(player, &state.settings, &state.theta, k, openings, None)
                .with_context(|| {
                    format!(
                        "iteration {} failed ({} keeps the {k} iterations before it; \
                         `learnbook tune --resume --checkpoint {} --out {}` continues)",
                        k + 1,
                        checkpoint.display(),
                        checkpoint.display(),
                        out.display()
                    )
                })?;
        // SIGINT during an engine iteration: its games are dropped, and the
        // resume plays them again (an iteration depends on seed, k and theta).
        let Some((flip, scores)) = played else {
            return Ok(Outcome::Interrupted);
        };
        let wdl = total(&scores);
        record_iteration(state, &flip, &wdl);
        state.save(checkpoint)?;
        write_weights(state, out)?;
        games += u64::from(wdl.games());
        progress(
            state,
            games as f64 / start.elapsed().as_secs_f64().max(1e-9),
        );
    }
    Ok(if crate::interrupt::interrupted() {
        Outcome::Interrupted
    } else {
        Outcome::Finished
    })
}

/// The results of a side's scores.
pub fn total(scores: &[f64]) -> Wdl {
    let mut wdl = Wdl::default();
    for &s in scores {
        wdl.add(s);
    }
    wdl
}

/// Records the next iteration's games (`flip`: its perturbation, `wdl`:
/// the plus side's results): theta steps by SPSA and the iteration joins
/// the history. `tune` and `tune-step` (the rounds of a job array) both
/// step here.
pub fn record_iteration(state: &mut State, flip: &[f64], wdl: &Wdl) {
    let k = state.iteration();
    let result = f64::from(wdl.wins) - f64::from(wdl.losses);
    let schedule = state.settings.schedule;
    spsa::step(
        &schedule,
        &state.settings.params,
        &mut state.theta,
        flip,
        k,
        result,
    );
    state.history.push(Iteration {
        number: k + 1,
        wins: wdl.wins,
        draws: wdl.draws,
        losses: wdl.losses,
        theta: state.theta.clone(),
    });
}

/// Records the progress match due after the last iteration (the current
/// values' results against the start).
pub fn record_match(state: &mut State, wdl: &Wdl) {
    state.matches.push(MatchPoint {
        iteration: state.iteration(),
        wins: wdl.wins,
        draws: wdl.draws,
        losses: wdl.losses,
    });
}

/// The pairs of the progress match due now, if one is: after every
/// `every` iterations, once.
pub fn match_due(state: &State) -> Option<usize> {
    let plan = state.settings.progress_match?;
    let done = state.iteration();
    let due = plan.every > 0 && done > 0 && done.is_multiple_of(plan.every);
    let played = state.matches.last().is_some_and(|m| m.iteration == done);
    (due && !played).then_some(plan.pairs)
}

/// The current weights as TOML that `learnbook uci --weights` loads, or for
/// an `--engine` run the current option values (`name = value`).
pub fn write_weights(state: &State, out: &Path) -> Result<()> {
    if let Some(target) = &state.settings.engine {
        return external::write_options(state, target, out);
    }
    let w = spsa::weights_at(&state.base(), &state.settings.params, &state.theta);
    let title = format!(
        "tuned by learnbook tune, iteration {} of {}, {} games, seed {}",
        state.iteration(),
        state.settings.schedule.iterations,
        state.games(),
        state.settings.seed
    );
    crate::atomic_file::write(out, w.to_toml(&title).as_bytes())
}

/// The `n` parameters that moved most from their start (in units of their
/// `c_end`), as `name start->now`.
fn most_moved(state: &State, n: usize) -> String {
    let mut rows: Vec<(&TuneParam, f64)> = state
        .settings
        .params
        .iter()
        .zip(&state.theta)
        .map(|(p, &t)| (p, t))
        .collect();
    rows.sort_by(|a, b| {
        ((b.1 - b.0.start).abs() / b.0.c_end).total_cmp(&((a.1 - a.0.start).abs() / a.0.c_end))
    });
    rows.iter()
        .take(n)
        .map(|(p, t)| format!("{} {}->{:.1}", p.name, p.start, t))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A progress match as one line: the values after its iteration against the start.
pub fn match_line(m: &MatchPoint) -> String {
    let wdl = Wdl {
        wins: m.wins,
        draws: m.draws,
        losses: m.losses,
    };
    format!(
        "match after iteration {}: values then against the start, {} games +{} ={} -{}: {}",
        m.iteration,
        wdl.games(),
        m.wins,
        m.draws,
        m.losses,
        wdl.summary()
    )
}

/// Start and current value of every tuned parameter, the biggest moves first.
pub fn summary(state: &State) -> String {
    let mut rows: Vec<(&TuneParam, f64)> = state
        .settings
        .params
        .iter()
        .zip(&state.theta)
        .map(|(p, &t)| (p, t))
        .collect();
    rows.sort_by(|a, b| {
        let da = (a.1 - a.0.start).abs() / a.0.c_end;
        let db = (b.1 - b.0.start).abs() / b.0.c_end;
        db.total_cmp(&da)
    });
    let mut s = format!(
        "{} iterations, {} games; parameters by change (in units of c_end):\n",
        state.iteration(),
        state.games()
    );
    for (p, t) in rows.iter().take(30) {
        s.push_str(&format!(
            "  {:<28} {:>6} -> {:>8.2}  ({:+.2} c_end)\n",
            p.name,
            p.start,
            t,
            (t - p.start) / p.c_end
        ));
    }
    if rows.len() > 30 {
        s.push_str(&format!("  ... and {} more\n", rows.len() - 30));
    }
    if !state.matches.is_empty() {
        s.push_str("progress matches (the values then against the start):\n");
        for m in &state.matches {
            s.push_str(&format!("  {}\n", match_line(m)));
        }
    }
    s
}

/// [`run`] with an indicatif bar on a terminal (iterations, games/s, ETA),
/// or a log line every ten iterations otherwise.
pub fn run_with_progress(
    state: &mut State,
    openings: &[Opening],
    threads: usize,
    checkpoint: &Path,
    out: &Path,
) -> Result<Outcome> {
    use indicatif::{ProgressBar, ProgressStyle};
    use std::io::IsTerminal;
    let total = state.settings.schedule.iterations;
    let bar = if std::io::stderr().is_terminal() {
        let pb = ProgressBar::new(total);
        pb.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} iterations, {msg}, ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        pb.set_position(state.iteration());
        pb.reset_eta();
        pb
    } else {
        ProgressBar::hidden()
    };
    let log = bar.is_hidden();
    let mut matches_shown = state.matches.len();
    let mut iterations_shown = state.iteration();
    let outcome = run(state, openings, threads, checkpoint, out, |st, rate| {
        let say = |line: String| {
            if log {
                eprintln!("{line}");
            } else {
                bar.println(line);
            }
        };
        if st.matches.len() > matches_shown {
            matches_shown = st.matches.len();
            if let Some(m) = st.matches.last() {
                say(match_line(m));
            }
        }
        if st.iteration() == iterations_shown {
            return;
        }
        iterations_shown = st.iteration();
        let last = st.history.last();
        let (w, d, l) = last.map_or((0, 0, 0), |i| (i.wins, i.draws, i.losses));
        bar.set_position(st.iteration());
        bar.set_message(format!("{rate:.1} games/s, last +{w} ={d} -{l}"));
        if log && (st.iteration() % 10 == 0 || st.iteration() == total) {
            say(format!(
                "iteration {}/{total}: {} games, {rate:.1} games/s; moved most: {}",
                st.iteration(),
                st.games(),
                most_moved(st, 4)
            ));
        }
    });
    bar.finish_and_clear();
    outcome
}
