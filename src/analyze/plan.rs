//! A pass's targets held within the book's memory budget (`--memory`):
//! each target is written to a temporary file as the walk finds it, its
//! priority and place go to a [`PairSorter`] (sorted in memory up to its
//! share, in runs on disk past it), and the targets are read back highest
//! priority first, equal priorities in the order found: the order
//! [`super::targets::find_within`] sorts them into, without holding them.

use std::{
    fs::File,
    io::{BufWriter, Write},
    num::NonZeroU32,
    os::unix::fs::FileExt,
    path::Path,
    sync::atomic::{AtomicUsize, Ordering},
};

use anyhow::{anyhow, bail, Context, Result};
use shakmaty::{
    Bitboard, Board, ByColor, ByRole, CastlingMode, Chess, Color, EnPassantMode, FromSetup,
    Position, Setup, Square,
};

use super::targets::{group_leaves, walk_from_start, Target};
use crate::atomic_file::Pending;
use crate::book::{
    db::Analysis,
    keys::{Key, KeyMap, MoveCode},
    sort::PairSorter,
    Book,
};

/// The share of the memory budget the sorter of priorities holds (16 bytes
/// a target): the walk's set of the positions seen (about 20 bytes each)
/// takes most of the rest.
const SORT_SHARE: u64 = 16;

/// A record's length shares its sort record with its place in the file.
const LENGTH_BITS: u32 = 24;

/// Plans made in this process: each has its own files.
static PLANS: AtomicUsize = AtomicUsize::new(0);

/// Targets being written, then read back in priority order.
pub struct Plan {
    bodies: BufWriter<File>,
    /// Removes the file when the plan is dropped.
    file: Pending,
    written: u64,
    order: PairSorter,
    /// Targets written (leaves grouped into a target not counted).
    pub targets: usize,
    /// Positions to search: targets and their grouped leaves.
    pub positions: usize,
    /// Targets already answered (not written).
    pub done: usize,
}

impl Plan {
    /// An empty plan whose files go to `dir`, holding at most about
    /// `memory` / [`SORT_SHARE`] bytes of sort records.
    pub fn new(dir: &Path, memory: u64) -> Result<Plan> {
        let n = PLANS.fetch_add(1, Ordering::Relaxed);
        let name = format!("learnbook-{}-plan-{n}", std::process::id());
        let file = Pending::temporary(&dir.join(format!("{name}.targets")));
        let out = File::options()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(file.path())
            .with_context(|| format!("cannot create {}", file.path().display()))?;
        Ok(Plan {
            bodies: BufWriter::with_capacity(1 << 20, out),
            file,
            written: 0,
            order: PairSorter::new(memory / SORT_SHARE, dir, &format!("{name}.order")),
            targets: 0,
            positions: 0,
            done: 0,
        })
    }

    /// Adds `t` after the targets added before it.
    pub fn push(&mut self, t: &Target) -> Result<()> {
        let mut bytes = Vec::with_capacity(128);
        encode(t, &mut bytes);
        if bytes.len() as u64 >= 1 << LENGTH_BITS || self.written >= 1 << (63 - LENGTH_BITS) {
            bail!("a target too large for the plan's file");
        }
        self.bodies
            .write_all(&bytes)
            .with_context(|| format!("cannot write to {}", self.file.path().display()))?;
        let place = (self.written << LENGTH_BITS) | bytes.len() as u64;
        self.written += bytes.len() as u64;
        self.order.push((highest_first(t.priority), place as i64))?;
        self.targets += 1;
        self.positions += 1 + t.leaves.len();
        Ok(())
    }

    /// Hands every target to `f`, highest priority first (equal priorities
    /// in the order pushed), until `f` returns false.
    pub fn drain(mut self, mut f: impl FnMut(Target) -> Result<bool>) -> Result<()> {
        self.bodies
            .flush()
            .with_context(|| format!("cannot write to {}", self.file.path().display()))?;
        let (bodies, file) = (&self.bodies, &self.file);
        let mut bytes = Vec::new();
        let mut stopped = false;
        let result = self.order.drain(|batch| {
            for &(_, place) in batch {
                let place = place as u64;
                let (at, len) = (place >> LENGTH_BITS, place & ((1 << LENGTH_BITS) - 1));
                bytes.resize(len as usize, 0);
                bodies
                    .get_ref()
                    .read_exact_at(&mut bytes, at)
                    .with_context(|| format!("cannot read {}", file.path().display()))?;
                let mut r = Reader(&bytes);
                if !f(decode(&mut r)?)? {
                    stopped = true;
                    return Err(anyhow!("stopped"));
                }
            }
            Ok(())
        });
        match result {
            Err(_) if stopped => Ok(()),
            r => r,
        }
    }
}

/// A sort record's first half: ascending order of it is descending
/// [`f64::total_cmp`] order of `priority`.
fn highest_first(priority: f64) -> i64 {
    let bits = priority.to_bits() as i64;
    // As f64::total_cmp compares: the negatives' magnitudes reversed.
    !(bits ^ (((bits >> 63) as u64) >> 1) as i64)
}

fn encode(t: &Target, out: &mut Vec<u8>) {
    out.extend_from_slice(&t.key.0.to_le_bytes());
    out.push(u8::from(t.interior));
    out.extend_from_slice(&t.priority.to_bits().to_le_bytes());
    encode_position(&t.pos, out);
    out.extend_from_slice(&(t.book_moves.len() as u32).to_le_bytes());
    for m in &t.book_moves {
        out.extend_from_slice(&m.0.to_le_bytes());
    }
    match t.via {
        Some((parent, mv)) => {
            out.push(1);
            out.extend_from_slice(&parent.0.to_le_bytes());
            out.extend_from_slice(&mv.0.to_le_bytes());
        }
        None => out.push(0),
    }
    out.extend_from_slice(&(t.leaves.len() as u32).to_le_bytes());
    for leaf in &t.leaves {
        encode(leaf, out);
    }
}

fn decode(r: &mut Reader<'_>) -> Result<Target> {
    let key = Key(r.u64()?);
    let interior = r.u8()? != 0;
    let priority = f64::from_bits(r.u64()?);
    let pos = decode_position(r)?;
    let book_moves = (0..r.u32()?)
        .map(|_| r.u16().map(MoveCode))
        .collect::<Result<_>>()?;
    let via = match r.u8()? {
        0 => None,
        _ => Some((Key(r.u64()?), MoveCode(r.u16()?))),
    };
    let leaves = (0..r.u32()?).map(|_| decode(r)).collect::<Result<_>>()?;
    Ok(Target {
        key,
        pos,
        interior,
        book_moves,
        priority,
        via,
        leaves,
    })
}

/// The whole position, en passant square as it is (not only when legal):
/// the searches see the very board the walk made.
fn encode_position(pos: &Chess, out: &mut Vec<u8>) {
    let setup = pos.to_setup(EnPassantMode::Always);
    let (by_role, by_color) = setup.board.into_bitboards();
    for bb in [
        by_role.pawn,
        by_role.knight,
        by_role.bishop,
        by_role.rook,
        by_role.queen,
        by_role.king,
        by_color.white,
        by_color.black,
        setup.castling_rights,
    ] {
        out.extend_from_slice(&bb.0.to_le_bytes());
    }
    out.push(u8::from(setup.turn.is_white()));
    out.push(setup.ep_square.map_or(u8::MAX, |s| u32::from(s) as u8));
    out.extend_from_slice(&setup.halfmoves.to_le_bytes());
    out.extend_from_slice(&setup.fullmoves.get().to_le_bytes());
}

fn decode_position(r: &mut Reader<'_>) -> Result<Chess> {
    let mut bb = [Bitboard::EMPTY; 9];
    for b in &mut bb {
        *b = Bitboard(r.u64()?);
    }
    let [pawn, knight, bishop, rook, queen, king, white, black, castling_rights] = bb;
    let board = Board::try_from_bitboards(
        ByRole {
            pawn,
            knight,
            bishop,
            rook,
            queen,
            king,
        },
        ByColor { black, white },
    )
    .map_err(|e| anyhow!("a plan's board: {e}"))?;
    let turn = Color::from_white(r.u8()? != 0);
    let ep_square = match r.u8()? {
        u8::MAX => None,
        s => Some(Square::new(u32::from(s))),
    };
    let halfmoves = r.u32()?;
    let fullmoves = NonZeroU32::new(r.u32()?).ok_or_else(|| anyhow!("a plan's move number"))?;
    let mut setup = Setup::empty();
    setup.board = board;
    setup.turn = turn;
    setup.castling_rights = castling_rights;
    setup.ep_square = ep_square;
    setup.halfmoves = halfmoves;
    setup.fullmoves = fullmoves;
    Chess::from_setup(setup, CastlingMode::Standard).map_err(|e| anyhow!("a plan's position: {e}"))
}

/// Reads a record's fields in order.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        if self.0.len() < N {
            bail!("a plan's record is cut short");
        }
        let (head, rest) = self.0.split_at(N);
        self.0 = rest;
        let mut a = [0u8; N];
        a.copy_from_slice(head);
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        self.take().map(u16::from_le_bytes)
    }
    fn u32(&mut self) -> Result<u32> {
        self.take().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Result<u64> {
        self.take().map(u64::from_le_bytes)
    }
}

/// Which of the targets a pass searches, and how.
pub struct Choice<'a> {
    /// Group leaves into their parents where this holds for both
    /// ([`group_leaves`](super::targets::group_leaves)); `None`: no grouping.
    pub group: Option<&'a dyn Fn(Key) -> bool>,
    /// Keep only the targets (after grouping) for which this holds.
    pub keep: &'a dyn Fn(Key) -> bool,
}

/// [`find_within`](super::targets::find_within), grouped and chosen as `choice` says, into a [`Plan`]
/// whose files go to `dir` and which holds about `memory` bytes at most:
/// the same targets in the same order, read back from disk.
#[allow(clippy::too_many_arguments)]
pub fn plan(
    book: &Book,
    min_games: u32,
    max_ply: Option<u32>,
    engine: &str,
    budget: &str,
    known: &KeyMap<Key, Analysis>,
    choice: &Choice<'_>,
    dir: &std::path::Path,
    memory: u64,
) -> Result<Plan> {
    let mut plan = Plan::new(dir, memory)?;
    plan.done = walk_from_start(book, min_games, max_ply, engine, budget, known, |found| {
        // A leaf's parent is the position whose expansion found it: the
        // grouping of one expansion's targets, by priority as the whole
        // list is sorted, is that of the whole list.
        found.sort_by(|a, b| b.priority.total_cmp(&a.priority));
        let chosen = match choice.group {
            Some(owns) => group_leaves(std::mem::take(found), owns),
            None => std::mem::take(found),
        };
        for t in chosen.iter().filter(|t| (choice.keep)(t.key)) {
            plan.push(t)?;
        }
        Ok(())
    })?;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(pos: Chess, priority: f64) -> Target {
        Target {
            key: crate::book::keys::polyglot_key(&pos),
            pos,
            interior: true,
            book_moves: vec![MoveCode(3), MoveCode(700)],
            priority,
            via: Some((Key(42), MoveCode(9))),
            leaves: Vec::new(),
        }
    }

    /// Positions with castling rights lost, an en passant square no pawn
    /// can take, promotions.
    fn boards() -> Vec<Chess> {
        let mut out = vec![Chess::default()];
        let mut pos = Chess::default();
        for uci in [
            "e2e4", "g8f6", "e4e5", "d7d5", "e5d6", "a7a5", "e1e2", "a5a4", "d6c7", "b7b5",
            "c7b8q", "a4a3",
        ] {
            let m = uci
                .parse::<shakmaty::uci::UciMove>()
                .expect("uci")
                .to_move(&pos)
                .expect("legal");
            pos.play_unchecked(m);
            out.push(pos.clone());
        }
        out
    }

    #[test]
    fn targets_come_back_whole_by_priority_then_in_order_across_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        // 16 KiB of sort records: runs of 1024.
        let mut plan = Plan::new(dir.path(), 16 * 1024 * SORT_SHARE).expect("plan");
        let positions = boards();
        let mut want = Vec::new();
        for i in 0..5000usize {
            let pos = positions[i % positions.len()].clone();
            let priority = [0.5, -0.0, 0.0, 2.0, -1.5, f64::MIN_POSITIVE][i % 6] * (i % 7) as f64;
            let mut t = target(pos.clone(), priority);
            if i % 3 == 0 {
                t.leaves.push(Target {
                    interior: false,
                    book_moves: Vec::new(),
                    ..target(pos, priority / 2.0)
                });
            }
            plan.push(&t).expect("push");
            want.push(t);
        }
        assert_eq!(plan.positions, 5000 + 5000usize.div_ceil(3));
        assert!(std::fs::read_dir(dir.path()).expect("dir").count() > 2);
        want.sort_by(|a, b| b.priority.total_cmp(&a.priority));
        let mut got = Vec::new();
        plan.drain(|t| {
            got.push(t);
            Ok(true)
        })
        .expect("drain");
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.priority.to_bits(), w.priority.to_bits());
            assert_eq!(g.key, w.key);
            assert_eq!(g.pos, w.pos);
            assert_eq!(
                g.pos.maybe_ep_square(),
                w.pos.maybe_ep_square(),
                "the en passant square as played"
            );
            assert_eq!(
                g.pos.castles().castling_rights(),
                w.pos.castles().castling_rights()
            );
            assert_eq!(
                (g.pos.halfmoves(), g.pos.fullmoves()),
                (w.pos.halfmoves(), w.pos.fullmoves())
            );
            assert_eq!(g.book_moves, w.book_moves);
            assert_eq!(g.via, w.via);
            assert_eq!(g.leaves.len(), w.leaves.len());
            for (gl, wl) in g.leaves.iter().zip(&w.leaves) {
                assert_eq!(
                    (gl.key, &gl.pos, gl.interior),
                    (wl.key, &wl.pos, wl.interior)
                );
            }
        }
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }

    #[test]
    fn a_stopped_drain_hands_no_more() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut plan = Plan::new(dir.path(), 1 << 20).expect("plan");
        for i in 0..10 {
            plan.push(&target(Chess::default(), f64::from(i)))
                .expect("push");
        }
        let mut seen = Vec::new();
        plan.drain(|t| {
            seen.push(t.priority);
            Ok(seen.len() < 3)
        })
        .expect("drain");
        assert_eq!(seen, [9.0, 8.0, 7.0]);
    }
}
