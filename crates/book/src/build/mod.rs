//! Running PGN inputs into a book: `build` (bulk) and `learn` (game by game).
//!
//! The games come from [`super::pgn::read_games`]; the calling thread owns the
//! book.
//!
//! Within its memory budget (`--memory`, [`Spill`]):
//!
//! While the counts fit the budget, `build` keeps them all in memory and
//! writes the book in one pass. Each game is also appended to a journal, a
//! temporary file of the validated games (moves and keys). When the counts
//! outgrow the budget (or from the start, for a new book from a large
//! input) they are dropped, and counting goes on in a [`SharedFilter`]
//! instead: two Bloom filters that tell a position met once from one met
//! again, in a fixed amount of memory. A position the filter does not call
//! shared is reached by one game only, so it lies in that game's
//! single-game tail or before a position that other games reach.
//!
//! The journal is then read twice: once in input order to count exactly
//! every position the filter calls shared (the rows, and the few single
//! positions a false positive adds) and the moves out of them, once in the
//! games' id order to find each game's true tail from those exact counts,
//! add the single positions before it, and write the book
//! ([`load::bulk_load_games`]). The result is the book of
//! the one-pass build, row for row.
//!
//! The build's own room: counting (in memory, or from the journal through
//! the filter of shared positions, a key range at a time), the rows and
//! the graph made of the counts, and its memory policy. The rows are
//! written by the store's bulk writer (`db::bulk`), which takes them as
//! plain data (`db::bulk::input`) and imports nothing from here.
//!
//! * `aggregate`: many games counted in memory ([`Aggregate`]), `--min-games`;
//! * `graph`: the rows, parent links, tails and graph to value made of it;
//! * `load`: the aggregate written through the bulk writer, the rows
//!   prepared and valued on one core while it inserts on another;
//! * `count`: counting the games, in memory or from the journal;
//! * `follow`: `learn --follow`, a PGN file learned as it grows;
//! * `filter`: the Bloom filters of shared positions (and of any key set);
//! * `key_range`: ranges of position keys, counted one at a time;
//! * `shares`: the budget's shares for each structure.

mod aggregate;
mod count;
pub mod filter;
pub mod follow;
mod graph;
mod key_range;
mod load;
mod shares;

pub use aggregate::Aggregate;

use std::{path::PathBuf, sync::Arc, time::Instant};

use anyhow::{bail, Context, Result};

use super::db::{files, Book, BookSettings};
use super::journal::{self, Distinct, GamesInOrder, Journal, JournalReader};
use super::keys::KeySet;
pub use super::memory::{default_memory, parse_size, Spill};
use super::merge_books::merge_books;
use super::pgn::read_games::{for_each_game, for_each_game_with, Prepare, Summary, LOG_EVERY};
use super::pgn::{
    game::Game,
    validate::{Filter, SkipReason},
};
use super::sort::{PairSorter, TempFiles};
use super::values::minimax::ChoiceChange;
use count::{count_part, count_shared, Counter};
use filter::SharedFilter;
use key_range::KeyRange;
use learnbook_base::atomic_file;
use learnbook_base::peak_memory;
use learnbook_base::shard::Shard;
use shares::{
    plain_size, AGGREGATE_SHARE, CACHE_SHARE_COUNTING, CACHE_SHARE_VALUES, CACHE_SHARE_WRITING,
    FILTER_SHARE, JOURNAL_FROM, JOURNAL_MEMORY_SHARE, PART_BYTES_PER_POSITION, PART_SHARE,
    SORT_SHARE,
};

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
    summary.end_phase("read, validate, count", read);
    if summary.used >= LOG_EVERY {
        eprintln!(
            "learnbook: {} games counted: {} positions, {} moves; writing the book",
            summary.used,
            agg.nodes.len(),
            agg.move_count()
        );
    }
    if book.is_empty()? {
        load::bulk_load(book, agg).context("writing the book")?;
    } else {
        load::merge(book, agg).context("adding to the book")?;
    }
    summary.seconds = start.elapsed().as_secs_f64();
    summary.end_phase("values and SQLite", summary.seconds);
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

/// `build` on a path: a new book is written to a temporary file without a
/// journal (fast) and renamed into place when complete, so a killed build
/// leaves no book rather than a broken one; an existing book is added to in
/// one transaction. Counts past `spill.memory` are kept on disk (see
/// [`crate::build`]): the same book, in bounded memory; an existing book is
/// then merged with the new games' book and replaced by the result, as
/// `merge` does.
///
/// Two writers, one book. While the counts fit the budget they stay in
/// memory and [`write_aggregate`] writes them in one pass: no journal
/// written and read back, no filter. A new book from more than
/// [`JOURNAL_FROM`] of PGN goes through the journal from the start (the
/// filter costs less than every count, and holds less), and so does a
/// build whose counts outgrow the budget: [`SpilledBuild`] writes it from
/// the exact counts of the shared positions. Only the first adds to an
/// existing book in place, keeps every position a row (`--no-tails`) and
/// reads standard input (no size to judge it by), so both stay. (Measured
/// with the threshold at 0: a new book of 14 MB of PGN through the journal
/// took 1.3-1.9 s and 110-120 MB against 1.7-2.7 s and 312 MB in memory,
/// five interleaved runs, the same book: the threshold could come down.)
pub fn build_book(
    path: &std::path::Path,
    settings: BookSettings,
    inputs: Vec<PathBuf>,
    filter: Filter,
    spill: &Spill,
    shard: Shard,
) -> Result<Summary> {
    let start = Instant::now();
    let mut summary = Summary::default();
    let existing = path.exists();
    let job = shard_job(shard, &settings, &inputs, &filter)?;
    if shard_already_built(path, shard, &job, existing, &mut summary)? {
        return Ok(summary);
    }
    // `pending` removes what a killed build left; removed again if this one fails.
    let (mut book, pending) = open_target(path, settings, shard, &job, existing)?;
    let settings = book.settings;
    let filter = Filter {
        max_ply: settings.max_ply,
        ..filter
    };
    let temp = TempFiles::new(path, spill)?;
    let journal_file = atomic_file::Pending::temporary(&temp.path("games"));
    let (counter, from_start) = count_within_budget(
        &book,
        inputs,
        shard,
        &filter,
        existing,
        journal_file.path(),
        spill,
        &mut summary,
    )?;
    let Counter {
        agg,
        filter: shared,
        journal,
        sources,
        spilled_at,
        positions,
        filter_bytes,
        ..
    } = counter;
    if let Some(agg) = agg {
        drop(journal);
        drop(journal_file);
        write_aggregate(&mut book, agg, start, &mut summary)?;
        if let Some(p) = pending {
            book.make_durable()?;
            drop(book);
            files::commit_new_book(p, false)?;
        }
        return Ok(summary);
    }
    let Some(shared) = shared else {
        bail!("internal error: counts neither in memory nor in the filter");
    };
    let read = start.elapsed().as_secs_f64();
    summary.end_phase("read, validate, count", read);
    let why = match spilled_at {
        Some(n) => format!("over the memory budget after {n} games"),
        None => format!("more than {} MB of PGN", JOURNAL_FROM >> 20),
    };
    let journalled = format!(
        "{why}: {} games journalled ({:.1} MB), shared positions in a {} MB filter",
        journal.games,
        journal.len() as f64 / f64::from(1 << 20),
        shared.bytes() >> 20
    );
    // The exact counts of what two games may reach.
    peak_memory::trace("games read");
    // Repeats were left in the journal when `seen` was not kept.
    let count_repeats = !filter.allow_duplicates && from_start;
    let (reader, distinct) = finish_journal(
        journal,
        &sources,
        count_repeats,
        spill,
        journalled,
        &mut summary,
    )?;
    let spilled = SpilledBuild {
        reader: &reader,
        copied: &distinct.copied,
        sources: &sources,
        temp: &temp,
        memory: spill.memory,
        filter_bytes,
        positions,
        tails: !filter.no_tails,
    };
    let counts = spilled.exact_counts(shared, start, &mut summary)?;
    let games = GamesInOrder {
        reader: &reader,
        order: distinct.order,
        count: distinct.games,
    };
    let tail_index = PairSorter::new(
        spilled.share(SORT_SHARE),
        &temp.dir,
        &format!("{}tails", temp.prefix),
    );
    let ranges = if let Some(p) = pending {
        let ranges = spilled
            .write(&mut book, counts, games, tail_index)
            .context("writing the book")?;
        book.make_durable()?;
        drop(book);
        files::commit_new_book(p, false)?;
        ranges
    } else {
        // The new games' own book, then merged with the old one.
        drop(book);
        let part = atomic_file::Pending::temporary(&temp.path("new.sqlite"));
        let ranges = {
            let mut new = Book::open_or_create(
                part.path(),
                BookSettings {
                    min_games: 1,
                    ..settings
                },
            )?;
            new.write_unjournaled()?;
            spilled
                .write(&mut new, counts, games, tail_index)
                .context("writing the new games' book")?
        };
        merge_books(path, &[part.path().to_path_buf()], true, 1, spill.memory)
            .context("adding the new games' book")?;
        ranges
    };
    if ranges.ranges > 0 {
        summary.spill = summary.spill.map(|s| {
            let filters = match ranges.rounds {
                1 => "a sharper filter".to_string(),
                n => format!("sharper filters in {n} rounds"),
            };
            format!(
                "{s}; counted and written in {} key ranges from {filters}, valued by depth",
                ranges.ranges
            )
        });
    }
    summary.seconds = start.elapsed().as_secs_f64();
    summary.end_phase("games, tails, values and SQLite", summary.seconds);
    Ok(summary)
}

/// A shard's checks before it reads a game: its note in `summary`, and
/// whether its book is already there (a requeued task whose first run
/// finished: nothing to do). Any other existing book is an error.
fn shard_already_built(
    path: &std::path::Path,
    shard: Shard,
    job: &str,
    existing: bool,
    summary: &mut Summary,
) -> Result<bool> {
    if shard.is_whole() {
        return Ok(false);
    }
    summary.shard = Some(format!(
        "shard {shard}: the games numbered {} + {}k of the inputs (from 0)",
        shard.index, shard.count
    ));
    if !existing {
        return Ok(false);
    }
    if Book::open(path)?.shard()?.as_ref() == Some(&(shard, job.to_string())) {
        summary.shard = Some(format!(
            "{} is already shard {shard} of this job: nothing to do",
            path.display()
        ));
        return Ok(true);
    }
    bail!(
        "{} exists and is not shard {shard} of this job: a shard is a new book \
         (remove it, or give another --book)",
        path.display()
    );
}

/// The book a build writes: the existing one, or a new one in a temporary
/// file beside `path` (with the file that commits it when complete).
fn open_target(
    path: &std::path::Path,
    settings: BookSettings,
    shard: Shard,
    job: &str,
    existing: bool,
) -> Result<(Book, Option<atomic_file::Pending>)> {
    if existing {
        return Ok((Book::open(path)?, None));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // Fails now, not after the build, where a process has a book open.
    files::refuse_if_open(path)?;
    let p = atomic_file::Pending::new(path, ".building");
    let book = Book::open_or_create(p.path(), settings)?;
    book.write_unjournaled()?;
    if !shard.is_whole() {
        book.set_shard(shard, job)?;
    }
    Ok((book, Some(p)))
}

/// Reads, validates and counts every game of `inputs`, each journalled at
/// `journal`: in memory while the counts fit the budget, else in a filter
/// of shared positions; from the start in the filter for a new book of
/// more than [`JOURNAL_FROM`] of PGN (the second value: whether it did).
#[allow(clippy::too_many_arguments)]
fn count_within_budget(
    book: &Book,
    inputs: Vec<PathBuf>,
    shard: Shard,
    filter: &Filter,
    existing: bool,
    journal: &std::path::Path,
    spill: &Spill,
    summary: &mut Summary,
) -> Result<(Counter, bool)> {
    let budget_share = (spill.memory as f64 * FILTER_SHARE) as u64;
    let plain = plain_size(&inputs);
    // A big new book is counted through the journal from the start: less
    // memory, and faster (the filter costs less than every count).
    let from_start = !existing && !filter.no_tails && plain.is_some_and(|b| b > JOURNAL_FROM);
    // Repeated games are found in memory, or, through the journal from the
    // start, when its games are sorted (on disk past the budget).
    let seen = if filter.allow_duplicates || from_start {
        None
    } else {
        Some(book.game_hashes()?)
    };
    let sort_bytes = (spill.memory as f64 * SORT_SHARE) as u64;
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
            f.add_all(g.keys());
            journal::record(g)
        })
    });
    let mut counter = Counter {
        agg: (!from_start).then(|| Aggregate::new(!filter.no_tails)),
        filter: shared,
        journal: Journal::create(
            journal,
            sort_bytes,
            (spill.memory as f64 * JOURNAL_MEMORY_SHARE) as u64,
        )?,
        sources: Vec::new(),
        tails: !filter.no_tails,
        limit: (spill.memory as f64 * AGGREGATE_SHARE) as u64,
        filter_bytes,
        spilled_at: None,
        games: 0,
        positions: 0,
    };
    for_each_game_with(
        inputs,
        shard,
        filter,
        seen,
        summary,
        prepare,
        |game, record, source| {
            counter.add(game, record, source)?;
            Ok(true)
        },
    )?;
    Ok((counter, from_start))
}

/// The journal written to the end: its games sorted into id order (with
/// `count_repeats`, a game read again counted once), loaded into memory
/// when small beside the budget, and the spill noted in `summary`.
fn finish_journal(
    journal: Journal,
    sources: &[String],
    count_repeats: bool,
    spill: &Spill,
    journalled: String,
    summary: &mut Summary,
) -> Result<(JournalReader, Distinct)> {
    let sort_bytes = (spill.memory as f64 * SORT_SHARE) as u64;
    let (mut reader, distinct) = journal.finish(sources, count_repeats, sort_bytes)?;
    peak_memory::release_free();
    peak_memory::trace("journal finished");
    if count_repeats && distinct.repeats > 0 {
        summary.used -= distinct.repeats;
        *summary
            .skipped
            .entry(SkipReason::Duplicate.kind())
            .or_insert(0) += distinct.repeats;
    }
    // A journal small beside the budget is read from memory.
    let in_memory = reader.len() as f64 <= spill.memory as f64 * JOURNAL_MEMORY_SHARE;
    if in_memory {
        reader.load()?;
    }
    summary.spill = Some(if in_memory {
        format!("{journalled}; the journal read from memory")
    } else {
        journalled
    });
    Ok((reader, distinct))
}

/// A build whose games went through the journal: what writing its book
/// needs.
struct SpilledBuild<'a> {
    reader: &'a JournalReader,
    /// The games that occur more than once (they have no tail).
    copied: &'a KeySet<u64>,
    sources: &'a [String],
    temp: &'a TempFiles,
    /// The budget, bytes.
    memory: u64,
    filter_bytes: u64,
    /// Positions the games reach, each time.
    positions: u64,
    tails: bool,
}

/// A spilled build's exact counts: all at once, or (when they do not fit
/// the budget) to be taken key range by key range with this filter.
enum ExactCounts {
    Whole(Aggregate),
    InRanges(Arc<SharedFilter>),
}

/// How a book was written in key ranges, for the summary (none: at once).
#[derive(Default)]
struct RangesWritten {
    ranges: u64,
    rounds: u64,
}

impl SpilledBuild<'_> {
    /// `share` of the budget, bytes.
    fn share(&self, share: f64) -> u64 {
        (self.memory as f64 * share) as u64
    }

    /// Key ranges for the counts of about `shared` positions.
    fn parts_for(&self, shared: u64) -> u64 {
        (shared * PART_BYTES_PER_POSITION)
            .div_ceil(self.share(PART_SHARE).max(1))
            .max(1)
    }

    /// The exact counts at once when they fit the budget (the phase
    /// "exact counts"), else the filter to take them in key ranges.
    fn exact_counts(
        &self,
        shared: Arc<SharedFilter>,
        start: Instant,
        summary: &mut Summary,
    ) -> Result<ExactCounts> {
        if self.parts_for(shared.estimated_shared()) != 1 {
            return Ok(ExactCounts::InRanges(shared));
        }
        let agg = count_shared(self.reader, self.copied, &shared, self.tails)?;
        drop(shared);
        peak_memory::trace("shared positions counted");
        let counted = start.elapsed().as_secs_f64();
        summary.end_phase("exact counts", counted);
        Ok(ExactCounts::Whole(agg))
    }

    /// Writes the book at `target` (new and empty), in one go or in parts.
    fn write(
        &self,
        target: &mut Book,
        counts: ExactCounts,
        games: GamesInOrder<'_>,
        tail_index: PairSorter,
    ) -> Result<RangesWritten> {
        let shared = match counts {
            ExactCounts::Whole(agg) => {
                load::bulk_load_games(target, agg, self.sources, games, tail_index)?;
                return Ok(RangesWritten::default());
            }
            ExactCounts::InRanges(shared) => shared,
        };
        let heads = atomic_file::Pending::temporary(&self.temp.path("heads.sqlite"));
        let mut done = RangesWritten::default();
        let written =
            self.write_in_ranges(target, heads.path(), shared, games, tail_index, &mut done);
        let detached = target.end_parts();
        written?;
        detached?;
        Ok(done)
    }

    /// The counts taken and written key range by key range, then the
    /// games, then the links and values, each with its share of SQLite's
    /// cache; the ranges and rounds of filters in `done`.
    fn write_in_ranges(
        &self,
        target: &mut Book,
        heads: &std::path::Path,
        shared: Arc<SharedFilter>,
        games: GamesInOrder<'_>,
        tail_index: PairSorter,
        done: &mut RangesWritten,
    ) -> Result<()> {
        let mut w = target.parts(
            heads,
            &self.temp.dir,
            &self.temp.prefix,
            self.share(SORT_SHARE),
        )?;
        w.set_cache(self.share(CACHE_SHARE_COUNTING))?;
        let Some(mut first) = Arc::into_inner(shared) else {
            bail!("internal error: no filter to count from");
        };
        first.forget_seen();
        // The first filter, filled with every position, calls many
        // single ones shared: the key ranges are counted from sharper
        // filters, each of the keys the first calls shared in one round
        // of ranges.
        let candidates = first.estimated_shared().min(self.positions);
        let rounds = candidates
            .div_ceil(SharedFilter::capacity(self.filter_bytes).max(1))
            .max(1);
        done.rounds = rounds;
        let mut first = Some(first);
        for round in 0..rounds {
            let range = KeyRange::WHOLE.part(round, rounds);
            let Some(filter) = &first else {
                bail!("internal error: no filter to count from");
            };
            let sharper = filter.refine(self.reader, range, self.filter_bytes)?;
            if rounds == 1 {
                first = None;
            }
            let parts = self.parts_for(sharper.estimated_shared());
            peak_memory::trace(&format!(
                "round {round}/{rounds} filtered: {} estimated shared, in {parts} key ranges",
                sharper.estimated_shared()
            ));
            for index in 0..parts {
                let part = range.part(index, parts);
                let halves = count_part(self.reader, self.copied, &sharper, self.tails, part)?;
                peak_memory::trace(&format!(
                    "key range {index}/{parts} counted ({} positions, about {} MB)",
                    halves.iter().map(|(a, _)| a.nodes.len()).sum::<usize>(),
                    halves.iter().map(|(a, _)| a.approx_bytes()).sum::<u64>() >> 20,
                ));
                // Each half written and freed on its own.
                for (agg, untailed) in halves {
                    load::write_part(&mut w, agg, &untailed)?;
                }
                done.ranges += 1;
                peak_memory::release_free();
            }
        }
        // The filters have done their work.
        drop(first);
        peak_memory::release_free();
        // Past the counts, most of the budget is SQLite's.
        w.set_cache(self.share(CACHE_SHARE_WRITING))?;
        load::write_games(&mut w, self.sources, games, tail_index)?;
        peak_memory::trace("games written");
        peak_memory::release_free();
        // The values read every row and its children back: the more
        // of the book in the cache, the fewer reads.
        w.set_cache(self.share(CACHE_SHARE_VALUES))?;
        w.finish()?;
        peak_memory::trace("links and values written");
        Ok(())
    }
}

/// The fingerprint of a sharded build's job: the number of shards, the
/// inputs (by file name and size, so that shards on machines that mount
/// them elsewhere still match), the filters and the book's settings.
fn shard_job(
    shard: Shard,
    settings: &BookSettings,
    inputs: &[PathBuf],
    filter: &Filter,
) -> Result<String> {
    let mut h = learnbook_base::fnv::Fnv64::new();
    h.write_field(&shard.count.to_le_bytes());
    for input in inputs {
        if !shard.is_whole() && input.as_os_str() == "-" {
            bail!("a shard reads the inputs from files, not from standard input (each shard reads every game and keeps its own)");
        }
        let name = input.file_name().map(|n| n.to_string_lossy().into_owned());
        h.write_field(name.unwrap_or_default().as_bytes());
        if !shard.is_whole() {
            let size = std::fs::metadata(input)
                .with_context(|| format!("cannot read {}", input.display()))?
                .len();
            h.write_field(&size.to_le_bytes());
        }
    }
    let options = format!(
        "{:?} {} {} {} {:?}",
        filter.min_elo, filter.allow_duplicates, filter.no_tails, settings.max_ply, settings.params
    );
    h.write_field(options.as_bytes());
    h.write_field(&settings.min_games.to_le_bytes());
    Ok(format!("{:016x}", h.finish()))
}
