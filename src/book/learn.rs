//! Hossa's step: add one game to a book and re-evaluate what it affects, in
//! one transaction.
//!
//! The incremental pass reads the same opening positions (and their many
//! children) game after game, so what it reads is kept between games in a
//! write-through cache. Every row it changes is written once, at the end,
//! from the cache. The cache is dropped whenever the file may have changed
//! behind it: another connection committed (`PRAGMA data_version`), this
//! connection wrote outside `add_game` (`total_changes`), or a game's
//! transaction failed.

use anyhow::Result;
use rusqlite::{params, CachedStatement, Connection, OptionalExtension, TransactionBehavior};

use super::ingest::Game;
use super::keys::{from_sql, to_sql, KeyMap, KeySet, MoveCode};
use super::minimax::{self, NodeInfo, Reevaluation, Tree, ValueParams};
use super::store::{
    insert_game_row, link_transposition, node_from_row, Book, MOVE_UPSERT, NODE_COLS, NODE_WIDTH,
};

/// Above this many positions the cache starts again (about 150 bytes each).
const CACHE_LIMIT: usize = 1 << 18;

/// Positions as the incremental pass last saw them.
#[derive(Default)]
pub struct NodeCache {
    nodes: KeyMap<u64, Cached>,
    /// `PRAGMA data_version` and `total_changes()` when the cache was last
    /// known to match the file; `None`: empty, nothing to check.
    stamp: Option<(i64, u64)>,
}

struct Cached {
    info: NodeInfo,
    best: Option<MoveCode>,
    /// `positions.parent`: the first position seen to lead here.
    first_parent: Option<u64>,
    /// `(move, child)` of every move with a child; `None` until read.
    children: Option<Vec<(MoveCode, u64)>>,
    /// This position's rows in `parents`; `None` until read.
    linked: Option<Vec<u64>>,
}

/// The statements of one game's transaction, prepared once per game.
struct Sql<'c> {
    node: CachedStatement<'c>,
    children: CachedStatement<'c>,
    parents: CachedStatement<'c>,
}

impl<'c> Sql<'c> {
    fn new(conn: &'c Connection) -> Result<Sql<'c>> {
        Ok(Sql {
            node: conn.prepare_cached(&format!(
                "SELECT {NODE_COLS}, p.best, p.parent FROM positions p LEFT JOIN analysis a ON a.key = p.key
                 WHERE p.key = ?1"
            ))?,
            children: conn.prepare_cached(
                "SELECT move, child FROM moves WHERE parent = ?1 AND child IS NOT NULL",
            )?,
            parents: conn.prepare_cached("SELECT parent FROM parents WHERE child = ?1")?,
        })
    }
}

impl NodeCache {
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.stamp = None;
    }

    /// Drops the cache unless the file is as it was after the last game.
    /// Call inside the write transaction, so nobody can commit after it.
    fn revalidate(&mut self, conn: &Connection) -> Result<()> {
        let stamp = (data_version(conn)?, conn.total_changes());
        if self.stamp != Some(stamp) || self.nodes.len() > CACHE_LIMIT {
            self.nodes.clear();
        }
        Ok(())
    }

    /// Whether `key` is a stored position (read into the cache if needed).
    fn load(&mut self, sql: &mut Sql<'_>, key: u64) -> Result<bool> {
        if self.nodes.contains_key(&key) {
            return Ok(true);
        }
        let row = sql
            .node
            .query_row([to_sql(key)], cached_from_row)
            .optional()?;
        Ok(match row {
            Some(c) => {
                self.nodes.insert(key, c);
                true
            }
            None => false,
        })
    }

    /// The moves of a cached position, read if needed.
    fn children(&mut self, sql: &mut Sql<'_>, key: u64) -> Result<Vec<(MoveCode, u64)>> {
        if let Some(kids) = self.nodes.get(&key).and_then(|n| n.children.clone()) {
            return Ok(kids);
        }
        let kids = sql
            .children
            .query_map([to_sql(key)], |r| {
                Ok((MoveCode(r.get(0)?), from_sql(r.get(1)?)))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        if let Some(n) = self.nodes.get_mut(&key) {
            n.children = Some(kids.clone());
        }
        Ok(kids)
    }

    /// Every position with a book move into a cached position.
    fn parent_keys(&mut self, sql: &mut Sql<'_>, key: u64) -> Result<Vec<u64>> {
        let Some(n) = self.nodes.get(&key) else {
            return Ok(Vec::new());
        };
        let first = n.first_parent;
        let linked = match &n.linked {
            Some(l) => l.clone(),
            None => {
                let l = sql
                    .parents
                    .query_map([to_sql(key)], |r| r.get::<_, i64>(0).map(from_sql))?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                if let Some(n) = self.nodes.get_mut(&key) {
                    n.linked = Some(l.clone());
                }
                l
            }
        };
        let mut out: Vec<u64> = first.into_iter().chain(linked).collect();
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

/// A cached node from [`NODE_COLS`], `best`, `parent`.
fn cached_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Cached> {
    Ok(Cached {
        info: node_from_row(r, 0)?,
        best: r.get::<_, Option<u16>>(NODE_WIDTH)?.map(MoveCode),
        first_parent: r.get::<_, Option<i64>>(NODE_WIDTH + 1)?.map(from_sql),
        children: None,
        linked: None,
    })
}

fn data_version(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached("PRAGMA data_version")?
        .query_row([], |r| r.get(0))?)
}

/// The incremental pass's view of the book: the cache, read-through.
struct CachedTree<'a, 'c> {
    sql: &'a mut Sql<'c>,
    cache: &'a mut NodeCache,
    /// Positions whose row must be written.
    changed: &'a mut KeySet<u64>,
}

impl Tree for CachedTree<'_, '_> {
    fn node(&mut self, key: u64) -> Result<Option<(NodeInfo, Option<MoveCode>)>> {
        if !self.cache.load(self.sql, key)? {
            return Ok(None);
        }
        Ok(self.cache.nodes.get(&key).map(|n| (n.info, n.best)))
    }

    fn children(&mut self, key: u64) -> Result<Vec<(MoveCode, NodeInfo)>> {
        let mut out = Vec::new();
        for (mv, child) in self.cache.children(self.sql, key)? {
            if self.cache.load(self.sql, child)? {
                if let Some(c) = self.cache.nodes.get(&child) {
                    out.push((mv, c.info));
                }
            }
        }
        Ok(out)
    }

    fn parents(&mut self, key: u64) -> Result<Vec<(u64, Option<u32>)>> {
        let mut out = Vec::new();
        for parent in self.cache.parent_keys(self.sql, key)? {
            if self.cache.load(self.sql, parent)? {
                if let Some(p) = self.cache.nodes.get(&parent) {
                    out.push((parent, p.info.depth));
                }
            }
        }
        Ok(out)
    }

    fn set_value(&mut self, key: u64, value: f64, best: Option<MoveCode>) -> Result<()> {
        if let Some(n) = self.cache.nodes.get_mut(&key) {
            n.info.value = value;
            n.best = best;
            self.changed.insert(key);
        }
        Ok(())
    }
}

impl Book {
    /// Adds one game and re-evaluates the affected nodes, in one transaction.
    /// Returns `None` if the game is already in the book.
    pub fn add_game(&mut self, game: &Game, source: &str) -> Result<Option<Reevaluation>> {
        let params = self.settings.params;
        let out = add_game(&mut self.conn, &mut self.cache, &params, game, source);
        match &out {
            Ok(_) => {
                let stamp = (data_version(&self.conn)?, self.conn.total_changes());
                self.cache.stamp = Some(stamp);
            }
            Err(_) => self.cache.clear(),
        }
        out
    }
}

fn add_game(
    conn: &mut Connection,
    cache: &mut NodeCache,
    params: &ValueParams,
    game: &Game,
    source: &str,
) -> Result<Option<Reevaluation>> {
    // Immediate: the write lock is taken before the cache is checked.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    cache.revalidate(&tx)?;
    if !insert_game_row(&tx, game, source)? {
        return Ok(None);
    }
    let mut sql = Sql::new(&tx)?;
    let c = game.result.counts();
    let expected = game.expected_milli();
    let mut changed = KeySet::default();
    let mut new = KeySet::default();
    let mut path = Vec::with_capacity(game.plies.len() + 1);
    let mut from: Option<u64> = None;
    for (ply, key) in game.keys().enumerate() {
        let depth = game.start_ply + ply as u32;
        if cache.load(&mut sql, key)? {
            let Some(n) = cache.nodes.get_mut(&key) else {
                continue;
            };
            n.info.depth = Some(n.info.depth.map_or(depth, |d| d.min(depth)));
            n.info.counts.add(c);
            n.info.expected += expected;
            match (n.first_parent, from) {
                (None, Some(p)) => n.first_parent = Some(p),
                (Some(first), Some(p)) if first != p => {
                    link_transposition(&tx, key, first, p)?;
                    if let Some(linked) = &mut n.linked {
                        for k in [first, p] {
                            if !linked.contains(&k) {
                                linked.push(k);
                            }
                        }
                    }
                }
                _ => {}
            }
        } else {
            new.insert(key);
            cache.nodes.insert(
                key,
                Cached {
                    info: NodeInfo {
                        expected,
                        ..NodeInfo::from_counts(key, Some(depth), c)
                    },
                    best: None,
                    first_parent: from,
                    children: Some(Vec::new()),
                    linked: Some(Vec::new()),
                },
            );
        }
        changed.insert(key);
        path.push(key);
        from = Some(key);
    }
    {
        // A move the cache knows is updated; any other is upserted (it may
        // exist without a child, from a Polyglot import).
        let mut update = tx.prepare_cached(
            "UPDATE moves SET white = white + ?3, draws = draws + ?4, black = black + ?5
             WHERE parent = ?1 AND move = ?2",
        )?;
        let mut upsert = tx.prepare_cached(MOVE_UPSERT)?;
        for p in &game.plies {
            let known = cache
                .children(&mut sql, p.parent)?
                .contains(&(p.mv, p.child));
            if known {
                update.execute(params![to_sql(p.parent), p.mv.0, c.white, c.draws, c.black])?;
            } else {
                upsert.execute(params![
                    to_sql(p.parent),
                    p.mv.0,
                    p.uci(),
                    to_sql(p.child),
                    c.white,
                    c.draws,
                    c.black
                ])?;
                if let Some(kids) = cache
                    .nodes
                    .get_mut(&p.parent)
                    .and_then(|n| n.children.as_mut())
                {
                    match kids.iter_mut().find(|(mv, _)| *mv == p.mv) {
                        Some(kid) => kid.1 = p.child,
                        None => kids.push((p.mv, p.child)),
                    }
                }
            }
        }
    }
    if let Some(e) = game.terminal {
        let last = game.plies.last().map_or(game.start, |p| p.child);
        if let Some(n) = cache.nodes.get_mut(&last) {
            n.info.exact = Some(e);
        }
    }
    let re = reevaluate_path(&tx, &mut sql, cache, params, &path, changed, &new)?;
    drop(sql);
    tx.commit()?;
    Ok(Some(re))
}

/// Re-evaluates `path` (positions whose own inputs changed), every parent of
/// them (their edge values changed) and whatever depends on a changed value;
/// then writes the rows of `changed` (with those the pass changed).
fn reevaluate_path(
    conn: &Connection,
    sql: &mut Sql<'_>,
    cache: &mut NodeCache,
    params: &ValueParams,
    path: &[u64],
    mut changed: KeySet<u64>,
    new: &KeySet<u64>,
) -> Result<Reevaluation> {
    let mut tree = CachedTree {
        sql,
        cache,
        changed: &mut changed,
    };
    let mut dirty = Vec::with_capacity(path.len() * 2);
    for &key in path {
        let depth = tree.node(key)?.and_then(|(n, _)| n.depth);
        dirty.push((key, depth));
        dirty.extend(tree.parents(key)?);
    }
    let re = minimax::reevaluate_from(&mut tree, dirty, params)?;
    write_positions(conn, cache, &changed, new)?;
    Ok(re)
}

/// Re-evaluates after the inputs of `keys` changed other than through games
/// (their analysis), inside the caller's transaction.
pub(crate) fn reevaluate_keys(
    conn: &Connection,
    cache: &mut NodeCache,
    params: &ValueParams,
    keys: &[u64],
) -> Result<Reevaluation> {
    let mut sql = Sql::new(conn)?;
    reevaluate_path(
        conn,
        &mut sql,
        cache,
        params,
        keys,
        KeySet::default(),
        &KeySet::default(),
    )
}

/// Writes the cached rows of `changed` (`new`: not stored yet), in key order.
fn write_positions(
    conn: &Connection,
    cache: &NodeCache,
    changed: &KeySet<u64>,
    new: &KeySet<u64>,
) -> Result<()> {
    let mut keys: Vec<u64> = changed.iter().copied().collect();
    keys.sort_unstable_by_key(|&k| to_sql(k));
    let mut insert = conn.prepare_cached(
        "INSERT INTO positions(depth, white, draws, black, exact, value, best, parent, expected, key)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    let mut update = conn.prepare_cached(
        "UPDATE positions SET depth = ?1, white = ?2, draws = ?3, black = ?4, exact = ?5,
           value = ?6, best = ?7, parent = ?8, expected = ?9 WHERE key = ?10",
    )?;
    for key in keys {
        let Some(n) = cache.nodes.get(&key) else {
            continue;
        };
        let row = params![
            n.info.depth,
            n.info.counts.white,
            n.info.counts.draws,
            n.info.counts.black,
            n.info.exact,
            n.info.value,
            n.best.map(|m| m.0),
            n.first_parent.map(to_sql),
            n.info.expected,
            to_sql(key)
        ];
        if new.contains(&key) {
            insert.execute(row)?;
        } else {
            update.execute(row)?;
        }
    }
    Ok(())
}
