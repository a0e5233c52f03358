//! What the incremental pass has read, kept between games.
//!
//! The pass reads the same opening positions (and their many children) game
//! after game, so they are kept in a write-through cache: `learn` changes
//! the cached rows and writes them once, at the end of a game. The cache is
//! dropped whenever the file may have changed behind it: another connection
//! committed (`PRAGMA data_version`), this connection wrote outside
//! `add_game` (`total_changes`), or a game's transaction failed.

use anyhow::Result;
use rusqlite::{CachedStatement, Connection, OptionalExtension};

use super::node_rows::{node_from_row, NODE_COLS, NODE_WIDTH};
use super::tails::{tail_node, Expansion};
use super::top_games::{top_from_blob, TopList};
use crate::keys::{Key, KeyMap, MoveCode};
use crate::values::minimax::{NodeInfo, ValueParams};

/// Above this many positions the cache starts again (about 150 bytes each).
const CACHE_LIMIT: usize = 1 << 18;

/// Positions as the incremental pass last saw them.
#[derive(Default)]
pub(super) struct NodeCache {
    pub(super) nodes: KeyMap<Key, Cached>,
    /// `PRAGMA data_version` and `total_changes()` when the cache was last
    /// known to match the file; `None`: empty, nothing to check.
    stamp: Option<(i64, u64)>,
}

/// One position's row, and what is known of its links.
pub(super) struct Cached {
    pub(super) info: NodeInfo,
    pub(super) best: Option<MoveCode>,
    /// `positions.parent`: the first position seen to lead here.
    pub(super) first_parent: Option<Key>,
    /// `(move, child)` of every move with a child; `None` until read.
    pub(super) children: Option<Vec<(MoveCode, Key)>>,
    /// This position's rows in `parents`; `None` until read.
    pub(super) linked: Option<Vec<Key>>,
    /// The first position of a single-game tail, not a row: read as a
    /// child, never changed (a game that reaches it makes it a row first).
    pub(super) tail: bool,
    /// `positions.top`: the explorer's top games.
    pub(super) top: TopList,
    /// `top` changed since it was read (its row must write it).
    pub(super) top_changed: bool,
}

impl Cached {
    /// Position `i` of an expanded tail.
    pub(super) fn in_tail(t: &Expansion, i: usize) -> Cached {
        Cached {
            info: t.nodes[i],
            best: t.best[i],
            first_parent: Some(t.parent_of(i)),
            children: Some(Vec::new()),
            linked: Some(Vec::new()),
            tail: true,
            top: TopList::default(),
            top_changed: false,
        }
    }
}

/// The statements the cache reads through, prepared once per transaction.
pub(super) struct Sql<'c> {
    conn: &'c Connection,
    params: ValueParams,
    node: CachedStatement<'c>,
    children: CachedStatement<'c>,
    parents: CachedStatement<'c>,
}

impl<'c> Sql<'c> {
    pub(super) fn new(conn: &'c Connection, params: &ValueParams) -> Result<Sql<'c>> {
        Ok(Sql {
            conn,
            params: *params,
            node: conn.prepare_cached(&format!(
                "SELECT {NODE_COLS}, p.best, p.parent, p.top FROM positions p LEFT JOIN analysis a ON a.key = p.key
                 WHERE p.key = ?1"
            ))?,
            children: conn.prepare_cached(
                "SELECT move, child FROM moves WHERE parent = ?1 AND child IS NOT NULL ORDER BY move",
            )?,
            parents: conn.prepare_cached("SELECT parent FROM parents WHERE child = ?1")?,
        })
    }
}

impl NodeCache {
    pub(super) fn clear(&mut self) {
        self.nodes.clear();
        self.stamp = None;
    }

    /// Records that the cache matches the file as `conn` sees it now.
    pub(super) fn stamp(&mut self, conn: &Connection) -> Result<()> {
        self.stamp = Some((data_version(conn)?, conn.total_changes()));
        Ok(())
    }

    /// Drops the cache unless the file is as it was after the last game.
    /// Call inside the write transaction, so nobody can commit after it.
    pub(super) fn revalidate(&mut self, conn: &Connection) -> Result<()> {
        let stamp = (data_version(conn)?, conn.total_changes());
        if self.stamp != Some(stamp) || self.nodes.len() > CACHE_LIMIT {
            self.nodes.clear();
        }
        Ok(())
    }

    /// Whether `key` is a stored position, a row or in a single-game tail
    /// (read into the cache if needed).
    pub(super) fn load(&mut self, sql: &mut Sql<'_>, key: Key) -> Result<bool> {
        if self.nodes.contains_key(&key) {
            return Ok(true);
        }
        let row = sql.node.query_row([key], cached_from_row).optional()?;
        let row = match row {
            Some(c) => Some(c),
            None => tail_node(sql.conn, key, &sql.params)?.map(|(t, i)| Cached::in_tail(&t, i)),
        };
        Ok(match row {
            Some(c) => {
                self.nodes.insert(key, c);
                true
            }
            None => false,
        })
    }

    /// Whether `key` is cached or a row (read into the cache if needed);
    /// `false`: in a tail, or not stored. [`NodeCache::load`] without
    /// looking for the tail that holds it.
    pub(super) fn load_row(&mut self, sql: &mut Sql<'_>, key: Key) -> Result<bool> {
        if self.nodes.contains_key(&key) {
            return Ok(true);
        }
        let Some(row) = sql.node.query_row([key], cached_from_row).optional()? else {
            return Ok(false);
        };
        self.nodes.insert(key, row);
        Ok(true)
    }

    /// Whether `key` is a row (`false`: in a tail, or not stored).
    pub(super) fn is_row(&mut self, sql: &mut Sql<'_>, key: Key) -> Result<bool> {
        Ok(self.load(sql, key)? && self.nodes.get(&key).is_some_and(|n| !n.tail))
    }

    /// The moves of a cached position, read if needed.
    pub(super) fn children(&mut self, sql: &mut Sql<'_>, key: Key) -> Result<Vec<(MoveCode, Key)>> {
        if let Some(kids) = self.nodes.get(&key).and_then(|n| n.children.clone()) {
            return Ok(kids);
        }
        let kids = sql
            .children
            .query_map([key], |r| Ok((MoveCode(r.get(0)?), r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        if let Some(n) = self.nodes.get_mut(&key) {
            n.children = Some(kids.clone());
        }
        Ok(kids)
    }

    /// Every position with a book move into a cached position.
    pub(super) fn parent_keys(&mut self, sql: &mut Sql<'_>, key: Key) -> Result<Vec<Key>> {
        let Some(n) = self.nodes.get(&key) else {
            return Ok(Vec::new());
        };
        let first = n.first_parent;
        let linked = match &n.linked {
            Some(l) => l.clone(),
            None => {
                let l = sql
                    .parents
                    .query_map([key], |r| r.get::<_, Key>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                if let Some(n) = self.nodes.get_mut(&key) {
                    n.linked = Some(l.clone());
                }
                l
            }
        };
        let mut out: Vec<Key> = first.into_iter().chain(linked).collect();
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

/// A cached node from [`NODE_COLS`], `best`, `parent`, `top`.
fn cached_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Cached> {
    Ok(Cached {
        info: node_from_row(r, 0)?,
        best: r.get::<_, Option<u16>>(NODE_WIDTH)?.map(MoveCode),
        first_parent: r.get(NODE_WIDTH + 1)?,
        children: None,
        linked: None,
        tail: false,
        top: r
            .get::<_, Option<Vec<u8>>>(NODE_WIDTH + 2)?
            .as_deref()
            .and_then(top_from_blob)
            .unwrap_or_default(),
        top_changed: false,
    })
}

fn data_version(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached("PRAGMA data_version")?
        .query_row([], |r| r.get(0))?)
}
