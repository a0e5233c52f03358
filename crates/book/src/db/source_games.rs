//! The games one source added, read back in the order they came: what a
//! learner needs to remember its own games ([`crate::own_losses`]).

use anyhow::Result;
use rusqlite::params;

use super::book::Book;
use super::codec::moves_from_blob;
use crate::keys::MoveCode;
use crate::pgn::game::GameResult;

/// A game as its source added it.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceGame {
    /// Its row (later games have higher ids).
    pub id: i64,
    /// Its start (`None`: the standard start).
    pub fen: Option<String>,
    /// All its moves, stored and beyond the book's ply limit.
    pub moves: Vec<MoveCode>,
    pub result: GameResult,
}

impl Book {
    /// The games `source` added after the game `after_id` (0: all), in
    /// order. A game whose moves cannot be read is left out.
    pub fn games_of_source(&self, source: &str, after_id: i64) -> Result<Vec<SourceGame>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, fen, moves, rest, result FROM games
             WHERE id > ?2 AND source = (SELECT id FROM sources WHERE name = ?1)
             ORDER BY id",
        )?;
        let mut rows = stmt.query(params![source, after_id])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let moves: Option<Vec<u8>> = r.get(2)?;
            let rest: Option<Vec<u8>> = r.get(3)?;
            let result: String = r.get(4)?;
            let (Some(mut moves), Some(rest), Some(result)) = (
                moves.as_deref().and_then(moves_from_blob),
                rest.as_deref().map_or(Some(Vec::new()), moves_from_blob),
                GameResult::parse(&result),
            ) else {
                continue;
            };
            moves.extend(rest);
            out.push(SourceGame {
                id: r.get(0)?,
                fen: r.get(1)?,
                moves: moves.into_iter().map(MoveCode).collect(),
                result,
            });
        }
        Ok(out)
    }
}
