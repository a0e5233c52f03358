//! Moves judged without searching them: whether a move gives check, and
//! the static exchange evaluation of a capture.

use shakmaty::{attacks, Bitboard, Move, Position as _, Role};

use crate::{eval::see_value, position::Position};

/// Does `m` give check? Exact for normal moves without playing them.
pub(super) fn gives_check(pos: &Position, m: Move) -> bool {
    let board = pos.chess.board();
    let us = pos.turn();
    let Some(king) = board.king_of(!us) else {
        return false;
    };
    match m {
        Move::Normal {
            role,
            from,
            to,
            promotion,
            ..
        } => {
            let occ = (board.occupied() ^ Bitboard::from(from)) | Bitboard::from(to);
            let piece = promotion.unwrap_or(role).of(us);
            if attacks::attacks(to, piece, occ).contains(king) {
                return true;
            }
            let ours = board.by_color(us) & !Bitboard::from(from);
            let diag = (board.bishops() | board.queens()) & ours;
            let line = (board.rooks() | board.queens()) & ours;
            (attacks::bishop_attacks(king, occ) & diag).any()
                || (attacks::rook_attacks(king, occ) & line).any()
        }
        _ => pos.play(m).is_check(),
    }
}

/// Static exchange evaluation of the capture (or move) `m`: the material
/// balance of the best sequence of recaptures on its target square.
pub fn see(pos: &Position, m: Move) -> i32 {
    let board = pos.chess.board();
    let (from, to) = match m {
        Move::Normal { from, to, .. } | Move::EnPassant { from, to } => (from, to),
        _ => return 0,
    };
    let mut occ = board.occupied() ^ Bitboard::from(from);
    let mut gain = [0i32; 32];
    gain[0] = match m {
        Move::EnPassant { .. } => {
            occ ^= Bitboard::from(shakmaty::Square::from_coords(to.file(), from.rank()));
            see_value(Role::Pawn)
        }
        _ => m.capture().map_or(0, see_value),
    };
    let mut on_square = match m.promotion() {
        Some(p) => {
            gain[0] += see_value(p) - see_value(Role::Pawn);
            see_value(p)
        }
        None => see_value(m.role()),
    };
    let mut side = !pos.turn();
    let mut d = 0;
    loop {
        let attackers = board.attacks_to(to, side, occ) & occ;
        if attackers.is_empty() {
            break;
        }
        let mut next = None;
        for role in [
            Role::Pawn,
            Role::Knight,
            Role::Bishop,
            Role::Rook,
            Role::Queen,
            Role::King,
        ] {
            let b = attackers & board.by_role(role);
            if let Some(sq) = b.first() {
                next = Some((sq, role));
                break;
            }
        }
        let Some((sq, role)) = next else { break };
        // The king may only take last.
        if role == Role::King && (board.attacks_to(to, !side, occ ^ Bitboard::from(sq)) & occ).any()
        {
            break;
        }
        d += 1;
        if d >= gain.len() {
            break;
        }
        gain[d] = on_square - gain[d - 1];
        if (-gain[d - 1]).max(gain[d]) < 0 {
            break;
        }
        occ ^= Bitboard::from(sq);
        on_square = see_value(role);
        side = !side;
    }
    while d > 0 {
        gain[d - 1] = -((-gain[d - 1]).max(gain[d]));
        d -= 1;
    }
    gain[0]
}
