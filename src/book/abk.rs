//! Arena's `.abk` opening book: export and import.
//!
//! # The file
//!
//! An ABK book is an array of 28-byte entries; the first 900 entry slots
//! (25,200 bytes) are the header area: the signature `\x03ABK`, a comment
//! and an author (Pascal strings at bytes 12 and 133), then ten
//! little-endian `u32` settings at bytes 214..254 (book depth, number of
//! moves, minimum games, minimum wins, White's and Black's win percentages,
//! the three "probability" sliders Arena selects moves with, and the last
//! half-move it plays from the book); the rest of the area is zeros. The
//! moves of the start position are the sibling chain starting at entry 900.
//! An entry is
//!
//! | bytes | field |
//! |---|---|
//! | 0, 1 | from and to square, 0 = a1 .. 63 = h8 (castling is the king's move, e1g1) |
//! | 2 | promotion: 0 none, else 0x80 + 1 rook, 2 knight, 3 bishop, 4 queen |
//! | 3 | priority, 0 ("bad") .. 9 ("best"), as `jja` documents it |
//! | 4..16 | games with the move, won and lost (`u32` each) |
//! | 16..20 | flags (1 or 0x01000000: deleted) |
//! | 20..24 | the index of the first reply (the sibling chain of the next position) |
//! | 24..28 | the index of the next alternative in this position |
//!
//! and an index of `u32::MAX` (or 0) means none. This is the layout Arena
//! writes and `jja`, the independent reader the tests use, reads; the
//! promotion byte with its high bit set is the form `jja` reads (it ignores
//! plain 1..4), and the reader here accepts both, and Arena's negative
//! values too.
//!
//! # Export
//!
//! The moves written are exactly those a Polyglot export with the same
//! options writes ([`select_moves`]), with the same weights, but only those
//! of positions reached from the start position through selected moves: a
//! tree from the start position is all an ABK book can hold. `--side`
//! White or Black keeps the other side's moves too, with priority 0
//! (Arena's "bad move"): the tree needs them to reach the positions after
//! them.
//!
//! A tree cannot share a subtree the way the book's graph shares a
//! transposed position: Arena finds a position's moves by following the
//! moves of the game from the start. So the tree is laid out breadth first
//! (shallowest lines first, heavier moves first within a position): the
//! first line to reach a position gets its moves, and a later line that
//! transposes into it gets a copy of them (and of what follows, as far as
//! the breadth-first order goes), until the tree holds [`COPY_FACTOR`]
//! times the selection's moves. Past that budget, and always where a move
//! repeats a position of its own line, the move is written without replies:
//! Arena leaves the book there, and a reader that merges a position's moves
//! over the whole tree (as `jja` and this module do) still reads every
//! selected move. Copying every line in full is no option: on the master
//! games the tree would pass 20 million entries at `--min-games 3` while
//! the selection has a few hundred thousand moves.
//!
//! The priority holds the `--weights` weight relative to the position's
//! heaviest move, `round(9 w / w_max)`, at least 1: 0 is "bad" (and `jja`
//! then weighs the move by its statistics instead), 9 "best"; `jja` turns a
//! priority into the Polyglot weight `2500 × priority`. The games, won and
//! lost fields carry the move's game counts, won and lost by the side that
//! made the move (`jja`'s comments say "for White"; it only uses won - lost
//! as a fallback weight, where the side's own wins are what a weight
//! means). The header's sliders are set to choose by priority alone
//! (priority 10, games and win percentage 0); Arena itself does not run
//! here, so that reading of its sliders is unchecked.
//!
//! # Import
//!
//! The whole file is read and checked first (signature, size, every index
//! in range, no sibling chain that loops, every move legal in the position
//! the tree gives it, won + lost <= games, games that add up in 32 bits);
//! only then is anything stored,
//! in one transaction. A position's moves met on several paths (a
//! transposition, or a shared subtree) are merged as `jja` merges them: the
//! statistics of the copy with the most games, the highest priority.

use std::{
    collections::{hash_map::Entry as MapEntry, HashMap, VecDeque},
    io::Write,
    path::Path,
};

use anyhow::{bail, Context, Result};
use shakmaty::{
    fen::Fen, uci::UciMove, CastlingMode, Chess, Color, EnPassantMode, Move, Position, Role, Square,
};

use super::db::import::{CountedMove, CountedPosition, ImportedMove};
use super::db::Book;
use super::ingest::Counts;
use super::keys::{polyglot_key, Key, KeyMap, KeySet, MoveCode};
use super::polyglot::{select_moves, ExportOptions, SelectedMove, WeightMode};
use super::suite::SideToMove;
use crate::atomic_file;

/// The first four bytes of an ABK book.
pub const SIGNATURE: [u8; 4] = *b"\x03ABK";
/// `jja` also accepts this signature (a later Arena version's).
const SIGNATURE_2: [u8; 4] = *b"\x03AB2";
/// Bytes per entry.
pub const ENTRY_LEN: usize = 28;
/// The index of the start position's first move; the slots before it are
/// the header.
pub const ROOT: u32 = 900;
/// Where the entries start.
pub const ENTRIES_START: usize = ROOT as usize * ENTRY_LEN;
/// The header fields that are used (the rest of the header area is zero).
const HEADER_LEN: usize = 254;
/// "No entry" in `next_move` and `next_sibling`.
const NONE: u32 = u32::MAX;
/// The highest priority, Arena's "best move".
pub const MAX_PRIORITY: u8 = 9;
/// Copies of transposed positions' moves stop when the tree has this many
/// times the moves of the selection it reaches (see the module doc).
pub const COPY_FACTOR: usize = 4;
/// The most games an imported book's moves may count in all: a position
/// gets at most the games into it plus the games of its moves, and the
/// book adds positions' counts up in 32 bits.
const MAX_TOTAL_GAMES: u64 = (u32::MAX / 2) as u64;
/// `jja`'s Polyglot weight per unit of priority.
pub const JJA_WEIGHT_PER_PRIORITY: u16 = 2500;

/// One 28-byte entry, as stored.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RawEntry {
    pub from: u8,
    pub to: u8,
    pub promotion: u8,
    pub priority: u8,
    pub games: u32,
    pub won: u32,
    pub lost: u32,
    pub flags: u32,
    pub next_move: u32,
    pub next_sibling: u32,
}

impl RawEntry {
    fn encode(&self) -> [u8; ENTRY_LEN] {
        let mut b = [0u8; ENTRY_LEN];
        b[0] = self.from;
        b[1] = self.to;
        b[2] = self.promotion;
        b[3] = self.priority;
        let words = [
            self.games,
            self.won,
            self.lost,
            self.flags,
            self.next_move,
            self.next_sibling,
        ];
        for (i, w) in words.iter().enumerate() {
            b[4 + 4 * i..8 + 4 * i].copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    fn decode(b: &[u8; ENTRY_LEN]) -> RawEntry {
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        RawEntry {
            from: b[0],
            to: b[1],
            promotion: b[2],
            priority: b[3],
            games: word(4),
            won: word(8),
            lost: word(12),
            flags: word(16),
            next_move: word(20),
            next_sibling: word(24),
        }
    }

    /// Deleted in Arena's editor, or an empty slot (squares 255): skipped.
    fn is_void(&self) -> bool {
        self.flags == 1 || self.flags == 0x0100_0000 || (self.from == 255 && self.to == 255)
    }
}

/// The header's settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub comment: String,
    pub author: String,
    pub book_depth: u32,
    pub book_moves: u32,
    pub min_games: u32,
    pub min_wins: u32,
    pub win_percent_white: u32,
    pub win_percent_black: u32,
    pub probability_priority: u32,
    pub probability_games: u32,
    pub probability_win_percent: u32,
    pub use_book_half_move: u32,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..4].copy_from_slice(&SIGNATURE);
        put_pascal(&mut h[12..133], &self.comment);
        put_pascal(&mut h[133..214], &self.author);
        let words = [
            self.book_depth,
            self.book_moves,
            self.min_games,
            self.min_wins,
            self.win_percent_white,
            self.win_percent_black,
            self.probability_priority,
            self.probability_games,
            self.probability_win_percent,
            self.use_book_half_move,
        ];
        for (i, w) in words.iter().enumerate() {
            h[214 + 4 * i..218 + 4 * i].copy_from_slice(&w.to_le_bytes());
        }
        h
    }

    fn decode(h: &[u8; HEADER_LEN]) -> Header {
        let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        Header {
            comment: get_pascal(&h[12..133]),
            author: get_pascal(&h[133..214]),
            book_depth: word(214),
            book_moves: word(218),
            min_games: word(222),
            min_wins: word(226),
            win_percent_white: word(230),
            win_percent_black: word(234),
            probability_priority: word(238),
            probability_games: word(242),
            probability_win_percent: word(246),
            use_book_half_move: word(250),
        }
    }
}

/// A length byte and the text, cut to the field (at a character boundary).
fn put_pascal(field: &mut [u8], text: &str) {
    let room = field.len() - 1;
    let mut end = text.len().min(room);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    field[0] = end as u8;
    field[1..=end].copy_from_slice(&text.as_bytes()[..end]);
}

fn get_pascal(field: &[u8]) -> String {
    let len = usize::from(field[0]).min(field.len() - 1);
    String::from_utf8_lossy(&field[1..=len]).into_owned()
}

/// The promotion byte of a piece (see the module doc).
fn promotion_byte(role: Option<Role>) -> u8 {
    match role {
        None => 0,
        Some(Role::Rook) => 0x81,
        Some(Role::Knight) => 0x82,
        Some(Role::Bishop) => 0x83,
        Some(_) => 0x84,
    }
}

/// The piece of a promotion byte: Arena's signed ±1..4, or `jja`'s 0x80
/// + 1..4; `Err` for any other byte.
fn promotion_role(byte: u8) -> Result<Option<Role>, u8> {
    let n = match byte {
        0 | 0x80 => return Ok(None),
        1..=4 => byte,
        0x81..=0x84 => byte - 0x80,
        0xFC..=0xFF => byte.wrapping_neg(),
        _ => return Err(byte),
    };
    Ok(Some(match n {
        1 => Role::Rook,
        2 => Role::Knight,
        3 => Role::Bishop,
        _ => Role::Queen,
    }))
}

/// The move's squares as Arena writes them (castling: the king's two-square
/// move).
fn move_squares(m: &Move) -> (Square, Square, Option<Role>) {
    match m.to_uci(CastlingMode::Standard) {
        UciMove::Normal {
            from,
            to,
            promotion,
        } => (from, to, promotion),
        // A standard-chess move is always a normal UCI move.
        UciMove::Put { to, .. } => (to, to, None),
        UciMove::Null => (Square::A1, Square::A1, None),
    }
}

/// A move's weight as a priority (see the module doc).
pub fn priority(weight: u16, heaviest: u16) -> u8 {
    if heaviest == 0 {
        return 1;
    }
    let (w, h) = (u32::from(weight), u32::from(heaviest));
    let p = (2 * u32::from(MAX_PRIORITY) * w + h) / (2 * h);
    p.clamp(1, u32::from(MAX_PRIORITY)) as u8
}

/// Won and lost games of the side to move in a position with `counts`.
fn won_lost(turn: Color, c: Counts) -> (u32, u32) {
    match turn {
        Color::White => (c.white, c.black),
        Color::Black => (c.black, c.white),
    }
}

/// The selection by position, heaviest first (then by move, so that the
/// file does not depend on the book's row order).
fn by_position(selected: Vec<SelectedMove>) -> KeyMap<Key, Vec<SelectedMove>> {
    let mut map: KeyMap<Key, Vec<SelectedMove>> = KeyMap::default();
    for m in selected {
        map.entry(m.parent).or_default().push(m);
    }
    for moves in map.values_mut() {
        moves.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.mv.cmp(&b.mv)));
    }
    map
}

/// The tree an export writes: entries from index [`ROOT`] on.
#[derive(Debug, Default)]
pub struct Tree {
    pub entries: Vec<RawEntry>,
    /// The longest line, in plies.
    pub depth: u32,
    /// The distinct (position, move) pairs written.
    pub distinct: KeySet<(Key, MoveCode)>,
    /// Entries that copy a position's moves already written on another
    /// line (a transposition).
    pub copies: usize,
    /// Moves written without replies although their position has moves:
    /// a repetition of their own line, or a transposition past the copy
    /// budget (the replies are on another line).
    pub leaves: usize,
}

/// A position in the tree, for the repetition guard: the key and the
/// node it was reached from.
struct Node {
    key: Key,
    parent: Option<usize>,
}

/// Whether `key` is on the line to `node` (node included).
fn on_line(nodes: &[Node], mut node: Option<usize>, key: Key) -> bool {
    while let Some(i) = node {
        if nodes[i].key == key {
            return true;
        }
        node = nodes[i].parent;
    }
    false
}

/// Appends the sibling chain of `pos`'s selected moves (the caller has
/// checked it has some); returns its first index and, per move, its entry
/// and the position it leads to.
fn append_block(
    tree: &mut Tree,
    moves: &[SelectedMove],
    side: SideToMove,
    pos: &Chess,
) -> Result<(u32, Vec<(usize, Chess)>)> {
    let key = polyglot_key(pos);
    let legal: Vec<(&SelectedMove, Move)> = moves
        .iter()
        .filter_map(|s| s.mv.to_move(pos).map(|m| (s, m)))
        .collect();
    let heaviest = legal.iter().map(|(s, _)| s.weight).max().unwrap_or(0);
    let plays = match side {
        SideToMove::Both => true,
        SideToMove::White => pos.turn() == Color::White,
        SideToMove::Black => pos.turn() == Color::Black,
    };
    let first = tree.entries.len();
    if first + legal.len() > (NONE - ROOT) as usize {
        bail!("the ABK tree has more entries than 32-bit indexes address");
    }
    let mut children = Vec::with_capacity(legal.len());
    for (i, (s, m)) in legal.iter().enumerate() {
        let (from, to, promo) = move_squares(m);
        let (won, lost) = won_lost(pos.turn(), s.counts);
        let index = first + i;
        tree.entries.push(RawEntry {
            from: u8::from(from),
            to: u8::from(to),
            promotion: promotion_byte(promo),
            priority: if plays {
                priority(s.weight, heaviest)
            } else {
                0
            },
            games: s.counts.total(),
            won,
            lost,
            flags: 0,
            next_move: NONE,
            next_sibling: if i + 1 < legal.len() {
                file_index(index + 1)
            } else {
                NONE
            },
        });
        tree.distinct.insert((key, s.mv));
        let mut next = pos.clone();
        next.play_unchecked(*m);
        children.push((index, next));
    }
    Ok((file_index(first), children))
}

/// The file index of the `i`-th entry after the header (in range: checked
/// by [`append_block`]).
fn file_index(i: usize) -> u32 {
    ROOT + i as u32
}

/// The selected moves of the positions reached from the start position
/// through selected moves.
fn reachable_moves(selection: &KeyMap<Key, Vec<SelectedMove>>) -> usize {
    let start = Chess::default();
    let mut seen: KeySet<Key> = KeySet::default();
    seen.insert(polyglot_key(&start));
    let mut queue = VecDeque::from([start]);
    let mut count = 0;
    while let Some(pos) = queue.pop_front() {
        let Some(moves) = selection.get(&polyglot_key(&pos)) else {
            continue;
        };
        for m in moves.iter().filter_map(|s| s.mv.to_move(&pos)) {
            count += 1;
            let mut next = pos.clone();
            next.play_unchecked(m);
            if seen.insert(polyglot_key(&next)) {
                queue.push_back(next);
            }
        }
    }
    count
}

/// Lays the selection out as a tree from the start position, breadth
/// first, each position's moves one contiguous sibling chain (see the
/// module doc for transpositions and repetitions). With `side` White or
/// Black, the other side's moves are written with priority 0.
pub fn build_tree(selected: Vec<SelectedMove>, side: SideToMove) -> Result<Tree> {
    let selection = by_position(selected);
    // The budget counts the moves the tree can reach, so that the same
    // reachable selection always gives the same file.
    let budget = COPY_FACTOR * reachable_moves(&selection);
    let mut tree = Tree::default();
    let start = Chess::default();
    let start_key = polyglot_key(&start);
    let Some(moves) = selection.get(&start_key) else {
        return Ok(tree);
    };
    let mut written: KeySet<Key> = KeySet::default();
    written.insert(start_key);
    let mut nodes = vec![Node {
        key: start_key,
        parent: None,
    }];
    let (_, children) = append_block(&mut tree, moves, side, &start)?;
    // (the entry of the move that leads here, the node it was played from,
    // the position, its ply)
    let mut queue: VecDeque<(usize, usize, Chess, u32)> = children
        .into_iter()
        .map(|(e, pos)| (e, 0, pos, 1))
        .collect();
    while let Some((entry, from, pos, ply)) = queue.pop_front() {
        tree.depth = tree.depth.max(ply);
        let key = polyglot_key(&pos);
        let Some(moves) = selection.get(&key) else {
            continue;
        };
        if written.contains(&key) {
            if on_line(&nodes, Some(from), key) || tree.entries.len() >= budget {
                tree.leaves += 1;
                continue;
            }
            tree.copies += moves.len();
        }
        written.insert(key);
        let node = nodes.len();
        nodes.push(Node {
            key,
            parent: Some(from),
        });
        let (first, children) = append_block(&mut tree, moves, side, &pos)?;
        tree.entries[entry].next_move = first;
        queue.extend(children.into_iter().map(|(e, p)| (e, node, p, ply + 1)));
    }
    Ok(tree)
}

/// The header of an export.
fn export_header(tree: &Tree, opts: &ExportOptions) -> Header {
    let weights = match opts.weights {
        WeightMode::Value => "value",
        WeightMode::Games => "games",
        WeightMode::Polyglot => "polyglot",
        WeightMode::Imported => "imported",
    };
    // Win percentages over the start position's moves (the first block).
    let (mut games, mut white, mut black) = (0u64, 0u64, 0u64);
    for e in &tree.entries {
        games += u64::from(e.games);
        white += u64::from(e.won);
        black += u64::from(e.lost);
        if e.next_sibling == NONE {
            break;
        }
    }
    let percent = |n: u64| (100 * n).checked_div(games).unwrap_or(0) as u32;
    Header {
        comment: format!(
            "learnbook export: weights {weights}, min games {}{}",
            opts.min_games,
            opts.max_ply
                .map_or_else(String::new, |p| format!(", max ply {p}"))
        ),
        author: "learnbook".to_string(),
        book_depth: tree.depth,
        book_moves: tree.entries.len() as u32,
        min_games: opts.min_games,
        min_wins: 0,
        win_percent_white: percent(white),
        win_percent_black: percent(black),
        probability_priority: 10,
        probability_games: 0,
        probability_win_percent: 0,
        use_book_half_move: opts.max_ply.unwrap_or(tree.depth),
    }
}

/// Writes a header and entries (atomically: all or nothing).
pub fn write_abk(path: &Path, header: &Header, entries: &[RawEntry]) -> Result<()> {
    atomic_file::write_with(path, |w| {
        w.write_all(&header.encode())?;
        w.write_all(&vec![0u8; ENTRIES_START - HEADER_LEN])?;
        for e in entries {
            w.write_all(&e.encode())?;
        }
        Ok(())
    })
}

/// What `export --format abk` wrote.
#[derive(Clone, Debug)]
pub struct ExportSummary {
    /// Entries written (moves, a position's moves once per path to it).
    pub entries: usize,
    /// Distinct (position, move) pairs among them.
    pub moves: usize,
    /// Selected moves of positions the tree does not reach.
    pub unreached: usize,
    /// Entries that copy the moves of a transposed position.
    pub copies: usize,
    /// Moves written without replies although their position has some (a
    /// repetition, or a transposition past the copy budget).
    pub leaves: usize,
    /// The longest line, in plies.
    pub depth: u32,
}

/// `export --format abk`: the selection as a tree (see the module doc).
pub fn export(book: &Book, path: &Path, opts: &ExportOptions) -> Result<ExportSummary> {
    // The tree needs both sides' moves; `--side` sets priorities instead.
    let both = ExportOptions {
        side: SideToMove::Both,
        ..opts.clone()
    };
    let selected = select_moves(book, &both)?;
    let total = selected.len();
    let tree = build_tree(selected, opts.side)?;
    write_abk(path, &export_header(&tree, opts), &tree.entries)?;
    Ok(ExportSummary {
        entries: tree.entries.len(),
        moves: tree.distinct.len(),
        unreached: total - tree.distinct.len(),
        copies: tree.copies,
        leaves: tree.leaves,
        depth: tree.depth,
    })
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_scale_to_the_heaviest_move_and_never_reach_zero() {
        assert_eq!(priority(100, 100), 9);
        assert_eq!(priority(50, 100), 5); // 4.5 rounds up
        assert_eq!(priority(1, 65535), 1);
        assert_eq!(priority(65535, 65535), 9);
        assert_eq!(priority(5, 0), 1);
        assert_eq!(priority_weight(9), 22_500);
    }

    #[test]
    fn promotion_bytes_read_back_in_every_form() {
        for role in [
            None,
            Some(Role::Rook),
            Some(Role::Knight),
            Some(Role::Bishop),
            Some(Role::Queen),
        ] {
            assert_eq!(promotion_role(promotion_byte(role)), Ok(role));
        }
        assert_eq!(promotion_role(4), Ok(Some(Role::Queen)));
        assert_eq!(promotion_role(0xFC), Ok(Some(Role::Queen))); // -4
        assert_eq!(promotion_role(0xFF), Ok(Some(Role::Rook))); // -1
        assert_eq!(promotion_role(5), Err(5));
        assert_eq!(promotion_role(0x85), Err(0x85));
    }

    #[test]
    fn entries_and_headers_read_back() {
        let e = RawEntry {
            from: 12,
            to: 28,
            promotion: 0,
            priority: 9,
            games: 7,
            won: 3,
            lost: 1,
            flags: 0,
            next_move: 901,
            next_sibling: NONE,
        };
        assert_eq!(RawEntry::decode(&e.encode()), e);
        let h = Header {
            comment: "é".repeat(100), // 200 bytes: cut at a character boundary
            author: "learnbook".into(),
            book_depth: 40,
            book_moves: 3,
            use_book_half_move: 40,
            ..Header::default()
        };
        let back = Header::decode(&h.encode());
        assert_eq!(back.comment, "é".repeat(60));
        assert_eq!(back.author, "learnbook");
        assert_eq!((back.book_depth, back.book_moves), (40, 3));
    }

    #[test]
    fn an_empty_book_reads_as_no_moves() {
        let mut bytes = Header::default().encode().to_vec();
        bytes.resize(ENTRIES_START, 0);
        let book = read(&bytes).expect("read");
        assert!(book.moves.is_empty());
    }
}
