//! Positions as nodes: parent links, the whole book as a [`Graph`] and
//! its full re-evaluation (the rows' format is [`super::rows`]).

use anyhow::{bail, Result};
use rusqlite::{params, Connection, OptionalExtension};

use super::node_rows::{node_from_row, NODE_COLS, NODE_WIDTH};
use super::schema::write_engine_margin;
use super::tails::for_each_tail;
use super::values::reevaluate_within;
use super::Book;
use crate::keys::{Key, MoveCode};
use crate::values::minimax::{self, Graph, ValueParams};

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

impl Book {
    /// Loads every position and move into memory, tails expanded.
    pub fn load_graph(&self) -> Result<Graph> {
        Ok(load_graph(&self.conn, &self.settings.params)?.0)
    }

    /// Full re-evaluation of every node; writes the values that changed.
    /// Returns the number of positions whose value or choice changed.
    pub fn reevaluate_all(&mut self) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let changed = reevaluate_within(&tx, &self.settings.params, self.memory.get(), &self.path)?;
        tx.commit()?;
        Ok(changed)
    }

    /// Sets the engine margin `M` ([`minimax::ValueParams::engine_margin`])
    /// and re-evaluates every node with it, in one transaction: a kill
    /// leaves the old margin and the old values. Returns the number of
    /// positions whose value or choice changed.
    pub fn set_engine_margin(&mut self, cp: f64) -> Result<usize> {
        let params = minimax::ValueParams {
            engine_margin: cp,
            ..self.settings.params
        };
        params.validate()?;
        let tx = self.conn.transaction()?;
        write_engine_margin(&tx, cp)?;
        let changed = reevaluate_within(&tx, &params, self.memory.get(), &self.path)?;
        tx.commit()?;
        self.settings.params = params;
        Ok(changed)
    }
}
