//! `bench multipv`: scoring a position's book moves by one MultiPV search
//! against one search a child, at one engine and budget, on the same
//! positions: positions per second, and how near each comes to a deeper
//! reference (the same engine at a larger budget, one search a child).

use std::{path::PathBuf, time::Instant};

use anyhow::{bail, Result};
use clap::Args;
use learnbook::{
    analyze::{self, analyst::Searched, Analyst, Budget, EngineChoice},
    book::Book,
};
use shakmaty::{Chess, Move, Position};

/// A position's book moves scored by one MultiPV search against one search a child (same
/// engine, budget and positions): positions per second, and each method's distance from
/// a reference (one search a child at --reference-nodes, the same engine: it shares the
/// analyst's evaluation).
#[derive(Args, Debug)]
pub struct MultipvArgs {
    /// The book whose positions are scored (only read).
    #[arg(long)]
    book: PathBuf,
    /// A UCI engine with MultiPV, as `analyze --engine` takes it.
    #[arg(long)]
    engine: learnbook::analyze::AnalystSpec,
    /// Nodes per search of both methods.
    #[arg(long, default_value_t = 50_000)]
    nodes: u64,
    /// Nodes per MultiPV search, one or more (default --nodes): equal quality may need more.
    #[arg(long, value_delimiter = ',')]
    multipv_nodes: Vec<u64>,
    /// Nodes per search of the reference (default 20 x --nodes).
    #[arg(long)]
    reference_nodes: Option<u64>,
    /// Positions: interior, with two book moves or more, in improve's order.
    #[arg(long, default_value_t = 100)]
    positions: usize,
    /// Positions with at least this many games.
    #[arg(long, default_value_t = 50)]
    min_games: u32,
}

impl MultipvArgs {
    pub(super) fn run(self) -> Result<()> {
        let multipv_nodes = if self.multipv_nodes.is_empty() {
            vec![self.nodes]
        } else {
            self.multipv_nodes
        };
        bench_multipv(
            &self.book,
            &self.engine,
            self.nodes,
            multipv_nodes,
            self.reference_nodes
                .unwrap_or(self.nodes.saturating_mul(20)),
            self.positions,
            self.min_games,
        )
    }
}

/// Each book move's score from the parent's side, and the best move
/// outside the book's (the deviation), by one method.
struct Scored {
    book: Vec<(Move, i32)>,
    deviation: Option<i32>,
    searches: usize,
}

/// One search of each child (`fresh`), negated, and one search of the
/// moves outside the book.
fn per_child(a: &mut dyn Analyst, pos: &Chess, book: &[Move], outside: &[Move]) -> Result<Scored> {
    let mut out = Scored {
        book: Vec::new(),
        deviation: None,
        searches: 0,
    };
    for &m in book {
        let mut child = pos.clone();
        child.play_unchecked(m);
        let score = if child.legal_moves().is_empty() {
            if child.is_check() {
                analyze_mate()
            } else {
                0
            }
        } else {
            out.searches += 1;
            -a.search(&child, &[], true)?.score
        };
        out.book.push((m, score));
    }
    if !outside.is_empty() {
        out.searches += 1;
        out.deviation = Some(a.search(pos, outside, true)?.score);
    }
    Ok(out)
}

/// A mate given by the move: the best score there is.
fn analyze_mate() -> i32 {
    learnbook::engine::search::MATE - 1
}

/// One MultiPV search of the best `book.len() + 1` moves; the book moves
/// not among them in a second MultiPV search restricted to them.
fn multipv(a: &mut dyn Analyst, pos: &Chess, book: &[Move], outside: &[Move]) -> Result<Scored> {
    let all: Vec<Move> = pos.legal_moves().into_iter().collect();
    let (lines, mut searches) = a.search_lines(pos, &all, book.len() + 1, true)?;
    let score_of = |lines: &[Searched], m: &Move| {
        lines
            .iter()
            .find(|l| l.best.as_ref() == Some(m))
            .map(|l| l.score)
    };
    let missing: Vec<Move> = book
        .iter()
        .copied()
        .filter(|m| score_of(&lines, m).is_none())
        .collect();
    let mut more = Vec::new();
    if !missing.is_empty() {
        let (l, n) = a.search_lines(pos, &missing, missing.len(), false)?;
        more = l;
        searches += n;
    }
    let mut out = Scored {
        book: Vec::new(),
        deviation: lines
            .iter()
            .find(|l| l.best.as_ref().is_some_and(|b| outside.contains(b)))
            .map(|l| l.score),
        searches,
    };
    if out.deviation.is_none() && !outside.is_empty() {
        out.searches += 1;
        out.deviation = Some(a.search(pos, outside, false)?.score);
    }
    for m in book {
        // A line the engine did not return (it cut the search short): the
        // worst score, as a player would treat an unscored move.
        let s = score_of(&lines, m)
            .or_else(|| score_of(&more, m))
            .unwrap_or(-analyze_mate());
        out.book.push((*m, s));
    }
    Ok(out)
}

/// How far a method's scores are from the reference's: summed absolute
/// error of the book moves' scores, the positions where its best book
/// move is the reference's, and the reference's loss of its best book move.
#[derive(Default)]
struct Quality {
    moves: usize,
    abs_error: f64,
    positions: usize,
    same_best: usize,
    regret: f64,
    seconds: f64,
    searches: usize,
}

impl Quality {
    fn add(&mut self, got: &Scored, reference: &Scored) {
        let clamp = |s: i32| f64::from(s.clamp(-1000, 1000));
        for ((m, s), (rm, r)) in got.book.iter().zip(&reference.book) {
            debug_assert_eq!(m, rm);
            self.moves += 1;
            self.abs_error += (clamp(*s) - clamp(*r)).abs();
        }
        let best = |sc: &Scored| {
            sc.book
                .iter()
                .enumerate()
                .max_by_key(|(_, (_, s))| *s)
                .map(|(i, _)| i)
        };
        if let (Some(g), Some(r)) = (best(got), best(reference)) {
            self.positions += 1;
            self.same_best += usize::from(g == r);
            self.regret += clamp(reference.book[r].1) - clamp(reference.book[g].1);
        }
    }
}

fn bench_multipv(
    book: &std::path::Path,
    engine: &analyze::AnalystSpec,
    nodes: u64,
    multipv_nodes: Vec<u64>,
    reference_nodes: u64,
    positions: usize,
    min_games: u32,
) -> Result<()> {
    let engine = EngineChoice::open(Some(engine))?;
    let EngineChoice::Uci { .. } = &engine else {
        bail!("--engine: MultiPV needs a UCI engine");
    };
    let b = Book::open(book)?;
    // Interior positions with at least two book moves, in the order improve takes them.
    let found = analyze::targets::find(&b, min_games, "learnbook bench", "none")?;
    let todo: Vec<_> = found
        .todo
        .into_iter()
        .filter(|t| t.interior && t.book_moves.len() >= 2)
        .take(positions)
        .collect();
    if todo.is_empty() {
        bail!("no position with {min_games} games and two book moves");
    }
    let mut fast = engine.start(Budget::Nodes(nodes))?;
    let mut wide = multipv_nodes
        .iter()
        .map(|&n| engine.start(Budget::Nodes(n)))
        .collect::<Result<Vec<_>>>()?;
    let mut deep = engine.start(Budget::Nodes(reference_nodes))?;
    let mut one = Quality::default();
    let mut multi: Vec<Quality> = multipv_nodes.iter().map(|_| Quality::default()).collect();
    let mut ref_seconds = 0.0;
    for t in &todo {
        let book_moves: Vec<Move> = t
            .book_moves
            .iter()
            .filter_map(|c| c.to_move(&t.pos))
            .collect();
        let outside = t.outside_moves();
        let clock = Instant::now();
        let reference = per_child(deep.as_mut(), &t.pos, &book_moves, &outside)?;
        ref_seconds += clock.elapsed().as_secs_f64();
        // Alternate which method goes first, so neither has the warmer caches.
        type Method = fn(&mut dyn Analyst, &Chess, &[Move], &[Move]) -> Result<Scored>;
        let measure = |q: &mut Quality, a: &mut dyn Analyst, f: Method| -> Result<()> {
            let clock = Instant::now();
            let got = f(a, &t.pos, &book_moves, &outside)?;
            q.seconds += clock.elapsed().as_secs_f64();
            q.searches += got.searches;
            q.add(&got, &reference);
            Ok(())
        };
        let first = one.positions % 2 == 0;
        if first {
            measure(&mut one, fast.as_mut(), per_child)?;
        }
        for (q, a) in multi.iter_mut().zip(&mut wide) {
            measure(q, a.as_mut(), multipv)?;
        }
        if !first {
            measure(&mut one, fast.as_mut(), per_child)?;
        }
    }
    let n = todo.len();
    println!(
        "{n} positions (interior, >= {min_games} games, >= 2 book moves, by improve's priority); {} book moves; engine {}; reference: one search a child at {reference_nodes} nodes ({ref_seconds:.1} s)",
        one.moves,
        engine.label()
    );
    let mut rows = vec![(format!("one search a child, nodes {nodes}"), &one)];
    for (n, q) in multipv_nodes.iter().zip(&multi) {
        rows.push((format!("MultiPV, nodes {n}"), q));
    }
    for (name, q) in rows {
        println!(
            "{name:>32}: {:.2} positions/s ({} searches, {:.1} s); vs reference: mean |error| {:.1} cp a move, best book move the reference's in {:.1}%, its loss by the reference {:.1} cp a position",
            n as f64 / q.seconds,
            q.searches,
            q.seconds,
            q.abs_error / q.moves.max(1) as f64,
            100.0 * q.same_best as f64 / q.positions.max(1) as f64,
            q.regret / q.positions.max(1) as f64
        );
    }
    for (n, q) in multipv_nodes.iter().zip(&multi) {
        println!(
            "ratio MultiPV at {n} / one search a child, positions/s: {:.2}",
            one.seconds / q.seconds
        );
    }
    Ok(())
}
