//! What the explorer reads beyond counts and values: the games' headers and
//! whole moves, each move's rating sums, each position's top games
//! (`positions.top`), and how those lists are kept canonical.
//!
//! A position's top list holds, ranked by the two ratings summed (highest
//! first, ties by the game's hash), the [`TOP_GAMES`] best games that
//! played a move from it, and besides them the game of every move played
//! exactly once (lichess's `game` of such a move). The list depends only on
//! the set of games, so a build, a merge and a game learned one at a time
//! all give the same list: [`canonical`] is that rule.

use anyhow::{anyhow, Result};
use rusqlite::{params, Connection, OptionalExtension};
use shakmaty::{fen::Fen, san::SanPlus, CastlingMode, Chess, Position};
use smallvec::SmallVec;

use super::book::Book;
use super::schema::{hash_from_sql, hash_to_sql, moves_from_blob};
use super::tails::tail_node;
use crate::book::ingest::GameResult;
use crate::book::keys::{Key, MoveCode};
use crate::book::pgn_out::wrap_movetext;

/// Top games kept per position, as lichess's masters explorer keeps.
pub const TOP_GAMES: usize = 15;

/// One game in a position's top list: the move it played there, its rank
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

/// (the two ratings summed, a missing one as 0) and its hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TopEntry {
    pub mv: MoveCode,
    pub rank: u16,
    pub game: u64,
}

/// Bytes of one entry in `positions.top`.
const ENTRY_BYTES: usize = 12;

impl TopEntry {
    /// Higher ranks first, then lower hashes (then moves: a game that
    /// comes back to a position is listed under each move it played
    /// there): a total order, so the list is the same whatever order the
    /// games came in.
    pub fn order(a: &TopEntry, b: &TopEntry) -> std::cmp::Ordering {
        b.rank
            .cmp(&a.rank)
            .then(a.game.cmp(&b.game))
            .then(a.mv.cmp(&b.mv))
    }
}

/// The rank of a game: both ratings summed (lichess's sort key).
pub fn rank_of(white_elo: Option<u32>, black_elo: Option<u32>) -> u16 {
    let sum = white_elo.unwrap_or(0).min(u32::from(u16::MAX))
        + black_elo.unwrap_or(0).min(u32::from(u16::MAX));
    sum.min(u32::from(u16::MAX)) as u16
}

/// The rating of the side that moves at `ply` (counted from the standard
/// start: White moves at even plies).
pub fn mover_elo(ply: u64, white_elo: Option<u32>, black_elo: Option<u32>) -> Option<u32> {
    if ply.is_multiple_of(2) {
        white_elo
    } else {
        black_elo
    }
}

/// `positions.top` as stored: per entry the move code (u16, its top bit
/// set while the entry is the only game of its move), the rank (u16) and
/// the hash (u64), little-endian, in [`TopEntry::order`]; only the entries
/// the list keeps ([`TopList::kept`]).
pub fn top_to_blob(list: &TopList) -> Vec<u8> {
    let mut out = Vec::new();
    write_top_blob(list, &mut out);
    out
}

/// [`top_to_blob`] into `out` (cleared first): a bulk write reuses one
/// buffer instead of allocating a blob a position.
pub fn write_top_blob(list: &TopList, out: &mut Vec<u8>) {
    out.clear();
    for (e, single) in list.kept() {
        let mv = e.mv.0 | if single { SINGLE_BIT } else { 0 };
        out.extend_from_slice(&mv.to_le_bytes());
        out.extend_from_slice(&e.rank.to_le_bytes());
        out.extend_from_slice(&e.game.to_le_bytes());
    }
}

/// Marks an entry that is the only game of its move (Polyglot move codes
/// use 15 bits).
const SINGLE_BIT: u16 = 1 << 15;

/// Back from [`top_to_blob`]; `None` if the length is not a whole number
/// of entries.
pub fn top_from_blob(blob: &[u8]) -> Option<TopList> {
    if !blob.len().is_multiple_of(ENTRY_BYTES) {
        return None;
    }
    Some(TopList(
        blob.chunks_exact(ENTRY_BYTES)
            .map(|b| {
                let mv = u16::from_le_bytes([b[0], b[1]]);
                let entry = TopEntry {
                    mv: MoveCode(mv & !SINGLE_BIT),
                    rank: u16::from_le_bytes([b[2], b[3]]),
                    game: u64::from_le_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]),
                };
                Held::new(entry, mv & SINGLE_BIT != 0)
            })
            .collect(),
    ))
}

/// The canonical list of `entries` (any order, a game at most once or
/// repeated): sorted by [`TopEntry::order`], the first [`TOP_GAMES`] kept
/// and every entry whose move `single` says was played once (marked so).
pub fn canonical(mut entries: Vec<TopEntry>, single: impl Fn(MoveCode) -> bool) -> TopList {
    entries.sort_unstable_by(TopEntry::order);
    entries.dedup_by_key(|e| (e.game, e.mv));
    let mut i = 0;
    TopList(
        entries
            .into_iter()
            .map(|e| Held::new(e, single(e.mv)))
            .filter(|e| {
                i += 1;
                i <= TOP_GAMES || e.single
            })
            .collect(),
    )
}

/// A position's top list while games are counted: entries in
/// [`TopEntry::order`], each marked while it is the only game of its move.
/// It keeps the first [`TOP_GAMES`] and the marked ones, so that at the end
/// [`TopList::entries`] is [`canonical`] of every game counted.
#[derive(Clone, Debug, Default)]
pub struct TopList(SmallVec<[Held; 2]>);

/// An entry as a [`TopList`] holds it: 16 bytes, the mark in the padding
/// that `(TopEntry, bool)` would add 8 bytes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    game: u64,
    mv: MoveCode,
    rank: u16,
    single: bool,
}

/// Bytes a [`TopList`] entry takes where it is held.
pub const HELD_BYTES: usize = std::mem::size_of::<Held>();

impl Held {
    fn new(e: TopEntry, single: bool) -> Held {
        Held {
            game: e.game,
            mv: e.mv,
            rank: e.rank,
            single,
        }
    }

    fn entry(&self) -> TopEntry {
        TopEntry {
            mv: self.mv,
            rank: self.rank,
            game: self.game,
        }
    }
}

impl TopList {
    /// A list of one game, the only one of its move.
    pub fn single(entry: TopEntry) -> TopList {
        let mut list = SmallVec::new();
        list.push(Held::new(entry, true));
        TopList(list)
    }

    /// Counts a game; `before`: the games that played its move here before
    /// it. Returns whether the list changed.
    pub fn add(&mut self, entry: TopEntry, before: u32) -> bool {
        let first_of_move = before == 0;
        let mut changed = false;
        if before == 1 {
            // The move's one game is no longer its only one.
            if let Some(e) = self.0.iter_mut().find(|e| e.single && e.mv == entry.mv) {
                e.single = false;
                changed = true;
            }
        }
        // Below the first TOP_GAMES and not its move's only game: not kept
        // (most games at a popular position; decided without a scan).
        if !first_of_move
            && self
                .0
                .get(TOP_GAMES - 1)
                .is_some_and(|last| TopEntry::order(&entry, &last.entry()).is_gt())
        {
            return changed;
        }
        // A game counted twice (`--allow-duplicates`) is listed once.
        if self.0.iter().any(|e| e.entry() == entry) {
            return changed;
        }
        let at = self
            .0
            .partition_point(|e| TopEntry::order(&e.entry(), &entry).is_lt());
        self.0.insert(at, Held::new(entry, first_of_move));
        if self.0.len() > TOP_GAMES {
            let mut i = 0;
            self.0.retain(|e| {
                i += 1;
                i <= TOP_GAMES || e.single
            });
        }
        true
    }

    /// The list with only what it keeps: the first [`TOP_GAMES`] and the
    /// entries marked single.
    pub fn trimmed(&self) -> TopList {
        TopList(
            self.kept()
                .map(|(e, single)| Held::new(e, single))
                .collect(),
        )
    }

    /// The `(entry, single)` pairs [`TopList::trimmed`] keeps, ranked.
    pub fn kept(&self) -> impl Iterator<Item = (TopEntry, bool)> + '_ {
        self.0
            .iter()
            .enumerate()
            .filter(|&(i, e)| i < TOP_GAMES || e.single)
            .map(|(_, e)| (e.entry(), e.single))
    }

    /// The entries, ranked.
    pub fn entries(&self) -> Vec<TopEntry> {
        self.0.iter().map(Held::entry).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Entries held (kept ones and those not yet dropped).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// `(entry, single)` pairs, ranked.
    pub fn marked(&self) -> Vec<(TopEntry, bool)> {
        self.0.iter().map(|e| (e.entry(), e.single)).collect()
    }
}

/// The stored top list of row `key` (empty if none or unreadable).
pub(super) fn read_top(conn: &Connection, key: Key) -> Result<TopList> {
    let blob: Option<Option<Vec<u8>>> = conn
        .prepare_cached("SELECT top FROM positions WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?;
    Ok(blob
        .flatten()
        .as_deref()
        .and_then(top_from_blob)
        .unwrap_or_default())
}

/// Stores `list` as the top list of row `key`.
pub(super) fn write_top(conn: &Connection, key: Key, list: &TopList) -> Result<()> {
    conn.prepare_cached("UPDATE positions SET top = ?2 WHERE key = ?1")?
        .execute(params![key, (!list.is_empty()).then(|| top_to_blob(list))])?;
    Ok(())
}

/// The top list of row `key` with `more` entries added, made canonical
/// against the moves' counts as they are now, and stored.
pub(super) fn merge_top(conn: &Connection, key: Key, more: &[TopEntry]) -> Result<()> {
    let mut all = read_top(conn, key)?.entries();
    all.extend_from_slice(more);
    let singles: Vec<u16> = conn
        .prepare_cached("SELECT move FROM moves WHERE parent = ?1 AND white + draws + black = 1")?
        .query_map([key], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let list = canonical(all, |mv| singles.contains(&mv.0));
    write_top(conn, key, &list)
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
        let mut line = String::new();
        for (i, code) in self.moves.iter().enumerate() {
            let mv = code
                .to_move(&pos)
                .ok_or_else(|| anyhow!("game {:016x}: move {} is illegal", h.id, i + 1))?;
            if pos.turn().is_white() {
                let _ = write!(line, "{}. ", pos.fullmoves());
            } else if i == 0 {
                let _ = write!(line, "{}... ", pos.fullmoves());
            }
            let san = SanPlus::from_move_and_play_unchecked(&mut pos, mv);
            let _ = write!(line, "{san} ");
        }
        if (self.moves.len() as u32) < self.plies {
            // A game from before schema 7: only its stored moves are known.
            line.push_str("{ the rest of the game is not in the book } ");
        }
        line.push_str(h.result.as_str());
        s.push_str(&wrap_movetext(&line));
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

/// Hash and ratings of game `id`.
pub(super) fn game_ratings(conn: &Connection, id: i64) -> Result<(u64, Option<u32>, Option<u32>)> {
    let (hash, w, b): (i64, Option<u32>, Option<u32>) = conn
        .prepare_cached("SELECT hash, white_elo, black_elo FROM games WHERE id = ?1")?
        .query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok((hash_from_sql(hash), w, b))
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
    pub fn for_each_top(&self, mut f: impl FnMut(Key, Option<TopList>)) -> Result<()> {
        let mut stmt = self.conn.prepare("SELECT key, top FROM positions")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let blob: Option<Vec<u8>> = r.get(1)?;
            let list = match blob {
                None => Some(TopList::default()),
                Some(b) => top_from_blob(&b),
            };
            f(r.get(0)?, list);
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

impl PartialEq for TopList {
    fn eq(&self, other: &TopList) -> bool {
        self.0 == other.0
    }
}
