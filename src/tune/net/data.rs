//! Training positions for the net, in bullet's `ChessBoard` layout
//! (the `bulletformat` crate, which bullet's `DirectSequentialDataLoader`
//! reads): 32 bytes a position, nothing before, between or after them.
//!
//! | bytes | field | meaning |
//! | --- | --- | --- |
//! | 0..8 | `occ` u64 LE | occupied squares, **from the side to move's view**: bit `s` is square `s` (a1 = 0, h8 = 63) of the board as White sees it when White is to move, and of the board flipped vertically (`s ^ 56`) when Black is |
//! | 8..24 | `pcs` [u8; 16] | one 4-bit nibble per set bit of `occ`, in ascending square order, the first piece in the low nibble of byte 8; nibble = `colour << 3 \| type`, colour 0 for the side to move's pieces and 1 for the other side's, type 0..5 = pawn, knight, bishop, rook, queen, king; nibbles past the last piece are 0 |
//! | 24..26 | `score` i16 LE | the search's score in centipawns from the side to move's view |
//! | 26 | `result` u8 | the game's result for the side to move: 0 loss, 1 draw, 2 win |
//! | 27 | `ksq` u8 | the side to move's king square (in `occ`'s coordinates) |
//! | 28 | `opp_ksq` u8 | the other king's square from **its own** side's view (`occ`'s square `^ 56`) |
//! | 29..32 | `extra` [u8; 3] | 0 (written as 0, ignored when read) |
//!
//! Castling rights, en passant and the move counters are not stored: the
//! net does not see them. The file is unshuffled (positions in game
//! order); bullet's users shuffle with `bullet-utils shuffle`, our
//! trainer shuffles in memory.
//!
//! The positions come from the core's own self-play games (`selfplay`'s
//! PGN keeps the search's score of every engine move as a cutechess
//! comment): [`extract`] replays each game and keeps the positions before
//! the engine's moves that pass the [`Filter`]; games whose Round is a
//! multiple of `valid_every` go to the validation file instead, so a game
//! is never split between the two.

use std::{
    io::{BufWriter, Read, Write},
    path::{Path, PathBuf},
};

use anyhow::{bail, Context, Result};
use shakmaty::{fen::Fen, CastlingMode, Chess, Color, Move, Position, Role, Square};

use crate::book::pgn::input::{open_input, GameStream, RawGame};
use crate::engine::{net::feature, search::MATE_BOUND};
use crate::play::game::Eval;

/// Bytes of one position.
pub const RECORD_BYTES: usize = 32;

/// One training position (see the module's table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub occ: u64,
    pub pcs: [u8; 16],
    pub score: i16,
    pub result: u8,
    pub ksq: u8,
    pub opp_ksq: u8,
    pub extra: [u8; 3],
}

/// A piece of a record: (nibble, square), both from the side to move's view.
pub type Piece = (u8, u8);

impl Record {
    /// The record of `pos` with the search's `score` (centipawns, side to
    /// move's view) and the game's `result` for the side to move (0, 1, 2).
    pub fn from_position(pos: &Chess, score: i16, result: u8) -> Record {
        let turn = pos.turn();
        let board = pos.board();
        let mut r = Record {
            score,
            result,
            ..Record::default()
        };
        let mut n = 0;
        for rel in 0..64u32 {
            let abs = if turn == Color::White { rel } else { rel ^ 56 };
            let Some(piece) = board.piece_at(Square::new(abs)) else {
                continue;
            };
            let colour = u8::from(piece.color != turn);
            let nibble = colour << 3 | (piece.role as u8 - 1);
            r.occ |= 1 << rel;
            r.pcs[n / 2] |= nibble << (4 * (n & 1));
            n += 1;
            if piece.role == Role::King {
                if colour == 0 {
                    r.ksq = rel as u8;
                } else {
                    r.opp_ksq = rel as u8 ^ 56;
                }
            }
        }
        r
    }

    pub fn to_bytes(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        b[0..8].copy_from_slice(&self.occ.to_le_bytes());
        b[8..24].copy_from_slice(&self.pcs);
        b[24..26].copy_from_slice(&self.score.to_le_bytes());
        b[26] = self.result;
        b[27] = self.ksq;
        b[28] = self.opp_ksq;
        b[29..32].copy_from_slice(&self.extra);
        b
    }

    /// Reads and checks a record: at most 32 pieces, valid nibbles and
    /// nothing after the last piece, one king a side at the squares
    /// `ksq` and `opp_ksq` say, a result 0..=2. Anything else is not data.
    pub fn from_bytes(b: &[u8; RECORD_BYTES]) -> Result<Record, String> {
        let mut pcs = [0u8; 16];
        pcs.copy_from_slice(&b[8..24]);
        let r = Record {
            occ: u64::from_le_bytes(b[0..8].try_into().unwrap_or_default()),
            pcs,
            score: i16::from_le_bytes([b[24], b[25]]),
            result: b[26],
            ksq: b[27],
            opp_ksq: b[28],
            extra: [0; 3],
        };
        let n = r.occ.count_ones() as usize;
        if n > 32 {
            return Err(format!("{n} pieces"));
        }
        if r.result > 2 {
            return Err(format!("result {}", r.result));
        }
        if (n..32).any(|i| r.nibble(i) != 0) {
            return Err("pieces beyond the occupied squares".into());
        }
        let (mut ours, mut theirs) = (0, 0);
        for (nibble, sq) in r.pieces() {
            if nibble & 7 > 5 {
                return Err(format!("piece nibble {nibble}"));
            }
            match nibble {
                5 if sq == r.ksq => ours += 1,
                13 if sq ^ 56 == r.opp_ksq => theirs += 1,
                5 | 13 => return Err("a king away from its king square".into()),
                _ => {}
            }
        }
        if ours != 1 || theirs != 1 {
            return Err(format!("{ours} and {theirs} kings"));
        }
        Ok(r)
    }

    fn nibble(&self, i: usize) -> u8 {
        (self.pcs[i / 2] >> (4 * (i & 1))) & 15
    }

    /// The pieces in ascending square order.
    pub fn pieces(&self) -> impl Iterator<Item = Piece> + '_ {
        let mut occ = self.occ;
        let mut i = 0;
        std::iter::from_fn(move || {
            if occ == 0 {
                return None;
            }
            let sq = occ.trailing_zeros() as u8;
            occ &= occ - 1;
            i += 1;
            Some((self.nibble(i - 1), sq))
        })
    }

    /// The net's inputs: for each piece its feature from the side to
    /// move's perspective and from the other side's ([`feature`] with the
    /// side to move as White), as bullet's `Chess768` maps them.
    pub fn features(&self) -> impl Iterator<Item = (u16, u16)> + '_ {
        self.pieces().map(|(nibble, sq)| {
            let ours = nibble & 8 == 0;
            let role = Role::ALL[usize::from(nibble & 7)];
            let colour = if ours { Color::White } else { Color::Black };
            let sq = Square::new(u32::from(sq));
            (
                feature(Color::White, colour, role, sq),
                feature(Color::Black, colour, role, sq),
            )
        })
    }

    /// The same position mirrored left to right (files a <-> h): the same
    /// score and result, which holds but for castling rights (not in the
    /// record). `train --mirror` adds these.
    pub fn mirrored(&self) -> Record {
        let mut pieces: Vec<Piece> = self.pieces().map(|(n, sq)| (n, sq ^ 7)).collect();
        pieces.sort_unstable_by_key(|p| p.1);
        let mut r = Record {
            score: self.score,
            result: self.result,
            ksq: self.ksq ^ 7,
            opp_ksq: self.opp_ksq ^ 7,
            ..Record::default()
        };
        for (i, (nibble, sq)) in pieces.into_iter().enumerate() {
            r.occ |= 1 << sq;
            r.pcs[i / 2] |= nibble << (4 * (i & 1));
        }
        r
    }

    /// The board as the side to move sees it (its pieces White, its
    /// pawns going up), as the piece-placement field of a FEN.
    pub fn board_fen(&self) -> String {
        let mut cells = [None; 64];
        for (nibble, sq) in self.pieces() {
            cells[usize::from(sq)] = Some(nibble);
        }
        let mut out = String::new();
        for rank in (0..8).rev() {
            let mut empty = 0;
            for file in 0..8 {
                match cells[rank * 8 + file] {
                    None => empty += 1,
                    Some(nibble) => {
                        if empty > 0 {
                            out.push(char::from(b'0' + empty));
                            empty = 0;
                        }
                        let c = b"PNBRQK"[usize::from(nibble & 7)] as char;
                        out.push(if nibble & 8 == 0 {
                            c
                        } else {
                            c.to_ascii_lowercase()
                        });
                    }
                }
            }
            if empty > 0 {
                out.push(char::from(b'0' + empty));
            }
            if rank > 0 {
                out.push('/');
            }
        }
        out
    }
}

/// Writes records to `out`.
pub fn write_records(out: &mut impl Write, records: &[Record]) -> std::io::Result<()> {
    for r in records {
        out.write_all(&r.to_bytes())?;
    }
    Ok(())
}

/// Reads a whole data file, checking every record: a file whose size is
/// not a multiple of 32 bytes (cut short) or with a record that is not a
/// position ([`Record::from_bytes`]) is refused, nothing returned.
pub fn read_file(path: &Path) -> Result<Vec<Record>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {}", path.display()))?;
    parse(&bytes).with_context(|| format!("{}", path.display()))
}

/// Reads records from bytes (see [`read_file`]).
pub fn parse(bytes: &[u8]) -> Result<Vec<Record>> {
    if !bytes.len().is_multiple_of(RECORD_BYTES) {
        bail!(
            "{} bytes is not a whole number of {RECORD_BYTES}-byte positions: the file is cut \
             short or not training data (bullet's ChessBoard layout)",
            bytes.len()
        );
    }
    bytes
        .chunks_exact(RECORD_BYTES)
        .enumerate()
        .map(|(i, c)| {
            let c: &[u8; RECORD_BYTES] = c.try_into().unwrap_or(&[0; RECORD_BYTES]);
            Record::from_bytes(c).map_err(|e| {
                anyhow::anyhow!(
                    "position {} (byte {}) is not a position in bullet's ChessBoard layout: {e}",
                    i + 1,
                    i * RECORD_BYTES
                )
            })
        })
        .collect()
}

/// Which positions of a game are kept.
#[derive(Clone, Debug)]
pub struct Filter {
    /// Skip positions before this ply of the game (counted from the
    /// initial position through the FEN's move number).
    pub min_ply: u32,
    /// Skip positions whose score is this far from 0 or further (mates
    /// are always skipped).
    pub max_score: i32,
    /// Keep positions with the side to move in check.
    pub keep_check: bool,
    /// Keep positions whose move played (the search's best) is a capture
    /// or a promotion.
    pub keep_noisy: bool,
    /// Games whose Round is a multiple of this are validation games (0: none).
    pub valid_every: u64,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            min_ply: 16,
            max_score: 3000,
            keep_check: false,
            keep_noisy: false,
            valid_every: 20,
        }
    }
}

/// What [`extract`] kept and skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub games: u64,
    pub valid_games: u64,
    /// Games skipped: no result, unreadable moves or start.
    pub bad_games: u64,
    /// Positions with a search score.
    pub scored: u64,
    pub train: u64,
    pub valid: u64,
    pub early: u64,
    pub check: u64,
    pub noisy: u64,
    pub mate: u64,
    pub large: u64,
}

impl Counts {
    pub fn report(&self) -> String {
        format!(
            "{} games ({} validation, {} skipped), {} scored positions: {} training, {} \
             validation; skipped {} early, {} in check, {} capture/promotion played, {} mate \
             scores, {} beyond --max-score",
            self.games,
            self.valid_games,
            self.bad_games,
            self.scored,
            self.train,
            self.valid,
            self.early,
            self.check,
            self.noisy,
            self.mate,
            self.large
        )
    }
}

/// The Round tag of a game, if any.
fn round(raw: &RawGame) -> Option<u64> {
    raw.identity
        .iter()
        .find_map(|t| t.strip_prefix("Round=")?.trim().parse().ok())
}

/// The kept positions of one game; `None` for a game without a result or
/// whose start or moves do not read.
pub fn game_records(raw: &RawGame, filter: &Filter, counts: &mut Counts) -> Option<Vec<Record>> {
    let white_result: u8 = match raw.result_tag.as_deref() {
        Some("1-0") => 2,
        Some("0-1") => 0,
        Some("1/2-1/2") => 1,
        _ => return None,
    };
    let mut pos: Chess = match &raw.fen {
        None => Chess::default(),
        Some(f) => f
            .parse::<Fen>()
            .ok()?
            .into_position(CastlingMode::Standard)
            .ok()?,
    };
    let mut moves: Vec<Move> = Vec::with_capacity(raw.sans.len());
    let mut evals: Vec<Option<i32>> = vec![None; raw.sans.len()];
    for (before, text) in &raw.comments {
        // A comment after move k (k moves before it) is move k's.
        if let (Some(i), Some(e)) = (before.checked_sub(1), Eval::parse(text)) {
            if let Some(slot) = evals.get_mut(i) {
                *slot = Some(e.score_cp);
            }
        }
    }
    let mut out = Vec::new();
    for (i, san) in raw.sans.iter().enumerate() {
        let m = san.san.to_move(&pos).ok()?;
        if let Some(score) = evals[i] {
            counts.scored += 1;
            let ply = 2 * (pos.fullmoves().get() - 1) + u32::from(pos.turn() == Color::Black);
            if ply < filter.min_ply {
                counts.early += 1;
            } else if score.abs() >= MATE_BOUND {
                counts.mate += 1;
            } else if score.abs() >= filter.max_score {
                counts.large += 1;
            } else if !filter.keep_check && pos.is_check() {
                counts.check += 1;
            } else if !filter.keep_noisy && (m.is_capture() || m.is_promotion()) {
                counts.noisy += 1;
            } else {
                let result = if pos.turn() == Color::White {
                    white_result
                } else {
                    2 - white_result
                };
                let score = score.clamp(i16::MIN as i32, i16::MAX as i32) as i16;
                out.push(Record::from_position(&pos, score, result));
            }
        }
        moves.push(m);
        pos.play_unchecked(m);
    }
    Some(out)
}

/// Where [`extract`] writes: the training file and the validation file.
pub struct Outputs {
    pub train: PathBuf,
    pub valid: Option<PathBuf>,
}

/// The validation file beside a training file: `x.bin` -> `x.valid.bin`.
pub fn valid_path(train: &Path) -> PathBuf {
    let stem = train
        .file_stem()
        .map_or_else(|| "data".into(), |s| s.to_string_lossy().into_owned());
    train.with_file_name(format!("{stem}.valid.bin"))
}

/// The positions of the games of `pgns` (in order) as two data files,
/// each replaced whole once every game is read (a failure leaves the old
/// files).
pub fn extract(pgns: &[PathBuf], filter: &Filter, out: &Outputs) -> Result<Counts> {
    use learnbook_base::atomic_file::Pending;
    let create = |p: &Path| -> Result<(Pending, BufWriter<std::fs::File>)> {
        let pending = Pending::new(p, ".tmp");
        let f = std::fs::File::create(pending.path())
            .with_context(|| format!("cannot create {}", pending.path().display()))?;
        Ok((pending, BufWriter::new(f)))
    };
    let (train_pending, mut train) = create(&out.train)?;
    let mut valid = match &out.valid {
        Some(p) => Some(create(p)?),
        None => None,
    };
    let mut counts = Counts::default();
    for path in pgns {
        let stream = GameStream::with_comments(open_input(path)?);
        for raw in stream {
            let raw = raw.map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let Some(records) = game_records(&raw, filter, &mut counts) else {
                counts.bad_games += 1;
                continue;
            };
            counts.games += 1;
            let is_valid = filter.valid_every > 0
                && valid.is_some()
                && round(&raw)
                    .unwrap_or(raw.number)
                    .is_multiple_of(filter.valid_every);
            let (w, n) = if is_valid {
                counts.valid_games += 1;
                let Some((_, w)) = valid.as_mut() else {
                    unreachable!("checked above")
                };
                (w, &mut counts.valid)
            } else {
                (&mut train, &mut counts.train)
            };
            *n += records.len() as u64;
            write_records(w, &records).with_context(|| "cannot write the data".to_string())?;
        }
    }
    let finish = |pending: Pending, mut w: BufWriter<std::fs::File>| -> Result<()> {
        w.flush()
            .and_then(|_| w.get_ref().sync_all())
            .with_context(|| format!("cannot write {}", pending.path().display()))?;
        drop(w);
        pending.commit()
    };
    finish(train_pending, train)?;
    if let Some((p, w)) = valid {
        finish(p, w)?;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chess(fen: &str) -> Chess {
        fen.parse::<Fen>()
            .expect("fen")
            .into_position(CastlingMode::Standard)
            .expect("legal")
    }

    /// The bytes of a record written by hand from the layout's table: a
    /// field in another place or order fails.
    #[test]
    fn the_layout_is_bullets_chessboard() {
        // White to move: Ke1, Pe2 (ours), ke8 (theirs).
        let pos = chess("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1");
        let r = Record::from_position(&pos, -123, 2);
        let b = r.to_bytes();
        let occ: u64 = (1 << 4) | (1 << 12) | (1 << 60);
        assert_eq!(&b[0..8], &occ.to_le_bytes());
        // e1 king (5) low nibble, e2 pawn (0) high; e8 their king (8|5) in byte 9.
        assert_eq!(&b[8..11], &[0x05, 0x0d, 0]);
        assert_eq!(&b[24..26], &(-123i16).to_le_bytes());
        assert_eq!(b[26], 2);
        assert_eq!(b[27], 4, "our king on e1");
        assert_eq!(b[28], 60 ^ 56, "their king e8 seen from their side: e1");
        assert_eq!(&b[29..32], &[0, 0, 0]);
        // Black to move: the board is flipped and the colours swapped.
        let pos = chess("4k3/4p3/8/8/8/8/8/4K3 b - - 0 1");
        let black = Record::from_position(&pos, -123, 2);
        assert_eq!(black, r, "the same position for the side to move");
        assert_eq!(Record::from_bytes(&b), Ok(r));
    }

    #[test]
    fn not_data_is_refused() {
        let pos = chess("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
        let good = Record::from_position(&pos, 10, 1).to_bytes();
        assert!(parse(&good).is_ok());
        assert!(parse(&good[..31]).is_err(), "cut short");
        let mut bad = good;
        bad[26] = 3;
        assert!(parse(&bad).is_err(), "result");
        let mut bad = good;
        bad[27] = 5;
        assert!(parse(&bad).is_err(), "king square");
        let text = b"this is a text file, not a data file of positions!";
        assert!(parse(&text[..32]).is_err());
        assert!(parse(&[0u8; 64]).is_err(), "no kings");
    }

    #[test]
    fn a_mirrored_record_is_the_mirrored_position() {
        let pos = chess("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R b KQkq - 0 1");
        let mirror = chess("r2k3r/1bpqpp1p/1pnp2nb/3NP3/3P2p1/p1Q2N2/PPPBBPPP/R2K3R b - - 0 1");
        let r = Record::from_position(&pos, 55, 2);
        assert_eq!(r.mirrored(), Record::from_position(&mirror, 55, 2));
        assert_eq!(r.mirrored().mirrored(), r);
        assert!(Record::from_bytes(&r.mirrored().to_bytes()).is_ok());
    }

    #[test]
    fn features_are_chess768() {
        let pos = chess("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1");
        let r = Record::from_position(&pos, 0, 1);
        let f: Vec<(u16, u16)> = r.features().collect();
        // bullet: stm = [0,384][c] + 64 * piece + sq; ntm = [384,0][c] + 64 * piece + (sq ^ 56).
        assert_eq!(
            f,
            vec![
                (5 * 64 + 4, 384 + 5 * 64 + 60),
                (12, 384 + 52),
                (384 + 5 * 64 + 60, 5 * 64 + 4)
            ]
        );
    }
}
