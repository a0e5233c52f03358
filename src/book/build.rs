//! Running PGN inputs into a book: `build` (bulk) and `learn` (game by game).
//!
//! One reader thread decompresses and splits games; validation runs on the
//! rayon pool; the calling thread owns the book. Every skipped game is
//! counted with its reason.

use std::{
    collections::BTreeMap,
    io::IsTerminal,
    path::PathBuf,
    sync::mpsc::{sync_channel, Receiver},
    thread,
    time::Instant,
};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use super::db::{Aggregate, Book, BookSettings};
use super::ingest::{open_input, Filter, Game, GameStream, RawGame, SkipReason};
use super::keys::KeySet;
use super::minimax::ChoiceChange;
use crate::atomic_file;

const BATCH: usize = 2048;
/// Games between two log lines when stderr is not a terminal.
const LOG_EVERY: u64 = 50_000;
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
    /// Wall time of each phase, for the summary.
    pub phases: Vec<(&'static str, f64)>,
}

impl Summary {
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
                .map(|(name, t)| format!("{name} {t:.2} s"))
                .collect();
            s.push_str(&format!("  phases: {}\n", p.join(", ")));
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

/// Reads every input on a background thread, in batches of raw games.
/// An unreadable input is reported as one skip and the next input follows.
fn spawn_reader(inputs: Vec<PathBuf>) -> Receiver<(String, Result<Vec<RawGame>, String>)> {
    let (tx, rx) = sync_channel(4);
    thread::spawn(move || {
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
            loop {
                let batch = stream.next_batch(BATCH);
                if batch.is_empty() {
                    break;
                }
                if tx.send((name.clone(), Ok(batch))).is_err() {
                    return;
                }
            }
            if let Some(e) = stream.error.take() {
                let _ = tx.send((name, Err(e)));
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
fn for_each_game(
    inputs: Vec<PathBuf>,
    filter: &Filter,
    mut seen: Option<KeySet<u64>>,
    summary: &mut Summary,
    mut sink: impl FnMut(&Game, &str) -> Result<bool>,
) -> Result<()> {
    let pb = progress("reading");
    // Validation of the next batch overlaps the sink's work on this one.
    let (tx, validated) = sync_channel::<(String, Result<Validated, String>)>(2);
    let raw_batches = spawn_reader(inputs);
    let filter_copy = filter.clone();
    let validator = thread::spawn(move || {
        for (source, batch) in raw_batches {
            let out = batch.map(|b| {
                b.par_iter()
                    .map(|raw| (raw.number, raw.validate(&filter_copy)))
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
                Ok(game) => {
                    if seen.as_mut().is_some_and(|seen| !seen.insert(game.hash)) {
                        summary.skip(&source, number, &SkipReason::Duplicate);
                        continue;
                    }
                    if sink(&game, &source)? {
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

/// A validated batch: `(game number, game or why it was skipped)`.
type Validated = Vec<(u64, Result<Game, SkipReason>)>;

/// `build`: adds every game of `inputs` to the book. An empty book is
/// written in one bulk pass; an existing one is merged and re-evaluated.
pub fn build(book: &mut Book, inputs: Vec<PathBuf>, filter: &Filter) -> Result<Summary> {
    let start = Instant::now();
    let mut summary = Summary::default();
    let seen = if filter.allow_duplicates {
        None
    } else {
        Some(book.game_hashes()?)
    };
    let mut agg = Aggregate {
        tails: !filter.no_tails,
        ..Aggregate::default()
    };
    for_each_game(inputs, filter, seen, &mut summary, |game, source| {
        agg.add(game, source);
        Ok(true)
    })?;
    let read = start.elapsed().as_secs_f64();
    summary.phases.push(("read, validate, count", read));
    if summary.used >= LOG_EVERY {
        eprintln!(
            "learnbook: {} games counted: {} positions, {} moves; writing the book",
            summary.used,
            agg.nodes.len(),
            agg.move_count()
        );
    }
    if book.is_empty()? {
        book.bulk_load(agg).context("writing the book")?;
    } else {
        book.merge(agg).context("adding to the book")?;
    }
    summary.seconds = start.elapsed().as_secs_f64();
    summary
        .phases
        .push(("values and SQLite", summary.seconds - read));
    Ok(summary)
}

/// Reads, parses and validates every game (every move played with shakmaty,
/// every position hashed) and keeps nothing: the part of `build` that does
/// not depend on the book, for `bench build`.
pub fn validate_only(inputs: Vec<PathBuf>, filter: &Filter) -> Result<Summary> {
    let start = Instant::now();
    let mut summary = Summary::default();
    for_each_game(inputs, filter, None, &mut summary, |_, _| Ok(true))?;
    summary.seconds = start.elapsed().as_secs_f64();
    Ok(summary)
}

/// One learned game, as `learn` reports it.
#[derive(Clone, Debug)]
pub struct Learned {
    pub source: String,
    pub white: String,
    pub black: String,
    pub result: &'static str,
    pub recomputed: usize,
    pub choices: Vec<ChoiceChange>,
}

/// `learn`: Hossa's loop. Each game is added in its own transaction and the
/// affected nodes re-evaluated before the next game is read.
pub fn learn(
    book: &mut Book,
    inputs: Vec<PathBuf>,
    mut on_game: impl FnMut(&mut Book, &Game, &Learned) -> Result<()>,
) -> Result<Summary> {
    let start = Instant::now();
    let mut summary = Summary::default();
    let filter = Filter {
        max_ply: book.settings.max_ply,
        min_elo: None,
        allow_duplicates: false,
        no_tails: false,
    };
    // Duplicates are detected by the games table inside each transaction,
    // so a learn run that was killed can simply be repeated.
    for_each_game(inputs, &filter, None, &mut summary, |game, source| {
        let Some(re) = book.add_game(game, source)? else {
            return Ok(false);
        };
        let learned = Learned {
            source: source.to_string(),
            white: game.white.clone(),
            black: game.black.clone(),
            result: game.result.as_str(),
            recomputed: re.recomputed,
            choices: re.choices,
        };
        on_game(book, game, &learned)?;
        Ok(true)
    })?;
    summary.seconds = start.elapsed().as_secs_f64();
    Ok(summary)
}

/// `build` on a path: a new book is written to a temporary file without a
/// journal (fast) and renamed into place when complete, so a killed build
/// leaves no book rather than a broken one; an existing book is added to in
/// one transaction.
pub fn build_book(
    path: &std::path::Path,
    settings: BookSettings,
    inputs: Vec<PathBuf>,
    filter: Filter,
) -> Result<Summary> {
    if path.exists() {
        let mut book = Book::open(path)?;
        let filter = Filter {
            max_ply: book.settings.max_ply,
            ..filter
        };
        return build(&mut book, inputs, &filter);
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // Removes what a killed build left; removed again if this one fails.
    let pending = atomic_file::Pending::new(path, ".building");
    let summary = {
        let mut book = Book::open_or_create(pending.path(), settings)?;
        book.write_unjournaled()?;
        let filter = Filter {
            max_ply: settings.max_ply,
            ..filter
        };
        let summary = build(&mut book, inputs, &filter)?;
        book.make_durable()?;
        summary
    };
    pending.commit()?;
    Ok(summary)
}
