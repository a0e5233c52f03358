//! The engine's position: a shakmaty `Chess` plus an incrementally updated
//! 64-bit Zobrist key (the search's own keys: every move updates them, unlike
//! the Polyglot keys, which need a full recomputation after king moves and
//! double pushes).

use shakmaty::{
    fen::Fen, uci::UciMove, CastlingMode, Chess, Color, EnPassantMode, Move, MoveList,
    Position as _, Role, Square,
};

use anyhow::{anyhow, Result};

const fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Keys: 12 x 64 pieces, 64 castling-rook squares, 8 en-passant files, side.
const KEYS: [u64; 12 * 64 + 64 + 8 + 1] = {
    let mut k = [0u64; 12 * 64 + 64 + 8 + 1];
    let mut i = 0;
    while i < k.len() {
        k[i] = splitmix(0x1ea4_b00c ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
        i += 1;
    }
    k
};
const CASTLE_BASE: usize = 12 * 64;
const EP_BASE: usize = CASTLE_BASE + 64;
const SIDE: u64 = KEYS[EP_BASE + 8];

#[inline]
fn piece_key(color: Color, role: Role, sq: Square) -> u64 {
    let piece = (role as usize - 1) * 2 + color as usize;
    KEYS[piece * 64 + sq as usize]
}

fn full_key(pos: &Chess, ep_file: Option<u8>) -> u64 {
    let mut key = 0;
    for (sq, piece) in pos.board().clone() {
        key ^= piece_key(piece.color, piece.role, sq);
    }
    for sq in pos.castles().castling_rights() {
        key ^= KEYS[CASTLE_BASE + sq as usize];
    }
    if let Some(f) = ep_file {
        key ^= KEYS[EP_BASE + f as usize];
    }
    if pos.turn() == Color::Black {
        key ^= SIDE;
    }
    key
}

/// A position with its search key.
#[derive(Clone, Debug)]
pub struct Position {
    pub chess: Chess,
    pub key: u64,
    /// The file of a double push just played (part of the key).
    ep_file: Option<u8>,
}

impl Default for Position {
    fn default() -> Self {
        Position::new(Chess::default())
    }
}

impl Position {
    pub fn new(chess: Chess) -> Position {
        let ep_file = chess
            .ep_square(EnPassantMode::Legal)
            .map(|sq| sq.file() as u8);
        let key = full_key(&chess, ep_file);
        Position {
            chess,
            key,
            ep_file,
        }
    }

    #[allow(clippy::result_large_err)] // the shakmaty error is consumed at once
    pub fn from_fen(fen: &str) -> Result<Position> {
        let fen: Fen = fen
            .trim()
            .parse()
            .map_err(|e| anyhow!("bad FEN {fen:?}: {e}"))?;
        // Lenient like GUIs: positions from composed studies may have "impossible"
        // checks or extra promoted material; both are still playable.
        let chess: Chess = fen
            .into_position(CastlingMode::Standard)
            .or_else(|e| e.ignore_impossible_check())
            .or_else(|e| e.ignore_too_much_material())
            .map_err(|e| anyhow!("illegal position in FEN: {e}"))?;
        Ok(Position::new(chess))
    }

    /// The legal move written `uci` (e.g. `e1g1` or `e7e8q`), if there is one.
    pub fn parse_uci(&self, uci: &str) -> Option<Move> {
        let m: UciMove = uci.parse().ok()?;
        m.to_move(&self.chess).ok()
    }

    #[inline]
    pub fn turn(&self) -> Color {
        self.chess.turn()
    }

    #[inline]
    pub fn legal_moves(&self) -> MoveList {
        self.chess.legal_moves()
    }

    #[inline]
    pub fn is_check(&self) -> bool {
        self.chess.is_check()
    }

    /// The position after the legal move `m`.
    #[inline]
    pub fn play(&self, m: Move) -> Position {
        let mut child = self.clone();
        child.play_in_place(m);
        child
    }

    /// Plays the legal move `m` on this position.
    pub fn play_in_place(&mut self, m: Move) {
        let us = self.chess.turn();
        let mut key = self.key ^ SIDE;
        if let Some(f) = self.ep_file.take() {
            key ^= KEYS[EP_BASE + f as usize];
        }
        match m {
            Move::Normal {
                role,
                from,
                capture,
                to,
                promotion,
            } => {
                key ^= piece_key(us, role, from) ^ piece_key(us, promotion.unwrap_or(role), to);
                if let Some(c) = capture {
                    key ^= piece_key(!us, c, to);
                }
                if role == Role::Pawn && (from as i32 - to as i32).abs() == 16 {
                    self.ep_file = Some(from.file() as u8);
                    key ^= KEYS[EP_BASE + from.file() as usize];
                }
            }
            Move::EnPassant { from, to } => {
                let taken = Square::from_coords(to.file(), from.rank());
                key ^= piece_key(us, Role::Pawn, from)
                    ^ piece_key(us, Role::Pawn, to)
                    ^ piece_key(!us, Role::Pawn, taken);
            }
            Move::Castle { king, rook } => {
                let side = m
                    .castling_side()
                    .unwrap_or(shakmaty::CastlingSide::KingSide);
                key ^= piece_key(us, Role::King, king)
                    ^ piece_key(us, Role::King, side.king_to(us))
                    ^ piece_key(us, Role::Rook, rook)
                    ^ piece_key(us, Role::Rook, side.rook_to(us));
            }
            Move::Put { .. } => {}
        }
        let rights_before = self.chess.castles().castling_rights();
        self.chess.play_unchecked(m);
        if rights_before.any() {
            for sq in rights_before ^ self.chess.castles().castling_rights() {
                key ^= KEYS[CASTLE_BASE + sq as usize];
            }
        }
        self.key = key;
    }

    /// The position with the side to move passing (for null-move pruning);
    /// `None` in check.
    pub fn play_null(&self) -> Option<Position> {
        let chess = self.chess.clone().swap_turn().ok()?;
        let mut key = self.key ^ SIDE;
        if let Some(f) = self.ep_file {
            key ^= KEYS[EP_BASE + f as usize];
        }
        Some(Position {
            chess,
            key,
            ep_file: None,
        })
    }

    /// The key computed from scratch (equal to `key` after any sequence of moves).
    pub fn recomputed_key(&self) -> u64 {
        full_key(&self.chess, self.ep_file)
    }
}

/// Leaf count to `depth` through [`Position::play`] (keys updated on every
/// move, as in the search); the last ply counts moves without playing them,
/// as shakmaty's `perft` does.
pub fn perft(pos: &Position, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let moves = pos.legal_moves();
    if depth == 1 {
        return moves.len() as u64;
    }
    moves.iter().map(|&m| perft(&pos.play(m), depth - 1)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incremental_key_equals_full_key() {
        let mut pos = Position::from_fen(
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        )
        .unwrap();
        // Walk a deterministic path through castling, captures, double pushes, en passant.
        for step in 0..200u64 {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            let m = moves[(splitmix(step) % moves.len() as u64) as usize];
            pos = pos.play(m);
            assert_eq!(pos.key, pos.recomputed_key(), "after {m:?}");
        }
        let ep = Position::from_fen("4k3/8/8/8/3p4/8/4P3/4K3 w - - 0 1").unwrap();
        let after = ep.play(ep.parse_uci("e2e4").unwrap());
        assert_eq!(after.key, after.recomputed_key());
        let taken = after.play(after.parse_uci("d4e3").unwrap());
        assert_eq!(taken.key, taken.recomputed_key());
    }

    #[test]
    fn perft_start_position() {
        let pos = Position::default();
        assert_eq!(perft(&pos, 4), 197_281);
    }
}
