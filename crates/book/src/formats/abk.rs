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

mod export;
mod read;

use shakmaty::{uci::UciMove, CastlingMode, Color, Move, Role, Square};

use crate::pgn::game::Counts;

pub use export::{export, ExportSummary};
pub use read::{import, priority_weight, read, read_file, store, AbkBook, ImportSummary, ReadMove};

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
