//! SAN to a move without generating the position's moves, for `build`'s
//! validation, which resolves every move of every game.
//!
//! shakmaty's `San::to_move` builds a list of candidate moves and copies
//! it (2 KB) for each SAN: a fifth of the time a build spends validating.
//! The common case (a piece or pawn move, not in check, no promotion, no
//! en passant) needs only the pieces that reach the target square and a
//! pin test. Everything else (castling, king moves, promotions, en passant,
//! check, and every SAN that is illegal or ambiguous) goes to shakmaty, so
//! the answer, error included, is always shakmaty's.

use shakmaty::{
    attacks,
    san::{San, SanError},
    Bitboard, Chess, Color, Move, Position, Rank, Role,
};

/// The move `san` names in `pos`, as [`San::to_move`] gives it.
pub fn to_move(san: &San, pos: &Chess) -> Result<Move, SanError> {
    match common_move(san, pos) {
        Some(m) => Ok(m),
        None => san.to_move(pos),
    }
}

/// The move of the common case, or `None` to ask shakmaty.
fn common_move(san: &San, pos: &Chess) -> Option<Move> {
    let San::Normal {
        role,
        file,
        rank,
        capture,
        to,
        promotion: None,
    } = *san
    else {
        return None;
    };
    // A capture onto an empty square is en passant or illegal; a quiet
    // move onto a piece is illegal: shakmaty says which.
    if role == Role::King || pos.us().contains(to) || capture != pos.them().contains(to) {
        return None;
    }
    let board = pos.board();
    let turn = pos.turn();
    let king = board.king_of(turn)?;
    if pos.checkers().any() {
        return None;
    }
    let occupied = board.occupied();
    let reach = match role {
        Role::Pawn => pawn_sources(turn, to, capture, occupied)?,
        Role::Knight => attacks::knight_attacks(to),
        Role::Bishop => attacks::bishop_attacks(to, occupied),
        Role::Rook => attacks::rook_attacks(to, occupied),
        Role::Queen => attacks::queen_attacks(to, occupied),
        Role::King => return None,
    };
    let mut found = None;
    for from in reach & pos.our(role) {
        if file.is_some_and(|f| f != from.file()) || rank.is_some_and(|r| r != from.rank()) {
            continue;
        }
        // Not in check, a move that is not the king's is legal unless it
        // opens a line to the king (the captured piece attacks no more).
        let after = occupied.without(from).with(to);
        if board.attacks_to(king, !turn, after).without(to).any() {
            continue;
        }
        if found.is_some() {
            return None;
        }
        found = Some(from);
    }
    found.map(|from| Move::Normal {
        role,
        from,
        capture: board.role_at(to),
        to,
        promotion: None,
    })
}

/// The squares a pawn of `turn` moves from to reach `to`: diagonally for a
/// capture, one or two squares behind for a push. `None` for the last
/// rank (a promotion needs its piece: shakmaty's error).
fn pawn_sources(
    turn: Color,
    to: shakmaty::Square,
    capture: bool,
    occupied: Bitboard,
) -> Option<Bitboard> {
    let relative = turn.relative_rank(to.rank());
    if relative == Rank::Eighth {
        return None;
    }
    if capture {
        return Some(attacks::pawn_attacks(!turn, to));
    }
    let back = if turn == Color::White { -8 } else { 8 };
    let one = to.offset(back)?;
    if occupied.contains(one) || relative != Rank::Fourth {
        return Some(Bitboard::from_square(one));
    }
    Some(Bitboard::from_square(one) | Bitboard::from_square(one.offset(back)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{fen::Fen, CastlingMode, File, Square};

    /// Every SAN of a piece or pawn onto every square, with and without a
    /// capture, a file or rank hint, or a promotion: the same answer as
    /// shakmaty's, move or error.
    fn agrees_everywhere(pos: &Chess) {
        let hints: Vec<(Option<File>, Option<Rank>)> = std::iter::once((None, None))
            .chain(File::ALL.into_iter().map(|f| (Some(f), None)))
            .chain(Rank::ALL.into_iter().map(|r| (None, Some(r))))
            .collect();
        for role in Role::ALL {
            for to in Square::ALL {
                for capture in [false, true] {
                    for &(file, rank) in &hints {
                        for promotion in [None, Some(Role::Queen)] {
                            let san = San::Normal {
                                role,
                                file,
                                rank,
                                capture,
                                to,
                                promotion,
                            };
                            assert_eq!(
                                to_move(&san, pos),
                                san.to_move(pos),
                                "{san} in {}",
                                Fen::from_position(pos, shakmaty::EnPassantMode::Legal)
                            );
                        }
                    }
                }
            }
        }
    }

    fn position(fen: &str) -> Chess {
        fen.parse::<Fen>()
            .expect("fen")
            .into_position(CastlingMode::Standard)
            .expect("position")
    }

    #[test]
    fn agrees_with_shakmaty_on_pins_checks_promotions_and_en_passant() {
        for fen in [
            // The start, and a middlegame with pieces two of which reach a square.
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R w KQ - 0 9",
            // A knight pinned to the king, a bishop pinned along its diagonal.
            "4k3/8/8/8/4r3/8/4N3/4K3 w - - 0 1",
            "4k3/8/8/7b/8/8/4B3/3K4 w - - 0 1",
            "3qk3/8/8/8/8/8/3B4/3K4 w - - 0 1",
            // In check: only evasions (shakmaty's path).
            "4k3/8/8/8/8/8/4q3/R3K2R w KQ - 0 1",
            // En passant available, and an en passant capture that is pinned.
            "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2",
            "8/8/8/K2pP2q/8/8/8/7k w - d6 0 2",
            // Promotions, pushes from the second rank, a blocked double push.
            "4k3/1P6/8/8/8/4n3/4P3/4K3 w - - 0 1",
            "4k3/8/8/8/8/4n3/3PP3/4K3 w - - 0 1",
            // Black to move: pawns the other way, two rooks on one file.
            "r3k3/8/r7/8/3Pp3/8/8/4K3 b - d3 0 1",
            // Two knights and two queens reaching one square (hints needed).
            "4k3/8/8/3Q1Q2/8/2N3N1/8/4K3 w - - 0 1",
        ] {
            agrees_everywhere(&position(fen));
        }
    }

    #[test]
    fn agrees_with_shakmaty_along_real_games() {
        use shakmaty::san::SanPlus;
        // A few hundred positions of master play.
        let games = [
            "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6 Be3 e5 Nb3 Be6 f3 Be7 Qd2 O-O O-O-O Nbd7 g4 b5 g5 b4 Ne2 Ne8 f4 a5 f5 a4 Nbd4 exd4 Nxd4 b3 Kb1 bxc2+ Nxc2 Bb3 axb3 axb3 Na3 Ne5",
            "d4 Nf6 c4 e6 Nc3 Bb4 e3 O-O Bd3 d5 Nf3 c5 O-O Nc6 a3 Bxc3 bxc3 dxc4 Bxc4 Qc7 Bd3 e5 Qc2 Re8 dxe5 Nxe5 Nxe5 Qxe5 f3 Bd7 a4 Rad8 e4 c4 Be2 Bc6 Be3 Nd7 Bxc4 Nc5",
            "e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6 O-O Be7 Re1 b5 Bb3 d6 c3 O-O h3 Nb8 d4 Nbd7 Nbd2 Bb7 Bc2 Re8 Nf1 Bf8 Ng3 g6 a4 c5 d5 c4 Bg5 h6 Be3 Nc5 Qd2 h5 Bg5 Be7",
        ];
        let (mut moves, mut common) = (0, 0);
        for line in games {
            let mut pos = Chess::default();
            for token in line.split_whitespace() {
                agrees_everywhere(&pos);
                let san: SanPlus = token.parse().expect("san");
                moves += 1;
                common += usize::from(common_move(&san.san, &pos).is_some());
                let m = to_move(&san.san, &pos).expect("legal");
                pos.play_unchecked(m);
            }
        }
        // The point of the module: most moves never reach shakmaty's list.
        assert!(common * 10 >= moves * 8, "{common} of {moves} moves");
    }
}
