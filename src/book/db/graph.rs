//! Positions as nodes: the row format, parent links, the whole book as a
//! [`Graph`] and its full re-evaluation.

use anyhow::{bail, Result};
use rusqlite::{params, Connection, OptionalExtension};

use super::tails::for_each_tail;
use crate::book::ingest::Counts;
use crate::book::keys::{Key, MoveCode};
use crate::book::minimax::{self, Graph, NodeInfo, ValueParams};

/// Adds one move's counts (a new move, or more games for a known one).
pub(super) const MOVE_UPSERT: &str = "INSERT INTO moves(parent, move, uci, child, white, draws, black, rating_sum, rated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
     ON CONFLICT(parent, move) DO UPDATE SET
       child = excluded.child,
       white = white + excluded.white, draws = draws + excluded.draws, black = black + excluded.black,
       rating_sum = rating_sum + excluded.rating_sum, rated = rated + excluded.rated";

/// The columns of a node, from `positions p LEFT JOIN analysis a`.
pub(super) const NODE_COLS: &str =
    "p.key, p.depth, p.white, p.draws, p.black, p.exact, p.value, p.expected, a.score, a.interior, a.deviation";
/// How many columns [`NODE_COLS`] has.
pub(super) const NODE_WIDTH: usize = 11;

/// A node from [`NODE_WIDTH`] columns from `at`, as [`NODE_COLS`] selects
/// them: key, depth, white, draws, black, exact, value, expected, and the
/// analysis's score, interior and deviation.
pub(super) fn node_from_row(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<NodeInfo> {
    let (search, deviation) = search_inputs(r.get(at + 8)?, r.get(at + 9)?, r.get(at + 10)?);
    Ok(NodeInfo {
        key: r.get(at)?,
        depth: r.get::<_, Option<i64>>(at + 1)?.map(|d| d as u32),
        counts: Counts {
            white: r.get(at + 2)?,
            draws: r.get(at + 3)?,
            black: r.get(at + 4)?,
        },
        exact: r.get(at + 5)?,
        value: r.get(at + 6)?,
        expected: r.get(at + 7)?,
        search,
        deviation,
    })
}

/// A node's `search` and `deviation` from its `analysis` row's score,
/// interior and deviation (all `None`: not analysed).
pub(super) fn search_inputs(
    score: Option<i32>,
    interior: Option<bool>,
    deviation: Option<i32>,
) -> (Option<f64>, Option<Option<f64>>) {
    (
        score.map(minimax::score_to_value),
        match interior {
            Some(true) => Some(deviation.map(minimax::score_to_value)),
            _ => None,
        },
    )
}

/// Loads every position and move through `conn` (inside a transaction, this
/// sees its uncommitted rows), tails expanded. The first `rows` nodes are
/// rows of `positions`, the rest tail positions.
pub(super) fn load_graph(conn: &Connection, params: &ValueParams) -> Result<(Graph, usize)> {
    load(conn, params, false)
}

/// What the rows' values depend on: the rows, and of each tail its first
/// position with its value ([`Graph::fixed`]): a tail's own positions
/// depend on nothing else, so they need not be in memory.
fn load_for_values(conn: &Connection, params: &ValueParams) -> Result<(Graph, usize)> {
    load(conn, params, true)
}

fn load(conn: &Connection, params: &ValueParams, heads_only: bool) -> Result<(Graph, usize)> {
    let mut nodes = Vec::new();
    let mut best_stored = Vec::new();
    {
        let mut stmt = conn.prepare(&format!(
            "SELECT {NODE_COLS}, p.best FROM positions p LEFT JOIN analysis a ON a.key = p.key"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            nodes.push(node_from_row(r, 0)?);
            best_stored.push(r.get::<_, Option<u16>>(NODE_WIDTH)?.map(MoveCode));
        }
    }
    let mut edges = Vec::new();
    {
        let mut stmt =
            conn.prepare("SELECT parent, move, child FROM moves WHERE child IS NOT NULL")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            edges.push((r.get(0)?, MoveCode(r.get(1)?), r.get(2)?));
        }
    }
    let rows = nodes.len();
    for_each_tail(conn, params, |t| {
        if heads_only {
            nodes.push(t.nodes[0]);
            best_stored.push(t.best[0]);
            return Ok(());
        }
        // (The move into the tail is a row of its anchor, read above.)
        for (i, n) in t.nodes.iter().enumerate() {
            if let Some(child) = t.nodes.get(i + 1) {
                edges.push((n.key, t.moves[i].0, child.key));
            }
        }
        nodes.extend(t.nodes);
        best_stored.extend(t.best);
        Ok(())
    })?;
    let mut g = Graph::new(nodes, edges);
    g.best = best_stored;
    if heads_only {
        g.fixed = rows;
    }
    Ok((g, rows))
}

/// Full re-evaluation through `conn`, to be called inside the transaction
/// that changed the counts, so that no committed state has stale values.
/// Returns the number of positions whose value or choice changed.
pub(super) fn reevaluate_all(conn: &Connection, params: &ValueParams) -> Result<usize> {
    let (mut g, rows) = load_for_values(conn, params)?;
    // Tail positions have no stored value: only rows are written.
    let before: Vec<(Key, f64, Option<MoveCode>)> = g.nodes[..rows]
        .iter()
        .zip(&g.best)
        .map(|(n, b)| (n.key, n.value, *b))
        .collect();
    g.evaluate(params);
    let mut changed = 0;
    let mut stmt =
        conn.prepare_cached("UPDATE positions SET value = ?2, best = ?3 WHERE key = ?1")?;
    for (i, (key, v, b)) in before.into_iter().enumerate() {
        let (nv, nb) = (g.nodes[i].value, g.best[i]);
        if nv.to_bits() != v.to_bits() || nb != b {
            stmt.execute(params![key, nv, nb.map(|m| m.0)])?;
            changed += 1;
        }
    }
    Ok(changed)
}

/// Records that `child` is reached from `a` and from `b` (a transposition).
pub(super) fn link_transposition(tx: &Connection, child: Key, a: Key, b: Key) -> Result<()> {
    let mut stmt =
        tx.prepare_cached("INSERT OR IGNORE INTO parents(child, parent) VALUES (?1, ?2)")?;
    stmt.execute(params![child, a])?;
    stmt.execute(params![child, b])?;
    Ok(())
}

/// Links `parent -> child` for an existing `child` (merge, import).
pub(super) fn link_parent(tx: &Connection, parent: Key, child: Key) -> Result<()> {
    let first: Option<Option<Key>> = tx
        .prepare_cached("SELECT parent FROM positions WHERE key = ?1")?
        .query_row([child], |r| r.get(0))
        .optional()?;
    match first {
        None => bail!("position {child} missing while linking its parent"),
        Some(None) => {
            tx.prepare_cached("UPDATE positions SET parent = ?2 WHERE key = ?1")?
                .execute(params![child, parent])?;
        }
        Some(Some(f)) if f != parent => link_transposition(tx, child, f, parent)?,
        Some(Some(_)) => {}
    }
    Ok(())
}
