//! Stockfish's own position keys and move encoding, as the learning engines
//! of the Stockfish family (BrainLearn, ShashChess, ...) key their
//! experience files. The book keys positions by Polyglot's Zobrist key
//! ([`crate::keys`]); these are a different set of random numbers and a
//! different move code, needed only to write and read `.exp` files.
//!
//! Keys: Stockfish fills its tables from its PRNG (xorshift64*, seed
//! 1070372) in this order: 64 squares of each of the twelve pieces (White
//! pawn .. king, then Black pawn .. king), 8 en-passant files, 16 castling
//! rights sets (one number per set of rights, the empty set included), the
//! side to move. A position's key XORs its pieces, the en-passant file when
//! an en-passant capture is possible, the key of its castling rights and,
//! with Black to move, the side key. The tables are computed at compile
//! time.
//!
//! En passant: a file is hashed only when the capture is legal (shakmaty's
//! [`EnPassantMode::Legal`]), as `jja` hashes; Stockfish 15.1 hashes it
//! when a pawn attacks the square even if it is pinned (the keys differ
//! only in those rare positions).

use std::fmt;

use shakmaty::{CastlingSide, Chess, Color, EnPassantMode, Move, Position, Role, Square};

/// Stockfish's PRNG: xorshift64* (Vigna), as `PRNG::rand64` in `misc.h`.
const fn next(state: u64) -> (u64, u64) {
    let mut s = state;
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    (s, s.wrapping_mul(2_685_821_657_736_338_717))
}

/// The random numbers of Stockfish's `Zobrist` namespace.
struct Tables {
    /// `[piece][square]`, piece 0..6 White pawn..king, 6..12 Black.
    psq: [[u64; 64]; 12],
    enpassant: [u64; 8],
    /// Indexed by Stockfish's castling-rights bits: 1 White O-O, 2 White
    /// O-O-O, 4 Black O-O, 8 Black O-O-O.
    castling: [u64; 16],
    side: u64,
}

const fn tables() -> Tables {
    let mut t = Tables {
        psq: [[0; 64]; 12],
        enpassant: [0; 8],
        castling: [0; 16],
        side: 0,
    };
    let mut state = 1_070_372u64;
    let mut pc = 0;
    while pc < 12 {
        let mut sq = 0;
        while sq < 64 {
            let (s, r) = next(state);
            state = s;
            t.psq[pc][sq] = r;
            sq += 1;
        }
        pc += 1;
    }
    let mut f = 0;
    while f < 8 {
        let (s, r) = next(state);
        state = s;
        t.enpassant[f] = r;
        f += 1;
    }
    let mut cr = 0;
    while cr < 16 {
        let (s, r) = next(state);
        state = s;
        t.castling[cr] = r;
        cr += 1;
    }
    let (_, r) = next(state);
    t.side = r;
    t
}

static TABLES: Tables = tables();

/// A position's Stockfish key (the `Key:` line of Stockfish's `d`).
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SfKey(pub u64);

impl fmt::Display for SfKey {
    /// 16 upper-case hex digits, as Stockfish's `d` prints keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016X}", self.0)
    }
}

impl fmt::Debug for SfKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SfKey({self})")
    }
}

fn piece_index(color: Color, role: Role) -> usize {
    let r = match role {
        Role::Pawn => 0,
        Role::Knight => 1,
        Role::Bishop => 2,
        Role::Rook => 3,
        Role::Queen => 4,
        Role::King => 5,
    };
    match color {
        Color::White => r,
        Color::Black => 6 + r,
    }
}

/// The Stockfish key of `pos`.
pub fn sf_key(pos: &Chess) -> SfKey {
    let t = &TABLES;
    let mut k = 0u64;
    for (sq, piece) in pos.board().iter() {
        k ^= t.psq[piece_index(piece.color, piece.role)][usize::from(sq)];
    }
    if let Some(ep) = pos.ep_square(EnPassantMode::Legal) {
        k ^= t.enpassant[usize::from(ep.file())];
    }
    let castles = pos.castles();
    let mut cr = 0;
    for (bit, color, side) in [
        (1, Color::White, CastlingSide::KingSide),
        (2, Color::White, CastlingSide::QueenSide),
        (4, Color::Black, CastlingSide::KingSide),
        (8, Color::Black, CastlingSide::QueenSide),
    ] {
        if castles.has(color, side) {
            cr |= bit;
        }
    }
    k ^= t.castling[cr];
    if pos.turn() == Color::Black {
        k ^= t.side;
    }
    SfKey(k)
}

/// A move in Stockfish's 16-bit encoding: bits 0-5 the to-square, 6-11
/// the from-square, 12-13 the promotion piece (0 knight .. 3 queen), 14-15
/// the kind (0 normal, 1 promotion, 2 en passant, 3 castling). Castling is
/// king takes own rook, as in Polyglot.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SfMove(pub u16);

const PROMOTION: u16 = 1 << 14;
const EN_PASSANT: u16 = 2 << 14;
const CASTLING: u16 = 3 << 14;

impl SfMove {
    /// The code of a chess move (`None` for a drop, which chess has not).
    pub fn from_move(m: &Move) -> Option<SfMove> {
        let code =
            |from: Square, to: Square| u16::from(u8::from(to)) | u16::from(u8::from(from)) << 6;
        Some(SfMove(match *m {
            Move::Normal {
                from,
                to,
                promotion: None,
                ..
            } => code(from, to),
            Move::Normal {
                from,
                to,
                promotion: Some(p),
                ..
            } => {
                let bits = match p {
                    Role::Knight => 0,
                    Role::Bishop => 1,
                    Role::Rook => 2,
                    Role::Queen => 3,
                    _ => return None,
                };
                code(from, to) | bits << 12 | PROMOTION
            }
            Move::EnPassant { from, to } => code(from, to) | EN_PASSANT,
            Move::Castle { king, rook } => code(king, rook) | CASTLING,
            Move::Put { .. } => return None,
        }))
    }

    pub fn from_sq(self) -> Square {
        Square::new(u32::from((self.0 >> 6) & 63))
    }

    pub fn to_sq(self) -> Square {
        Square::new(u32::from(self.0 & 63))
    }

    /// The legal move of `pos` this code stands for: the one legal move
    /// whose code is exactly this one (kind and promotion bits included).
    pub fn to_move(self, pos: &Chess) -> Option<Move> {
        let (from, to) = (self.from_sq(), self.to_sq());
        if from == to {
            return None;
        }
        let promotion = match (self.0 >> 14, (self.0 >> 12) & 3) {
            (1, 0) => Some(Role::Knight),
            (1, 1) => Some(Role::Bishop),
            (1, 2) => Some(Role::Rook),
            (1, 3) => Some(Role::Queen),
            _ => None,
        };
        // shakmaty reads king-takes-own-rook as castling.
        let uci = shakmaty::uci::UciMove::Normal {
            from,
            to,
            promotion,
        };
        uci.to_move(pos)
            .ok()
            .filter(|m| SfMove::from_move(m) == Some(self))
    }

    /// UCI text of the code alone (castling as king takes rook).
    pub fn text(self) -> String {
        let mut s = format!("{}{}", self.from_sq(), self.to_sq());
        if self.0 >> 14 == 1 {
            s.push(['n', 'b', 'r', 'q'][usize::from((self.0 >> 12) & 3)]);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{fen::Fen, CastlingMode};

    fn pos(fen: &str) -> Chess {
        fen.parse::<Fen>()
            .expect("fen")
            .into_position(CastlingMode::Standard)
            .expect("legal")
    }

    #[test]
    fn start_position_key_is_stockfishs() {
        // Stockfish's `d` on the start position.
        assert_eq!(sf_key(&Chess::default()), SfKey(0x8F8F01D4562F59FB));
    }

    #[test]
    fn moves_round_trip_through_their_codes() {
        let p = pos("r3k2r/1P6/8/3pP3/8/8/8/R3K2R w KQkq d6 0 1");
        for m in p.legal_moves() {
            let code = SfMove::from_move(&m).expect("code");
            assert_eq!(code.to_move(&p), Some(m), "{code:?}");
        }
        // A promotion's code without its kind bits is no legal move.
        let promo = p
            .legal_moves()
            .into_iter()
            .find(|m| m.promotion().is_some())
            .expect("promotion");
        let code = SfMove::from_move(&promo).expect("code");
        assert_eq!(SfMove(code.0 & 0x0fff).to_move(&p), None);
    }
}
