//! The whole book one position at a time, within a memory budget: every
//! row in key order with its moves and the nodes of its children (read
//! back through SQLite), then the positions of the single-game tails. What
//! `export` and `check` need of the book without its graph in memory
//! ([`Book::load_graph`] holds about [`GRAPH_BYTES_PER_POSITION`] bytes a
//! position, tail positions included). The tails' first positions, children
//! of rows, are expanded once beforehand and sorted by the row before them.

use anyhow::Result;

use super::book::Book;
use super::cache::{NodeCache, Sql};
use super::node_rows::{node_from_row, NODE_COLS, NODE_WIDTH};
use super::scan::StoredMove;
use super::tail_index::{for_each_bucket, prefix};
use super::tails::for_each_tail;
use super::values::{info_from_bytes, push_tail_heads, Due, GRAPH_BYTES_PER_POSITION};
use crate::keys::{Key, MoveCode};
use crate::pgn::game::Counts;
use crate::sort::{Sorted, Sorter};
use crate::values::minimax::NodeInfo;

/// Children's nodes the cache holds before it starts again (about 200
/// bytes each).
const CACHE_POSITIONS: usize = 1 << 16;

/// One position as [`Book::for_each_position`] hands it over.
pub struct PositionMoves<'a> {
    /// The position (`None`: moves whose parent is not a stored position).
    pub node: Option<&'a NodeInfo>,
    /// Its stored choice.
    pub best: Option<MoveCode>,
    /// Its moves, in the order [`Book::for_each_move`] gives them.
    pub moves: &'a [StoredMove],
    /// `(move, child)` of every move to a stored position, by move: the
    /// children [`Book::load_graph`]'s graph gives the position.
    pub children: &'a [(MoveCode, NodeInfo)],
    /// A tail position's game and the position before it (rows: `None`;
    /// their parent links are [`Book::for_each_row_link`]'s).
    pub tail: Option<(i64, Key)>,
}

impl Book {
    /// The budget [`Book::limit_memory`] set, if any.
    pub fn memory_budget(&self) -> Option<u64> {
        self.memory.get()
    }

    /// What [`Book::load_graph`] would hold: about
    /// [`GRAPH_BYTES_PER_POSITION`] bytes for each row and each position
    /// of a single-game tail (up to the book's `max_ply`).
    pub fn graph_bytes(&self) -> Result<u64> {
        let max_ply = i64::from(self.settings.max_ply);
        let (rows, tails): (i64, Option<i64>) = self.conn.query_row(
            "SELECT (SELECT count(*) FROM positions),
                    (SELECT sum(max(min(plies, ?1) - tail + 1, 0)) FROM games WHERE tail IS NOT NULL)",
            [max_ply],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let positions = rows.max(0) as u64 + tails.unwrap_or(0).max(0) as u64;
        Ok(positions * GRAPH_BYTES_PER_POSITION)
    }

    /// Whether the graph does not fit half of the budget set by
    /// [`Book::limit_memory`] (never without one): the whole-book commands
    /// then read the book a position at a time instead.
    pub fn graph_exceeds_budget(&self) -> Result<bool> {
        Ok(match self.memory.get() {
            Some(m) => self.graph_bytes()? > m / 2,
            None => false,
        })
    }

    /// Calls `f` on every position: the rows in key order (and, where
    /// moves have a parent that is not a row, those moves with no node),
    /// then each single-game tail's positions. The moves come in the order
    /// of [`Book::for_each_move`]. Holds one position and a bounded cache
    /// of children at a time.
    pub fn for_each_position(
        &self,
        mut f: impl FnMut(PositionMoves<'_>) -> Result<()>,
    ) -> Result<()> {
        let params = self.settings.params;
        let mut heads = self.tail_heads_by_row()?;
        let mut next_head = heads.next_record()?;
        // The tails' first positions after the current row.
        let mut here_heads: Vec<NodeInfo> = Vec::new();
        let mut positions = self.conn.prepare(&format!(
            "SELECT {NODE_COLS}, p.best FROM positions p LEFT JOIN analysis a ON a.key = p.key
             ORDER BY p.key"
        ))?;
        let mut moves = self.conn.prepare(
            "SELECT parent, move, child, white, draws, black, weight, grown FROM moves
             ORDER BY parent, move",
        )?;
        let mut pos_rows = positions.query([])?;
        let mut move_rows = moves.query([])?;
        let mut sql = Sql::new(&self.conn, &params)?;
        let mut cache = NodeCache::default();
        // The next move not yet handed over, with its parent as stored.
        let mut pending = read_move(&mut move_rows)?;
        let mut group: Vec<StoredMove> = Vec::new();
        let mut children: Vec<(MoveCode, NodeInfo)> = Vec::new();
        let mut node: Option<(i64, NodeInfo, Option<MoveCode>)> = read_node(&mut pos_rows)?;
        loop {
            // The smaller of the next row's key and the next move's parent.
            let at = match (&node, &pending) {
                (None, None) => break,
                (Some((k, ..)), None) => *k,
                (None, Some((p, _))) => *p,
                (Some((k, ..)), Some((p, _))) => (*k).min(*p),
            };
            group.clear();
            while let Some((p, m)) = pending {
                if p != at {
                    break;
                }
                group.push(m);
                pending = read_move(&mut move_rows)?;
            }
            let here = match &node {
                Some((k, n, b)) if *k == at => Some((*n, *b)),
                _ => None,
            };
            children.clear();
            here_heads.clear();
            while let Some(h) = next_head.filter(|h| h.key <= at) {
                if h.key == at {
                    here_heads.push(info_from_bytes(&h.head));
                }
                next_head = heads.next_record()?;
            }
            for m in &mut group {
                m.parent_depth = here.and_then(|(n, _)| n.depth);
                let Some(child) = m.child else {
                    continue;
                };
                if cache.nodes.len() > CACHE_POSITIONS {
                    cache.clear();
                }
                // A row first, as NodeCache::load looks; then a tail that
                // starts here; then any tail.
                if cache.load_row(&mut sql, child)? {
                    if let Some(c) = cache.nodes.get(&child) {
                        children.push((m.mv, c.info));
                    }
                } else if let Some(h) = here_heads.iter().find(|h| h.key == child) {
                    children.push((m.mv, *h));
                } else if cache.load(&mut sql, child)? {
                    if let Some(c) = cache.nodes.get(&child) {
                        children.push((m.mv, c.info));
                    }
                }
            }
            f(PositionMoves {
                node: here.as_ref().map(|(n, _)| n),
                best: here.and_then(|(_, b)| b),
                moves: &group,
                children: &children,
                tail: None,
            })?;
            if here.is_some() {
                node = read_node(&mut pos_rows)?;
            }
        }
        drop(pos_rows);
        drop(move_rows);
        for_each_tail(&self.conn, &params, |t| {
            for (i, n) in t.nodes.iter().enumerate() {
                group.clear();
                children.clear();
                if let Some(child) = t.nodes.get(i + 1) {
                    group.push(StoredMove {
                        parent: n.key,
                        mv: t.moves[i].0,
                        child: Some(child.key),
                        counts: n.counts,
                        weight: None,
                        parent_depth: n.depth,
                        grown: false,
                    });
                    children.push((t.moves[i].0, *child));
                }
                f(PositionMoves {
                    node: Some(n),
                    best: t.best[i],
                    moves: &group,
                    children: &children,
                    tail: Some((t.game, t.parent_of(i))),
                })?;
            }
            Ok(())
        })
    }
}

impl Book {
    /// Every tail's first position with its value, sorted by the key of the
    /// row before it (on disk past a twentieth of the budget, beside the
    /// book): each tail expanded once, rather than once for each look-up
    /// of its first position as a child.
    fn tail_heads_by_row(&self) -> Result<Sorted<Due>> {
        let memory = self.memory.get().unwrap_or(1 << 28);
        let dir = learnbook_base::atomic_file::directory_of(&self.path);
        let name = self
            .path
            .file_name()
            .map_or_else(|| "book".into(), |n| n.to_string_lossy().into_owned());
        let mut by_row: Sorter<Due> =
            Sorter::new(memory / 20, dir, &format!("{name}.positions-tail-heads"));
        push_tail_heads(&self.conn, &self.settings.params, &mut by_row)?;
        by_row.into_sorted()
    }

    /// Calls `f(child, parent)` on every parent link of a row
    /// (`positions.parent` and the `parents` table), as they come.
    pub fn for_each_row_link(&self, mut f: impl FnMut(Key, Key) -> Result<()>) -> Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT key, parent FROM positions WHERE parent IS NOT NULL UNION ALL SELECT child, parent FROM parents",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            f(r.get(0)?, r.get(1)?)?;
        }
        Ok(())
    }

    /// Calls `f(prefix, game)` on every entry of the tails index (the
    /// positions of game `game`'s tail whose key has that prefix).
    pub fn for_each_tail_listing(&self, mut f: impl FnMut(i64, i64) -> Result<()>) -> Result<()> {
        for_each_bucket(&self.conn, "main", |_, entries| {
            for (p, g) in entries {
                f(p, g)?;
            }
            Ok(())
        })
    }
}

/// The prefix under which the tails index lists a tail position's key.
pub fn tail_listing(key: Key) -> i64 {
    prefix(key)
}

/// The next row of the positions' scan: its key as stored, node and choice.
fn read_node(rows: &mut rusqlite::Rows<'_>) -> Result<Option<(i64, NodeInfo, Option<MoveCode>)>> {
    let Some(r) = rows.next()? else {
        return Ok(None);
    };
    let key: i64 = r.get(0)?;
    let node = node_from_row(r, 0)?;
    let best = r.get::<_, Option<u16>>(NODE_WIDTH)?.map(MoveCode);
    Ok(Some((key, node, best)))
}

/// The next row of the moves' scan, with its parent's key as stored (its
/// depth is the parent row's, filled in by the caller).
fn read_move(rows: &mut rusqlite::Rows<'_>) -> Result<Option<(i64, StoredMove)>> {
    let Some(r) = rows.next()? else {
        return Ok(None);
    };
    let parent: i64 = r.get(0)?;
    Ok(Some((
        parent,
        StoredMove {
            parent: Key::from_sql(parent),
            mv: MoveCode(r.get(1)?),
            child: r.get(2)?,
            counts: Counts {
                white: r.get(3)?,
                draws: r.get(4)?,
                black: r.get(5)?,
            },
            weight: r.get(6)?,
            parent_depth: None,
            grown: r.get(7)?,
        },
    )))
}
