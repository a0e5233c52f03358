//! Moves of a Polyglot or Arena book added to a book (`import`), and an
//! experience file's moves and search scores (`import --format exp`).

use anyhow::Result;
use rusqlite::params;

use super::analysis::{insert_analysis, Analysis, INSERT_ANALYSIS};
use super::book::Book;
use super::graph::link_parent;
use super::tails::materialize_keys;
use super::values::reevaluate_within;
use crate::keys::{Key, MoveCode};
use crate::pgn::game::Counts;
use crate::sort::PairSorter;
use learnbook_base::atomic_file::{directory_of, file_name_of};

/// Keys [`Book::add_imported`] turns from tails into rows at a time (8 MB):
/// a tail game that holds keys of two batches is expanded twice, the second
/// time from where the first left its tail.
const MATERIALIZE_BATCH: usize = 1 << 20;

/// Memory for sorting the parent links of a book without a budget.
const LINK_SORT_BYTES: u64 = 64 << 20;

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
    /// parents (a new row's first parent is its smallest key as Polyglot
    /// orders keys), and
    /// re-evaluates the whole book, in one transaction. Every move's parent
    /// and child are among `positions`, which are read twice (tails they
    /// touch first become rows); `moves` are read once, as they come. Both
    /// stream: memory is the re-evaluation's budget and SQLite's cache.
    pub fn add_imported<P>(
        &mut self,
        positions: impl Fn() -> Result<P>,
        moves: impl IntoIterator<Item = Result<ImportedMove>>,
    ) -> Result<()>
    where
        P: Iterator<Item = Result<(Key, Option<u32>)>>,
    {
        let tx = self.conn.transaction()?;
        // Imported moves land on rows: tails they touch become rows first,
        // a bounded batch of keys at a time.
        let mut batch = Vec::with_capacity(MATERIALIZE_BATCH);
        for p in positions()? {
            batch.push(p?.0);
            if batch.len() == MATERIALIZE_BATCH {
                materialize_keys(&tx, &self.settings.params, batch.drain(..))?;
            }
        }
        materialize_keys(&tx, &self.settings.params, batch)?;
        learnbook_base::peak_memory::trace("import: tails turned into rows");
        {
            let mut pos_stmt = tx.prepare(
                "INSERT INTO positions(key, depth) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET depth = CASE WHEN depth IS NULL OR
                   (excluded.depth IS NOT NULL AND excluded.depth < depth) THEN coalesce(excluded.depth, depth) ELSE depth END",
            )?;
            for p in positions()? {
                let (key, depth) = p?;
                pos_stmt.execute(params![key, depth])?;
            }
            let mut mv_stmt = tx.prepare(
                "INSERT INTO moves(parent, move, uci, child, weight) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(parent, move) DO UPDATE SET weight = coalesce(weight, 0) + excluded.weight,
                   child = coalesce(child, excluded.child)",
            )?;
            // Linked in child order, not as the moves come: a child's row
            // is then found beside the last one (writing a 174 M-entry
            // import's rows: 734 s, against 1,511 s with a random look-up
            // per move). A child's parents in Polyglot's (unsigned) key
            // order: its first parent is the first in a sorted book's
            // file, as when linked as they came.
            let mut links = PairSorter::new(
                self.memory.get().map_or(LINK_SORT_BYTES, |m| m / 8),
                directory_of(&self.path),
                &format!("{}.import-links", file_name_of(&self.path)),
            );
            for m in moves {
                let m = m?;
                mv_stmt.execute(params![m.parent, m.mv.0, m.uci, m.child, m.weight])?;
                if let Some(c) = m.child {
                    links.push((c.to_sql(), m.parent.to_sql() ^ i64::MIN))?;
                }
            }
            links.drain(|pairs| {
                for &(child, parent) in pairs {
                    link_parent(&tx, Key::from_sql(parent ^ i64::MIN), Key::from_sql(child))?;
                }
                Ok(())
            })?;
        }
        learnbook_base::peak_memory::release_free();
        learnbook_base::peak_memory::trace("import: rows written");
        reevaluate_within(&tx, &self.settings.params, self.memory.get(), &self.path)?;
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
        reevaluate_within(&tx, &self.settings.params, self.memory.get(), &self.path)?;
        tx.commit()?;
        Ok(())
    }
}

/// A position of an imported book that carries game counts (Arena's `.abk`).
#[derive(Clone, Copy, Debug)]
pub struct CountedPosition {
    pub key: Key,
    /// Plies from the start position (the book reached it from there).
    pub depth: u32,
    /// The games through it, as far as the imported book says.
    pub counts: Counts,
}

/// An imported move with the games the imported book counted for it.
#[derive(Clone, Debug)]
pub struct CountedMove {
    pub imported: ImportedMove,
    pub counts: Counts,
}

impl Book {
    /// As [`Book::add_imported`], for books that count games: a move gets
    /// the imported counts where it has fewer games than they say, a
    /// position the larger of its own and the imported counts, result by
    /// result (an imported book's statistics were most likely counted from
    /// games this book may have seen too: adding them would count those
    /// games twice; the larger count is the one that loses nothing). Weights
    /// add up as in [`Book::add_imported`]. One transaction.
    pub fn add_imported_counted(
        &mut self,
        positions: &[CountedPosition],
        moves: &[CountedMove],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        let touched = positions.iter().map(|p| p.key).chain(
            moves
                .iter()
                .flat_map(|m| std::iter::once(m.imported.parent).chain(m.imported.child)),
        );
        materialize_keys(&tx, &self.settings.params, touched)?;
        {
            let mut pos_stmt = tx.prepare(
                "INSERT INTO positions(key, depth, white, draws, black) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(key) DO UPDATE SET
                   depth = CASE WHEN depth IS NULL OR excluded.depth < depth THEN excluded.depth ELSE depth END,
                   white = max(white, excluded.white),
                   draws = max(draws, excluded.draws),
                   black = max(black, excluded.black)",
            )?;
            for p in positions {
                let c = p.counts;
                pos_stmt.execute(params![p.key, p.depth, c.white, c.draws, c.black])?;
            }
            let mut mv_stmt = tx.prepare(
                "INSERT INTO moves(parent, move, uci, child, weight, white, draws, black)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT(parent, move) DO UPDATE SET
                   weight = coalesce(weight, 0) + excluded.weight,
                   child = coalesce(child, excluded.child),
                   white = CASE WHEN excluded.white + excluded.draws + excluded.black > white + draws + black THEN excluded.white ELSE white END,
                   draws = CASE WHEN excluded.white + excluded.draws + excluded.black > white + draws + black THEN excluded.draws ELSE draws END,
                   black = CASE WHEN excluded.white + excluded.draws + excluded.black > white + draws + black THEN excluded.black ELSE black END",
            )?;
            for m in moves {
                let (i, c) = (&m.imported, m.counts);
                mv_stmt.execute(params![
                    i.parent, i.mv.0, i.uci, i.child, i.weight, c.white, c.draws, c.black
                ])?;
                if let Some(child) = i.child {
                    link_parent(&tx, i.parent, child)?;
                }
            }
        }
        // The counts have no games behind them: `check` then cannot hold
        // the tree's games to the games table.
        tx.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('imported_counts', 'abk')",
            [],
        )?;
        reevaluate_within(&tx, &self.settings.params, self.memory.get(), &self.path)?;
        tx.commit()?;
        Ok(())
    }

    /// Whether game counts were imported (from an ABK book) without their
    /// games.
    pub fn has_imported_counts(&self) -> Result<bool> {
        Ok(self.conn.query_row(
            "SELECT count(*) FROM meta WHERE key = 'imported_counts'",
            [],
            |r| r.get::<_, i64>(0),
        )? > 0)
    }
}
