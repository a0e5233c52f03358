//! Whole-table reads: every move (`check`, the Polyglot export) and every
//! parent link (`check`), and SQLite's own integrity check.

use anyhow::Result;

use super::book::Book;
use crate::book::ingest::Counts;
use crate::book::keys::{Key, KeySet, MoveCode};

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
}

impl Book {
    /// Calls `f` on every move, in `(parent, move)` order as stored.
    pub fn for_each_move(&self, mut f: impl FnMut(StoredMove)) -> Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT m.parent, m.move, m.child, m.white, m.draws, m.black, m.weight, pp.depth
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
            });
        }
        Ok(())
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
        Ok(out)
    }

    /// SQLite's `PRAGMA integrity_check`: `ok`, or its first complaint.
    pub fn integrity_check(&self) -> Result<String> {
        Ok(self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}
