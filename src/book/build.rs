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
    sync::Arc,
    thread,
    time::Instant,
};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use super::db::{Aggregate, Book, BookSettings};
use super::ingest::{open_input, Filter, Game, GameStream, RawGame, SkipReason};
use super::keys::KeySet;
use super::merge::merge_books;
use super::minimax::ChoiceChange;
use super::spill::{self, Journal, JournalReader, PairSorter, SharedFilter};
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
    /// What a build over its memory budget did (see [`super::spill`]).
    pub spill: Option<String>,
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
        if let Some(note) = &self.spill {
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
    seen: Option<KeySet<u64>>,
    summary: &mut Summary,
    mut sink: impl FnMut(&Game, &str) -> Result<bool>,
) -> Result<()> {
    for_each_game_with(inputs, filter, seen, summary, None, |game, _, source| {
        sink(game, source)
    })
}

/// Work done on a validated game by the thread that validated it (so on
/// every core), its result handed to the sink with the game.
type Prepare = std::sync::Arc<dyn Fn(&Game) -> Vec<u8> + Send + Sync>;

/// [`for_each_game`], with `prepare` run on each valid game as it is
/// validated (also on a game the sink will see as a duplicate).
fn for_each_game_with(
    inputs: Vec<PathBuf>,
    filter: &Filter,
    mut seen: Option<KeySet<u64>>,
    summary: &mut Summary,
    prepare: Option<Prepare>,
    mut sink: impl FnMut(&Game, Option<Vec<u8>>, &str) -> Result<bool>,
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

/// `build`: adds every game of `inputs` to the book. An empty book is
/// written in one bulk pass; an existing one is merged and re-evaluated.
/// The whole aggregate is held in memory (see [`build_book`] for a budget).
pub fn build(book: &mut Book, inputs: Vec<PathBuf>, filter: &Filter) -> Result<Summary> {
    let start = Instant::now();
    let mut summary = Summary::default();
    let seen = if filter.allow_duplicates {
        None
    } else {
        Some(book.game_hashes()?)
    };
    let agg = count_games(inputs, filter, seen, &mut summary)?;
    write_aggregate(book, agg, start, &mut summary)?;
    Ok(summary)
}

/// Counts the games of `inputs` in memory.
fn count_games(
    inputs: Vec<PathBuf>,
    filter: &Filter,
    seen: Option<KeySet<u64>>,
    summary: &mut Summary,
) -> Result<Aggregate> {
    let mut agg = Aggregate::new(!filter.no_tails);
    for_each_game(inputs, filter, seen, summary, |game, source| {
        agg.add(game, source);
        Ok(true)
    })?;
    Ok(agg)
}

/// Writes what [`count_games`] counted into `book` (bulk into an empty
/// book, else added and re-evaluated), with the phases in `summary`.
fn write_aggregate(
    book: &mut Book,
    agg: Aggregate,
    start: Instant,
    summary: &mut Summary,
) -> Result<()> {
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
    Ok(())
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

/// How much memory `build` may hold, and where it spills what does not fit.
#[derive(Clone, Debug)]
pub struct Spill {
    /// The budget in bytes: the counts, the games and the writing of a run
    /// (SQLite's page cache and the reading threads come on top, a few tens
    /// of MB).
    pub memory: u64,
    /// Directory of the spilled runs (default: the book's own directory).
    pub temp_dir: Option<PathBuf>,
}

impl Default for Spill {
    fn default() -> Spill {
        Spill {
            memory: default_memory(),
            temp_dir: None,
        }
    }
}

/// The default budget: half of the machine's memory, at least 256 MiB.
pub fn default_memory() -> u64 {
    // SAFETY: sysconf reads a system constant and has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let total = if pages > 0 && page > 0 {
        pages as u64 * page as u64
    } else {
        4 << 30
    };
    (total / 2).max(256 << 20)
}

/// Reads a size as `--memory` takes it: bytes, or a number with K, M, G or
/// T (powers of 1024; a trailing B or iB is allowed): `1G`, `256M`, `1.5G`.
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let upper = t.to_ascii_uppercase();
    let upper = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (number, unit) = match upper.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&upper[..i], Some(c)),
        _ => (upper, None),
    };
    let shift = match unit {
        None => 0,
        Some('K') => 10,
        Some('M') => 20,
        Some('G') => 30,
        Some('T') => 40,
        Some(c) => return Err(format!("unknown unit {c:?} in {t:?} (K, M, G or T)")),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{t:?} is not a size (e.g. 512M, 2G)"))?;
    if !value.is_finite() || value <= 0.0 {
        return Err(format!("{t:?}: a size is a positive number"));
    }
    let bytes = value * (1u64 << shift) as f64;
    if bytes >= u64::MAX as f64 {
        return Err(format!("{t:?} is too large"));
    }
    Ok(bytes as u64)
}

/// The share of the budget the aggregate may fill: writing it (rows sorted,
/// the graph valued) needs about as much again.
const AGGREGATE_SHARE: f64 = 0.45;
/// The share of the budget for the filter of shared positions once the
/// counts no longer fit (8 bits a position keeps its false positives near
/// 1%), and for sorting the tails index in memory (the rest goes to sorted
/// runs on disk).
const FILTER_SHARE: f64 = 0.25;
const TAIL_SORT_SHARE: f64 = 0.1;

/// Inputs of more PGN than this (decompressed, estimated) make a new book
/// through the journal from the start.
const JOURNAL_FROM: u64 = 16 << 20;

/// The decompressed size of the inputs, estimated from their files (`None`
/// for standard input or a file that cannot be read: the budget decides).
fn plain_size(inputs: &[PathBuf]) -> Option<u64> {
    let mut total = 0u64;
    for p in inputs {
        if p.as_os_str() == "-" {
            return None;
        }
        let len = std::fs::metadata(p).ok()?.len();
        let name = p.to_string_lossy();
        // PGN compresses about 4 times with gzip, 5 with zstd.
        let factor = if name.ends_with(".gz") {
            4
        } else if name.ends_with(".zst") {
            5
        } else {
            1
        };
        total = total.saturating_add(len.saturating_mul(factor));
    }
    Some(total)
}

/// Counts games in memory while they fit; past the budget, in a filter of
/// shared positions (see [`super::spill`]). Every game is journalled.
struct Counter {
    agg: Option<Aggregate>,
    filter: Option<Arc<SharedFilter>>,
    journal: Journal,
    sources: Vec<String>,
    tails: bool,
    limit: u64,
    filter_bytes: u64,
    /// Games counted when the budget was reached.
    spilled_at: Option<u64>,
    games: u64,
}

impl Counter {
    /// Counts `game`; `record`: its journal record, made (and its positions
    /// added to the filter) by the thread that validated it.
    fn add(&mut self, game: &Game, record: Option<Vec<u8>>, source: &str) -> Result<()> {
        if self.sources.last().is_none_or(|s| s != source) {
            self.sources.push(source.to_string());
        }
        let index = self.sources.len() as u32 - 1;
        self.games += 1;
        if let Some(r) = record {
            return self.journal.append_record(game.hash, &r, index);
        }
        self.journal.append(game, index)?;
        if let Some(f) = &self.filter {
            for k in game.keys() {
                f.add(k);
            }
            return Ok(());
        }
        let Some(agg) = &mut self.agg else {
            return Ok(());
        };
        agg.add(game, source);
        if agg.approx_bytes() > self.limit && self.tails {
            // The counts are freed before the filter takes their place,
            // filled from the journal: the two are never held together.
            self.agg = None;
            let f = SharedFilter::new(self.filter_bytes);
            self.journal.replay(|g| {
                for k in g.keys() {
                    f.add(k);
                }
                Ok(())
            })?;
            self.filter = Some(Arc::new(f));
            self.spilled_at = Some(self.games);
        }
        Ok(())
    }
}

/// The exact counts of every position `shared` says two games may reach,
/// and of the moves out of them, from the journal; of every position of a
/// game that cannot have a tail (from a FEN, or repeated in the input). The
/// positions before a tail that one game alone reaches are added from that
/// game when the book is written.
fn count_shared(
    reader: &JournalReader,
    copied: &KeySet<u64>,
    shared: &SharedFilter,
    tails: bool,
) -> Result<Aggregate> {
    let standard = crate::book::keys::polyglot_key(&shakmaty::Chess::default());
    let mut agg = Aggregate::new(tails);
    reader.for_each(|game| {
        if game.start_ply == 0 && game.start == standard && !copied.contains(&game.hash) {
            agg.count_positions(&game, |_, k| shared.is_shared(k));
        } else {
            agg.count_positions(&game, |_, _| true);
        }
        Ok(())
    })?;
    Ok(agg)
}

/// Temporary files of one build, beside the book or in `--temp-dir`, named
/// after the book: removed when the build ends, and a killed build's by the
/// next build of the same book.
struct TempFiles {
    dir: PathBuf,
    prefix: String,
}

impl TempFiles {
    fn new(book: &std::path::Path, spill: &Spill) -> Result<TempFiles> {
        let dir = match &spill.temp_dir {
            Some(d) => d.clone(),
            None => book
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), |d| d.to_path_buf()),
        };
        if !dir.is_dir() {
            bail!(
                "the temporary directory {} is not a directory (--temp-dir)",
                dir.display()
            );
        }
        let name = book
            .file_name()
            .ok_or_else(|| anyhow::anyhow!("{}: not a file name", book.display()))?
            .to_string_lossy();
        let prefix = format!("{name}.spill-");
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        Ok(TempFiles { dir, prefix })
    }

    fn path(&self, what: &str) -> PathBuf {
        self.dir.join(format!("{}{what}", self.prefix))
    }
}

/// `build` on a path: a new book is written to a temporary file without a
/// journal (fast) and renamed into place when complete, so a killed build
/// leaves no book rather than a broken one; an existing book is added to in
/// one transaction. Counts past `spill.memory` are kept on disk (see
/// [`super::spill`]): the same book, in bounded memory; an existing book is
/// then merged with the new games' book and replaced by the result, as
/// `merge` does.
pub fn build_book(
    path: &std::path::Path,
    settings: BookSettings,
    inputs: Vec<PathBuf>,
    filter: Filter,
    spill: &Spill,
) -> Result<Summary> {
    let start = Instant::now();
    let mut summary = Summary::default();
    let existing = path.exists();
    let mut book;
    // Removes what a killed build left; removed again if this one fails.
    let mut pending = None;
    if existing {
        book = Book::open(path)?;
    } else {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let p = atomic_file::Pending::new(path, ".building");
        book = Book::open_or_create(p.path(), settings)?;
        book.write_unjournaled()?;
        pending = Some(p);
    }
    let settings = book.settings;
    let filter = Filter {
        max_ply: settings.max_ply,
        ..filter
    };
    let seen = if filter.allow_duplicates {
        None
    } else {
        Some(book.game_hashes()?)
    };
    let temp = TempFiles::new(path, spill)?;
    let journal_file = atomic_file::Pending::temporary(&temp.path("games"));
    let budget_share = (spill.memory as f64 * FILTER_SHARE) as u64;
    let plain = plain_size(&inputs);
    // A big new book is counted through the journal from the start: less
    // memory, and faster (the filter costs less than every count).
    let from_start = !existing && !filter.no_tails && plain.is_some_and(|b| b > JOURNAL_FROM);
    // Two filters of 16 bits for each position the inputs may hold (about
    // one in 8.5 bytes of PGN), within the budget's share.
    let filter_bytes = plain.map_or(budget_share, |b| {
        (b / 2).clamp(1 << 20, budget_share.max(1 << 20))
    });
    let shared = from_start.then(|| Arc::new(SharedFilter::new(filter_bytes)));
    // From the start, the threads that validate the games fill the filter
    // and encode the journal's records.
    let prepare: Option<Prepare> = shared.clone().map(|f| -> Prepare {
        Arc::new(move |g: &Game| {
            for k in g.keys() {
                f.add(k);
            }
            spill::record(g)
        })
    });
    let mut counter = Counter {
        agg: (!from_start).then(|| Aggregate::new(!filter.no_tails)),
        filter: shared,
        journal: Journal::create(journal_file.path())?,
        sources: Vec::new(),
        tails: !filter.no_tails,
        limit: (spill.memory as f64 * AGGREGATE_SHARE) as u64,
        filter_bytes,
        spilled_at: None,
        games: 0,
    };
    for_each_game_with(
        inputs,
        &filter,
        seen,
        &mut summary,
        prepare,
        |game, record, source| {
            counter.add(game, record, source)?;
            Ok(true)
        },
    )?;
    let Counter {
        agg,
        filter: shared,
        journal,
        sources,
        spilled_at,
        ..
    } = counter;
    if let Some(agg) = agg {
        drop(journal);
        drop(journal_file);
        write_aggregate(&mut book, agg, start, &mut summary)?;
        if let Some(p) = pending {
            book.make_durable()?;
            drop(book);
            p.commit()?;
        }
        return Ok(summary);
    }
    let Some(shared) = shared else {
        bail!("internal error: counts neither in memory nor in the filter");
    };
    let read = start.elapsed().as_secs_f64();
    summary.phases.push(("read, validate, count", read));
    let why = match spilled_at {
        Some(n) => format!("over the memory budget after {n} games"),
        None => format!("more than {} MB of PGN", JOURNAL_FROM >> 20),
    };
    summary.spill = Some(format!(
        "{why}: {} games journalled ({:.1} MB), shared positions in a {} MB filter",
        journal.entries.len(),
        journal.len() as f64 / f64::from(1 << 20),
        shared.bytes() >> 20
    ));
    // The exact counts of what two games may reach.
    let (reader, entries) = journal.finish()?;
    let copied: KeySet<u64> = entries
        .iter()
        .filter(|e| e.copies > 1)
        .map(|e| e.hash)
        .collect();
    let agg = count_shared(&reader, &copied, &shared, !filter.no_tails)?;
    drop(shared);
    let counted = start.elapsed().as_secs_f64();
    summary.phases.push(("exact counts", counted - read));
    // The games in id order (by source name, then hash), each once.
    let mut order = entries;
    order.sort_unstable_by(|a, b| {
        (&sources[a.source as usize], a.hash).cmp(&(&sources[b.source as usize], b.hash))
    });
    let game = |i: usize| -> Result<(Game, u32, u32)> {
        let e = &order[i];
        Ok((reader.read(e, &mut Vec::new())?, e.source, e.copies))
    };
    let tail_index = PairSorter::new(
        (spill.memory as f64 * TAIL_SORT_SHARE) as u64,
        &temp.dir,
        &format!("{}tails", temp.prefix),
    );
    if let Some(p) = pending {
        book.bulk_load_games(agg, &sources, order.len(), game, tail_index)
            .context("writing the book")?;
        book.make_durable()?;
        drop(book);
        p.commit()?;
    } else {
        // The new games' own book, then merged with the old one.
        drop(book);
        let part = atomic_file::Pending::temporary(&temp.path("new.sqlite"));
        {
            let mut new = Book::open_or_create(
                part.path(),
                BookSettings {
                    min_games: 1,
                    ..settings
                },
            )?;
            new.write_unjournaled()?;
            new.bulk_load_games(agg, &sources, order.len(), game, tail_index)
                .context("writing the new games' book")?;
        }
        merge_books(path, &[part.path().to_path_buf()], true, 1)
            .context("adding the new games' book")?;
    }
    summary.seconds = start.elapsed().as_secs_f64();
    summary
        .phases
        .push(("games, tails, values and SQLite", summary.seconds - counted));
    Ok(summary)
}
