//! `learnbook grow`: drop-out expansion (Lincke 2000), the book grown by an
//! engine where games run out, without games.
//!
//! A book move costs `1 + alpha * drop` to follow, `drop = v(n) - q` the
//! value it gives up against its position's value (0 for the choice); a
//! position's priority is the cheapest path to it from the root plus, where
//! the analysis found a move outside the book, `alpha` times the value that
//! leaving by it gives up. This is the priority of Lincke's drop-out
//! expansion as Fuego's and Benzene's book builders compute it (a node
//! takes its children's minimum); on a DAG that minimum over paths is the
//! shortest path, found here by Dijkstra over the book's forward moves.
//! Large `alpha` goes deep along the book's choices, small `alpha` broad.
//!
//! Expanding a position searches its best `width` moves outside the book
//! and one more as the deviation: one MultiPV search over the moves outside
//! the book (`searchmoves`) where a UCI engine offers MultiPV, else one
//! search each, `searchmoves` less the moves found (the search core); and the
//! positions of its game moves that have no search score yet (so that game
//! and engine moves are valued by the same searches). They are
//! stored as engine moves with the positions they lead to, searched, and
//! the book is re-evaluated at once (`Book::store_expansions`). Positions in
//! flight are not selected again (virtual loss), so every thread expands a
//! different leaf; results are stored in small batches, each a transaction.

use std::cmp::Ordering as CmpOrdering;
use std::collections::{BinaryHeap, HashSet};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use shakmaty::{uci::UciMove, CastlingMode, Chess, Move, Position};

use super::{pool, progress_bar, Analyst, Budget};
use crate::book::db::grow::{EngineMove, Expansion};
use crate::book::db::Analysis;
use crate::book::keys::{polyglot_key, Key, MoveCode};
use crate::book::values::minimax::child_score;
use crate::book::Book;

/// How `grow` runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The engine, its budget a search, threads and progress (as `analyze`).
    pub analysis: super::Options,
    /// Weight of the value a move gives up against one ply of depth.
    pub alpha: f64,
    /// Engine moves an expansion adds.
    pub width: usize,
    /// Stop after this many expansions ...
    pub expansions: Option<usize>,
    /// ... or after this long (whichever comes first).
    pub time: Option<Duration>,
    /// Grow from the position after these moves (UCI), not the start.
    pub from: Vec<String>,
    /// Expand only positions at least this many games reach (0: any, the
    /// engine's own positions too; 3: the games' tree where it thins out).
    pub min_games: u32,
}

/// `--alpha`'s default: a move that gives up 0.05 (about 27 cp) costs as
/// much as one ply more.
pub const DEFAULT_ALPHA: f64 = 20.0;
pub const DEFAULT_WIDTH: usize = 2;

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub expansions: usize,
    pub engine_moves: usize,
    pub new_positions: usize,
    pub searches: usize,
    /// Deepest ply of an engine move's position added.
    pub max_depth: u32,
    pub seconds: f64,
    pub interrupted: bool,
    /// Nothing left to expand (every position of the book within its
    /// maximum ply expanded).
    pub exhausted: bool,
}

impl Summary {
    pub fn report(&self) -> String {
        format!(
            "grew {} positions in {:.1} s ({:.2} expansions/s, {} searches): {} engine moves, {} new positions, deepest ply {}{}\n",
            self.expansions,
            self.seconds,
            self.expansions as f64 / self.seconds.max(1e-9),
            self.searches,
            self.engine_moves,
            self.new_positions,
            self.max_depth,
            if self.exhausted {
                "; nothing left to expand"
            } else {
                ""
            }
        )
    }
}

/// A position to expand.
#[derive(Clone, Debug)]
struct Job {
    key: Key,
    pos: Chess,
    depth: u32,
    /// Every move of the book here (games' and engine's): not searched.
    book_moves: Vec<MoveCode>,
    /// Book moves with games (what `analyze` counts).
    game_moves: u32,
    /// The position's own score and depth, if this engine at this budget
    /// already searched it (else the expansion does).
    prior: Option<(i32, u32)>,
    /// The positions of its game moves without a search score: searched
    /// too, so that game and engine moves are valued alike.
    unsearched: Vec<(Key, Chess)>,
}

/// An expansion and the searches it took.
struct Expanded {
    expansion: Expansion,
    depth: u32,
    searches: usize,
}

/// Grows `book` (see the module documentation).
pub fn run(book: &mut Book, opts: &Options) -> Result<Summary> {
    run_recorded(book, opts, &mut |_| Ok(()))
}

/// [`run`], each batch of expansions handed to `record` before the book
/// stores it (`improve`'s journal: after a kill it holds all the book does).
pub fn run_recorded(
    book: &mut Book,
    opts: &Options,
    record: &mut dyn FnMut(&[Expansion]) -> Result<()>,
) -> Result<Summary> {
    if opts.width == 0 {
        bail!("--width must be at least 1");
    }
    if !(opts.alpha >= 0.0 && opts.alpha.is_finite()) {
        bail!("--alpha must be a number >= 0, got {}", opts.alpha);
    }
    if opts.expansions == Some(0) {
        bail!("--expansions must be at least 1");
    }
    let root = root_of(book, &opts.from)?;
    let a = &opts.analysis;
    let engine = a.engine.label();
    let budget = a.budget;
    let threads = a.threads.max(1);
    let start = Instant::now();
    let deadline = opts.time.map(|t| start + t);
    let mut summary = Summary::default();
    let bar = progress_bar(a.progress, opts.expansions.unwrap_or(0) as u64);
    let work = |an: &mut dyn Analyst, job: Job| {
        expand(an, &job, opts.width, &engine, budget).with_context(|| {
            format!(
                "{engine} expanding {}",
                shakmaty::fen::Fen::from_position(&job.pos, shakmaty::EnPassantMode::Legal)
            )
        })
    };
    let mut failure: Option<anyhow::Error> = None;
    pool::run(&a.engine, budget, threads, &work, |pool| {
        // Selected and not yet stored: not selected again.
        let mut claimed: HashSet<Key> = HashSet::new();
        let mut in_flight = 0usize;
        let mut started = 0usize;
        let mut batch: Vec<Expanded> = Vec::new();
        let mut last_store = Instant::now();
        let store = |book: &mut Book,
                     batch: &mut Vec<Expanded>,
                     claimed: &mut HashSet<Key>,
                     summary: &mut Summary,
                     record: &mut dyn FnMut(&[Expansion]) -> Result<()>|
         -> Result<()> {
            if batch.is_empty() {
                return Ok(());
            }
            let xs: Vec<Expansion> = batch.iter().map(|e| e.expansion.clone()).collect();
            record(&xs)?;
            let stored = book.store_expansions(&xs)?;
            for e in batch.drain(..) {
                claimed.remove(&e.expansion.parent);
                summary.expansions += 1;
                summary.searches += e.searches;
                if !e.expansion.moves.is_empty() {
                    summary.max_depth = summary.max_depth.max(e.depth + 1);
                }
            }
            summary.engine_moves += stored.moves;
            summary.new_positions += stored.new_positions;
            bar.set_position(summary.expansions as u64);
            if bar.is_hidden() && summary.expansions / 100 != (summary.expansions - xs.len()) / 100
            {
                eprintln!(
                    "grow: {} expansions, {:.2}/s",
                    summary.expansions,
                    summary.expansions as f64 / start.elapsed().as_secs_f64()
                );
            }
            Ok(())
        };
        loop {
            let out_of_time = deadline.is_some_and(|d| Instant::now() >= d);
            let stopping = failure.is_some() || crate::interrupt::interrupted() || out_of_time;
            if stopping {
                // The searches under way are finished and kept.
                for r in pool.finish() {
                    match r {
                        Ok(e) => batch.push(e),
                        Err(e) => {
                            failure.get_or_insert(e);
                        }
                    }
                }
                if let Err(e) = store(book, &mut batch, &mut claimed, &mut summary, &mut *record) {
                    failure.get_or_insert(e);
                }
                return;
            }
            let room = opts.expansions.map_or(usize::MAX, |l| l - started);
            if in_flight < 2 * threads && room > 0 {
                // Larger selections as the grown part (which each selection
                // walks again) gets larger.
                let want = (4 * threads).max(summary.expansions / 8).min(256).min(room);
                let jobs: Result<Vec<Job>> =
                    select(book, &root, opts, want, &claimed).and_then(|c| {
                        c.into_iter()
                            .map(|c| job(book, c, &engine, budget))
                            .collect()
                    });
                match jobs {
                    Ok(jobs) => {
                        if jobs.is_empty() && in_flight == 0 && batch.is_empty() {
                            summary.exhausted = true;
                            return;
                        }
                        for j in jobs {
                            claimed.insert(j.key);
                            in_flight += 1;
                            started += 1;
                            pool.submit(j);
                        }
                    }
                    Err(e) => {
                        failure = Some(e);
                        continue;
                    }
                }
            }
            if in_flight == 0 && batch.is_empty() {
                return;
            }
            match pool.next(Duration::from_millis(200)) {
                pool::Next::Done(Ok(e)) => {
                    in_flight -= 1;
                    batch.push(e);
                }
                pool::Next::Done(Err(e)) => {
                    in_flight -= 1;
                    failure = Some(e);
                    continue;
                }
                pool::Next::Waiting => {}
                pool::Next::Closed => {
                    failure.get_or_insert_with(|| anyhow!("every engine stopped"));
                    continue;
                }
            }
            let due = batch.len() >= threads
                || in_flight == 0
                || last_store.elapsed() > Duration::from_secs(1);
            if due && !batch.is_empty() {
                if let Err(e) = store(book, &mut batch, &mut claimed, &mut summary, &mut *record) {
                    failure = Some(e);
                }
                last_store = Instant::now();
            }
        }
    });
    bar.finish_and_clear();
    summary.seconds = start.elapsed().as_secs_f64();
    summary.interrupted = crate::interrupt::interrupted();
    if let Some(e) = failure {
        return Err(e.context(format!(
            "grow stopped; every expansion stored before the error is kept ({} this run)",
            summary.expansions
        )));
    }
    Ok(summary)
}

/// The position to grow from: the start, or after `line` (UCI moves),
/// which must stay in the book.
fn root_of(book: &Book, line: &[String]) -> Result<(Key, Chess)> {
    let mut pos = Chess::default();
    for (i, m) in line.iter().enumerate() {
        let mv = m
            .parse::<UciMove>()
            .ok()
            .and_then(|u| u.to_move(&pos).ok())
            .ok_or_else(|| anyhow!("--from: move {} ({m:?}) is not legal there", i + 1))?;
        pos.play_unchecked(mv);
    }
    let key = polyglot_key(&pos);
    match book.position(key)? {
        Some(n) if n.depth.is_some() => Ok((key, pos)),
        _ => bail!(
            "--from: the position after {:?} is not in the book",
            line.join(" ")
        ),
    }
}

/// A candidate position, by priority.
#[derive(Debug)]
struct Entry {
    cost: f64,
    seq: u64,
    key: Key,
    pos: Chess,
    depth: u32,
    /// The position's own expansion (else: a visit of the position).
    expand: bool,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// The lowest cost first (a max-heap pops the greatest), then the
    /// earliest pushed, so that the order does not depend on hashing.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        other
            .cost
            .total_cmp(&self.cost)
            .then(other.seq.cmp(&self.seq))
    }
}

/// The `want` positions to expand next, lowest priority first, none of
/// them `claimed`.
fn select(
    book: &Book,
    root: &(Key, Chess),
    opts: &Options,
    want: usize,
    claimed: &HashSet<Key>,
) -> Result<Vec<Entry>> {
    let (alpha, min_games) = (opts.alpha, opts.min_games);
    let max_ply = book.settings.max_ply;
    let mut heap = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |heap: &mut BinaryHeap<Entry>, cost, key, pos, depth, expand| {
        seq += 1;
        heap.push(Entry {
            cost,
            seq,
            key,
            pos,
            depth,
            expand,
        });
    };
    push(&mut heap, 0.0, root.0, root.1.clone(), 0, false);
    let mut settled: HashSet<Key> = HashSet::new();
    let mut out = Vec::new();
    while let Some(e) = heap.pop() {
        if e.expand {
            out.push(e);
            if out.len() >= want {
                break;
            }
            continue;
        }
        if !settled.insert(e.key) {
            continue;
        }
        let Some(node) = book.position(e.key)? else {
            continue;
        };
        let Some(depth) = node.depth else { continue };
        if node.exact.is_some() {
            continue;
        }
        let grown = book.analysis(e.key)?.is_some_and(|a| a.grown.is_some());
        let eligible = node.counts.total() >= min_games && depth < max_ply;
        if eligible && !grown && !claimed.contains(&e.key) && !e.pos.is_game_over() {
            let drop = match node.deviation {
                Some(Some(d)) => (node.value - d).max(0.0),
                _ => 0.0,
            };
            push(
                &mut heap,
                e.cost + alpha * drop,
                e.key,
                e.pos.clone(),
                depth,
                true,
            );
        }
        for m in book.moves(e.key)? {
            let (Some(child), Some(q), Some(child_depth)) = (m.child, m.q, m.child_depth) else {
                continue;
            };
            // Forward moves with an option's value only (as the formula
            // ranks them); a move back to an earlier ply is not followed.
            let valued = m.child_games > 0 || m.child_engine;
            if !valued || m.child_exact || m.all_lost || child_depth <= depth {
                continue;
            }
            // Below `min_games` (games only thin out along a line) nothing
            // is expanded: not walked.
            if m.child_games < min_games {
                continue;
            }
            if settled.contains(&child) {
                continue;
            }
            let Some(mv) = m.mv.to_move(&e.pos) else {
                continue;
            };
            let mut next = e.pos.clone();
            next.play_unchecked(mv);
            let cost = e.cost + 1.0 + alpha * (node.value - q).max(0.0);
            push(&mut heap, cost, child, next, child_depth, false);
        }
    }
    Ok(out)
}

/// What a worker needs to expand `c`, read from the book.
fn job(book: &Book, c: Entry, engine: &str, budget: Budget) -> Result<Job> {
    let moves = book.moves(c.key)?;
    let mut unsearched = Vec::new();
    for m in moves
        .iter()
        .filter(|m| m.counts.total() > 0 && !m.child_exact)
    {
        let (Some(child), Some(mv)) = (m.child, m.mv.to_move(&c.pos)) else {
            continue;
        };
        if book.analysis(child)?.is_none() {
            let mut next = c.pos.clone();
            next.play_unchecked(mv);
            if !next.is_game_over() {
                unsearched.push((child, next));
            }
        }
    }
    let prior = book
        .analysis(c.key)?
        .filter(|a| a.engine == engine && a.budget == budget.to_string())
        .map(|a| (a.score, a.depth));
    Ok(Job {
        key: c.key,
        pos: c.pos,
        depth: c.depth,
        book_moves: moves.iter().map(|m| m.mv).collect(),
        game_moves: moves.iter().filter(|m| m.counts.total() > 0).count() as u32,
        prior,
        unsearched,
    })
}

/// Searches `job`'s best `width` moves outside the book and the next best
/// as its deviation.
fn expand(
    a: &mut dyn Analyst,
    job: &Job,
    width: usize,
    engine: &str,
    budget: Budget,
) -> Result<Expanded> {
    let mut outside: Vec<Move> = job
        .pos
        .legal_moves()
        .into_iter()
        .filter(|m| !job.book_moves.contains(&MoveCode::from_move(m)))
        .collect();
    let mut lines: Vec<(Move, i32, u32)> = Vec::new();
    let mut searches = 0;
    let (score, depth) = match job.prior {
        Some(p) => p,
        None => {
            let whole = a.search(&job.pos, &[], true)?;
            searches += 1;
            if let Some(b) = whole.best.filter(|b| outside.contains(b)) {
                outside.retain(|m| *m != b);
                lines.push((b, whole.score, whole.depth));
            }
            (whole.score, whole.depth)
        }
    };
    if lines.len() <= width && !outside.is_empty() {
        let wanted = width + 1 - lines.len();
        let (found, n) = a.search_lines(&job.pos, &outside, wanted, job.prior.is_some())?;
        searches += n;
        for r in found {
            let Some(b) = r.best else { break };
            if !outside.contains(&b) {
                bail!(
                    "the engine answered {}, not one of the moves it was asked to search (UCI searchmoves)",
                    b.to_uci(CastlingMode::Standard)
                );
            }
            outside.retain(|m| *m != b);
            lines.push((b, r.score, r.depth));
        }
    }
    let deviation = if lines.len() > width {
        lines.pop()
    } else {
        None
    };
    let searched = |key, score, depth, interior| {
        super::searched_row(key, score, depth, interior, engine, budget)
    };
    let moves = lines
        .iter()
        .map(|&(mv, s, d)| {
            let mut next = job.pos.clone();
            next.play_unchecked(mv);
            let child = polyglot_key(&next);
            EngineMove {
                mv: MoveCode::from_move(&mv),
                uci: mv.to_uci(CastlingMode::Standard).to_string(),
                child,
                child_analysis: searched(child, child_score(s), d.saturating_sub(1), false),
            }
        })
        .collect();
    let mut leaves = Vec::with_capacity(job.unsearched.len());
    for (key, pos) in &job.unsearched {
        let r = a.search(pos, &[], true)?;
        searches += 1;
        leaves.push(searched(*key, r.score, r.depth, false));
    }
    let analysis = Analysis {
        deviation: deviation.map(|d| d.1),
        dev_move: deviation.map(|d| MoveCode::from_move(&d.0)),
        dev_depth: deviation.map(|d| d.2),
        book_moves: job.game_moves,
        grown: Some(width as u32),
        ..searched(job.key, score, depth, true)
    };
    Ok(Expanded {
        expansion: Expansion {
            parent: job.key,
            analysis,
            moves,
            leaves,
        },
        depth: job.depth,
        searches,
    })
}
