//! Every position's value and choice, depth by depth from the deepest, each
//! position read with its children through SQLite: for a book whose graph
//! does not fit the memory budget (`merge --memory`). The result is
//! [`super::graph::reevaluate_all`]'s, which values the graph in memory in
//! the same order: a value depends on a child's value only when the child
//! is one ply deeper, so the layers give the values the whole graph gives.

use std::path::Path;

use anyhow::{bail, Result};
use rusqlite::{params, Connection};

use super::cache::{NodeCache, Sql};
use super::graph::reevaluate_all;
use crate::book::keys::{Key, MoveCode};
use crate::book::spill::PairSorter;
use crate::book::values::minimax::{node_value_with, NodeInfo, ValueParams};

/// Positions the cache holds before it starts again (about 200 bytes each).
const CACHE_POSITIONS: usize = 1 << 16;

/// About what [`super::graph::reevaluate_all`] holds a position (a row or
/// a tail's first position): its node, index entry, moves and the values
/// before, while the graph is built.
pub const GRAPH_BYTES_PER_POSITION: u64 = 300;

/// Re-evaluates every row through `conn` (inside the transaction that
/// changed the counts), the positions sorted by depth in `layers` (on disk
/// past its memory); returns the number of positions whose value or
/// choice changed.
pub(super) fn reevaluate_by_depth(
    conn: &Connection,
    params: &ValueParams,
    mut layers: PairSorter,
) -> Result<usize> {
    {
        let mut stmt = conn.prepare("SELECT key, depth FROM positions")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let key: i64 = r.get(0)?;
            let depth: Option<i64> = r.get(1)?;
            // Unknown depth last, as in the graph: its value depends on no
            // child.
            layers.push((depth.map_or(i64::MAX, |d| -d), key))?;
        }
    }
    let mut sql = Sql::new(conn, params)?;
    let mut cache = NodeCache::default();
    let mut set = conn.prepare("UPDATE positions SET value = ?2, best = ?3 WHERE key = ?1")?;
    let mut kids: Vec<(MoveCode, NodeInfo)> = Vec::new();
    let mut buf = Vec::new();
    let mut changed = 0;
    layers.drain(|pairs| {
        for &(_, key) in pairs {
            let key = Key::from_sql(key);
            if cache.nodes.len() > CACHE_POSITIONS {
                cache.clear();
            }
            if !cache.load(&mut sql, key)? {
                bail!("position {key} vanished while the values were computed");
            }
            kids.clear();
            for (mv, child) in cache.children(&mut sql, key)? {
                if cache.load(&mut sql, child)? {
                    if let Some(c) = cache.nodes.get(&child) {
                        kids.push((mv, c.info));
                    }
                }
            }
            let Some(n) = cache.nodes.get_mut(&key) else {
                continue;
            };
            let (v, best) =
                node_value_with(&n.info, kids.iter().map(|(m, c)| (*m, c)), params, &mut buf);
            if v.to_bits() != n.info.value.to_bits() || best != n.best {
                set.execute(params![key, v, best.map(|m| m.0)])?;
                n.info.value = v;
                n.best = best;
                changed += 1;
            }
        }
        Ok(())
    })?;
    Ok(changed)
}

/// Every row's value and choice through `conn` (inside the transaction that
/// changed the counts): in memory ([`reevaluate_all`]) unless its graph
/// (the rows and each game's tail head, [`GRAPH_BYTES_PER_POSITION`]
/// each) exceeds half of `memory`, then depth by depth, the positions
/// sorted in runs beside the book at `path` (a twentieth of `memory` in
/// memory). The same values either way; returns how many changed.
pub(super) fn reevaluate_within(
    conn: &Connection,
    params: &ValueParams,
    memory: Option<u64>,
    path: &Path,
) -> Result<usize> {
    let Some(memory) = memory else {
        return reevaluate_all(conn, params);
    };
    let (positions, games): (i64, Option<i64>) = conn.query_row(
        "SELECT (SELECT count(*) FROM positions), (SELECT max(id) FROM games)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let graph = (positions + games.unwrap_or(0)).max(0) as u64 * GRAPH_BYTES_PER_POSITION;
    if graph <= memory / 2 {
        return reevaluate_all(conn, params);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "book".into(), |n| n.to_string_lossy().into_owned());
    let layers = PairSorter::new(memory / 20, dir, &format!("{name}.values-layers"));
    reevaluate_by_depth(conn, params, layers)
}
