//! Single-game tails.
//!
//! Most positions of a game database are reached by one game only (84% of
//! the master games' positions). Where a game leaves every other game, the
//! rest of it is not stored as a position row and a move row per ply: its
//! moves are already in `games.moves`, `games.tail` says from which ply on
//! they are a tail, and the tails index ([`super::tail_index`]) maps each
//! tail position to its game (the one index a tail needs, for reads by
//! key). It keeps the top 32 bits of the key: the games it names are
//! candidates, and replaying them tells. A tail is the longest suffix
//! of a game (from the standard start, counted once) whose positions no
//! other game reaches, never the start itself; the move into it stays a
//! row of the position before it (its anchor).
//!
//! Reads expand a tail into exactly the rows it stands for ([`expand`]):
//! the game replayed for the keys, counts from its result, values and
//! choices by the same formula, from the last position back (a tail
//! position's only book move leads to the next one). Before a second game
//! (or a search score, or an imported move) touches a tail position, the
//! tail becomes rows up to there ([`materialize_keys`]), so every other
//! write sees rows as before.

use anyhow::{anyhow, bail, Result};
use rayon::prelude::*;
use rusqlite::{params, Connection, OptionalExtension};
use shakmaty::{Chess, Position};

use super::codec::moves_from_blob;
use super::node_rows::{search_inputs, MOVE_UPSERT};
use super::tail_index::{candidates, prefix, unlist};
use super::top_games::{
    game_ratings, merge_top, mover_elo, rank_of, top_to_blob, TopEntry, TopList,
};
use crate::keys::{polyglot_key, Key, KeyMap, MoveCode};
use crate::pgn::{
    game::{Game, GameResult},
    validate::next_key,
};
use crate::values::minimax::{node_value_with, NodeInfo, ValueParams};

/// What a tail's values need of a position's analysis: its search score and
/// deviation as values (see [`NodeInfo`]).
pub(super) type SearchInputs = (Option<f64>, Option<Option<f64>>);

/// A game with a tail, as `games` stores it.
pub(super) struct TailGame {
    pub id: i64,
    pub moves: Vec<u16>,
    pub result: GameResult,
    /// White's expected points, thousandths.
    pub expected: i64,
    /// Moves in the whole game (more than stored when it was cut at max-ply).
    pub plies: u32,
    /// Ply of the tail's first position.
    pub tail: u32,
}

/// A tail as the rows it stands for.
pub(super) struct Expansion {
    pub game: i64,
    /// The position before the tail (a row; its move into the tail is a row too).
    pub anchor: Key,
    /// The tail's positions, ply `first_ply` on, with their values.
    pub nodes: Vec<NodeInfo>,
    pub best: Vec<Option<MoveCode>>,
    /// `moves[i]` leads from `nodes[i]` to `nodes[i + 1]` (and castles or not).
    pub moves: Vec<(MoveCode, bool)>,
    pub first_ply: u32,
}

impl Expansion {
    /// Index of `key` among the tail's positions.
    pub fn index_of(&self, key: Key) -> Option<usize> {
        self.nodes.iter().position(|n| n.key == key)
    }

    /// The ply where the tail starts once `nodes[..=upto]` are rows
    /// (`None`: nothing is left).
    pub fn rest_after(&self, upto: usize) -> Option<u32> {
        (upto + 1 < self.nodes.len()).then(|| self.first_ply + upto as u32 + 1)
    }

    /// The position before `nodes[i]`.
    pub fn parent_of(&self, i: usize) -> Key {
        if i == 0 {
            self.anchor
        } else {
            self.nodes[i - 1].key
        }
    }
}

/// The columns [`tail_game_from_row`] reads, from `games`.
const GAME_COLS: &str = "id, moves, result, expected, plies, tail";

/// One `games` row as read by [`GAME_COLS`]: id, moves, result, expected,
/// plies, tail.
type GameRow = (i64, Option<Vec<u8>>, String, Option<i64>, u32, u32);

fn tail_game_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<GameRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
    ))
}

fn tail_game(row: GameRow) -> Result<TailGame> {
    let (id, moves, result, expected, plies, tail) = row;
    let damaged = |why: &str| anyhow!("game {id} has a tail but {why} (a damaged book)");
    let moves = moves
        .as_deref()
        .and_then(moves_from_blob)
        .ok_or_else(|| damaged("no readable moves"))?;
    Ok(TailGame {
        id,
        moves,
        result: GameResult::parse(&result).ok_or_else(|| damaged("an unknown result"))?,
        expected: expected.ok_or_else(|| damaged("no rating expectation"))?,
        plies,
        tail,
    })
}

/// Replays `game` from the standard start and evaluates its tail.
pub(super) fn expand(
    game: &TailGame,
    params: &ValueParams,
    search: impl FnMut(Key) -> Result<SearchInputs>,
) -> Result<Expansion> {
    let n = game.moves.len();
    let t = game.tail as usize;
    if t == 0 || t > n {
        bail!("game {}: tail at ply {t} of {n} (a damaged book)", game.id);
    }
    let mut pos = Chess::default();
    let mut key = polyglot_key(&pos);
    let mut keys = Vec::with_capacity(n + 1);
    keys.push(key);
    let mut moves = Vec::with_capacity(n);
    for (i, &code) in game.moves.iter().enumerate() {
        let code = MoveCode(code);
        let mv = code.to_move(&pos).ok_or_else(|| {
            anyhow!(
                "game {}: its move {} ({code}) is illegal (a damaged book)",
                game.id,
                i + 1
            )
        })?;
        moves.push((code, mv.is_castle()));
        key = next_key(&mut pos, key, mv);
        keys.push(key);
    }
    // As the reader marks a game that ended within max-ply.
    let terminal = if game.plies as usize == n {
        if pos.is_checkmate() {
            Some(-1.0)
        } else if pos.is_stalemate() {
            Some(0.0)
        } else {
            None
        }
    } else {
        None
    };
    expansion(game, &keys, &moves, terminal, params, search)
}

/// The tail of a game being learned, expanded from what the game already
/// holds (its keys and moves) instead of replaying it: what [`expand`]
/// would read back once the game row and its tail are written.
pub(super) fn expand_learned(
    game: &Game,
    id: i64,
    tail: u32,
    params: &ValueParams,
    search: impl FnMut(Key) -> Result<SearchInputs>,
) -> Result<Expansion> {
    let keys: Vec<Key> = game.keys().collect();
    let moves: Vec<(MoveCode, bool)> = game.plies.iter().map(|p| (p.mv, p.castle)).collect();
    let stored = TailGame {
        id,
        moves: Vec::new(),
        result: game.result,
        expected: game.expected_milli(),
        plies: game.total_plies,
        tail,
    };
    if tail == 0 || tail as usize > moves.len() {
        bail!("game {id}: tail at ply {tail} of {}", moves.len());
    }
    expansion(&stored, &keys, &moves, game.terminal, params, search)
}

/// The tail's positions (from `game.tail` on) of a game with `keys` and
/// `moves`, valued from the last back.
fn expansion(
    game: &TailGame,
    keys: &[Key],
    moves: &[(MoveCode, bool)],
    terminal: Option<f64>,
    params: &ValueParams,
    mut search: impl FnMut(Key) -> Result<SearchInputs>,
) -> Result<Expansion> {
    let (n, t) = (moves.len(), game.tail as usize);
    let counts = game.result.counts();
    let mut nodes = Vec::with_capacity(n + 1 - t);
    for (ply, &key) in keys.iter().enumerate().skip(t) {
        let (search, deviation) = search(key)?;
        nodes.push(NodeInfo {
            key,
            depth: Some(ply as u32),
            counts,
            expected: game.expected,
            exact: if ply == n { terminal } else { None },
            search,
            deviation,
            value: 0.0,
        });
    }
    let tail_moves = moves[t..].to_vec();
    let best = value_chain(&mut nodes, tail_moves.iter().map(|m| m.0), params);
    Ok(Expansion {
        game: game.id,
        anchor: keys[t - 1],
        nodes,
        best,
        moves: tail_moves,
        first_ply: t as u32,
    })
}

/// Values a tail's positions from the last back (each has one child, the
/// next): their values and best moves. `moves[i]` leads from `nodes[i]` to
/// `nodes[i + 1]`.
pub(crate) fn value_chain(
    nodes: &mut [NodeInfo],
    moves: impl DoubleEndedIterator<Item = MoveCode> + ExactSizeIterator,
    params: &ValueParams,
) -> Vec<Option<MoveCode>> {
    let n = nodes.len();
    let mut best = vec![None; n];
    if n == 0 {
        return best;
    }
    let mut buf = Vec::with_capacity(1);
    let (last_value, last_best) =
        node_value_with(&nodes[n - 1], std::iter::empty(), params, &mut buf);
    nodes[n - 1].value = last_value;
    best[n - 1] = last_best;
    for (i, mv) in moves.take(n - 1).enumerate().rev() {
        let (v, b) = node_value_with(&nodes[i], [(mv, &nodes[i + 1])], params, &mut buf);
        nodes[i].value = v;
        best[i] = b;
    }
    best
}

/// The analysis of one position, read from the book.
pub(super) fn search_of(conn: &Connection, key: Key) -> Result<SearchInputs> {
    let row = conn
        .prepare_cached("SELECT score, interior, deviation FROM analysis WHERE key = ?1")?
        .query_row([key], |r| {
            Ok(search_inputs(r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    Ok(row.unwrap_or((None, None)))
}

/// The whole analysis table, for expanding every tail.
fn all_search(conn: &Connection) -> Result<KeyMap<Key, SearchInputs>> {
    let mut stmt = conn.prepare("SELECT key, score, interior, deviation FROM analysis")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, Key>(0)?,
            search_inputs(r.get(1)?, r.get(2)?, r.get(3)?),
        ))
    })?;
    let mut out = KeyMap::default();
    for row in rows {
        let (k, s) = row?;
        out.insert(k, s);
    }
    Ok(out)
}

fn read_tail_game(conn: &Connection, id: i64) -> Result<TailGame> {
    read_tail_game_in(conn, "main", id)
}

/// Game `id` of the attached database `schema` (`main`, or a shard).
pub(super) fn read_tail_game_in(conn: &Connection, schema: &str, id: i64) -> Result<TailGame> {
    let row = conn
        .prepare_cached(&format!(
            "SELECT {GAME_COLS} FROM {schema}.games WHERE id = ?1 AND tail IS NOT NULL"
        ))?
        .query_row([id], tail_game_from_row)
        .optional()?
        .ok_or_else(|| anyhow!("a tail names game {id}, which has none (a damaged book)"))?;
    tail_game(row)
}

/// The tail holding `key` (expanded) and the index of `key` in it.
pub(super) fn tail_node(
    conn: &Connection,
    key: Key,
    params: &ValueParams,
) -> Result<Option<(Expansion, usize)>> {
    for id in candidates(conn, key)? {
        let exp = expand(&read_tail_game(conn, id)?, params, |k| search_of(conn, k))?;
        if let Some(i) = exp.index_of(key) {
            return Ok(Some((exp, i)));
        }
    }
    Ok(None)
}

/// Calls `f` on every tail, expanded (on every core, in game order).
pub(super) fn for_each_tail(
    conn: &Connection,
    params: &ValueParams,
    mut f: impl FnMut(Expansion) -> Result<()>,
) -> Result<()> {
    const CHUNK: usize = 8192;
    let search = all_search(conn)?;
    let lookup =
        |k: Key| -> Result<SearchInputs> { Ok(search.get(&k).copied().unwrap_or((None, None))) };
    let mut stmt = conn.prepare(&format!(
        "SELECT {GAME_COLS} FROM games WHERE tail IS NOT NULL ORDER BY id"
    ))?;
    let mut rows = stmt.query([])?;
    let mut chunk = Vec::with_capacity(CHUNK);
    loop {
        let row = rows.next()?;
        let done = row.is_none();
        if let Some(r) = row {
            chunk.push(tail_game_from_row(r)?);
        }
        if chunk.len() == CHUNK || (done && !chunk.is_empty()) {
            let expanded: Vec<Result<Expansion>> = chunk
                .par_drain(..)
                .map(|row| expand(&tail_game(row)?, params, lookup))
                .collect();
            for e in expanded {
                f(e?)?;
            }
        }
        if done {
            return Ok(());
        }
    }
}

/// Turns the tails holding any of `keys` into rows, up to the deepest of
/// those keys; the rest of each stays a tail. Returns the positions that
/// became rows. Call inside the transaction that then changes them.
pub(super) fn materialize_keys(
    conn: &Connection,
    params: &ValueParams,
    keys: impl IntoIterator<Item = Key>,
) -> Result<Vec<Key>> {
    let mut hits: KeyMap<i64, Vec<Key>> = KeyMap::default();
    for key in keys {
        for id in candidates(conn, key)? {
            hits.entry(id).or_default().push(key);
        }
    }
    let mut ids: Vec<i64> = hits.keys().copied().collect();
    ids.sort_unstable();
    let mut made = Vec::new();
    for id in ids {
        let exp = expand(&read_tail_game(conn, id)?, params, |k| search_of(conn, k))?;
        // A candidate by its prefix only: nothing of it becomes rows.
        let Some(upto) = hits[&id].iter().filter_map(|&k| exp.index_of(k)).max() else {
            continue;
        };
        materialize(conn, &exp, upto)?;
        made.extend(exp.nodes[..=upto].iter().map(|n| n.key));
    }
    Ok(made)
}

/// Writes `exp.nodes[..=upto]` as rows (with the moves between them and the
/// move out of the last), and shortens the tail to what follows.
pub(super) fn materialize(conn: &Connection, exp: &Expansion, upto: usize) -> Result<()> {
    write_rows(conn, exp, exp.game, upto, false)?;
    conn.prepare_cached("UPDATE games SET tail = ?2 WHERE id = ?1")?
        .execute(params![exp.game, exp.rest_after(upto)])?;
    Ok(())
}

/// Writes `exp.nodes[..=upto]` as rows, the moves between them and the move
/// out of the last, and takes them out of the tails index (listed there under
/// `game`). With `add`, a position or move already stored gets the game's
/// counts added (`merge`).
pub(super) fn write_rows(
    conn: &Connection,
    exp: &Expansion,
    game: i64,
    upto: usize,
    add: bool,
) -> Result<()> {
    let mut insert = conn.prepare_cached(if add {
        "INSERT INTO positions(key, depth, white, draws, black, exact, value, best, parent, expected, top)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, NULL)
         ON CONFLICT(key) DO UPDATE SET
           depth = CASE WHEN depth IS NULL OR excluded.depth < depth THEN excluded.depth ELSE depth END,
           white = white + excluded.white, draws = draws + excluded.draws, black = black + excluded.black,
           expected = expected + excluded.expected,
           exact = coalesce(exact, excluded.exact),
           parent = coalesce(parent, excluded.parent)"
    } else {
        "INSERT INTO positions(key, depth, white, draws, black, exact, value, best, parent, expected, top)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
    })?;
    let mut mv_stmt = conn.prepare_cached(MOVE_UPSERT)?;
    // Two positions of one tail may share a prefix: keep what the rest needs.
    let kept: Vec<i64> = exp.nodes[upto + 1..]
        .iter()
        .map(|n| prefix(n.key))
        .collect();
    let mut unlisted = Vec::new();
    // The explorer's data of the game: each position's one move is its
    // top game, the mover's rating is the move's rating sum.
    let (hash, white_elo, black_elo) = game_ratings(conn, game)?;
    let rank = rank_of(white_elo, black_elo);
    let entry_at = |i: usize| {
        exp.moves.get(i).map(|&(mv, _)| TopEntry {
            mv,
            rank,
            game: hash,
        })
    };
    for i in 0..=upto {
        let n = &exp.nodes[i];
        let top = entry_at(i).map(|e| top_to_blob(&TopList::single(e)));
        let row = params![
            n.key,
            n.depth,
            n.counts.white,
            n.counts.draws,
            n.counts.black,
            n.exact,
            n.value,
            exp.best[i].map(|m| m.0),
            exp.parent_of(i),
            n.expected,
            top
        ];
        if add {
            insert.execute(&row[..10])?;
        } else {
            insert.execute(row)?;
        }
        if !kept.contains(&prefix(n.key)) {
            unlisted.push(prefix(n.key));
        }
        if let Some(child) = exp.nodes.get(i + 1) {
            let (mv, castle) = exp.moves[i];
            // Tails are games from the standard start.
            let mover_elo = mover_elo(u64::from(exp.first_ply) + i as u64, white_elo, black_elo);
            mv_stmt.execute(params![
                n.key,
                mv.0,
                mv.uci(castle),
                child.key,
                n.counts.white,
                n.counts.draws,
                n.counts.black,
                i64::from(mover_elo.unwrap_or(0)),
                u32::from(mover_elo.is_some())
            ])?;
        }
        if add {
            if let Some(e) = entry_at(i) {
                merge_top(conn, n.key, &[e])?;
            }
        }
    }
    unlist(conn, game, &unlisted)
}
