//! Hossa's step: add one game to a book and re-evaluate what it affects, in
//! one transaction, reading through the [`NodeCache`] and writing every
//! changed row once, at the end.

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use shakmaty::Color;

use super::book::Book;
use super::cache::{Cached, NodeCache, Sql};
use super::codec::{hash_to_sql, moves_to_blob};
use super::graph::link_transposition;
use super::node_rows::MOVE_UPSERT;
use super::schema::source_id;
use super::tail_index::{add as list_tail, prefix};
use super::tails::{expand_learned, materialize_keys, search_of};
use super::top_games::{mover_elo, rank_of, top_to_blob, TopEntry, TopList};
use crate::keys::{polyglot_key, Key, KeyMap, KeySet, MoveCode};
use crate::pgn::game::Game;
use crate::values::minimax::{self, NodeInfo, Reevaluation, Tree, ValueParams};

/// A player name unknown to the game's row (as PGN writes it).
pub const UNKNOWN_PLAYER: &str = "?";

/// More replays of one game than this is taken as a loop, not play.
const MAX_REPLAYS: u32 = 1000;

/// One engine's view of a game it played, for [`Book::add_view`].
pub struct View {
    /// The game as this engine saw it (its own reply last), its row's
    /// players: this engine's side named, the other [`UNKNOWN_PLAYER`]. The
    /// hash is of the game with both players unknown, so that both views
    /// of one game hash alike.
    pub game: Game,
    /// The hashes the other side's view of the same replay may have (one
    /// ply more or less, another result).
    pub known: Vec<u64>,
}

/// What adding one engine's view of a game did.
#[derive(Debug)]
pub enum ViewAdded {
    /// The `replay`-th playing of the game (0: the first), new to the book.
    Added {
        replay: u32,
        reevaluation: Reevaluation,
    },
    /// The other side's view of the `replay`-th playing, already in the
    /// book: counted once, its side's player now named.
    OtherSide { replay: u32 },
}

/// The incremental pass's view of the book: the cache, read-through.
struct CachedTree<'a, 'c> {
    sql: &'a mut Sql<'c>,
    cache: &'a mut NodeCache,
    /// Positions whose row must be written.
    changed: &'a mut KeySet<Key>,
}

impl Tree for CachedTree<'_, '_> {
    fn node(&mut self, key: Key) -> Result<Option<(NodeInfo, Option<MoveCode>)>> {
        if !self.cache.load(self.sql, key)? {
            return Ok(None);
        }
        Ok(self.cache.nodes.get(&key).map(|n| (n.info, n.best)))
    }

    fn children(&mut self, key: Key) -> Result<Vec<(MoveCode, NodeInfo)>> {
        let mut out = Vec::new();
        for (mv, child) in self.cache.children(self.sql, key)? {
            if self.cache.load(self.sql, child)? {
                if let Some(c) = self.cache.nodes.get(&child) {
                    out.push((mv, c.info));
                }
            }
        }
        Ok(out)
    }

    fn parents(&mut self, key: Key) -> Result<Vec<(Key, Option<u32>)>> {
        let mut out = Vec::new();
        for parent in self.cache.parent_keys(self.sql, key)? {
            if self.cache.load(self.sql, parent)? {
                if let Some(p) = self.cache.nodes.get(&parent) {
                    out.push((parent, p.info.depth));
                }
            }
        }
        Ok(out)
    }

    fn set_value(&mut self, key: Key, value: f64, best: Option<MoveCode>) -> Result<()> {
        if let Some(n) = self.cache.nodes.get_mut(&key) {
            n.info.value = value;
            n.best = best;
            self.changed.insert(key);
        }
        Ok(())
    }
}

impl Book {
    /// Adds one game and re-evaluates the affected nodes, in one transaction.
    /// Returns `None` if the game is already in the book.
    pub fn add_game(&mut self, game: &Game, source: &str) -> Result<Option<Reevaluation>> {
        self.learning(|tx, cache, params, tails| add_game(tx, cache, params, tails, game, source))
    }

    /// Adds one engine's view of a game it played as `side`, so that a game
    /// is one row each time it was played, whichever engines learned it.
    /// Both engines of a match may learn views of one game, which differ by
    /// the last ply (see [`View`]); the same game played again is a replay,
    /// counted again. `view(n)` is this view as the game's `n`-th replay
    /// (0: the first time it was played), its row's `side` player named
    /// (the other `?`). The first replay whose row `side` has not claimed is
    /// this view's game: a row whose `side` player is `?` is the other
    /// side's view, claimed (counted once); with no row, the view is added.
    /// All in one transaction, so learners writing at once count each game
    /// once. `None` if `view` cannot give the game.
    pub fn add_view(
        &mut self,
        side: Color,
        source: &str,
        view: impl FnMut(u32) -> Option<View>,
    ) -> Result<Option<ViewAdded>> {
        self.learning(|tx, cache, params, tails| {
            add_view(tx, cache, params, tails, side, source, view)
        })
    }

    /// Runs one learning write `f` in a transaction of its own, with the
    /// book's value parameters and tail setting, and keeps the cache:
    /// stamped after a write, dropped after an error.
    fn learning<T>(
        &mut self,
        f: impl FnOnce(Transaction<'_>, &mut NodeCache, &ValueParams, bool) -> Result<T>,
    ) -> Result<T> {
        let params = self.settings.params;
        // As `build` keeps them: not where rare positions were dropped.
        let tails = self.settings.tails && self.settings.min_games <= 1;
        let out = (|| {
            // Immediate: the write lock is taken before the cache is checked.
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            self.cache.revalidate(&tx)?;
            f(tx, &mut self.cache, &params, tails)
        })();
        match &out {
            Ok(_) => self.cache.stamp(&self.conn)?,
            Err(_) => self.cache.clear(),
        }
        out
    }

    /// `bench learn`'s floor: the writes that any book keeping counts per
    /// position must make for one game, in one transaction, and nothing
    /// else: the game's row, and the counts of its moves and of its
    /// positions stored as rows (no cache, no values, no tails, no top
    /// games). Returns `false` if the game is already in the book.
    pub fn add_counts_only(&mut self, game: &Game, source: &str) -> Result<bool> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        if !insert_game_row(&tx, game, source)? {
            return Ok(false);
        }
        let c = game.result.counts();
        {
            let mut position = tx.prepare_cached(
                "UPDATE positions SET white = white + ?2, draws = draws + ?3, black = black + ?4
                 WHERE key = ?1",
            )?;
            let mut mv = tx.prepare_cached(
                "UPDATE moves SET white = white + ?3, draws = draws + ?4, black = black + ?5
                 WHERE parent = ?1 AND move = ?2",
            )?;
            for key in game.keys() {
                position.execute(params![key, c.white, c.draws, c.black])?;
            }
            for p in &game.plies {
                mv.execute(params![p.parent, p.mv.0, c.white, c.draws, c.black])?;
            }
        }
        tx.commit()?;
        self.cache.clear();
        Ok(true)
    }
}

/// One side's view of a game, claimed or added in `tx` (see
/// [`Book::add_view`]).
fn add_view(
    tx: Transaction<'_>,
    cache: &mut NodeCache,
    params: &ValueParams,
    tails: bool,
    side: Color,
    source: &str,
    mut view: impl FnMut(u32) -> Option<View>,
) -> Result<Option<ViewAdded>> {
    for replay in 0..MAX_REPLAYS {
        let Some(v) = view(replay) else {
            return Ok(None);
        };
        match claim_of(&tx, side, &v)? {
            Claim::Unplayed => {
                let re = add_game(tx, cache, params, tails, &v.game, source)?;
                return Ok(re.map(|reevaluation| ViewAdded::Added {
                    replay,
                    reevaluation,
                }));
            }
            Claim::OtherSideOnly(id) => {
                let (column, player) = match side {
                    Color::White => ("white", &v.game.white),
                    Color::Black => ("black", &v.game.black),
                };
                tx.execute(
                    &format!("UPDATE games SET {column} = ?2 WHERE id = ?1"),
                    params![id, player],
                )?;
                tx.commit()?;
                return Ok(Some(ViewAdded::OtherSide { replay }));
            }
            Claim::ThisSide => {}
        }
    }
    anyhow::bail!("the same game played more than {MAX_REPLAYS} times")
}

/// Whose view a stored game holds, for a new view of it by `side`.
enum Claim {
    /// No row: this replay of the game was not played before.
    Unplayed,
    /// A row (its id) that the other side's engine learned, `side`'s player
    /// unknown: this view's game.
    OtherSideOnly(i64),
    /// A row that `side` already learned: this view is a later replay.
    ThisSide,
}

fn claim_of(tx: &Transaction<'_>, side: Color, view: &View) -> Result<Claim> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, COALESCE(white, '?'), COALESCE(black, '?') FROM games WHERE hash = ?1",
    )?;
    for &h in std::iter::once(&view.game.hash).chain(&view.known) {
        let row: Option<(i64, String, String)> = stmt
            .query_row(params![hash_to_sql(h)], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?;
        if let Some((id, white, black)) = row {
            let player = if side == Color::White { white } else { black };
            return Ok(if player == UNKNOWN_PLAYER {
                Claim::OtherSideOnly(id)
            } else {
                Claim::ThisSide
            });
        }
    }
    Ok(Claim::Unplayed)
}

/// Adds `game`'s row and re-evaluates in `tx`, then commits; `None` if the
/// game is in the book already.
fn add_game(
    tx: Transaction<'_>,
    cache: &mut NodeCache,
    params: &ValueParams,
    tails: bool,
    game: &Game,
    source: &str,
) -> Result<Option<Reevaluation>> {
    if !insert_game_row(&tx, game, source)? {
        return Ok(None);
    }
    let game_id = tx.last_insert_rowid();
    let mut sql = Sql::new(&tx, params)?;
    // A position of a single-game tail that this game reaches too becomes a
    // row first (with the tail before it), so what follows sees rows only.
    // Positions stored nowhere are remembered, not looked up again below.
    let mut in_tails = Vec::new();
    let mut absent = KeySet::default();
    for key in game.keys() {
        if !cache.load(&mut sql, key)? {
            absent.insert(key);
        } else if !cache.is_row(&mut sql, key)? {
            in_tails.push(key);
        }
    }
    if !in_tails.is_empty() {
        for key in materialize_keys(&tx, params, in_tails)? {
            cache.nodes.remove(&key);
        }
    }
    // Where the game leaves every other game, the rest is a tail, as `build`
    // stores it: its moves, not rows (rows only up to there).
    let stored = match tails.then(|| tail_start(game, &absent)).flatten() {
        Some(t) => {
            tx.prepare_cached("UPDATE games SET tail = ?2 WHERE id = ?1")?
                .execute(params![game_id, t as i64])?;
            list_tail(
                &tx,
                game.keys().skip(t).map(|k| (prefix(k), game_id)).collect(),
            )?;
            // Its first position, the one the values read (a child of the
            // position before it), valued from the game in hand rather
            // than found again through the index.
            let exp = expand_learned(game, game_id, t as u32, params, |k| search_of(&tx, k))?;
            cache
                .nodes
                .insert(exp.nodes[0].key, Cached::in_tail(&exp, 0));
            t
        }
        None => game.plies.len() + 1,
    };
    let c = game.result.counts();
    let expected = game.expected_milli();
    let mut changed = KeySet::default();
    let mut new = KeySet::default();
    let mut path = Vec::with_capacity(game.plies.len() + 1);
    let mut from: Option<Key> = None;
    for (ply, key) in game.keys().enumerate().take(stored) {
        let depth = game.start_ply + ply as u32;
        if !absent.contains(&key) && cache.load(&mut sql, key)? {
            let Some(n) = cache.nodes.get_mut(&key) else {
                continue;
            };
            n.info.depth = Some(n.info.depth.map_or(depth, |d| d.min(depth)));
            n.info.counts.add(c);
            n.info.expected += expected;
            match (n.first_parent, from) {
                (None, Some(p)) => n.first_parent = Some(p),
                (Some(first), Some(p)) if first != p => {
                    link_transposition(&tx, key, first, p)?;
                    if let Some(linked) = &mut n.linked {
                        for k in [first, p] {
                            if !linked.contains(&k) {
                                linked.push(k);
                            }
                        }
                    }
                }
                _ => {}
            }
        } else {
            // Stored from here on (a position the game repeats is found).
            absent.remove(&key);
            new.insert(key);
            cache.nodes.insert(
                key,
                Cached {
                    info: NodeInfo {
                        expected,
                        ..NodeInfo::from_counts(key, Some(depth), c)
                    },
                    best: None,
                    first_parent: from,
                    children: Some(Vec::new()),
                    linked: Some(Vec::new()),
                    tail: false,
                    top: TopList::default(),
                    top_changed: false,
                },
            );
        }
        changed.insert(key);
        path.push(key);
        from = Some(key);
    }
    {
        // A move the cache knows is updated; any other is upserted (it may
        // exist without a child, from a Polyglot import).
        // Each returns the move's games now: the explorer's top list marks
        // the game of a move played once.
        let mut update = tx.prepare_cached(
            "UPDATE moves SET white = white + ?3, draws = draws + ?4, black = black + ?5,
               rating_sum = rating_sum + ?6, rated = rated + ?7
             WHERE parent = ?1 AND move = ?2 RETURNING white + draws + black",
        )?;
        let mut upsert =
            tx.prepare_cached(&format!("{MOVE_UPSERT} RETURNING white + draws + black"))?;
        let rank = rank_of(game.white_elo, game.black_elo);
        // The move into a tail stays a row of the position before it.
        for (ply, p) in game.plies.iter().enumerate().take(stored) {
            let known = cache
                .children(&mut sql, p.parent)?
                .contains(&(p.mv, p.child));
            let mover_elo = mover_elo(
                u64::from(game.start_ply) + ply as u64,
                game.white_elo,
                game.black_elo,
            );
            let (sum, rated) = (
                i64::from(mover_elo.unwrap_or(0)),
                u32::from(mover_elo.is_some()),
            );
            let games: u32 = if known {
                update.query_row(
                    params![p.parent, p.mv.0, c.white, c.draws, c.black, sum, rated],
                    |r| r.get(0),
                )?
            } else {
                upsert.query_row(
                    params![
                        p.parent,
                        p.mv.0,
                        p.uci(),
                        p.child,
                        c.white,
                        c.draws,
                        c.black,
                        sum,
                        rated
                    ],
                    |r| r.get(0),
                )?
            };
            if let Some(n) = cache.nodes.get_mut(&p.parent) {
                let entry = TopEntry {
                    mv: p.mv,
                    rank,
                    game: game.hash,
                };
                if n.top.add(entry, games - c.total()) {
                    n.top_changed = true;
                }
            }
            if !known {
                if let Some(kids) = cache
                    .nodes
                    .get_mut(&p.parent)
                    .and_then(|n| n.children.as_mut())
                {
                    match kids.iter_mut().find(|(mv, _)| *mv == p.mv) {
                        Some(kid) => kid.1 = p.child,
                        None => kids.push((p.mv, p.child)),
                    }
                }
            }
        }
    }
    // A tail's last position is valued from its game.
    if let (Some(e), true) = (game.terminal, stored > game.plies.len()) {
        let last = game.plies.last().map_or(game.start, |p| p.child);
        if let Some(n) = cache.nodes.get_mut(&last) {
            n.info.exact = Some(e);
        }
    }
    let re = reevaluate_path(&tx, &mut sql, cache, params, &path, changed, &new)?;
    for key in &path {
        if let Some(n) = cache.nodes.get_mut(key) {
            n.top_changed = false;
        }
    }
    drop(sql);
    tx.commit()?;
    Ok(Some(re))
}

/// The ply where `game`'s single-game tail begins, as `build` finds it: the
/// longest suffix of positions stored nowhere before (`absent`) and reached
/// once by the game, never its start; `None` for a game not from the
/// standard start.
fn tail_start(game: &Game, absent: &KeySet<Key>) -> Option<usize> {
    if game.start_ply != 0 || game.start != polyglot_key(&shakmaty::Chess::default()) {
        return None;
    }
    let keys: Vec<Key> = game.keys().collect();
    let mut seen: KeyMap<Key, u32> = KeyMap::default();
    for &k in &keys {
        *seen.entry(k).or_default() += 1;
    }
    let single = |k: &Key| absent.contains(k) && seen.get(k) == Some(&1);
    let shared = keys.iter().rposition(|k| !single(k)).unwrap_or(0);
    (shared + 1 < keys.len()).then_some(shared + 1)
}

/// Adds the game's row; `false` if the game is already in the book.
fn insert_game_row(tx: &Transaction<'_>, game: &Game, source: &str) -> Result<bool> {
    let n = tx.prepare_cached(
        "INSERT OR IGNORE INTO games(hash, source, white, black, result, plies, start, moves, expected,
           white_elo, black_elo, date, event, site, round, fen, rest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?
    .execute(params![
        hash_to_sql(game.hash),
        source_id(tx, source)?,
        game.white,
        game.black,
        game.result.as_str(),
        game.total_plies,
        game.start,
        moves_to_blob(game.plies.iter().map(|p| p.mv.0)),
        game.expected_milli(),
        game.white_elo,
        game.black_elo,
        game.tags.date,
        game.tags.event,
        game.tags.site,
        game.tags.round,
        game.tags.fen,
        (!game.rest.is_empty()).then(|| moves_to_blob(game.rest.iter().copied()))
    ])?;
    Ok(n == 1)
}

/// Re-evaluates `path` (positions whose own inputs changed), every parent of
/// them (their edge values changed) and whatever depends on a changed value;
/// then writes the rows of `changed` (with those the pass changed).
fn reevaluate_path(
    conn: &Connection,
    sql: &mut Sql<'_>,
    cache: &mut NodeCache,
    params: &ValueParams,
    path: &[Key],
    mut changed: KeySet<Key>,
    new: &KeySet<Key>,
) -> Result<Reevaluation> {
    let mut tree = CachedTree {
        sql,
        cache,
        changed: &mut changed,
    };
    let mut dirty = Vec::with_capacity(path.len() * 2);
    for &key in path {
        let depth = tree.node(key)?.and_then(|(n, _)| n.depth);
        dirty.push((key, depth));
        dirty.extend(tree.parents(key)?);
    }
    let re = minimax::reevaluate_from(&mut tree, dirty, params)?;
    write_positions(conn, cache, &changed, new)?;
    Ok(re)
}

/// Re-evaluates after the inputs of `keys` changed other than through games
/// (their analysis), inside the caller's transaction.
pub(super) fn reevaluate_keys(
    conn: &Connection,
    cache: &mut NodeCache,
    params: &ValueParams,
    keys: &[Key],
) -> Result<Reevaluation> {
    let mut sql = Sql::new(conn, params)?;
    reevaluate_path(
        conn,
        &mut sql,
        cache,
        params,
        keys,
        KeySet::default(),
        &KeySet::default(),
    )
}

/// Writes the cached rows of `changed` (`new`: not stored yet), in key order.
fn write_positions(
    conn: &Connection,
    cache: &NodeCache,
    changed: &KeySet<Key>,
    new: &KeySet<Key>,
) -> Result<()> {
    let mut keys: Vec<Key> = changed.iter().copied().collect();
    keys.sort_unstable_by_key(|&k| k.to_sql());
    let mut insert = conn.prepare_cached(
        "INSERT INTO positions(depth, white, draws, black, exact, value, best, parent, expected, key, top)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    let mut update = conn.prepare_cached(
        "UPDATE positions SET depth = ?1, white = ?2, draws = ?3, black = ?4, exact = ?5,
           value = ?6, best = ?7, parent = ?8, expected = ?9, top = ?11 WHERE key = ?10",
    )?;
    // Most rows a game changes keep their top list: it is not rewritten.
    let mut update_counts = conn.prepare_cached(
        "UPDATE positions SET depth = ?1, white = ?2, draws = ?3, black = ?4, exact = ?5,
           value = ?6, best = ?7, parent = ?8, expected = ?9 WHERE key = ?10",
    )?;
    for key in keys {
        let Some(n) = cache.nodes.get(&key).filter(|n| !n.tail) else {
            continue;
        };
        let row = params![
            n.info.depth,
            n.info.counts.white,
            n.info.counts.draws,
            n.info.counts.black,
            n.info.exact,
            n.info.value,
            n.best.map(|m| m.0),
            n.first_parent,
            n.info.expected,
            key,
            (n.top_changed || new.contains(&key))
                .then(|| top_to_blob(&n.top))
                .filter(|b| !b.is_empty())
        ];
        if new.contains(&key) {
            insert.execute(row)?;
        } else if n.top_changed {
            update.execute(row)?;
        } else {
            update_counts.execute(&row[..10])?;
        }
    }
    Ok(())
}
