//! `check`: is the book consistent?
//!
//! * every move's child is a stored position, linked back to the parent
//!   (`positions.parent` or the `parents` table);
//! * per position and result, the games entering it through moves never
//!   exceed its own count, and neither do the games leaving it;
//! * summed over positions, the games that start at a position (its count
//!   minus what enters it) equal the games table, per result;
//! * every value and `best` choice equals a full re-evaluation, bit for bit;
//! * single-game tails: no tail position is also a row, and every tail
//!   position is listed under its game.

use std::collections::HashMap;

use anyhow::Result;

use super::db::Book;
use super::ingest::Counts;
use super::keys::Key;

#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub positions: usize,
    pub moves: usize,
    pub problems: Vec<String>,
    /// Problems beyond the first 20 are only counted.
    pub more_problems: usize,
}

impl CheckReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
    fn problem(&mut self, p: String) {
        if self.problems.len() < 20 {
            self.problems.push(p);
        } else {
            self.more_problems += 1;
        }
    }
}

pub fn check(book: &Book) -> Result<CheckReport> {
    let mut report = CheckReport::default();
    let integrity = book.integrity_check()?;
    if integrity != "ok" {
        report.problem(format!("SQLite integrity_check: {integrity}"));
    }
    for p in book.tail_problems()? {
        report.problem(p);
    }
    let graph = book.load_graph()?;
    report.positions = graph.nodes.len();
    // Parent links, as the incremental pass finds them.
    let linked = book.parent_links()?;
    let mut incoming: HashMap<Key, Counts> = HashMap::new();
    let mut outgoing: HashMap<Key, Counts> = HashMap::new();
    book.for_each_move(|m| {
        report.moves += 1;
        let (parent, c) = (m.parent, m.counts);
        if !graph.index.contains_key(&parent) {
            report.problem(format!("move from unknown position {parent}"));
            return;
        }
        outgoing.entry(parent).or_default().add(c);
        if let Some(child) = m.child {
            if !graph.index.contains_key(&child) {
                report.problem(format!("move {parent} -> unknown position {child}"));
                return;
            }
            if !linked.contains(&(child, parent)) {
                report.problem(format!("move {parent} -> {child} has no parent link"));
            }
            incoming.entry(child).or_default().add(c);
        }
    })?;
    let mut starts = Counts::default();
    for n in &graph.nodes {
        let inc = incoming.get(&n.key).copied().unwrap_or_default();
        let out = outgoing.get(&n.key).copied().unwrap_or_default();
        let within =
            |a: Counts, b: Counts| a.white <= b.white && a.draws <= b.draws && a.black <= b.black;
        if !within(inc, n.counts) {
            report.problem(format!(
                "{}: games entering {inc:?} exceed its count {:?}",
                n.key, n.counts
            ));
            continue;
        }
        if !within(out, n.counts) {
            report.problem(format!(
                "{}: games leaving {out:?} exceed its count {:?}",
                n.key, n.counts
            ));
        }
        starts.white += n.counts.white - inc.white;
        starts.draws += n.counts.draws - inc.draws;
        starts.black += n.counts.black - inc.black;
    }
    let t = book.totals()?;
    let expected = Counts {
        white: t.white_wins as u32,
        draws: (t.draws + t.unknown) as u32,
        black: t.black_wins as u32,
    };
    // A book built with --min-games dropped rows: games then start (and end)
    // anywhere, and only the other checks hold.
    if starts != expected && book.settings.min_games <= 1 {
        report.problem(format!(
            "games starting in the tree {starts:?} differ from the games table {expected:?}"
        ));
    }
    let mut fresh = graph.clone();
    fresh.evaluate(&book.settings.params);
    for (i, (stored, new)) in graph.nodes.iter().zip(&fresh.nodes).enumerate() {
        if stored.value.to_bits() != new.value.to_bits() {
            report.problem(format!(
                "{}: stored value {} but full re-evaluation gives {}",
                stored.key, stored.value, new.value
            ));
        }
        if graph.best[i] != fresh.best[i] {
            report.problem(format!(
                "{}: stored choice {:?} but full re-evaluation gives {:?}",
                stored.key, graph.best[i], fresh.best[i]
            ));
        }
    }
    Ok(report)
}
