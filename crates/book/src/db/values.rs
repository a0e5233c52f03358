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
use super::tails::for_each_tail;
use crate::keys::{Key, MoveCode};
use crate::pgn::game::Counts;
use crate::sort::{SortRecord, Sorter};
use crate::values::minimax::{node_value_with, NodeInfo, ValueParams};
use learnbook_base::atomic_file::{directory_of, file_name_of};

/// Positions the cache holds before it starts again (about 200 bytes each).
const CACHE_POSITIONS: usize = 1 << 16;

/// About what [`super::graph::reevaluate_all`] holds a position (a row or
/// a tail's first position): its node, index entry, moves and the values
/// before, while the graph is built.
pub const GRAPH_BYTES_PER_POSITION: u64 = 300;

/// What the layers hold of a position, sorted: first by the key of a
/// row (`layer` 0), the tail heads ([`HEAD`]) after each row; then by
/// layer (the row's depth, deepest first), the row's key, its tail heads
/// before the row itself ([`ROW`]).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Due {
    /// Minus the depth (`i64::MAX`: unknown, valued last: its value
    /// depends on no child).
    pub(super) layer: i64,
    /// The row's key, as stored.
    pub(super) key: i64,
    pub(super) kind: u8,
    /// [`HEAD`]: the game whose tail it starts.
    pub(super) game: i64,
    /// [`HEAD`]: the tail's first position with its value.
    pub(super) head: [u8; INFO_BYTES],
}

pub(super) const HEAD: u8 = 0;
const ROW: u8 = 1;

impl SortRecord for Due {
    const SIZE: usize = 25 + INFO_BYTES;
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.layer.to_le_bytes());
        out.extend_from_slice(&self.key.to_le_bytes());
        out.push(self.kind);
        out.extend_from_slice(&self.game.to_le_bytes());
        out.extend_from_slice(&self.head);
    }
    fn read(b: &[u8]) -> Self {
        let mut head = [0u8; INFO_BYTES];
        head.copy_from_slice(&b[25..25 + INFO_BYTES]);
        Due {
            layer: read_i64(&b[0..8]),
            key: read_i64(&b[8..16]),
            kind: b[16],
            game: read_i64(&b[17..25]),
            head,
        }
    }
}

fn read_i64(b: &[u8]) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    i64::from_le_bytes(a)
}

/// Bytes of a [`NodeInfo`] in a [`Due`].
pub(super) const INFO_BYTES: usize = 68;

/// A node's fields, every float by its bits (the values come back bit for
/// bit).
pub(super) fn info_bytes(n: &NodeInfo) -> [u8; INFO_BYTES] {
    let mut out = [0u8; INFO_BYTES];
    let mut at = 0;
    let mut put = |b: &[u8]| {
        out[at..at + b.len()].copy_from_slice(b);
        at += b.len();
    };
    put(&n.key.0.to_le_bytes());
    put(&[u8::from(n.depth.is_some())]);
    put(&n.depth.unwrap_or(0).to_le_bytes());
    put(&n.counts.white.to_le_bytes());
    put(&n.counts.draws.to_le_bytes());
    put(&n.counts.black.to_le_bytes());
    put(&n.expected.to_le_bytes());
    for x in [n.exact, n.search] {
        put(&[u8::from(x.is_some())]);
        put(&x.unwrap_or(0.0).to_bits().to_le_bytes());
    }
    let (tag, d) = match n.deviation {
        None => (0, 0.0),
        Some(None) => (1, 0.0),
        Some(Some(d)) => (2, d),
    };
    put(&[tag]);
    put(&d.to_bits().to_le_bytes());
    put(&n.value.to_bits().to_le_bytes());
    out
}

pub(super) fn info_from_bytes(b: &[u8; INFO_BYTES]) -> NodeInfo {
    let u64_at = |i: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[i..i + 8]);
        u64::from_le_bytes(a)
    };
    let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let f64_if = |i: usize| (b[i] != 0).then(|| f64::from_bits(u64_at(i + 1)));
    NodeInfo {
        key: Key(u64_at(0)),
        depth: (b[8] != 0).then(|| u32_at(9)),
        counts: Counts {
            white: u32_at(13),
            draws: u32_at(17),
            black: u32_at(21),
        },
        expected: u64_at(25) as i64,
        exact: f64_if(33),
        search: f64_if(42),
        deviation: match b[51] {
            0 => None,
            1 => Some(None),
            _ => Some(Some(f64::from_bits(u64_at(52)))),
        },
        value: f64::from_bits(u64_at(60)),
    }
}

/// About what a position of the analysis table takes in memory while the
/// tails are expanded (they are read whole for that).
const SEARCH_BYTES_PER_POSITION: u64 = 100;

/// Re-evaluates every row through `conn` (inside the transaction that
/// changed the counts), the positions sorted by depth on disk (past
/// `memory / 20`, in files named `temp.1` + n in `temp.0`); returns the
/// number of positions whose value or choice changed.
///
/// A tail's first position (a child of a row, valued from its game alone)
/// is found through the tails index and its game replayed; so that each
/// tail is expanded once, and not once for each look-up, the tails are
/// expanded first, their first positions sorted by the row before them,
/// and then by that row's depth beside the rows themselves: each row comes
/// with the tails that start after it. (Where the analysis does not fit an
/// eighth of `memory`, the tails are looked up one at a time.)
pub(super) fn reevaluate_by_depth(
    conn: &Connection,
    params: &ValueParams,
    memory: u64,
    temp: (&Path, &str),
) -> Result<usize> {
    let analysed: i64 = conn.query_row("SELECT count(*) FROM analysis", [], |r| r.get(0))?;
    let heads_first = analysed.max(0) as u64 * SEARCH_BYTES_PER_POSITION <= memory / 8;
    let mut layers: Sorter<Due> = Sorter::new(memory / 20, temp.0, &format!("{}layers", temp.1));
    let mut positions = conn.prepare("SELECT key, depth FROM positions ORDER BY key")?;
    let mut rows = positions.query([])?;
    let push_row = |r: &rusqlite::Row<'_>, layers: &mut Sorter<Due>| -> Result<(i64, i64)> {
        let key: i64 = r.get(0)?;
        let depth: Option<i64> = r.get(1)?;
        // Unknown depth last, as in the graph: its value depends on no
        // child.
        let layer = depth.map_or(i64::MAX, |d| -d);
        layers.push(Due {
            layer,
            key,
            kind: ROW,
            game: 0,
            head: [0; INFO_BYTES],
        })?;
        Ok((key, layer))
    };
    if heads_first {
        let mut by_row: Sorter<Due> =
            Sorter::new(memory / 20, temp.0, &format!("{}tail-heads", temp.1));
        push_tail_heads(conn, params, &mut by_row)?;
        // The rows in key order, each pushed before the heads after it.
        let mut last: Option<(i64, i64)> = None;
        by_row.drain(|heads| {
            for h in heads {
                while last.is_none_or(|(k, _)| k < h.key) {
                    let Some(r) = rows.next()? else {
                        break;
                    };
                    last = Some(push_row(r, &mut layers)?);
                }
                if let Some((k, layer)) = last {
                    if k == h.key {
                        layers.push(Due { layer, ..*h })?;
                    }
                }
            }
            Ok(())
        })?;
    }
    while let Some(r) = rows.next()? {
        push_row(r, &mut layers)?;
    }
    drop(rows);
    let mut sql = Sql::new(conn, params)?;
    let mut cache = NodeCache::default();
    let mut set = conn.prepare("UPDATE positions SET value = ?2, best = ?3 WHERE key = ?1")?;
    let mut kids: Vec<(MoveCode, NodeInfo)> = Vec::new();
    let mut heads: Vec<NodeInfo> = Vec::new();
    let mut buf = Vec::new();
    let mut changed = 0;
    layers.drain(|due| {
        for d in due {
            if d.kind == HEAD {
                heads.push(info_from_bytes(&d.head));
                continue;
            }
            let key = Key::from_sql(d.key);
            if cache.nodes.len() > CACHE_POSITIONS {
                cache.clear();
            }
            if !cache.load(&mut sql, key)? {
                bail!("position {key} vanished while the values were computed");
            }
            kids.clear();
            for (mv, child) in cache.children(&mut sql, key)? {
                // A row first, as NodeCache::load looks.
                if cache.load_row(&mut sql, child)? {
                    if let Some(c) = cache.nodes.get(&child) {
                        kids.push((mv, c.info));
                    }
                } else if let Some(h) = heads.iter().find(|h| h.key == child) {
                    kids.push((mv, *h));
                } else if cache.load(&mut sql, child)? {
                    if let Some(c) = cache.nodes.get(&child) {
                        kids.push((mv, c.info));
                    }
                }
            }
            heads.clear();
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

/// Whether the book holds no evidence, so that every value stays what the
/// rows hold: no games, no analysis, no counts, exact values or grown moves,
/// every value 0 and no choice, and the formula gives a position without
/// evidence, with children without evidence, 0 and no choice (checked, for
/// both sides to move). A book imported from Polyglot files alone: valuing
/// its 170 M positions depth by depth would take hours to change nothing.
fn nothing_to_value(conn: &Connection, params: &ValueParams) -> Result<bool> {
    let mut buf = Vec::new();
    for depth in [Some(0), Some(1), None] {
        let empty = |key| NodeInfo::from_counts(Key(key), depth.map(|d| d + 1), Counts::default());
        let (a, b) = (empty(1), empty(2));
        let node = NodeInfo::from_counts(Key(0), depth, Counts::default());
        let children = [(MoveCode(1), &a), (MoveCode(2), &b)];
        if node_value_with(&node, children, params, &mut buf) != (0.0, None) {
            return Ok(false);
        }
    }
    let evidence: bool = conn.query_row(
        "SELECT EXISTS(SELECT 1 FROM games) OR EXISTS(SELECT 1 FROM analysis)
           OR EXISTS(SELECT 1 FROM moves WHERE white + draws + black > 0 OR grown != 0)
           OR EXISTS(SELECT 1 FROM positions WHERE white + draws + black > 0
                     OR exact IS NOT NULL OR value != 0 OR best IS NOT NULL)",
        [],
        |r| r.get(0),
    )?;
    Ok(!evidence)
}

/// Every row's value and choice through `conn` (inside the transaction that
/// changed the counts): in memory ([`reevaluate_all`]) unless its graph
/// (the rows and each game's tail head, [`GRAPH_BYTES_PER_POSITION`]
/// each) exceeds half of `memory`, then depth by depth
/// ([`reevaluate_by_depth`]), the positions sorted in runs beside the book
/// at `path`, unless the book has nothing to value ([`nothing_to_value`]).
/// The same values either way; returns how many changed.
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
    if nothing_to_value(conn, params)? {
        return Ok(0);
    }
    let name = file_name_of(path);
    reevaluate_by_depth(
        conn,
        params,
        memory,
        (directory_of(path), &format!("{name}.values-")),
    )
}

/// Every tail's first position with its value, keyed by the row before it
/// (its anchor): each tail expanded once.
pub(super) fn push_tail_heads(
    conn: &Connection,
    params: &ValueParams,
    by_row: &mut Sorter<Due>,
) -> Result<()> {
    for_each_tail(conn, params, |t| {
        by_row.push(Due {
            layer: 0,
            key: t.anchor.to_sql(),
            kind: HEAD,
            game: t.game,
            head: info_bytes(&t.nodes[0]),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_comes_back_from_its_bytes_bit_for_bit() {
        let mut n = NodeInfo::from_counts(Key(u64::MAX - 3), Some(17), Counts::default());
        n.counts = Counts {
            white: 5,
            draws: u32::MAX,
            black: 1,
        };
        n.expected = -42;
        n.value = -0.0;
        for (exact, search, deviation) in [
            (None, None, None),
            (Some(0.1 + 0.2), Some(-1.5), Some(None)),
            (Some(f64::MIN_POSITIVE), None, Some(Some(0.3))),
        ] {
            n.exact = exact;
            n.search = search;
            n.deviation = deviation;
            for depth in [None, Some(0), Some(u32::MAX)] {
                n.depth = depth;
                let back = info_from_bytes(&info_bytes(&n));
                assert_eq!(format!("{back:?}"), format!("{n:?}"));
                assert_eq!(back.value.to_bits(), n.value.to_bits());
            }
        }
    }
}
