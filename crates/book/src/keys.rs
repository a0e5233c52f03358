//! Explicit key formats: position keys and move codes as stored in the book.
//!
//! Positions are keyed by their Polyglot Zobrist key (shakmaty's `Zobrist64`
//! with pseudo-legal en passant, as Polyglot hashes it), stored in SQLite as
//! the signed 64-bit integer with the same bits. Moves are stored in
//! Polyglot's 16-bit encoding (castling as king-takes-own-rook), so a Polyglot
//! export copies both numbers unchanged.

use std::fmt;

use serde::{Deserialize, Serialize};
use shakmaty::{zobrist::Zobrist64, EnPassantMode, Move, Position, Role, Square};

/// The Polyglot hash of a position: its row in the book, its entries in a
/// Polyglot book.
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Key(pub u64);

impl Key {
    /// As SQLite stores it: the signed 64-bit integer with the same bits
    /// (SQLite has no unsigned integers). Rows in this order are in
    /// B-tree order.
    pub fn to_sql(self) -> i64 {
        self.0 as i64
    }

    /// Back from [`Key::to_sql`].
    pub fn from_sql(v: i64) -> Key {
        Key(v as u64)
    }
}

/// 16 hex digits, as `show` prints keys and Polyglot tools list them.
impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

/// The Polyglot key of a position.
pub fn polyglot_key<P: Position>(pos: &P) -> Key {
    Key(pos.zobrist_hash::<Zobrist64>(EnPassantMode::PseudoLegal).0)
}

/// A move in Polyglot's encoding: bits 0-5 to-square, 6-11 from-square,
/// 12-14 promotion (1 knight .. 4 queen). Castling is king -> own rook.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MoveCode(pub u16);

impl MoveCode {
    pub fn from_move(m: &Move) -> MoveCode {
        let (from, to, promo) = match *m {
            Move::Normal {
                from,
                to,
                promotion,
                ..
            } => (from, to, promotion),
            Move::EnPassant { from, to } => (from, to, None),
            Move::Castle { king, rook } => (king, rook, None),
            Move::Put { to, .. } => (to, to, None),
        };
        let p = match promo {
            Some(Role::Knight) => 1,
            Some(Role::Bishop) => 2,
            Some(Role::Rook) => 3,
            Some(Role::Queen) => 4,
            _ => 0,
        };
        MoveCode(u16::from(u8::from(to)) | (u16::from(u8::from(from)) << 6) | (p << 12))
    }

    pub fn from_sq(self) -> Square {
        Square::new(u32::from((self.0 >> 6) & 63))
    }
    pub fn to_sq(self) -> Square {
        Square::new(u32::from(self.0 & 63))
    }
    pub fn promotion(self) -> Option<Role> {
        match (self.0 >> 12) & 7 {
            1 => Some(Role::Knight),
            2 => Some(Role::Bishop),
            3 => Some(Role::Rook),
            4 => Some(Role::Queen),
            _ => None,
        }
    }

    /// The legal move in `pos` this code stands for, if any.
    pub fn to_move<P: Position>(self, pos: &P) -> Option<Move> {
        // shakmaty reads king-takes-own-rook as castling, as Polyglot codes
        // it, and checks legality without generating every move.
        let uci = shakmaty::uci::UciMove::Normal {
            from: self.from_sq(),
            to: self.to_sq(),
            promotion: self.promotion(),
        };
        uci.to_move(pos)
            .ok()
            .filter(|m| MoveCode::from_move(m) == self)
    }

    /// Standard UCI text (castling as e1g1). `castle` says whether the move
    /// is castling, which the code alone cannot tell from a rook move.
    pub fn uci(self, castle: bool) -> String {
        let from = self.from_sq();
        let mut to = self.to_sq();
        if castle {
            let file = if to.file() > from.file() {
                shakmaty::File::G
            } else {
                shakmaty::File::C
            };
            to = Square::from_coords(file, from.rank());
        }
        let mut s = format!("{from}{to}");
        if let Some(r) = self.promotion() {
            s.push(r.char());
        }
        s
    }
}

impl fmt::Display for MoveCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.uci(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{fen::Fen, CastlingMode, Chess};

    #[test]
    fn start_key_is_polyglot() {
        assert_eq!(polyglot_key(&Chess::default()), Key(0x463b96181691fc9c));
        assert_eq!(Key::from_sql(Key(u64::MAX).to_sql()), Key(u64::MAX));
        assert_eq!(Key(0xab).to_string(), "00000000000000ab");
    }

    #[test]
    fn castling_is_king_takes_rook() {
        let fen: Fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1".parse().expect("fen");
        let pos: Chess = fen.into_position(CastlingMode::Standard).expect("pos");
        let castles: Vec<_> = pos
            .legal_moves()
            .into_iter()
            .filter(|m| m.is_castle())
            .collect();
        let mut codes: Vec<String> = castles
            .iter()
            .map(|m| MoveCode::from_move(m).to_string())
            .collect();
        codes.sort();
        assert_eq!(codes, vec!["e1a1", "e1h1"]);
        let mut ucis: Vec<String> = castles
            .iter()
            .map(|m| m.to_uci(CastlingMode::Standard).to_string())
            .collect();
        ucis.sort();
        assert_eq!(ucis, vec!["e1c1", "e1g1"]);
    }
}

/// A hasher for maps keyed by position keys ([`Key`], alone or with a move)
/// and game hashes. Both are already uniformly random, so a multiply-rotate mix is enough and far cheaper than
/// SipHash (the build spends much of its sequential time in these maps).
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(26) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_u16(&mut self, x: u16) {
        self.write_u64(u64::from(x));
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }
}

/// `HashMap` with [`KeyHasher`].
pub type KeyMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<KeyHasher>>;
/// `HashSet` with [`KeyHasher`].
pub type KeySet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<KeyHasher>>;
