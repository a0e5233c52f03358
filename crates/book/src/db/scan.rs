//! Whole-table reads: every move (`check`, the Polyglot export) and every
//! parent link (`check`), and SQLite's own integrity check.

use anyhow::Result;

use super::book::Book;
use super::tail_index::{for_each_bucket, prefix};
use super::tails::for_each_tail;
use crate::keys::{Key, KeySet, MoveCode};
use crate::pgn::game::Counts;

/// A row of `moves`, with the depth of its parent position.
#[derive(Clone, Copy, Debug)]
pub struct StoredMove {
    pub parent: Key,
    pub mv: MoveCode,
    /// `None`: unknown (a move imported from Polyglot off the known tree).
    pub child: Option<Key>,
    pub counts: Counts,
    /// Weight read from an imported Polyglot book.
    pub weight: Option<u32>,
    /// `None` if the parent is not stored or its depth is unknown.
    pub parent_depth: Option<u32>,
    /// Added by `grow` (an engine move; ordinary once a game played it).
    pub grown: bool,
}

impl Book {
    /// Calls `f` on every move: the rows in `(parent, move)` order, then
    /// the moves within single-game tails.
    pub fn for_each_move(&self, mut f: impl FnMut(StoredMove)) -> Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT m.parent, m.move, m.child, m.white, m.draws, m.black, m.weight, pp.depth, m.grown
             FROM moves m LEFT JOIN positions pp ON pp.key = m.parent",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            f(StoredMove {
                parent: r.get(0)?,
                mv: MoveCode(r.get(1)?),
                child: r.get(2)?,
                counts: Counts {
                    white: r.get(3)?,
                    draws: r.get(4)?,
                    black: r.get(5)?,
                },
                weight: r.get(6)?,
                parent_depth: r.get::<_, Option<i64>>(7)?.map(|d| d as u32),
                grown: r.get(8)?,
            });
        }
        drop(rows);
        // Then the moves within tails, tail by tail.
        for_each_tail(&self.conn, &self.settings.params, |t| {
            for (i, n) in t.nodes.iter().enumerate() {
                if let Some(child) = t.nodes.get(i + 1) {
                    f(StoredMove {
                        parent: n.key,
                        mv: t.moves[i].0,
                        child: Some(child.key),
                        counts: n.counts,
                        weight: None,
                        parent_depth: n.depth,
                        grown: false,
                    });
                }
            }
            Ok(())
        })
    }

    /// `(child, parent)` of every parent link: `positions.parent` and the
    /// `parents` table, as the incremental pass finds parents.
    pub fn parent_links(&self) -> Result<KeySet<(Key, Key)>> {
        let mut stmt = self.conn.prepare(
            "SELECT key, parent FROM positions WHERE parent IS NOT NULL UNION ALL SELECT child, parent FROM parents",
        )?;
        let mut rows = stmt.query([])?;
        let mut out = KeySet::default();
        while let Some(r) = rows.next()? {
            out.insert((r.get(0)?, r.get(1)?));
        }
        drop(rows);
        // A tail position's parent is the position before it.
        for_each_tail(&self.conn, &self.settings.params, |t| {
            for i in 0..t.nodes.len() {
                out.insert((t.nodes[i].key, t.parent_of(i)));
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// What is wrong with the single-game tails: a tail position that is
    /// also a row, a tail position not listed under its game, or a listing
    /// that no tail position needs.
    pub fn tail_problems(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let mut rows: KeySet<Key> = KeySet::default();
        {
            let mut stmt = self.conn.prepare("SELECT key FROM positions")?;
            let mut r = stmt.query([])?;
            while let Some(row) = r.next()? {
                rows.insert(row.get(0)?);
            }
        }
        let mut listed: KeySet<(i64, i64)> = KeySet::default();
        for_each_bucket(&self.conn, "main", |_, entries| {
            listed.extend(entries);
            Ok(())
        })?;
        let mut needed: KeySet<(i64, i64)> = KeySet::default();
        for_each_tail(&self.conn, &self.settings.params, |t| {
            for n in &t.nodes {
                let entry = (prefix(n.key), t.game);
                if rows.contains(&n.key) && out.len() < 20 {
                    out.push(format!(
                        "position {} is a row and in game {}'s tail",
                        n.key, t.game
                    ));
                }
                if !listed.contains(&entry) && out.len() < 20 {
                    out.push(format!(
                        "position {} of game {}'s tail is not in the tails index",
                        n.key, t.game
                    ));
                }
                needed.insert(entry);
            }
            Ok(())
        })?;
        let extra = listed.difference(&needed).count();
        if extra > 0 {
            out.push(format!(
                "{extra} entries of the tails index list no tail position"
            ));
        }
        Ok(out)
    }

    /// SQLite's `PRAGMA integrity_check`: `ok`, or its first complaint.
    pub fn integrity_check(&self) -> Result<String> {
        Ok(self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}
