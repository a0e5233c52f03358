//! Evaluation: a weighted sum of named features ([`Weights`]), tapered
//! between middlegame and endgame by the material left on the board.
//! Scores are centipawns from the side to move's point of view.

use shakmaty::{attacks, Bitboard, Board, Chess, Color, Position as _, Role, Square};

use super::params::Weights;

const FILE_A: u64 = 0x0101_0101_0101_0101;
const FILE_H: u64 = FILE_A << 7;
const CENTER: u64 = (1 << 27) | (1 << 28) | (1 << 35) | (1 << 36);
/// Phase units: knight and bishop 1, rook 2, queen 4; 24 is the opening.
pub const MAX_PHASE: i32 = 24;

/// What the evaluation does with each term it finds: [`Score`] adds
/// weight x count (the search's evaluation); [`TraceSide`] records which
/// weight and how often (the exact gradient the fitting needs). One
/// evaluation written once serves both, so they cannot drift apart.
pub trait Tally: Default {
    /// `n` times `field`, a middlegame weight of `w`.
    fn mg(&mut self, w: &Weights, field: &i32, n: i32);
    /// `n` times `field`, an endgame weight of `w`.
    fn eg(&mut self, w: &Weights, field: &i32, n: i32);
    /// The attack on the enemy king's zone by two or more pieces: squares
    /// of the zone attacked by knights, bishops, rooks and queens. Worth
    /// `min(units^2 / king_attack_divisor, king_attack_cap)` in the
    /// middlegame, `units` the squares weighted by `king_attack_*`.
    fn king_attack(&mut self, w: &Weights, squares: [i32; 4]);
}

#[derive(Default, Clone, Copy)]
struct Score {
    mg: i32,
    eg: i32,
}

impl Tally for Score {
    #[inline]
    fn mg(&mut self, _: &Weights, field: &i32, n: i32) {
        self.mg += *field * n;
    }
    #[inline]
    fn eg(&mut self, _: &Weights, field: &i32, n: i32) {
        self.eg += *field * n;
    }
    #[inline]
    fn king_attack(&mut self, w: &Weights, squares: [i32; 4]) {
        self.mg += king_attack_penalty(w, squares);
    }
}

/// The weighted attack units of `squares` (knight, bishop, rook, queen).
pub fn king_attack_units(w: &Weights, squares: [i32; 4]) -> i32 {
    squares[0] * w.king_attack_knight
        + squares[1] * w.king_attack_bishop
        + squares[2] * w.king_attack_rook
        + squares[3] * w.king_attack_queen
}

fn king_attack_penalty(w: &Weights, squares: [i32; 4]) -> i32 {
    let units = king_attack_units(w, squares);
    (units * units / w.king_attack_divisor.max(1)).min(w.king_attack_cap)
}

/// The terms of one side, by weight: the evaluation as a function of the
/// weights (linear but for the king attack, kept as its square counts).
#[derive(Default, Clone, Debug)]
pub struct TraceSide {
    /// (index in [`Weights::params`], count) of middlegame terms.
    pub mg: Vec<(u16, i32)>,
    /// The same for endgame terms.
    pub eg: Vec<(u16, i32)>,
    /// The squares of a king attack by two or more pieces, if any.
    pub king_attack: Option<[i32; 4]>,
}

/// The index of `field` (a number inside `w`) in [`Weights::params`]:
/// `Weights` is `repr(C)` and made of `i32`s only, in that order.
fn index_of(w: &Weights, field: &i32) -> u16 {
    let offset = field as *const i32 as usize - w as *const Weights as usize;
    (offset / std::mem::size_of::<i32>()) as u16
}

impl Tally for TraceSide {
    fn mg(&mut self, w: &Weights, field: &i32, n: i32) {
        if n != 0 {
            self.mg.push((index_of(w, field), n));
        }
    }
    fn eg(&mut self, w: &Weights, field: &i32, n: i32) {
        if n != 0 {
            self.eg.push((index_of(w, field), n));
        }
    }
    fn king_attack(&mut self, _: &Weights, squares: [i32; 4]) {
        self.king_attack = Some(squares);
    }
}

/// The evaluation of a position as data: what [`evaluate`] computes, term by term.
#[derive(Clone, Debug)]
pub struct Trace {
    pub white: TraceSide,
    pub black: TraceSide,
    /// 0 (bare kings and pawns) ..= [`MAX_PHASE`] (the opening).
    pub phase: i32,
    /// The score is scaled by `scale_no_pawns / 64` (drawish, no pawns).
    pub scaled: bool,
    pub white_to_move: bool,
}

#[inline]
fn file_mask(f: u32) -> u64 {
    FILE_A << f
}

#[inline]
fn adjacent_files(f: u32) -> u64 {
    let mut m = 0;
    if f > 0 {
        m |= file_mask(f - 1);
    }
    if f < 7 {
        m |= file_mask(f + 1);
    }
    m
}

/// Squares strictly in front of rank `r` from `color`'s side.
#[inline]
fn ranks_ahead(color: Color, r: u32) -> u64 {
    match color {
        Color::White if r >= 7 => 0,
        Color::White => !0u64 << (8 * (r + 1)),
        Color::Black => (1u64 << (8 * r)) - 1,
    }
}

#[inline]
fn pawn_attacks(color: Color, pawns: u64) -> u64 {
    match color {
        Color::White => ((pawns & !FILE_H) << 9) | ((pawns & !FILE_A) << 7),
        Color::Black => ((pawns & !FILE_A) >> 9) | ((pawns & !FILE_H) >> 7),
    }
}

/// Index into a half-board table for a piece of `color` on `sq`.
#[inline]
fn half_board(color: Color, sq: Square) -> usize {
    let f = sq.file() as usize;
    let r = relative_rank(color, sq) as usize;
    r * 4 + if f < 4 { f } else { 7 - f }
}

#[inline]
fn relative_rank(color: Color, sq: Square) -> u32 {
    let r = sq.rank() as u32;
    match color {
        Color::White => r,
        Color::Black => 7 - r,
    }
}

fn bits(b: u64) -> impl Iterator<Item = Square> {
    Bitboard(b).into_iter()
}

/// The static evaluation of `pos` for the side to move.
pub fn evaluate(pos: &Chess, w: &Weights) -> i32 {
    let board = pos.board();
    let mut score = white_score(pos, w);
    if drawish(board, w, score) {
        score = score * w.scale_no_pawns / 64;
    }
    let stm = if pos.turn() == Color::White {
        score
    } else {
        -score
    };
    stm + w.tempo
}

/// White's tapered score before scaling and tempo.
fn white_score(pos: &Chess, w: &Weights) -> i32 {
    let board = pos.board();
    let white: Score = side(board, pos, Color::White, w);
    let black: Score = side(board, pos, Color::Black, w);
    let mg = white.mg - black.mg;
    let eg = white.eg - black.eg;
    let phase = phase(board);
    (mg * phase + eg * (MAX_PHASE - phase)) / MAX_PHASE
}

/// The terms [`evaluate`] sums for `pos` under `w` (which decides the
/// branches: the drawish scaling).
pub fn trace(pos: &Chess, w: &Weights) -> Trace {
    let board = pos.board();
    Trace {
        white: side(board, pos, Color::White, w),
        black: side(board, pos, Color::Black, w),
        phase: phase(board),
        scaled: drawish(board, w, white_score(pos, w)),
        white_to_move: pos.turn() == Color::White,
    }
}

fn phase(board: &Board) -> i32 {
    let minors = (board.knights() | board.bishops()).count() as i32;
    let rooks = board.rooks().count() as i32;
    let queens = board.queens().count() as i32;
    (minors + 2 * rooks + 4 * queens).min(MAX_PHASE)
}

/// Without pawns, an edge of less than a rook rarely wins.
fn drawish(board: &Board, w: &Weights, score: i32) -> bool {
    let strong = if score > 0 {
        Color::White
    } else {
        Color::Black
    };
    if (board.pawns() & board.by_color(strong)).any() {
        return false;
    }
    let material = |c: Color| -> i32 {
        let b = board.by_color(c);
        (board.knights() & b).count() as i32 * w.knight_eg
            + (board.bishops() & b).count() as i32 * w.bishop_eg
            + (board.rooks() & b).count() as i32 * w.rook_eg
            + (board.queens() & b).count() as i32 * w.queen_eg
            + (board.pawns() & b).count() as i32 * w.pawn_eg
    };
    material(strong) - material(!strong) < w.rook_eg
}

/// Everything that counts for `us`, in middlegame/endgame parts, as terms of `T`.
fn side<T: Tally>(board: &Board, pos: &Chess, us: Color, w: &Weights) -> T {
    let mut t = T::default();
    let occ = board.occupied();
    let own = board.by_color(us).0;
    let own_pawns = (board.pawns() & board.by_color(us)).0;
    let their_pawns = (board.pawns() & board.by_color(!us)).0;
    let their_pawn_attacks = pawn_attacks(!us, their_pawns);
    let own_pawn_attacks = pawn_attacks(us, own_pawns);
    let mobility_area = !own & !their_pawn_attacks;
    let their_king = board.king_of(!us);
    let king_zone = their_king.map_or(0, |k| attacks::king_attacks(k).0 | (1u64 << k as u32));
    let own_king = board.king_of(us);
    let mut attackers = 0;
    // Squares of the enemy king's zone attacked, by knights, bishops, rooks, queens.
    let mut zone = [0i32; 4];
    let mut center_attacks = (own_pawn_attacks & CENTER).count_ones() as i32;

    // Pawns.
    for sq in bits(own_pawns) {
        let i = half_board(us, sq);
        t.mg(w, &w.pawn_mg, 1);
        t.mg(w, &w.pst_pawn_mg[i], 1);
        t.eg(w, &w.pawn_eg, 1);
        t.eg(w, &w.pst_pawn_eg[i], 1);
        let f = sq.file() as u32;
        let r = sq.rank() as u32;
        let ahead = ranks_ahead(us, r);
        let adjacent = adjacent_files(f);
        if own_pawns & adjacent == 0 {
            t.mg(w, &w.isolated_mg, -1);
            t.eg(w, &w.isolated_eg, -1);
        } else {
            // Backward: no own pawn beside or behind on the adjacent files, and
            // the stop square is covered by an enemy pawn.
            let not_ahead = !ranks_ahead(us, r);
            let stop = match us {
                Color::White => (1u64 << sq as u32) << 8,
                Color::Black => (1u64 << sq as u32) >> 8,
            };
            if own_pawns & adjacent & not_ahead == 0 && stop & their_pawn_attacks != 0 {
                t.mg(w, &w.backward_mg, -1);
                t.eg(w, &w.backward_eg, -1);
            }
        }
        if own_pawns & file_mask(f) & ahead != 0 {
            t.mg(w, &w.doubled_mg, -1);
            t.eg(w, &w.doubled_eg, -1);
        }
        if f < 7 && own_pawns & (1u64 << (sq as u32 + 1)) != 0 {
            t.mg(w, &w.phalanx_mg, 1);
            t.eg(w, &w.phalanx_eg, 1);
        }
        if their_pawns & (file_mask(f) | adjacent) & ahead == 0 {
            let rr = relative_rank(us, sq) as usize;
            t.mg(w, &w.passed_mg[rr], 1);
            t.eg(w, &w.passed_eg[rr], 1);
            let stop = match us {
                Color::White => sq.offset(8),
                Color::Black => sq.offset(-8),
            };
            if let Some(stop) = stop {
                let own_d = own_king.map_or(0, |k| k.distance(stop) as i32);
                let their_d = their_king.map_or(0, |k| k.distance(stop) as i32);
                t.eg(w, &w.passed_their_king_eg, their_d);
                t.eg(w, &w.passed_own_king_eg, -own_d);
            }
        }
    }

    // Pieces: value, table, mobility, centre and king-zone attacks, and the rook's files.
    for (k, role) in [Role::Knight, Role::Bishop, Role::Rook, Role::Queen]
        .into_iter()
        .enumerate()
    {
        let pw = piece_weights(w, role);
        for sq in board.by_role(role) & board.by_color(us) {
            let i = half_board(us, sq);
            t.mg(w, pw.value.0, 1);
            t.mg(w, &pw.pst.0[i], 1);
            t.eg(w, pw.value.1, 1);
            t.eg(w, &pw.pst.1[i], 1);
            let a = attacks::attacks(sq, role.of(us), occ).0;
            let m = (a & mobility_area).count_ones() as i32;
            t.mg(w, pw.mobility.0, m);
            t.eg(w, pw.mobility.1, m);
            // The queen's reach is not counted as centre control.
            if role != Role::Queen {
                center_attacks += (a & CENTER).count_ones() as i32;
            }
            if a & king_zone != 0 {
                attackers += 1;
                zone[k] += (a & king_zone).count_ones() as i32;
            }
            if role == Role::Rook {
                rook_files(&mut t, w, us, sq, own_pawns, their_pawns, their_king);
            }
        }
    }
    if (board.bishops() & board.by_color(us)).count() >= 2 {
        t.mg(w, &w.bishop_pair_mg, 1);
        t.eg(w, &w.bishop_pair_eg, 1);
    }
    if attackers >= 2 {
        t.king_attack(w, zone);
    }
    t.mg(w, &w.center_control_mg, center_attacks);

    // The own king: table, pawn shield, castling.
    if let Some(k) = own_king {
        let i = half_board(us, k);
        t.mg(w, &w.pst_king_mg[i], 1);
        t.eg(w, &w.pst_king_eg[i], 1);
        let f = k.file() as u32;
        let files = file_mask(f) | adjacent_files(f);
        let r = relative_rank(us, k);
        if r <= 1 {
            let rank = |rel: u32| -> u64 {
                let abs = if us == Color::White { rel } else { 7 - rel };
                0xffu64 << (8 * abs)
            };
            let shield2 = (own_pawns & files & rank(r + 1)).count_ones() as i32;
            let shield3 = (own_pawns & files & rank(r + 2)).count_ones() as i32;
            t.mg(w, &w.shield_rank2_mg, shield2);
            t.mg(w, &w.shield_rank3_mg, shield3);
        }
        if own_pawns & file_mask(f) == 0 {
            t.mg(w, &w.king_open_file_mg, -1);
        }
        // Castled: the king on the back rank beside a corner (b, c, g, h files).
        if r == 0 && matches!(f, 1 | 2 | 6 | 7) {
            t.mg(w, &w.castled_mg, 1);
        }
    }
    if pos.castles().has_color(us) {
        t.mg(w, &w.castling_rights_mg, 1);
    }

    // Development: minor pieces at home, blocked d/e pawns at home.
    let (minor_home, de_home, shift): (u64, u64, i32) = match us {
        Color::White => (0x66, 0x18 << 8, 8),
        Color::Black => (0x66 << 56, 0x18 << 48, -8),
    };
    let minors = ((board.knights() | board.bishops()) & board.by_color(us)).0;
    let undeveloped = (minors & minor_home).count_ones() as i32;
    let home_de = own_pawns & de_home;
    let blocked_squares = if shift > 0 {
        home_de << 8
    } else {
        home_de >> 8
    };
    let blocked = (blocked_squares & occ.0).count_ones() as i32;
    t.mg(w, &w.undeveloped_minor_mg, -undeveloped);
    t.mg(w, &w.blocked_center_pawn_mg, -blocked);

    // The enemy's attack on our side is counted in their pass; here `t` holds
    // our attack on them as a bonus.
    t
}

/// The weights every minor and major piece uses, by role.
struct PieceWeights<'a> {
    value: (&'a i32, &'a i32),
    pst: (&'a [i32; 32], &'a [i32; 32]),
    mobility: (&'a i32, &'a i32),
}

fn piece_weights(w: &Weights, role: Role) -> PieceWeights<'_> {
    match role {
        Role::Knight => PieceWeights {
            value: (&w.knight_mg, &w.knight_eg),
            pst: (&w.pst_knight_mg, &w.pst_knight_eg),
            mobility: (&w.knight_mobility_mg, &w.knight_mobility_eg),
        },
        Role::Bishop => PieceWeights {
            value: (&w.bishop_mg, &w.bishop_eg),
            pst: (&w.pst_bishop_mg, &w.pst_bishop_eg),
            mobility: (&w.bishop_mobility_mg, &w.bishop_mobility_eg),
        },
        Role::Rook => PieceWeights {
            value: (&w.rook_mg, &w.rook_eg),
            pst: (&w.pst_rook_mg, &w.pst_rook_eg),
            mobility: (&w.rook_mobility_mg, &w.rook_mobility_eg),
        },
        _ => PieceWeights {
            value: (&w.queen_mg, &w.queen_eg),
            pst: (&w.pst_queen_mg, &w.pst_queen_eg),
            mobility: (&w.queen_mobility_mg, &w.queen_mobility_eg),
        },
    }
}

/// A rook on an open or semi-open file, or on the seventh with a target there.
fn rook_files<T: Tally>(
    t: &mut T,
    w: &Weights,
    us: Color,
    sq: Square,
    own_pawns: u64,
    their_pawns: u64,
    their_king: Option<Square>,
) {
    let file = file_mask(sq.file() as u32);
    if own_pawns & file == 0 {
        if their_pawns & file == 0 {
            t.mg(w, &w.rook_open_mg, 1);
            t.eg(w, &w.rook_open_eg, 1);
        } else {
            t.mg(w, &w.rook_semi_open_mg, 1);
            t.eg(w, &w.rook_semi_open_eg, 1);
        }
    }
    if relative_rank(us, sq) == 6 {
        let seventh = 0xffu64 << (8 * sq.rank() as u32);
        let king_on_eighth = their_king.is_some_and(|k| relative_rank(us, k) == 7);
        if king_on_eighth || their_pawns & seventh != 0 {
            t.mg(w, &w.rook_seventh_mg, 1);
            t.eg(w, &w.rook_seventh_eg, 1);
        }
    }
}

/// Material values for move ordering and exchange evaluation (not tuned).
pub const SEE_VALUE: [i32; 7] = [0, 100, 320, 330, 500, 950, 20_000];

#[inline]
pub fn see_value(role: Role) -> i32 {
    SEE_VALUE[role as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{fen::Fen, CastlingMode};

    fn pos(fen: &str) -> Chess {
        fen.parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap()
    }

    #[test]
    fn symmetric_positions_score_the_tempo() {
        let w = Weights::default();
        assert_eq!(evaluate(&Chess::default(), &w), w.tempo);
        // A mirrored position scores the same for the side to move.
        let a = pos("r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4");
        let b = pos("rnbqk2r/pppp1ppp/5n2/2b1p3/4P3/2N2N2/PPPP1PPP/R1BQKB1R b KQkq - 4 4");
        assert_eq!(evaluate(&a, &w), evaluate(&b, &w));
    }

    #[test]
    fn material_and_terms_point_the_right_way() {
        let w = Weights::default();
        // White is a queen up: strongly positive for white, negative for black to move.
        let up = pos("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
        assert!(evaluate(&up, &w) > 700);
        let up_b = pos("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq - 0 1");
        assert!(evaluate(&up_b, &w) < -700);
        // A passed pawn on the seventh is worth more than one on the third.
        let far = pos("4k3/P7/8/8/8/8/8/4K3 w - - 0 1");
        let near = pos("4k3/8/8/8/8/P7/8/4K3 w - - 0 1");
        assert!(evaluate(&far, &w) > evaluate(&near, &w) + 100);
        // A lone bishop is scaled towards a draw.
        let kbk = pos("4k3/8/8/8/8/8/8/2B1K3 w - - 0 1");
        assert!(evaluate(&kbk, &w) < 100);
    }
}
