//! Reading PGN inputs for `build` and `learn`: one reader thread
//! decompresses and splits games, validation runs on the rayon pool, and
//! the caller's sink gets each game in input order. Every skipped game is
//! counted with its reason in the run's [`Summary`].

use std::{
    collections::BTreeMap,
    io::IsTerminal,
    path::PathBuf,
    sync::mpsc::{sync_channel, Receiver},
    thread,
};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use super::{
    game::Game,
    input::{open_input, GameStream, RawGame},
    validate::{Filter, SkipReason},
};
use crate::keys::KeySet;
use learnbook_base::peak_memory;
use learnbook_base::shard::Shard;

const BATCH: usize = 2048;
/// Games between two log lines when stderr is not a terminal.
pub(crate) const LOG_EVERY: u64 = 50_000;
/// Examples kept per skip reason, for the summary.
const EXAMPLES: usize = 3;

/// What happened to the games of a run.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub read: u64,
    pub used: u64,
    pub skipped: BTreeMap<&'static str, u64>,
    /// `(input, game number, reason)` for the first few games of each reason.
    pub examples: Vec<(String, u64, String)>,
    pub seconds: f64,
    /// Each phase's wall time and peak memory, for the summary.
    pub phases: Vec<Phase>,
    /// What a build over its memory budget did (see [`crate::build`]).
    pub spill: Option<String>,
    /// Which games a shard took (`build --shard`).
    pub shard: Option<String>,
}

/// One phase of a build: its wall time and the peak resident memory at
/// its end ([`learnbook_base::peak_memory`]: the peak so far; `None` where it
/// cannot be read).
#[derive(Clone, Debug)]
pub struct Phase {
    pub name: &'static str,
    pub seconds: f64,
    pub peak: Option<u64>,
}

impl Summary {
    /// Ends the phase `name` at `elapsed` seconds from the start of the run.
    pub(crate) fn end_phase(&mut self, name: &'static str, elapsed: f64) {
        let before: f64 = self.phases.iter().map(|p| p.seconds).sum();
        self.phases.push(Phase {
            name,
            seconds: elapsed - before,
            peak: peak_memory::peak_bytes(),
        });
    }

    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }

    fn skip(&mut self, source: &str, number: u64, reason: &SkipReason) {
        let n = self.skipped.entry(reason.kind()).or_insert(0);
        *n += 1;
        if *n as usize <= EXAMPLES {
            self.examples
                .push((source.to_string(), number, reason.to_string()));
        }
    }

    /// The closing lines of `build` and `learn`.
    pub fn report(&self) -> String {
        let mut s = format!(
            "games read: {}, used: {}, skipped: {} ({:.2} s, {:.0} games/s)\n",
            self.read,
            self.used,
            self.skipped_total(),
            self.seconds,
            self.read as f64 / self.seconds.max(1e-9)
        );
        if !self.phases.is_empty() {
            let p: Vec<String> = self
                .phases
                .iter()
                .map(|p| match p.peak {
                    Some(b) => format!("{} {:.2} s, {} MB", p.name, p.seconds, b >> 20),
                    None => format!("{} {:.2} s", p.name, p.seconds),
                })
                .collect();
            s.push_str(&format!(
                "  phases (wall time, peak resident memory so far): {}\n",
                p.join("; ")
            ));
        }
        for note in self.shard.iter().chain(&self.spill) {
            s.push_str(&format!("  {note}\n"));
        }
        for (reason, n) in &self.skipped {
            s.push_str(&format!("  skipped {n:>8}  {reason}\n"));
        }
        for (src, num, why) in &self.examples {
            s.push_str(&format!("  e.g. {src} game {num}: {why}\n"));
        }
        s
    }
}

/// Reads every input on a background thread, in batches of raw games:
/// the games `shard` owns by their index over all the inputs (0 is the
/// first game of the first input). An unreadable input is reported as one
/// skip and the next input follows.
fn spawn_reader(
    inputs: Vec<PathBuf>,
    shard: Shard,
) -> Receiver<(String, Result<Vec<RawGame>, String>)> {
    let (tx, rx) = sync_channel(4);
    thread::spawn(move || {
        let mut index = 0u64;
        for path in inputs {
            let name = path.display().to_string();
            let input = match open_input(&path) {
                Ok(i) => i,
                Err(e) => {
                    let _ = tx.send((name, Err(format!("{e:#}"))));
                    continue;
                }
            };
            let mut stream = GameStream::new(input);
            for batch in stream.batches(BATCH) {
                let mut batch = match batch {
                    Ok(batch) => batch,
                    Err(e) => {
                        let _ = tx.send((name.clone(), Err(e)));
                        break;
                    }
                };
                if !shard.is_whole() {
                    batch.retain(|_| {
                        index += 1;
                        shard.owns(index - 1)
                    });
                }
                if tx.send((name.clone(), Ok(batch))).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

fn progress(label: &str) -> ProgressBar {
    if std::io::stderr().is_terminal() {
        let pb = ProgressBar::new_spinner();
        pb.set_style(
            ProgressStyle::with_template("{spinner} {prefix} {pos} games ({per_sec}) {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        pb.set_prefix(label.to_string());
        pb
    } else {
        ProgressBar::hidden()
    }
}

/// Validates batches in parallel and hands each result to `sink` in input
/// order, skipping games already seen (in the book or earlier in the run).
pub(crate) fn for_each_game(
    inputs: Vec<PathBuf>,
    filter: &Filter,
    seen: Option<KeySet<u64>>,
    summary: &mut Summary,
    mut sink: impl FnMut(&Game, &str) -> Result<bool>,
) -> Result<()> {
    let whole = Shard::WHOLE;
    for_each_game_with(
        inputs,
        whole,
        filter,
        seen,
        summary,
        None,
        |game, _, source| sink(game, source),
    )
}

/// Work done on a validated game by the thread that validated it (so on
/// every core), its result handed to the sink with the game.
pub(crate) type Prepare = std::sync::Arc<dyn Fn(&Game) -> Vec<u8> + Send + Sync>;

/// [`for_each_game`], with `prepare` run on each valid game as it is
/// validated (also on a game the sink will see as a duplicate).
pub(crate) fn for_each_game_with(
    inputs: Vec<PathBuf>,
    shard: Shard,
    filter: &Filter,
    mut seen: Option<KeySet<u64>>,
    summary: &mut Summary,
    prepare: Option<Prepare>,
    mut sink: impl FnMut(&Game, Option<Vec<u8>>, &str) -> Result<bool>,
) -> Result<()> {
    let pb = progress("reading");
    // Validation of the next batch overlaps the sink's work on this one.
    let (tx, validated) = sync_channel::<(String, Result<Validated, String>)>(2);
    let raw_batches = spawn_reader(inputs, shard);
    let filter_copy = filter.clone();
    let validator = thread::spawn(move || {
        for (source, batch) in raw_batches {
            let out = batch.map(|b| {
                b.par_iter()
                    .map(|raw| {
                        let game = raw.validate(&filter_copy).map(|g| {
                            let prepared = prepare.as_ref().map(|p| p(&g));
                            (g, prepared)
                        });
                        (raw.number, game)
                    })
                    .collect()
            });
            if tx.send((source, out)).is_err() {
                return;
            }
        }
    });
    for (source, results) in validated {
        let results = match results {
            Ok(r) => r,
            Err(e) => {
                summary.read += 1;
                summary.skip(&source, 0, &SkipReason::Unreadable(e));
                continue;
            }
        };
        let results_len = results.len() as u64;
        for (number, r) in results {
            summary.read += 1;
            match r {
                Ok((game, prepared)) => {
                    if seen.as_mut().is_some_and(|seen| !seen.insert(game.hash)) {
                        summary.skip(&source, number, &SkipReason::Duplicate);
                        continue;
                    }
                    if sink(&game, prepared, &source)? {
                        summary.used += 1;
                    } else {
                        summary.skip(&source, number, &SkipReason::Duplicate);
                    }
                }
                Err(reason) => summary.skip(&source, number, &reason),
            }
        }
        pb.set_position(summary.read);
        // Without a terminal, a plain log line every 50,000 games.
        if pb.is_hidden() && summary.read / LOG_EVERY != (summary.read - results_len) / LOG_EVERY {
            eprintln!(
                "learnbook: {} games read, {} used",
                summary.read, summary.used
            );
        }
    }
    pb.finish_and_clear();
    validator
        .join()
        .map_err(|_| anyhow::anyhow!("the validation thread panicked"))?;
    Ok(())
}

/// A validated batch: `(game number, game and what `prepare` made of it,
/// or why it was skipped)`.
type Validated = Vec<(u64, Result<(Game, Option<Vec<u8>>), SkipReason>)>;
