//! Search scores of positions (table `analysis`), as `analyze` stores them.

use anyhow::Result;
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

use super::book::Book;
use super::learn::reevaluate_keys;
use super::tails::materialize_keys;
use crate::keys::{Key, MoveCode};
use crate::values::minimax::Reevaluation;

/// A position's search scores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub key: Key,
    /// Search score of the position, centipawns, side to move (mate:
    /// +-(30000 - plies)).
    pub score: i32,
    pub depth: u32,
    /// Its moves were analysed too: the deviation was searched.
    pub interior: bool,
    /// Score of the best legal move that is not a book move (side to move);
    /// `None` for a leaf of the analysis or when every legal move is a book move.
    pub deviation: Option<i32>,
    pub dev_move: Option<MoveCode>,
    pub dev_depth: Option<u32>,
    /// Book moves with games when it was analysed.
    pub book_moves: u32,
    /// The engine (`learnbook` for the search core, else the UCI `id name`).
    pub engine: String,
    /// The search budget, `nodes=N` or `movetime=MS`.
    pub budget: String,
    /// Expanded by `grow`: the engine moves it searched for (its width);
    /// `None` for `analyze`'s rows.
    pub grown: Option<u32>,
}

/// The columns of `analysis`, as [`analysis_from_row`] reads them.
pub(super) const ANALYSIS_COLUMNS: &str =
    "key, score, depth, interior, deviation, dev_move, dev_depth, book_moves, engine, budget, grown";

/// Stores a row of `analysis` (replacing the position's older one).
pub(super) const INSERT_ANALYSIS: &str =
    "INSERT OR REPLACE INTO analysis(key, score, depth, interior, deviation, dev_move, dev_depth, book_moves, engine, budget, grown)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

/// Runs [`INSERT_ANALYSIS`] for `a`.
pub(super) fn insert_analysis(stmt: &mut rusqlite::Statement<'_>, a: &Analysis) -> Result<()> {
    stmt.execute(params![
        a.key,
        a.score,
        a.depth,
        a.interior,
        a.deviation,
        a.dev_move.map(|m| m.0),
        a.dev_depth,
        a.book_moves,
        a.engine,
        a.budget,
        a.grown
    ])?;
    Ok(())
}

/// A row selected with [`ANALYSIS_COLUMNS`].
pub(super) fn analysis_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Analysis> {
    Ok(Analysis {
        key: r.get(0)?,
        score: r.get(1)?,
        depth: r.get(2)?,
        interior: r.get(3)?,
        deviation: r.get(4)?,
        dev_move: r.get::<_, Option<u16>>(5)?.map(MoveCode),
        dev_depth: r.get(6)?,
        book_moves: r.get(7)?,
        engine: r.get(8)?,
        budget: r.get(9)?,
        grown: r.get(10)?,
    })
}

impl Book {
    /// The stored analysis of a position.
    pub fn analysis(&self, key: Key) -> Result<Option<Analysis>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "SELECT {ANALYSIS_COLUMNS} FROM analysis WHERE key = ?1"
            ))?
            .query_row([key], analysis_from_row)
            .optional()?)
    }

    /// Calls `f` on every stored analysis row (the experience export reads
    /// them all), one at a time.
    pub fn for_each_analysis(&self, mut f: impl FnMut(Analysis)) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {ANALYSIS_COLUMNS} FROM analysis"))?;
        for row in stmt.query_map([], analysis_from_row)? {
            f(row?);
        }
        Ok(())
    }

    /// `(search score for White, [White wins, draws, Black wins])` of every
    /// analysed position with at least `min_games` games: what a score
    /// predicts of results (`suite --draw-rate` fits its model on them).
    pub fn analysed_results(&self, min_games: u32) -> Result<Vec<(i32, [u32; 3])>> {
        let mut stmt = self.conn.prepare(
            "SELECT a.score, p.depth, p.white, p.draws, p.black
             FROM analysis a JOIN positions p ON p.key = a.key
             WHERE p.white + p.draws + p.black >= ?1 AND p.depth IS NOT NULL",
        )?;
        let rows = stmt.query_map([min_games], |r| {
            let score: i32 = r.get(0)?;
            let depth: u32 = r.get(1)?;
            let white = if depth.is_multiple_of(2) {
                score
            } else {
                -score
            };
            Ok((white, [r.get(2)?, r.get(3)?, r.get(4)?]))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Number of analysed positions (interior, all).
    pub fn analysed_count(&self) -> Result<(i64, i64)> {
        Ok(self.conn.query_row(
            "SELECT coalesce(sum(interior), 0), count(*) FROM analysis",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?)
    }

    /// Stores search scores (replacing older ones of the same positions) and
    /// re-evaluates what they change, in one transaction: values stay exactly
    /// those of a full re-evaluation after every call.
    pub fn store_analysis(&mut self, rows: &[Analysis]) -> Result<Reevaluation> {
        let params = self.settings.params;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // A search score changes a tail position's value: rows first.
        materialize_keys(&tx, &params, rows.iter().map(|a| a.key))?;
        {
            let mut stmt = tx.prepare_cached(INSERT_ANALYSIS)?;
            for a in rows {
                insert_analysis(&mut stmt, a)?;
            }
        }
        // The cached nodes do not know the new scores.
        self.cache.clear();
        let keys: Vec<Key> = rows.iter().map(|a| a.key).collect();
        // (After this write the next `add_game` finds the stamp changed and
        // starts its cache afresh; an error leaves it to be dropped too.)
        let out = reevaluate_keys(&tx, &mut self.cache, &params, &keys);
        if out.is_err() {
            self.cache.clear();
        }
        let out = out?;
        tx.commit()?;
        Ok(out)
    }
}
