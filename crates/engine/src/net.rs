//! The learned evaluation: a perspective net (768 -> N) x 2 -> 1 with
//! SCReLU, quantised to i16, its accumulators updated move by move along
//! the search ([`Accumulators`]).
//!
//! # Inputs
//!
//! A piece of colour `c`, role `r` (pawn 0 .. king 5) on square `s`
//! (a1 = 0 .. h8 = 63) is input `[0, 384][c != p] + 64 r + s'` from
//! perspective `p`, `s' = s` for White's perspective and `s ^ 56` (the
//! board flipped vertically) for Black's: bullet's `Chess768`.
//!
//! # File layout (bullet's simple example, quantised)
//!
//! Little-endian i16, no header, in this order, then zeros to a multiple
//! of 64 bytes:
//!
//! | field | count | scale |
//! | --- | --- | --- |
//! | `l0w`, input weights, input-major: `l0w[i * N + j]` is input `i`'s weight into neuron `j` | 768 N | QA = 255 |
//! | `l0b`, hidden biases | N | QA |
//! | `l1w`, output weights: the side to move's N neurons, then the other side's | 2 N | QB = 64 |
//! | `l1b`, output bias | 1 | QA x QB |
//!
//! N is read from the file's size (`2 (771 N + 1)` bytes rounded up to
//! 64). The evaluation, from the side to move's view, in centipawns:
//!
//! ```text
//! a_us, a_them = l0b + sum of l0w rows of the pieces, from each perspective
//! v = (sum_j screlu(a_us[j]) l1w[j] + sum_j screlu(a_them[j]) l1w[N + j]) / QA
//! eval = (v + l1b) * 400 / (QA * QB)        screlu(x) = clamp(x, 0, QA)^2
//! ```
//!
//! (integer division truncating toward zero, as Rust's and C's `/`). A
//! file is refused when its size fits no N, its padding is not zero, or a
//! weight lies outside bullet's clipping (|w| <= 1.98: 505 for `l0w`,
//! `l0b`, 127 for `l1w`), which also keeps the i16 accumulators from
//! overflowing with 32 pieces.

use std::path::Path;

use anyhow::{bail, Context, Result};
use shakmaty::{Chess, Color, Move, Position as _, Role, Square};

pub const INPUTS: usize = 768;
pub const QA: i32 = 255;
pub const QB: i32 = 64;
/// Centipawns per unit of the net's output (the trainer's sigmoid scale).
pub const SCALE: i32 = 400;
/// The largest hidden layer a file may have.
pub const MAX_HIDDEN: usize = 4096;
/// The largest |weight| of the input layer and its biases: 1.98 x QA.
pub const MAX_L0: i16 = 505;
/// The largest |weight| of the output layer: 1.98 x QB.
pub const MAX_L1: i16 = 127;
/// The net's evaluation is kept within this (far from mate scores).
pub const MAX_EVAL: i32 = 20_000;

/// The input of a piece from `perspective`'s side.
#[inline]
pub fn feature(perspective: Color, colour: Color, role: Role, sq: Square) -> u16 {
    let theirs = usize::from(colour != perspective);
    let sq = match perspective {
        Color::White => sq as usize,
        Color::Black => sq as usize ^ 56,
    };
    (theirs * 384 + (role as usize - 1) * 64 + sq) as u16
}

/// Bytes of a file for a hidden layer of `n`.
pub fn file_bytes(n: usize) -> usize {
    (2 * (INPUTS * n + n + 2 * n + 1)).div_ceil(64) * 64
}

/// A quantised net.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    hidden: usize,
    /// `[INPUTS][hidden]`.
    l0w: Vec<i16>,
    l0b: Vec<i16>,
    /// `[2][hidden]`.
    l1w: Vec<i16>,
    l1b: i16,
}

impl Network {
    /// A net from its parts (the trainer's quantised output); checked as a file is.
    pub fn new(
        hidden: usize,
        l0w: Vec<i16>,
        l0b: Vec<i16>,
        l1w: Vec<i16>,
        l1b: i16,
    ) -> Result<Network> {
        if hidden == 0 || hidden > MAX_HIDDEN {
            bail!("a hidden layer of {hidden} (1 to {MAX_HIDDEN})");
        }
        if l0w.len() != INPUTS * hidden || l0b.len() != hidden || l1w.len() != 2 * hidden {
            bail!("the parts of the net do not fit a hidden layer of {hidden}");
        }
        let out_of = |v: &[i16], max: i16| v.iter().position(|w| w.abs() > max);
        if let Some(i) = out_of(&l0w, MAX_L0) {
            bail!("input weight {i} is {} (beyond +-{MAX_L0})", l0w[i]);
        }
        if let Some(i) = out_of(&l0b, MAX_L0) {
            bail!("hidden bias {i} is {} (beyond +-{MAX_L0})", l0b[i]);
        }
        if let Some(i) = out_of(&l1w, MAX_L1) {
            bail!("output weight {i} is {} (beyond +-{MAX_L1})", l1w[i]);
        }
        Ok(Network {
            hidden,
            l0w,
            l0b,
            l1w,
            l1b,
        })
    }

    /// Reads a net in the module's layout.
    pub fn from_bytes(bytes: &[u8]) -> Result<Network> {
        let size = bytes.len();
        let hidden = (1..=MAX_HIDDEN)
            .find(|&n| file_bytes(n) >= size)
            .filter(|&n| file_bytes(n) == size);
        let Some(n) = hidden else {
            bail!(
                "{size} bytes is the size of no net of this layout ((768 -> N) x 2 -> 1, i16, \
                 padded to 64 bytes: {} bytes for N = 32, {} for N = 64): cut short, or another \
                 kind of file",
                file_bytes(32),
                file_bytes(64)
            );
        };
        let mut words = bytes
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]));
        let mut take = |k: usize| -> Vec<i16> { words.by_ref().take(k).collect() };
        let l0w = take(INPUTS * n);
        let l0b = take(n);
        let l1w = take(2 * n);
        let l1b = take(1).first().copied().unwrap_or(0);
        let used = 2 * (INPUTS * n + 3 * n + 1);
        if bytes[used..].iter().any(|&b| b != 0) {
            bail!("the padding after the net is not zero: not a net of this layout");
        }
        Network::new(n, l0w, l0b, l1w, l1b).context("not a net of this layout")
    }

    /// Reads a net file ([`Network::from_bytes`]).
    pub fn load(path: &Path) -> Result<Network> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        Network::from_bytes(&bytes).with_context(|| format!("{}", path.display()))
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(file_bytes(self.hidden));
        for w in self.l0w.iter().chain(&self.l0b).chain(&self.l1w) {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&self.l1b.to_le_bytes());
        out.resize(file_bytes(self.hidden), 0);
        out
    }

    pub fn hidden(&self) -> usize {
        self.hidden
    }

    #[inline]
    fn row(&self, f: u16) -> &[i16] {
        let i = usize::from(f) * self.hidden;
        &self.l0w[i..i + self.hidden]
    }

    /// The accumulators of `pos` from scratch: White's perspective, then Black's.
    pub fn refresh(&self, pos: &Chess, out: &mut [i16]) {
        let n = self.hidden;
        let (white, black) = out[..2 * n].split_at_mut(n);
        white.copy_from_slice(&self.l0b);
        black.copy_from_slice(&self.l0b);
        for (sq, piece) in pos.board().clone() {
            add(
                white,
                self.row(feature(Color::White, piece.color, piece.role, sq)),
            );
            add(
                black,
                self.row(feature(Color::Black, piece.color, piece.role, sq)),
            );
        }
    }

    /// The evaluation from accumulators (White's then Black's) for `stm` to move.
    pub fn evaluate(&self, acc: &[i16], stm: Color) -> i32 {
        let n = self.hidden;
        let (white, black) = acc[..2 * n].split_at(n);
        let (us, them) = match stm {
            Color::White => (white, black),
            Color::Black => (black, white),
        };
        let sum = screlu_dot(us, &self.l1w[..n]) + screlu_dot(them, &self.l1w[n..]);
        let v = (sum / i64::from(QA)) as i32 + i32::from(self.l1b);
        (v * SCALE / (QA * QB)).clamp(-MAX_EVAL, MAX_EVAL)
    }

    /// The evaluation of `pos` from scratch, side to move's view.
    pub fn evaluate_position(&self, pos: &Chess) -> i32 {
        let mut acc = vec![0i16; 2 * self.hidden];
        self.refresh(pos, &mut acc);
        self.evaluate(&acc, pos.turn())
    }
}

#[inline]
fn add(acc: &mut [i16], w: &[i16]) {
    for (a, &d) in acc.iter_mut().zip(w) {
        *a = a.wrapping_add(d);
    }
}

/// `sum screlu(x) w`: i32 lanes over chunks of 64 (each term is at most
/// 255 x 255 x 127, so a chunk cannot overflow), added up in i64.
#[inline]
fn screlu_dot(x: &[i16], w: &[i16]) -> i64 {
    let mut total = 0i64;
    for (xs, ws) in x.chunks(64).zip(w.chunks(64)) {
        let mut s = 0i32;
        for (&a, &b) in xs.iter().zip(ws) {
            let v = i32::from(a).clamp(0, QA);
            s += v * v * i32::from(b);
        }
        total += i64::from(s);
    }
    total
}

/// The pieces a move takes off and puts on: (colour, role, square).
type Change = (Color, Role, Square);

/// What `m` changes on `pos`'s board: at most two pieces removed and two added.
fn changes(pos: &Chess, m: Move) -> ([Option<Change>; 2], [Option<Change>; 2]) {
    let us = pos.turn();
    match m {
        Move::Normal {
            role,
            from,
            capture,
            to,
            promotion,
        } => (
            [Some((us, role, from)), capture.map(|c| (!us, c, to))],
            [Some((us, promotion.unwrap_or(role), to)), None],
        ),
        Move::EnPassant { from, to } => (
            [
                Some((us, Role::Pawn, from)),
                Some((!us, Role::Pawn, Square::from_coords(to.file(), from.rank()))),
            ],
            [Some((us, Role::Pawn, to)), None],
        ),
        Move::Castle { king, rook } => {
            let side = if rook.file() > king.file() {
                shakmaty::CastlingSide::KingSide
            } else {
                shakmaty::CastlingSide::QueenSide
            };
            (
                [Some((us, Role::King, king)), Some((us, Role::Rook, rook))],
                [
                    Some((us, Role::King, side.king_to(us))),
                    Some((us, Role::Rook, side.rook_to(us))),
                ],
            )
        }
        Move::Put { role, to } => ([None, None], [Some((us, role, to)), None]),
    }
}

/// The accumulators of the positions along a search, one slot a ply:
/// slot `p + 1` is made from slot `p` and the move between them.
#[derive(Clone, Debug)]
pub struct Accumulators {
    hidden: usize,
    data: Vec<i16>,
}

impl Accumulators {
    pub fn new(net: &Network, plies: usize) -> Accumulators {
        Accumulators {
            hidden: net.hidden,
            data: vec![0; 2 * net.hidden * plies],
        }
    }

    fn slot(&self, ply: usize) -> &[i16] {
        let w = 2 * self.hidden;
        &self.data[ply * w..(ply + 1) * w]
    }

    /// Slot `ply` from scratch.
    pub fn refresh(&mut self, net: &Network, ply: usize, pos: &Chess) {
        let w = 2 * self.hidden;
        net.refresh(pos, &mut self.data[ply * w..(ply + 1) * w]);
    }

    /// Slot `ply + 1` for the position after `m` on `pos` (slot `ply`).
    pub fn play(&mut self, net: &Network, ply: usize, pos: &Chess, m: Move) {
        let n = self.hidden;
        let (before, after) = self.data[ply * 2 * n..(ply + 2) * 2 * n].split_at_mut(2 * n);
        after.copy_from_slice(before);
        let (off, on) = changes(pos, m);
        for (p, half) in [Color::White, Color::Black]
            .into_iter()
            .zip(after.chunks_mut(n))
        {
            for &(c, r, s) in on.iter().flatten() {
                add(half, net.row(feature(p, c, r, s)));
            }
            for &(c, r, s) in off.iter().flatten() {
                let w = net.row(feature(p, c, r, s));
                for (a, &d) in half.iter_mut().zip(w) {
                    *a = a.wrapping_sub(d);
                }
            }
        }
    }

    /// Slot `ply + 1` as slot `ply` (a null move changes no piece).
    pub fn pass(&mut self, ply: usize) {
        let w = 2 * self.hidden;
        self.data.copy_within(ply * w..(ply + 1) * w, (ply + 1) * w);
    }

    /// The evaluation of slot `ply`, `stm` to move.
    pub fn evaluate(&self, net: &Network, ply: usize, stm: Color) -> i32 {
        net.evaluate(self.slot(ply), stm)
    }

    /// Slot `ply`'s values (White's perspective, then Black's).
    pub fn values(&self, ply: usize) -> &[i16] {
        self.slot(ply)
    }
}

#[cfg(test)]
/// A net of random weights within the bounds.
pub(crate) fn random_net(hidden: usize, seed: u64) -> Network {
    let mut x = seed;
    let mut next = |max: i16| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((x >> 33) % (2 * max as u64 + 1)) as i16 - max
    };
    let l0w = (0..INPUTS * hidden).map(|_| next(MAX_L0)).collect();
    let l0b = (0..hidden).map(|_| next(MAX_L0)).collect();
    let l1w = (0..2 * hidden).map(|_| next(MAX_L1)).collect();
    Network::new(hidden, l0w, l0b, l1w, next(1000)).expect("in bounds")
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{fen::Fen, CastlingMode};

    fn chess(fen: &str) -> Chess {
        fen.parse::<Fen>()
            .expect("fen")
            .into_position(CastlingMode::Standard)
            .expect("legal")
    }

    #[test]
    fn incremental_accumulators_equal_a_full_refresh() {
        let net = random_net(32, 7);
        // Castling both ways, en passant, promotions with and without capture.
        let starts = [
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
            "r3k2r/1P4P1/8/3pP3/8/8/1p4p1/R3K2R w KQkq d6 0 1",
            "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1",
        ];
        let (mut castles, mut eps, mut promotions) = (0, 0, 0);
        let mut x = 0x9e37_79b9_u64;
        for fen in starts {
            for _walk in 0..20 {
                let mut pos = chess(fen);
                let mut accs = Accumulators::new(&net, 101);
                accs.refresh(&net, 0, &pos);
                for ply in 0..100 {
                    let moves = pos.legal_moves();
                    if moves.is_empty() {
                        break;
                    }
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let m = moves[(x % moves.len() as u64) as usize];
                    castles += usize::from(m.is_castle());
                    eps += usize::from(m.is_en_passant());
                    promotions += usize::from(m.is_promotion());
                    accs.play(&net, ply, &pos, m);
                    pos.play_unchecked(m);
                    let mut full = vec![0i16; 2 * net.hidden()];
                    net.refresh(&pos, &mut full);
                    assert_eq!(
                        accs.values(ply + 1),
                        &full[..],
                        "after {m:?} at ply {ply} of {fen}"
                    );
                    assert_eq!(
                        accs.evaluate(&net, ply + 1, pos.turn()),
                        net.evaluate_position(&pos)
                    );
                }
            }
        }
        assert!(
            castles > 0 && eps > 0 && promotions > 0,
            "{castles} {eps} {promotions}"
        );
    }

    #[test]
    fn a_file_reads_back_and_bad_files_are_refused() {
        let net = random_net(16, 3);
        let bytes = net.to_bytes();
        assert_eq!(bytes.len(), file_bytes(16));
        assert_eq!(bytes.len() % 64, 0);
        assert_eq!(Network::from_bytes(&bytes).expect("reads"), net);
        // Cut short, longer, empty.
        assert!(Network::from_bytes(&bytes[..bytes.len() - 64]).is_err());
        assert!(Network::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        assert!(Network::from_bytes(&[]).is_err());
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0; 64]);
        assert!(Network::from_bytes(&longer).is_err());
        // A weight beyond the clipping (a file of another layout, or garbage).
        let mut bad = bytes.clone();
        bad[0..2].copy_from_slice(&600i16.to_le_bytes());
        let e = Network::from_bytes(&bad).expect_err("out of range");
        assert!(format!("{e:#}").contains("beyond"), "{e:#}");
        // Text of the right size.
        let text: Vec<u8> = b"not a net "
            .iter()
            .copied()
            .cycle()
            .take(bytes.len())
            .collect();
        assert!(Network::from_bytes(&text).is_err());
    }

    #[test]
    fn the_evaluation_is_the_documented_formula() {
        // One neuron: the formula by hand.
        let mut l0w = vec![0i16; INPUTS];
        // A white pawn on e2 from White's view (input 12) adds 100 to the neuron.
        l0w[12] = 100;
        let net = Network::new(1, l0w, vec![50], vec![64, -32], 1000).expect("net");
        let pos = chess("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1");
        // White: 50 + 100 = 150; Black's view: 50 (the pawn is input 384 + 52 there).
        let v = (150 * 150 * 64 + 50 * 50 * -32) / 255 + 1000;
        assert_eq!(net.evaluate_position(&pos), v * 400 / (255 * 64));
        assert_eq!(
            feature(Color::Black, Color::White, Role::Pawn, Square::E2),
            384 + 52
        );
        assert_eq!(
            feature(Color::White, Color::Black, Role::King, Square::E8),
            384 + 320 + 60
        );
    }
}
