//! What the explorer reads beyond counts and values: the games' headers and
//! whole moves, each move's rating sums, each position's top games (kept
//! by [`super::top_games`]).

use anyhow::{anyhow, Result};
use rusqlite::OptionalExtension;
use shakmaty::{fen::Fen, san::SanPlus, CastlingMode, Chess};

use super::book::Book;
use super::codec::{hash_from_sql, hash_to_sql, moves_from_blob};
use super::tails::tail_node;
use super::top_games::{game_ratings, mover_elo, rank_of, top_from_blob, TopEntry, TopList};
use crate::keys::{Key, MoveCode};
use crate::pgn::game::GameResult;
use crate::pgn::write::{MoveNumber, MovetextWriter};

/// The search score of a child position, as its analysis stored it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildScore {
    pub key: Key,
    /// Centipawns for the side to move at the child.
    pub score: i32,
    pub depth: u32,
    /// The engine's name and version, and the budget of its search.
    pub engine: String,
    pub budget: String,
}

/// A move's rating sums: the mover's rating summed over the games where it
/// is known, and how many those are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveRating {
    pub mv: MoveCode,
    pub rating_sum: u64,
    pub rated: u32,
}

/// A game as a row of the explorer: who played it, when, and who won.
#[derive(Clone, Debug, PartialEq)]
pub struct GameHeader {
    /// The game's hash (`games.hash`): its id in URLs, as 16 hex digits.
    pub id: u64,
    pub white: String,
    pub black: String,
    pub white_elo: Option<u32>,
    pub black_elo: Option<u32>,
    pub result: GameResult,
    /// The PGN `Date` tag as written (`1992.??.??`), if any.
    pub date: Option<String>,
}

/// A game as `/masters/pgn` writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct GameInfo {
    pub header: GameHeader,
    pub event: Option<String>,
    pub site: Option<String>,
    pub round: Option<String>,
    /// The FEN it started from (`None`: the standard start).
    pub fen: Option<String>,
    /// Every move of the game that the book kept: the stored ones and the
    /// rest (the rest is missing for games from before schema 7).
    pub moves: Vec<MoveCode>,
    /// Moves in the whole game.
    pub plies: u32,
}

impl GameInfo {
    /// The game as PGN: the seven tag roster, the ratings, FEN and SetUp
    /// for a game from a position, and the moves in SAN.
    pub fn pgn(&self) -> Result<String> {
        use std::fmt::Write;
        let h = &self.header;
        let mut s = String::new();
        let tag = |s: &mut String, name: &str, value: &str| {
            let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
            let _ = writeln!(s, "[{name} \"{escaped}\"]");
        };
        tag(&mut s, "Event", self.event.as_deref().unwrap_or("?"));
        tag(&mut s, "Site", self.site.as_deref().unwrap_or("?"));
        tag(&mut s, "Date", h.date.as_deref().unwrap_or("????.??.??"));
        tag(&mut s, "Round", self.round.as_deref().unwrap_or("?"));
        tag(&mut s, "White", &h.white);
        tag(&mut s, "Black", &h.black);
        tag(&mut s, "Result", h.result.as_str());
        if let Some(e) = h.white_elo {
            tag(&mut s, "WhiteElo", &e.to_string());
        }
        if let Some(e) = h.black_elo {
            tag(&mut s, "BlackElo", &e.to_string());
        }
        let mut pos = match &self.fen {
            Some(f) => {
                tag(&mut s, "FEN", f);
                tag(&mut s, "SetUp", "1");
                let fen: Fen = f.parse().map_err(|e| anyhow!("game fen {f:?}: {e}"))?;
                fen.into_position::<Chess>(CastlingMode::Standard)
                    .map_err(|e| anyhow!("game fen {f:?}: {e}"))?
            }
            None => Chess::default(),
        };
        s.push('\n');
        // Writing to memory cannot fail.
        let mut line = MovetextWriter::new(Vec::new());
        for (i, code) in self.moves.iter().enumerate() {
            let mv = code
                .to_move(&pos)
                .ok_or_else(|| anyhow!("game {:016x}: move {} is illegal", h.id, i + 1))?;
            let at = MoveNumber::of(&pos);
            let san = SanPlus::from_move_and_play_unchecked(&mut pos, mv);
            let _ = line.mv(at, &san.to_string());
        }
        if (self.moves.len() as u32) < self.plies {
            // A game from before schema 7: only its stored moves are known
            // (the comment spaced inside its braces, as it always was).
            for word in "{ the rest of the game is not in the book }".split(' ') {
                let _ = line.word(word);
            }
        }
        let _ = line.result(h.result.as_str());
        s.push_str(&line.into_string());
        s.push('\n');
        Ok(s)
    }
}

const GAME_INFO_COLS: &str =
    "hash, white, black, white_elo, black_elo, result, date, event, site, round, fen, moves, rest, plies";

fn game_info_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<GameInfo> {
    let moves: Option<Vec<u8>> = r.get(11)?;
    let rest: Option<Vec<u8>> = r.get(12)?;
    let mut all: Vec<MoveCode> = moves
        .as_deref()
        .and_then(moves_from_blob)
        .unwrap_or_default()
        .into_iter()
        .map(MoveCode)
        .collect();
    all.extend(
        rest.as_deref()
            .and_then(moves_from_blob)
            .unwrap_or_default()
            .into_iter()
            .map(MoveCode),
    );
    let info = GameInfo {
        header: header_from_row(r)?,
        event: r.get(7)?,
        site: r.get(8)?,
        round: r.get(9)?,
        fen: r.get(10)?,
        moves: all,
        plies: r.get(13)?,
    };
    Ok(info)
}

/// The columns [`header_from_row`] reads, first in [`GAME_INFO_COLS`] too.
const HEADER_COLS: &str = "hash, white, black, white_elo, black_elo, result, date";

/// A [`GameHeader`] from the [`HEADER_COLS`] of a `games` row (an unknown
/// result reads as `*`).
fn header_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<GameHeader> {
    let result: String = r.get(5)?;
    Ok(GameHeader {
        id: hash_from_sql(r.get(0)?),
        white: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
        black: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
        white_elo: r.get(3)?,
        black_elo: r.get(4)?,
        result: GameResult::parse(&result).unwrap_or(GameResult::Unknown),
        date: r.get(6)?,
    })
}

impl Book {
    /// Runs `f` inside one read transaction: everything it reads is one
    /// committed state of the book, whatever another connection writes.
    pub fn read_snapshot<T>(&self, f: impl FnOnce(&Book) -> Result<T>) -> Result<T> {
        let tx = self.conn.unchecked_transaction()?;
        let out = f(self);
        // A read transaction: nothing to commit, and ending it cannot lose anything.
        drop(tx);
        out
    }

    /// The game with hash `id`, if the book has it.
    pub fn game_info(&self, id: u64) -> Result<Option<GameInfo>> {
        let row = self
            .conn
            .prepare_cached(&format!(
                "SELECT {GAME_INFO_COLS} FROM games WHERE hash = ?1"
            ))?
            .query_row([hash_to_sql(id)], game_info_from_row)
            .optional()?;
        Ok(row)
    }

    /// Who played the games of `ids` and how they ended, for those the
    /// book has (any order; their moves are not read).
    pub fn game_headers(&self, ids: &[u64]) -> Result<Vec<GameHeader>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {HEADER_COLS} FROM games WHERE hash = ?1"))?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let row = stmt
                .query_row([hash_to_sql(id)], header_from_row)
                .optional()?;
            out.extend(row);
        }
        Ok(out)
    }

    /// The analysis of every child of `key` that has one: `(child, score
    /// for the child's side to move, depth)`.
    pub fn child_analyses(&self, key: Key) -> Result<Vec<ChildScore>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT a.key, a.score, a.depth, a.engine, a.budget FROM moves m JOIN analysis a ON a.key = m.child
             WHERE m.parent = ?1",
        )?;
        let rows = stmt.query_map([key], |r| {
            Ok(ChildScore {
                key: r.get(0)?,
                score: r.get(1)?,
                depth: r.get(2)?,
                engine: r.get(3)?,
                budget: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The rating sums of the moves of `key` (a row's moves, or a tail
    /// position's one move, from its game).
    pub fn explorer_moves(&self, key: Key) -> Result<Vec<MoveRating>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT move, rating_sum, rated FROM moves WHERE parent = ?1")?;
        let rows = stmt.query_map([key], |r| {
            Ok(MoveRating {
                mv: MoveCode(r.get(0)?),
                rating_sum: r.get::<_, i64>(1)?.max(0) as u64,
                rated: r.get(2)?,
            })
        })?;
        let out = rows.collect::<rusqlite::Result<Vec<_>>>()?;
        if !out.is_empty() {
            return Ok(out);
        }
        match self.tail_game_entry(key)? {
            Some((entry, mover_elo)) => Ok(vec![MoveRating {
                mv: entry.mv,
                rating_sum: u64::from(mover_elo.unwrap_or(0)),
                rated: u32::from(mover_elo.is_some()),
            }]),
            None => Ok(Vec::new()),
        }
    }

    /// The top list of `key`, ranked (a tail position's is its one game).
    pub fn top_entries(&self, key: Key) -> Result<Vec<TopEntry>> {
        let blob: Option<Option<Vec<u8>>> = self
            .conn
            .prepare_cached("SELECT top FROM positions WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?;
        match blob {
            Some(b) => Ok(b
                .as_deref()
                .and_then(top_from_blob)
                .map(|l| l.trimmed().entries())
                .unwrap_or_default()),
            None => Ok(self
                .tail_game_entry(key)?
                .map(|(e, _)| vec![e])
                .unwrap_or_default()),
        }
    }

    /// For a tail position with a move: that move's entry (its game) and
    /// the mover's rating.
    fn tail_game_entry(&self, key: Key) -> Result<Option<(TopEntry, Option<u32>)>> {
        let Some((exp, i)) = tail_node(&self.conn, key, &self.settings.params)? else {
            return Ok(None);
        };
        let Some(&(mv, _)) = exp.moves.get(i) else {
            return Ok(None);
        };
        let (hash, white_elo, black_elo) = game_ratings(&self.conn, exp.game)?;
        // Tails are games from the standard start: White moves at even plies.
        let ply = exp.first_ply + i as u32;
        let mover = mover_elo(u64::from(ply), white_elo, black_elo);
        Ok(Some((
            TopEntry {
                mv,
                rank: rank_of(white_elo, black_elo),
                game: hash,
            },
            mover,
        )))
    }
}

/// A game's moves as `check` replays them for the explorer's data.
pub struct GameMoves {
    pub hash: u64,
    pub copies: u32,
    pub white_elo: Option<u32>,
    pub black_elo: Option<u32>,
    pub fen: Option<String>,
    /// The stored moves (what the counts hold); `None` if unreadable.
    pub moves: Option<Vec<MoveCode>>,
    /// Stored moves and rest together make the whole game (`plies` moves).
    pub whole: bool,
}

impl Book {
    /// Whether some games came from a book older than schema 7, without
    /// the explorer's data (ratings, top games, whole moves).
    pub fn explorer_partial(&self) -> Result<bool> {
        Ok(self.conn.query_row(
            "SELECT count(*) FROM meta WHERE key = 'explorer' AND value = 'partial'",
            [],
            |r| r.get::<_, i64>(0),
        )? > 0)
    }

    /// Records that some games lack the explorer's data (a merged old book).
    pub(super) fn mark_explorer_partial(&self) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('explorer', 'partial')",
            [],
        )?;
        Ok(())
    }

    /// Calls `f` on every game's stored moves, in id order.
    pub fn for_each_game_moves(&self, mut f: impl FnMut(GameMoves) -> Result<()>) -> Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT hash, copies, white_elo, black_elo, fen, moves, rest, plies FROM games ORDER BY id",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let moves: Option<Vec<u8>> = r.get(5)?;
            let rest: Option<Vec<u8>> = r.get(6)?;
            let plies: u32 = r.get(7)?;
            let moves = moves
                .as_deref()
                .and_then(moves_from_blob)
                .map(|m| m.into_iter().map(MoveCode).collect::<Vec<_>>());
            let rest_len = match rest.as_deref() {
                None => Some(0),
                Some(b) => moves_from_blob(b).map(|m| m.len()),
            };
            let whole = match (&moves, rest_len) {
                (Some(m), Some(r)) => (m.len() + r) as u32 == plies,
                _ => false,
            };
            f(GameMoves {
                hash: hash_from_sql(r.get(0)?),
                copies: r.get(1)?,
                white_elo: r.get(2)?,
                black_elo: r.get(3)?,
                fen: r.get(4)?,
                moves,
                whole,
            })?;
        }
        Ok(())
    }

    /// Calls `f` on every row's stored top list (`None`: a damaged blob).
    pub fn for_each_top(&self, f: impl FnMut(Key, Option<TopList>)) -> Result<()> {
        self.for_each_top_in(Key(0), Key(u64::MAX), f)
    }

    /// [`Book::for_each_top`] of the rows whose key is in `lo..=hi`, in the
    /// same order (the keys' stored order).
    pub fn for_each_top_in(
        &self,
        lo: Key,
        hi: Key,
        mut f: impl FnMut(Key, Option<TopList>),
    ) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, top FROM positions WHERE key BETWEEN ?1 AND ?2 ORDER BY key")?;
        for (a, b) in stored_intervals(lo, hi) {
            let mut rows = stmt.query([a, b])?;
            while let Some(r) = rows.next()? {
                let (key, list) = top_row(r)?;
                f(key, list);
            }
        }
        Ok(())
    }

    /// [`Book::for_each_move_rating`] of the moves whose parent's key is in
    /// `lo..=hi`, in the same order (the moves' stored order).
    pub fn for_each_move_rating_in(
        &self,
        lo: Key,
        hi: Key,
        mut f: impl FnMut(Key, MoveRating),
    ) -> Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT parent, move, rating_sum, rated FROM moves WHERE parent BETWEEN ?1 AND ?2
             ORDER BY parent, move",
        )?;
        for (a, b) in stored_intervals(lo, hi) {
            let mut rows = stmt.query([a, b])?;
            while let Some(r) = rows.next()? {
                f(
                    r.get(0)?,
                    MoveRating {
                        mv: MoveCode(r.get(1)?),
                        rating_sum: r.get::<_, i64>(2)?.max(0) as u64,
                        rated: r.get(3)?,
                    },
                );
            }
        }
        Ok(())
    }

    /// Calls `f` on every move row's rating sums, with the parent.
    pub fn for_each_move_rating(&self, mut f: impl FnMut(Key, MoveRating)) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare("SELECT parent, move, rating_sum, rated FROM moves")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            f(
                r.get(0)?,
                MoveRating {
                    mv: MoveCode(r.get(1)?),
                    rating_sum: r.get::<_, i64>(2)?.max(0) as u64,
                    rated: r.get(3)?,
                },
            );
        }
        Ok(())
    }
}

/// A `(key, top)` row's key and top list (`None`: a damaged blob; no blob
/// is an empty list).
fn top_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(Key, Option<TopList>)> {
    let blob: Option<Vec<u8>> = r.get(1)?;
    let list = match blob {
        None => Some(TopList::default()),
        Some(b) => top_from_blob(&b),
    };
    Ok((r.get(0)?, list))
}

/// The keys `lo..=hi` as stored (signed), as intervals in stored order: two
/// where the range crosses from the positive stored keys to the negative
/// ones (the negative come first).
fn stored_intervals(lo: Key, hi: Key) -> Vec<(i64, i64)> {
    let (a, b) = (lo.to_sql(), hi.to_sql());
    if lo.0 > hi.0 {
        Vec::new()
    } else if a <= b {
        vec![(a, b)]
    } else {
        vec![(i64::MIN, b), (a, i64::MAX)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ranges_become_stored_intervals_in_stored_order() {
        let half = 1u64 << 63;
        assert_eq!(stored_intervals(Key(5), Key(9)), vec![(5, 9)]);
        assert_eq!(
            stored_intervals(Key(half + 1), Key(u64::MAX)),
            vec![(i64::MIN + 1, -1)]
        );
        assert_eq!(
            stored_intervals(Key(half - 2), Key(half + 2)),
            vec![(i64::MIN, i64::MIN + 2), (i64::MAX - 1, i64::MAX)]
        );
        assert_eq!(stored_intervals(Key(9), Key(5)), Vec::<(i64, i64)>::new());
    }
}
