//! `check`: is the book consistent?
//!
//! * every move's child is a stored position, linked back to the parent
//!   (`positions.parent` or the `parents` table);
//! * per position and result, the games entering it through moves never
//!   exceed its own count, and neither do the games leaving it;
//! * summed over positions, the games that start at a position (its count
//!   minus what enters it) equal the games table, per result;
//! * every value and `best` choice equals a full re-evaluation, bit for bit.

use std::collections::HashMap;

use anyhow::Result;

use super::ingest::Counts;
use super::keys::from_sql;
use super::store::Book;

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
    let integrity: String = book
        .conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    if integrity != "ok" {
        report.problem(format!("SQLite integrity_check: {integrity}"));
    }
    let graph = book.load_graph()?;
    report.positions = graph.nodes.len();
    // Parent links, as the incremental pass finds them.
    let mut linked: std::collections::HashSet<(u64, u64)> = std::collections::HashSet::new();
    {
        let mut stmt = book.conn.prepare(
            "SELECT key, parent FROM positions WHERE parent IS NOT NULL UNION ALL SELECT child, parent FROM parents",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            linked.insert((from_sql(r.get(0)?), from_sql(r.get(1)?)));
        }
    }
    let mut incoming: HashMap<u64, Counts> = HashMap::new();
    let mut outgoing: HashMap<u64, Counts> = HashMap::new();
    {
        let mut stmt = book
            .conn
            .prepare("SELECT parent, move, child, white, draws, black FROM moves")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            report.moves += 1;
            let parent = from_sql(r.get(0)?);
            let child: Option<u64> = r.get::<_, Option<i64>>(2)?.map(from_sql);
            let c = Counts {
                white: r.get(3)?,
                draws: r.get(4)?,
                black: r.get(5)?,
            };
            if !graph.index.contains_key(&parent) {
                report.problem(format!("move from unknown position {parent:016x}"));
                continue;
            }
            outgoing.entry(parent).or_default().add(c);
            if let Some(child) = child {
                if !graph.index.contains_key(&child) {
                    report.problem(format!(
                        "move {parent:016x} -> unknown position {child:016x}"
                    ));
                    continue;
                }
                if !linked.contains(&(child, parent)) {
                    report.problem(format!(
                        "move {parent:016x} -> {child:016x} has no parent link"
                    ));
                }
                incoming.entry(child).or_default().add(c);
            }
        }
    }
    let mut starts = Counts::default();
    for n in &graph.nodes {
        let inc = incoming.get(&n.key).copied().unwrap_or_default();
        let out = outgoing.get(&n.key).copied().unwrap_or_default();
        let within =
            |a: Counts, b: Counts| a.white <= b.white && a.draws <= b.draws && a.black <= b.black;
        if !within(inc, n.counts) {
            report.problem(format!(
                "{:016x}: games entering {inc:?} exceed its count {:?}",
                n.key, n.counts
            ));
            continue;
        }
        if !within(out, n.counts) {
            report.problem(format!(
                "{:016x}: games leaving {out:?} exceed its count {:?}",
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
    if starts != expected {
        report.problem(format!(
            "games starting in the tree {starts:?} differ from the games table {expected:?}"
        ));
    }
    let mut fresh = graph.clone();
    fresh.evaluate(&book.settings.params);
    for (i, (stored, new)) in graph.nodes.iter().zip(&fresh.nodes).enumerate() {
        if stored.value.to_bits() != new.value.to_bits() {
            report.problem(format!(
                "{:016x}: stored value {} but full re-evaluation gives {}",
                stored.key, stored.value, new.value
            ));
        }
        if graph.best[i] != fresh.best[i] {
            report.problem(format!(
                "{:016x}: stored choice {:?} but full re-evaluation gives {:?}",
                stored.key, graph.best[i], fresh.best[i]
            ));
        }
    }
    Ok(report)
}
