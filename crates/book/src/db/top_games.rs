//! Each position's top games (`positions.top`) and how those lists are
//! kept canonical.
//!
//! A position's top list holds, ranked by the two ratings summed (highest
//! first, ties by the game's hash), the [`TOP_GAMES`] best games that
//! played a move from it, and besides them the game of every move played
//! exactly once (lichess's `game` of such a move). The list depends only on
//! the set of games, so a build, a merge and a game learned one at a time
//! all give the same list: [`canonical`] is that rule.

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};
use smallvec::SmallVec;

use super::codec::hash_from_sql;
use crate::keys::{Key, MoveCode};

/// Top games kept per position, as lichess's masters explorer keeps.
pub const TOP_GAMES: usize = 15;

/// One game in a position's top list: the move it played there, its rank
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

impl PartialEq for TopList {
    fn eq(&self, other: &TopList) -> bool {
        self.0 == other.0
    }
}

/// Hash and ratings of game `id`.
pub(super) fn game_ratings(conn: &Connection, id: i64) -> Result<(u64, Option<u32>, Option<u32>)> {
    let (hash, w, b): (i64, Option<u32>, Option<u32>) = conn
        .prepare_cached("SELECT hash, white_elo, black_elo FROM games WHERE id = ?1")?
        .query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok((hash_from_sql(hash), w, b))
}
