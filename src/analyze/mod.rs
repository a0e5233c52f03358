//! Analysis: the search core (or any UCI engine) over a book's positions,
//! as Buro's book learning does it: every position with enough games gets
//! a search score and the score of its best move outside the book (the
//! deviation), the leaves of that tree a search score. The scores go into
//! the book's `analysis` table, where the value formula reads them.
//!
//! This sits above both foundations: it reads the book and drives the
//! search; neither `book` nor `engine` knows of the other.

pub mod analyst;
pub mod grow;
pub mod improve;
pub mod journal;
pub mod plan;
pub mod pool;
pub mod quality;
pub mod targets;

use std::{
    io::IsTerminal,
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};
use shakmaty::{Move, Position as _};

pub use analyst::{Analyst, AnalystSpec, EngineChoice};
pub use targets::Target;

use crate::book::{
    db::{analysis_file::AnalysisFile, Analysis},
    keys::{Key, MoveCode},
    values::minimax::child_score,
    Book,
};
use crate::shard::Shard;
use std::path::Path;

/// How long each search may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    Nodes(u64),
    Movetime(u64),
    /// Plies of iterative deepening (UCI `go depth`).
    Depth(u32),
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Budget::Nodes(n) => write!(f, "nodes={n}"),
            Budget::Movetime(ms) => write!(f, "movetime={ms}"),
            Budget::Depth(d) => write!(f, "depth={d}"),
        }
    }
}

impl Budget {
    /// The budget a stored `analysis.budget` names (`None`: not one of ours).
    pub fn parse(s: &str) -> Option<Budget> {
        let (kind, n) = s.split_once('=')?;
        match kind {
            "nodes" => n.parse().ok().map(Budget::Nodes),
            "movetime" => n.parse().ok().map(Budget::Movetime),
            "depth" => n.parse().ok().map(Budget::Depth),
            _ => None,
        }
    }

    /// Whether a search made with `self` is at least as deep as one with
    /// `other` would be: the same kind of budget, at least as large.
    /// Budgets of different kinds are not compared (a run at one kind
    /// searches again what another kind stored).
    pub fn covers(&self, other: &Budget) -> bool {
        match (self, other) {
            (Budget::Nodes(a), Budget::Nodes(b)) => a >= b,
            (Budget::Movetime(a), Budget::Movetime(b)) => a >= b,
            (Budget::Depth(a), Budget::Depth(b)) => a >= b,
            _ => false,
        }
    }

    /// The budget from the command line's `--nodes`, `--movetime` and
    /// `--depth` (at most one of the last two).
    pub fn from_limits(nodes: u64, movetime: Option<u64>, depth: Option<u32>) -> Result<Budget> {
        Ok(match (movetime, depth) {
            (Some(_), Some(_)) => bail!("give --movetime or --depth, not both"),
            (Some(0), None) => bail!("--movetime must be at least 1"),
            (Some(ms), None) => Budget::Movetime(ms),
            (None, Some(0)) => bail!("--depth must be at least 1"),
            (None, Some(d)) => Budget::Depth(d),
            (None, None) if nodes == 0 => bail!("--nodes must be at least 1"),
            (None, None) => Budget::Nodes(nodes),
        })
    }
}

/// `analyze`'s defaults: the budget the judged master book was analysed
/// with (about 50 minutes on two cores for the 145,716 master games).
pub const DEFAULT_NODES: u64 = 40_000;
pub const DEFAULT_MIN_GAMES: u32 = 20;

#[derive(Clone, Debug)]
pub struct Options {
    pub engine: EngineChoice,
    pub budget: Budget,
    pub threads: usize,
    pub min_games: u32,
    /// Results stored per transaction (at most; a batch is also written
    /// every few seconds).
    pub batch: usize,
    pub progress: bool,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Positions analysed before, with this engine and budget (skipped).
    pub already: usize,
    pub analysed: usize,
    pub interior: usize,
    pub leaves: usize,
    /// Positions still to do (after an interruption or an error).
    pub left: usize,
    pub seconds: f64,
    pub interrupted: bool,
}

impl Summary {
    pub fn report(&self) -> String {
        format!(
            "analysed {} positions ({} interior with their deviation, {} leaves) in {:.1} s, {:.1} positions/s; {} already analysed at this budget{}\n",
            self.analysed,
            self.interior,
            self.leaves,
            self.seconds,
            self.analysed as f64 / self.seconds.max(1e-9),
            self.already,
            if self.left > 0 {
                format!("; {} left: run again to continue", self.left)
            } else {
                String::new()
            }
        )
    }
}

/// A search result as an analysis row: no deviation yet, no book moves.
pub fn searched_row(
    key: Key,
    score: i32,
    depth: u32,
    interior: bool,
    engine: &str,
    budget: Budget,
) -> Analysis {
    Analysis {
        key,
        score,
        depth,
        interior,
        deviation: None,
        dev_move: None,
        dev_depth: None,
        book_moves: 0,
        engine: engine.to_string(),
        budget: budget.to_string(),
        grown: None,
    }
}

/// Searches one target: the position, then (interior) its best move
/// outside the book, unless the first search already chose one.
pub fn analyse_target(
    a: &mut dyn Analyst,
    t: &Target,
    engine: &str,
    budget: Budget,
) -> Result<Analysis> {
    let whole = a.search(&t.pos, &[], true)?;
    let mut out = Analysis {
        book_moves: t.book_moves.len() as u32,
        ..searched_row(t.key, whole.score, whole.depth, t.interior, engine, budget)
    };
    if t.interior {
        let outside = t.outside_moves();
        let chosen_outside = whole
            .best
            .as_ref()
            .filter(|b| outside.contains(b))
            .is_some();
        let dev = if outside.is_empty() {
            None
        } else if chosen_outside {
            Some(whole.clone())
        } else {
            Some(a.search(&t.pos, &outside, false)?)
        };
        if let Some(d) = dev {
            out.deviation = Some(d.score);
            out.dev_move = d.best.as_ref().map(MoveCode::from_move);
            out.dev_depth = Some(d.depth);
        }
    }
    Ok(out)
}

/// [`analyse_target`] for a target with leaves ([`targets::group_leaves`])
/// on an engine with MultiPV: one search of the best `book moves + 1`
/// lines scores the position, its book moves (the leaves' scores, from
/// their side) and its best move outside the book; book moves of leaves
/// outside those lines get one more MultiPV search restricted to them, and
/// a leaf the engine still gave no line is searched alone. Returns the
/// target's row, then its leaves'.
pub fn analyse_target_lines(
    a: &mut dyn Analyst,
    t: &Target,
    engine: &str,
    budget: Budget,
) -> Result<Vec<Analysis>> {
    if t.leaves.is_empty() || !t.interior || !a.has_multipv() {
        let mut rows = vec![analyse_target(a, t, engine, budget)?];
        for leaf in &t.leaves {
            rows.push(analyse_target(a, leaf, engine, budget)?);
        }
        return Ok(rows);
    }
    let all: Vec<Move> = t.pos.legal_moves().into_iter().collect();
    let outside = t.outside_moves();
    let (mut lines, _) = a.search_lines(&t.pos, &all, t.book_moves.len() + 1, true)?;
    let Some(first) = lines.first().cloned() else {
        bail!("the engine gave no line");
    };
    let line_of = |lines: &[analyst::Searched], mv: MoveCode| {
        lines
            .iter()
            .find(|l| l.best.as_ref().map(MoveCode::from_move) == Some(mv))
            .cloned()
    };
    let missing: Vec<Move> = t
        .leaves
        .iter()
        .filter_map(|l| l.via.map(|v| v.1))
        .filter(|&mv| line_of(&lines, mv).is_none())
        .filter_map(|mv| mv.to_move(&t.pos))
        .collect();
    if !missing.is_empty() {
        let (more, _) = a.search_lines(&t.pos, &missing, missing.len(), false)?;
        lines.extend(more);
    }
    let dev = match lines
        .iter()
        .find(|l| l.best.as_ref().is_some_and(|b| outside.contains(b)))
    {
        Some(l) => Some(l.clone()),
        None if outside.is_empty() => None,
        None => Some(a.search(&t.pos, &outside, false)?),
    };
    let mut out = Analysis {
        book_moves: t.book_moves.len() as u32,
        ..searched_row(t.key, first.score, first.depth, true, engine, budget)
    };
    if let Some(d) = dev {
        out.deviation = Some(d.score);
        out.dev_move = d.best.as_ref().map(MoveCode::from_move);
        out.dev_depth = Some(d.depth);
    }
    let mut rows = vec![out];
    for leaf in &t.leaves {
        match leaf.via.and_then(|(_, mv)| line_of(&lines, mv)) {
            Some(l) => rows.push(searched_row(
                leaf.key,
                child_score(l.score),
                l.depth.saturating_sub(1).max(1),
                false,
                engine,
                budget,
            )),
            None => rows.push(analyse_target(a, leaf, engine, budget)?),
        }
    }
    Ok(rows)
}

/// Analyses `targets` on `opts.threads` engines, storing the results in
/// batches (each its own transaction, with the values it changes), so that
/// a run killed at any point keeps what it stored and a rerun continues.
pub fn run_targets(book: &mut Book, todo: Vec<Target>, opts: &Options) -> Result<Summary> {
    let total = todo.iter().map(|t| 1 + t.leaves.len()).sum();
    let mut todo = todo.into_iter();
    run_targets_into(total, &mut || Ok(todo.next()), opts, None, &mut |batch| {
        book.store_analysis(batch).map(drop)
    })
}

/// [`run_targets_into`] on a plan's targets, read back by a thread of its
/// own while the engines search.
pub(crate) fn run_plan_into(
    plan: plan::Plan,
    opts: &Options,
    deadline: Option<Instant>,
    store: &mut dyn FnMut(&[Analysis]) -> Result<()>,
) -> Result<Summary> {
    let total = plan.positions;
    std::thread::scope(|scope| {
        // A few targets ahead of the engines: the rest stay on disk.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Target>>(64);
        scope.spawn(move || {
            let drained = plan.drain(|t| Ok(tx.send(Ok(t)).is_ok()));
            if let Err(e) = drained {
                let _ = tx.send(Err(e));
            }
        });
        // `next` owns the receiver: dropped on return, it stops the reader.
        let mut next = move || rx.recv().ok().transpose();
        run_targets_into(total, &mut next, opts, deadline, store)
    })
}

/// [`run_targets`] on the `total` positions (targets and their leaves)
/// `next` hands over in order, each batch handed to `store` (the book, or
/// a shard's analysis file); at `deadline` the searches running are
/// finished and stored, the rest left (as on Ctrl-C).
fn run_targets_into(
    total: usize,
    next: &mut dyn FnMut() -> Result<Option<Target>>,
    opts: &Options,
    deadline: Option<Instant>,
    store: &mut dyn FnMut(&[Analysis]) -> Result<()>,
) -> Result<Summary> {
    let start = Instant::now();
    let engine = opts.engine.label();
    let mut summary = Summary::default();
    let mut next_report = 1000;
    let bar = progress_bar(opts.progress, total as u64);
    let mut failure: Option<anyhow::Error> = None;
    let mut stored = 0usize;
    let work = |a: &mut dyn Analyst, t: Target| {
        analyse_target_lines(a, &t, &engine, opts.budget).with_context(|| {
            format!(
                "analysing {}",
                shakmaty::fen::Fen::from_position(&t.pos, shakmaty::EnPassantMode::Legal)
            )
        })
    };
    // Jobs queued ahead of the engines, so that none waits for one.
    let ahead = opts.threads.max(1) * 4;
    pool::run(&opts.engine, opts.budget, opts.threads, &work, |pool| {
        let mut queued = 0usize;
        let mut more = true;
        let mut batch = Vec::new();
        let mut last = Instant::now();
        let mut flush = |batch: &mut Vec<Analysis>, summary: &mut Summary| -> Result<()> {
            if batch.is_empty() {
                return Ok(());
            }
            store(batch)?;
            for a in batch.iter() {
                summary.analysed += 1;
                if a.interior {
                    summary.interior += 1;
                } else {
                    summary.leaves += 1;
                }
            }
            batch.clear();
            Ok(())
        };
        while stored < total && failure.is_none() {
            // Queued before the deadline is looked at, as when every job
            // was queued at once: the engines take their first ones.
            while more && queued < ahead {
                match next() {
                    Ok(Some(t)) => {
                        more = pool.submit(t);
                        queued += usize::from(more);
                    }
                    Ok(None) => more = false,
                    Err(e) => {
                        more = false;
                        pool.stop();
                        failure.get_or_insert(e);
                    }
                }
            }
            if failure.is_some() || deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            let r = match pool.next(Duration::from_millis(500)) {
                pool::Next::Done(r) => {
                    queued -= 1;
                    r
                }
                // On Ctrl-C the workers stop taking jobs.
                pool::Next::Waiting if !crate::interrupt::interrupted() => continue,
                pool::Next::Waiting | pool::Next::Closed => break,
            };
            match r {
                Ok(rows) => {
                    stored += rows.len();
                    batch.extend(rows);
                    bar.set_position(stored as u64);
                    if bar.is_hidden() && stored >= next_report {
                        next_report += 1000;
                        eprintln!(
                            "analyse: {stored}/{total} positions, {:.1}/s",
                            stored as f64 / start.elapsed().as_secs_f64()
                        );
                    }
                }
                Err(e) => {
                    pool.stop();
                    failure.get_or_insert(e);
                }
            }
            if batch.len() >= opts.batch || last.elapsed() > Duration::from_secs(5) {
                if let Err(e) = flush(&mut batch, &mut summary) {
                    pool.stop();
                    failure.get_or_insert(e);
                }
                last = Instant::now();
            }
        }
        // What the workers finish after a stop is stored too.
        batch.extend(pool.finish().into_iter().filter_map(Result::ok).flatten());
        if let Err(e) = flush(&mut batch, &mut summary) {
            failure.get_or_insert(e);
        }
    });
    bar.finish_and_clear();
    summary.seconds = start.elapsed().as_secs_f64();
    summary.left = total - summary.analysed;
    summary.interrupted = crate::interrupt::interrupted();
    if let Some(e) = failure {
        return Err(e.context(format!(
            "analysis stopped; {} positions stored before the error are kept",
            summary.analysed
        )));
    }
    Ok(summary)
}

/// `learnbook analyze`: every target of the book not yet analysed with this
/// engine and budget.
pub fn run(book: &mut Book, opts: &Options) -> Result<Summary> {
    if opts.min_games == 0 {
        bail!("--min-games must be at least 1");
    }
    let engine = opts.engine.label();
    let every = |_: Key| true;
    let plan = plan_targets(
        book,
        opts,
        &engine,
        &plan::Choice {
            group: None,
            keep: &every,
        },
    )?;
    let already = plan.done;
    let mut s = run_plan_into(plan, opts, None, &mut |batch| {
        book.store_analysis(batch).map(drop)
    })?;
    s.already = already;
    Ok(s)
}

/// The targets of `analyze`, as `choice` says, within the book's memory
/// budget ([`Book::memory_budget`], else [`default_memory`]).
fn plan_targets(
    book: &Book,
    opts: &Options,
    engine: &str,
    choice: &plan::Choice<'_>,
) -> Result<plan::Plan> {
    plan::plan(
        book,
        opts.min_games,
        None,
        engine,
        &opts.budget.to_string(),
        &crate::book::keys::KeyMap::default(),
        choice,
        &std::env::temp_dir(),
        plan_memory(book),
    )
}

/// The memory a pass's plan may hold: the book's budget
/// ([`Book::memory_budget`], set by `--memory`), else the default one.
pub(crate) fn plan_memory(book: &Book) -> u64 {
    book.memory_budget()
        .unwrap_or_else(crate::book::memory::default_memory)
}

/// `analyze --shard I/N --out FILE`: the targets of `book` whose key the
/// shard owns, not yet analysed with this engine and budget (in the book
/// or in the file), searched into the shard's own file; the book is only
/// read. `merge` adds the N files to the book.
pub fn run_shard(book: &Book, opts: &Options, shard: Shard, out: &Path) -> Result<Summary> {
    if opts.min_games == 0 {
        bail!("--min-games must be at least 1");
    }
    let engine = opts.engine.label();
    let budget = opts.budget.to_string();
    let analysed = book.fingerprint()?;
    let mut h = crate::fnv::Fnv64::new();
    for field in [
        analysed.as_str(),
        &engine,
        &budget,
        &opts.min_games.to_string(),
        &shard.count.to_string(),
    ] {
        h.write_field(field.as_bytes());
    }
    let job = format!("{:016x}", h.finish());
    let mut file = AnalysisFile::create_or_resume(out, shard, &job, &analysed)?;
    let in_file = file.keys()?;
    // The shard's targets already in its file are not searched again.
    let in_file_owned = std::cell::Cell::new(0usize);
    let keep = |k: Key| {
        let owned = shard.owns(k.0);
        let kept = owned && !in_file.contains(&k);
        in_file_owned.set(in_file_owned.get() + usize::from(owned && !kept));
        kept
    };
    let plan = plan_targets(
        book,
        opts,
        &engine,
        &plan::Choice {
            group: None,
            keep: &keep,
        },
    )?;
    let mut s = run_plan_into(plan, opts, None, &mut |batch| file.store(batch))?;
    s.already = in_file_owned.get();
    Ok(s)
}

/// The book a shard's search reads: opened once with [`Book::open`] (which
/// upgrades an older book), then read only, as the shards may share the
/// book's file (`analyze --shard`, `improve --shard`).
pub fn open_for_shard(path: &Path) -> Result<Book> {
    Book::open(path)?;
    Book::open_read_only(path)
}

/// Searches `positions` (key and board) that this engine at this budget
/// has not analysed yet, as leaves: `suite --analyze` on its exits.
pub fn run_on_positions(
    book: &mut Book,
    positions: &[(crate::book::keys::Key, shakmaty::Chess)],
    opts: &Options,
) -> Result<Summary> {
    let engine = opts.engine.label();
    let found = targets::leaves(book, positions, &engine, &opts.budget.to_string())?;
    let mut s = run_targets(book, found.todo, opts)?;
    s.already = found.done;
    Ok(s)
}

/// Analyses what one learned game added or changed (`positions`: the game's
/// boards, start first).
pub fn run_on_game(
    book: &mut Book,
    positions: &[shakmaty::Chess],
    opts: &Options,
) -> Result<Summary> {
    let engine = opts.engine.label();
    let found = targets::on_path(
        book,
        positions,
        opts.min_games,
        &engine,
        &opts.budget.to_string(),
    )?;
    let mut s = run_targets(
        book,
        found.todo,
        &Options {
            progress: false,
            ..opts.clone()
        },
    )?;
    s.already = found.done;
    Ok(s)
}

/// The boards of a game from `start` through `moves`, start first.
pub fn boards(start: &shakmaty::Chess, moves: &[Move]) -> Vec<shakmaty::Chess> {
    let mut out = Vec::with_capacity(moves.len() + 1);
    let mut pos = start.clone();
    out.push(pos.clone());
    for m in moves {
        pos.play_unchecked(*m);
        out.push(pos.clone());
    }
    out
}

fn progress_bar(show: bool, total: u64) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressStyle};
    if show && std::io::stderr().is_terminal() {
        let pb = ProgressBar::new(total);
        if let Ok(style) = ProgressStyle::with_template(
            "analyse [{elapsed_precise}] {bar:30} {pos}/{len} positions ({per_sec}, eta {eta})",
        ) {
            pb.set_style(style);
        }
        pb
    } else {
        ProgressBar::hidden()
    }
}
