//! Moves of a Polyglot book added to a book (`import --polyglot`), and an
//! experience file's moves and search scores (`import --format exp`).

use anyhow::Result;
use rusqlite::params;

use super::analysis::{insert_analysis, Analysis, INSERT_ANALYSIS};
use super::book::Book;
use super::graph::{link_parent, reevaluate_all};
use super::tails::materialize_keys;
use crate::book::keys::{Key, MoveCode};

/// One Polyglot entry as a book move.
#[derive(Clone, Debug)]
pub struct ImportedMove {
    pub parent: Key,
    pub mv: MoveCode,
    pub uci: String,
    /// The position it leads to, where the parent was reached from the
    /// start position (else unknown).
    pub child: Option<Key>,
    pub weight: u16,
}

/// An experience file's move that is not a book move: stored as an engine
/// move (as `grow` stores them: `grown`, no games).
#[derive(Clone, Debug)]
pub struct EngineMove {
    pub parent: Key,
    pub mv: MoveCode,
    pub uci: String,
    pub child: Key,
}

impl Book {
    /// Adds `positions` (with their depth where known; a smaller depth
    /// replaces a stored one) and then `moves` (weights add up), links
    /// parents, and re-evaluates the whole book, in one transaction.
    pub fn add_imported(
        &mut self,
        positions: &[(Key, Option<u32>)],
        moves: &[ImportedMove],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        // Imported moves land on rows: tails they touch become rows first.
        let touched = positions.iter().map(|&(k, _)| k).chain(
            moves
                .iter()
                .flat_map(|m| std::iter::once(m.parent).chain(m.child)),
        );
        materialize_keys(&tx, &self.settings.params, touched)?;
        {
            let mut pos_stmt = tx.prepare(
                "INSERT INTO positions(key, depth) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET depth = CASE WHEN depth IS NULL OR
                   (excluded.depth IS NOT NULL AND excluded.depth < depth) THEN coalesce(excluded.depth, depth) ELSE depth END",
            )?;
            for (key, depth) in positions {
                pos_stmt.execute(params![key, depth])?;
            }
            let mut mv_stmt = tx.prepare(
                "INSERT INTO moves(parent, move, uci, child, weight) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(parent, move) DO UPDATE SET weight = coalesce(weight, 0) + excluded.weight,
                   child = coalesce(child, excluded.child)",
            )?;
            for m in moves {
                mv_stmt.execute(params![m.parent, m.mv.0, m.uci, m.child, m.weight])?;
                if let Some(c) = m.child {
                    link_parent(&tx, m.parent, c)?;
                }
            }
        }
        reevaluate_all(&tx, &self.settings.params)?;
        tx.commit()?;
        Ok(())
    }

    /// Adds `positions` (with their depth; a smaller depth replaces a
    /// stored one), engine `moves` (kept if the book has the move already)
    /// and search scores `rows` (replacing the positions' rows), then
    /// re-evaluates the whole book: one transaction, all or nothing.
    pub fn add_experience(
        &mut self,
        positions: &[(Key, u32)],
        moves: &[EngineMove],
        rows: &[Analysis],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        let touched = positions
            .iter()
            .map(|&(k, _)| k)
            .chain(moves.iter().flat_map(|m| [m.parent, m.child]))
            .chain(rows.iter().map(|a| a.key));
        materialize_keys(&tx, &self.settings.params, touched)?;
        {
            let mut pos_stmt = tx.prepare(
                "INSERT INTO positions(key, depth) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET depth = CASE WHEN depth IS NULL OR excluded.depth < depth
                   THEN excluded.depth ELSE depth END",
            )?;
            for (key, depth) in positions {
                pos_stmt.execute(params![key, depth])?;
            }
            let mut mv_stmt = tx.prepare(
                "INSERT OR IGNORE INTO moves(parent, move, uci, child, grown) VALUES (?1, ?2, ?3, ?4, 1)",
            )?;
            for m in moves {
                mv_stmt.execute(params![m.parent, m.mv.0, m.uci, m.child])?;
                link_parent(&tx, m.parent, m.child)?;
            }
            let mut a_stmt = tx.prepare_cached(INSERT_ANALYSIS)?;
            for a in rows {
                insert_analysis(&mut a_stmt, a)?;
            }
        }
        // The cached nodes do not know the new rows.
        self.cache.clear();
        reevaluate_all(&tx, &self.settings.params)?;
        tx.commit()?;
        Ok(())
    }
}
