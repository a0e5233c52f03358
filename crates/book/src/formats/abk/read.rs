//! `import --format abk`: an ABK book read, checked and stored (see the
//! module doc of [`super`]).

use std::{
    collections::{hash_map::Entry as MapEntry, HashMap},
    path::Path,
};

use anyhow::{bail, Context, Result};
use shakmaty::{
    fen::Fen, uci::UciMove, CastlingMode, Chess, Color, EnPassantMode, Move, Position, Square,
};

use super::{
    promotion_role, Header, RawEntry, ENTRIES_START, ENTRY_LEN, HEADER_LEN,
    JJA_WEIGHT_PER_PRIORITY, MAX_TOTAL_GAMES, NONE, ROOT, SIGNATURE, SIGNATURE_2,
};
use crate::db::import::{CountedMove, CountedPosition, ImportedMove};
use crate::db::Book;
use crate::keys::{polyglot_key, Key, KeyMap, MoveCode};
use crate::pgn::game::Counts;

/// A move read from an ABK book, merged over the paths that reach its
/// position.
#[derive(Clone, Debug)]
pub struct ReadMove {
    pub parent: Key,
    pub mv: MoveCode,
    /// Standard UCI (castling e1g1).
    pub uci: String,
    pub child: Key,
    /// The fewest plies from the start position to `parent`.
    pub depth: u32,
    pub priority: u8,
    /// White's wins, draws, Black's wins.
    pub counts: Counts,
}

/// An ABK book read and checked.
#[derive(Clone, Debug, Default)]
pub struct AbkBook {
    pub header: Header,
    /// Distinct (position, move) pairs, in the order first met.
    pub moves: Vec<ReadMove>,
    /// Entries read (every path's copy).
    pub entries: usize,
    /// Deleted or empty entries skipped.
    pub void: usize,
    /// Entries after the header that no chain from the start reaches.
    pub unreached: usize,
}

/// The byte offset of entry `index`, for messages.
fn offset(index: u32) -> usize {
    index as usize * ENTRY_LEN
}

/// A `next_move` or `next_sibling` value: `None` for "no entry", else an
/// index checked to be an entry of the file.
fn link(value: u32, count: u32, at: u32, field: &str) -> Result<Option<u32>> {
    if value == NONE || value == 0 {
        return Ok(None);
    }
    if value < ROOT || value >= count {
        bail!(
            "entry {at} (offset {}): {field} {value} is out of range: the entries are {ROOT}..{}",
            offset(at),
            count.saturating_sub(1)
        );
    }
    Ok(Some(value))
}

/// Checks the size and signature; returns the header and the number of
/// entry slots (header area included).
fn check_layout(bytes: &[u8]) -> Result<(Header, u32)> {
    if bytes.len() < HEADER_LEN {
        bail!(
            "not an ABK book: {} bytes, shorter than the {HEADER_LEN}-byte header (truncated?)",
            bytes.len()
        );
    }
    let sig = &bytes[0..4];
    if sig != SIGNATURE && sig != SIGNATURE_2 {
        bail!("not an ABK book: wrong signature {sig:02x?} at offset 0 (expected 03 41 42 4b, \"\\x03ABK\")");
    }
    if bytes.len() < ENTRIES_START {
        bail!(
            "truncated ABK book: {} bytes, the header area alone is {ENTRIES_START}",
            bytes.len()
        );
    }
    if !(bytes.len() - ENTRIES_START).is_multiple_of(ENTRY_LEN) {
        let whole = (bytes.len() - ENTRIES_START) / ENTRY_LEN;
        bail!(
            "truncated ABK book: {} bytes end inside entry {} (offset {}): entries are {ENTRY_LEN} bytes",
            bytes.len(),
            ROOT as usize + whole,
            ENTRIES_START + whole * ENTRY_LEN
        );
    }
    let count = u32::try_from(bytes.len() / ENTRY_LEN)
        .ok()
        .filter(|&c| c < NONE)
        .context("ABK book too large: more entries than 32-bit indexes can address")?;
    let mut h = [0u8; HEADER_LEN];
    h.copy_from_slice(&bytes[..HEADER_LEN]);
    Ok((Header::decode(&h), count))
}

fn entry_at(bytes: &[u8], index: u32) -> RawEntry {
    let at = offset(index);
    let mut b = [0u8; ENTRY_LEN];
    b.copy_from_slice(&bytes[at..at + ENTRY_LEN]);
    RawEntry::decode(&b)
}

/// The legal move an entry stands for in `pos`, or an error naming it.
fn entry_move(e: &RawEntry, index: u32, pos: &Chess) -> Result<Move> {
    let at = offset(index);
    let square = |s: u8, what: &str| -> Result<Square> {
        if s < 64 {
            Ok(Square::new(u32::from(s)))
        } else {
            bail!("entry {index} (offset {at}): {what} square {s} is not a square (0..63)")
        }
    };
    let (from, to) = (square(e.from, "from")?, square(e.to, "to")?);
    let promotion = promotion_role(e.promotion).map_err(|b| {
        anyhow::anyhow!("entry {index} (offset {at}): promotion byte {b:#04x} names no piece")
    })?;
    let uci = UciMove::Normal {
        from,
        to,
        promotion,
    };
    uci.to_move(pos).map_err(|_| {
        anyhow::anyhow!(
            "entry {index} (offset {at}): the move {uci} is illegal in its position {}",
            Fen::from_position(pos, EnPassantMode::Legal)
        )
    })
}

/// An entry's statistics as counts, from the side to move `turn`.
fn entry_counts(e: &RawEntry, index: u32, turn: Color) -> Result<Counts> {
    let decided = u64::from(e.won) + u64::from(e.lost);
    if decided > u64::from(e.games) {
        bail!(
            "entry {index} (offset {}): absurd statistics: {} won + {} lost > {} games",
            offset(index),
            e.won,
            e.lost,
            e.games
        );
    }
    let draws = e.games - e.won - e.lost;
    Ok(match turn {
        Color::White => Counts {
            white: e.won,
            draws,
            black: e.lost,
        },
        Color::Black => Counts {
            white: e.lost,
            draws,
            black: e.won,
        },
    })
}

/// Parses and checks a whole ABK book held in memory (see the module doc):
/// every chain from the start position is walked once; a chain reached
/// again from the same position (a shared subtree) is not walked again,
/// from another position it is an error, as is an entry reached twice
/// within chains (a loop).
pub fn read(bytes: &[u8]) -> Result<AbkBook> {
    let (header, count) = check_layout(bytes)?;
    let mut book = AbkBook {
        header,
        ..Default::default()
    };
    let mut seen = vec![false; (count.saturating_sub(ROOT)) as usize];
    let mut heads: HashMap<u32, Key> = HashMap::new();
    let mut index_of: KeyMap<(Key, MoveCode), usize> = KeyMap::default();
    let mut stack: Vec<(u32, Chess, u32)> = Vec::new();
    if count > ROOT {
        stack.push((ROOT, Chess::default(), 0));
    }
    while let Some((head, pos, depth)) = stack.pop() {
        let key = polyglot_key(&pos);
        match heads.entry(head) {
            MapEntry::Occupied(o) if *o.get() == key => continue,
            MapEntry::Occupied(_) => bail!(
                "entry {head} (offset {}) is the first reply of two different positions \
                 (a loop or a corrupt next-move index)",
                offset(head)
            ),
            MapEntry::Vacant(v) => {
                v.insert(key);
            }
        }
        let mut at = Some(head);
        while let Some(index) = at {
            let slot = (index - ROOT) as usize;
            if seen[slot] {
                bail!(
                    "entry {index} (offset {}) is reached twice: the sibling chains loop or cross",
                    offset(index)
                );
            }
            seen[slot] = true;
            let e = entry_at(bytes, index);
            at = link(e.next_sibling, count, index, "next sibling")?;
            book.entries += 1;
            if e.is_void() {
                book.void += 1;
                continue;
            }
            let m = entry_move(&e, index, &pos)?;
            let counts = entry_counts(&e, index, pos.turn())?;
            let mut next = pos.clone();
            next.play_unchecked(m);
            let code = MoveCode::from_move(&m);
            let child = polyglot_key(&next);
            merge(
                &mut book.moves,
                &mut index_of,
                ReadMove {
                    parent: key,
                    mv: code,
                    uci: m.to_uci(CastlingMode::Standard).to_string(),
                    child,
                    depth,
                    priority: e.priority,
                    counts,
                },
            );
            if let Some(reply) = link(e.next_move, count, index, "next move")? {
                stack.push((reply, next, depth + 1));
            }
        }
    }
    book.unreached = seen.iter().filter(|s| !**s).count();
    let games: u64 = book.moves.iter().map(|m| u64::from(m.counts.total())).sum();
    if games > MAX_TOTAL_GAMES {
        bail!(
            "absurd statistics: the book's moves count {games} games in all, \
             more than the {MAX_TOTAL_GAMES} a book's 32-bit counts can add up"
        );
    }
    Ok(book)
}

/// Adds a move, or merges it into the copy already read (as `jja` does:
/// the statistics with the most games, the highest priority, the fewest
/// plies).
fn merge(moves: &mut Vec<ReadMove>, index_of: &mut KeyMap<(Key, MoveCode), usize>, m: ReadMove) {
    match index_of.entry((m.parent, m.mv)) {
        MapEntry::Vacant(v) => {
            v.insert(moves.len());
            moves.push(m);
        }
        MapEntry::Occupied(o) => {
            let old = &mut moves[*o.get()];
            if m.counts.total() > old.counts.total() {
                old.counts = m.counts;
            }
            old.priority = old.priority.max(m.priority);
            old.depth = old.depth.min(m.depth);
        }
    }
}

/// Reads and checks an ABK file.
pub fn read_file(path: &Path) -> Result<AbkBook> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    read(&bytes).with_context(|| format!("{} is not a usable ABK book", path.display()))
}

/// What `import --format abk` did.
#[derive(Clone, Debug, Default)]
pub struct ImportSummary {
    /// Entries read (a position's moves count once per path to it).
    pub entries: usize,
    /// Distinct moves stored.
    pub moves: usize,
    pub positions: usize,
    /// Deleted or empty entries skipped.
    pub void: usize,
    /// Entries no chain from the start position reaches (ignored).
    pub unreached: usize,
}

/// The imported weight of a priority: `jja`'s Polyglot weight, so that
/// `export --weights imported` writes what `jja` converts the ABK book to.
pub fn priority_weight(priority: u8) -> u16 {
    u16::from(priority).saturating_mul(JJA_WEIGHT_PER_PRIORITY)
}

/// The positions of a read book with their depth and games: result by
/// result, the larger of the games into the position and the games of its
/// moves (the start position has only the latter; a position where games
/// ended the former), so that a position counts at least the games of its
/// moves either way.
fn counted_positions(moves: &[ReadMove]) -> Vec<CountedPosition> {
    #[derive(Default)]
    struct Acc {
        depth: Option<u32>,
        into: Counts,
        out: Counts,
    }
    let add = |a: &mut Counts, c: Counts| {
        a.white = a.white.saturating_add(c.white);
        a.draws = a.draws.saturating_add(c.draws);
        a.black = a.black.saturating_add(c.black);
    };
    let mut acc: KeyMap<Key, Acc> = KeyMap::default();
    for m in moves {
        let p = acc.entry(m.parent).or_default();
        p.depth = Some(p.depth.map_or(m.depth, |d| d.min(m.depth)));
        add(&mut p.out, m.counts);
        let c = acc.entry(m.child).or_default();
        c.depth = Some(c.depth.map_or(m.depth + 1, |d| d.min(m.depth + 1)));
        add(&mut c.into, m.counts);
    }
    let mut out: Vec<CountedPosition> = acc
        .into_iter()
        .map(|(key, a)| CountedPosition {
            key,
            depth: a.depth.unwrap_or(0),
            counts: Counts {
                white: a.into.white.max(a.out.white),
                draws: a.into.draws.max(a.out.draws),
                black: a.into.black.max(a.out.black),
            },
        })
        .collect();
    out.sort_by_key(|p| p.key);
    out
}

/// `import --format abk`: the whole file is read and checked before
/// anything is stored; then its moves (with their statistics, and their
/// priority as a weight, [`priority_weight`]) and positions are added in one
/// transaction ([`Book::add_imported_counted`] says how they combine with
/// moves the book already has).
pub fn import(book: &mut Book, path: &Path) -> Result<ImportSummary> {
    store(book, &read_file(path)?)
}

/// Stores a book [`read_file`] read and checked (see [`import`]).
pub fn store(book: &mut Book, abk: &AbkBook) -> Result<ImportSummary> {
    let positions = counted_positions(&abk.moves);
    let moves: Vec<CountedMove> = abk
        .moves
        .iter()
        .map(|m| CountedMove {
            imported: ImportedMove {
                parent: m.parent,
                mv: m.mv,
                uci: m.uci.clone(),
                child: Some(m.child),
                weight: priority_weight(m.priority),
            },
            counts: m.counts,
        })
        .collect();
    book.add_imported_counted(&positions, &moves)?;
    Ok(ImportSummary {
        entries: abk.entries,
        moves: moves.len(),
        positions: positions.len(),
        void: abk.void,
        unreached: abk.unreached,
    })
}
