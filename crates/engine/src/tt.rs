//! The transposition table: one 12-byte entry per slot, indexed by the high
//! bits of the key and verified by its low 32 bits. Mate scores are stored
//! relative to the node (see `to_tt`/`from_tt` in the search).

use shakmaty::Move;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Bound {
    Exact = 1,
    Lower = 2,
    Upper = 3,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    check: u32,
    mv: u16,
    score: i16,
    eval: i16,
    depth: i8,
    /// bound (2 bits) | generation << 2
    flags: u8,
}

#[derive(Clone, Copy, Debug)]
pub struct Hit {
    pub mv: u16,
    pub score: i32,
    pub eval: i32,
    pub depth: i32,
    pub bound: Bound,
}

pub struct Tt {
    slots: Vec<Slot>,
    generation: u8,
}

impl Tt {
    pub fn new(mb: usize) -> Tt {
        let n = (mb.max(1) * 1024 * 1024 / std::mem::size_of::<Slot>()).max(1024);
        Tt {
            slots: vec![Slot::default(); n],
            generation: 0,
        }
    }

    pub fn clear(&mut self) {
        self.slots.fill(Slot::default());
        self.generation = 0;
    }

    /// A new search: older entries become cheaper to replace.
    pub fn new_search(&mut self) {
        self.generation = (self.generation + 1) & 0x3f;
    }

    #[inline]
    fn index(&self, key: u64) -> usize {
        ((key as u128 * self.slots.len() as u128) >> 64) as usize
    }

    pub fn probe(&self, key: u64) -> Option<Hit> {
        let s = self.slots[self.index(key)];
        if s.flags == 0 || s.check != key as u32 {
            return None;
        }
        let bound = match s.flags & 3 {
            1 => Bound::Exact,
            2 => Bound::Lower,
            _ => Bound::Upper,
        };
        Some(Hit {
            mv: s.mv,
            score: s.score as i32,
            eval: s.eval as i32,
            depth: s.depth as i32,
            bound,
        })
    }

    pub fn store(&mut self, key: u64, mv: u16, score: i32, eval: i32, depth: i32, bound: Bound) {
        let i = self.index(key);
        let old = self.slots[i];
        let same = old.check == key as u32 && old.flags != 0;
        let replace = !same
            || bound == Bound::Exact
            || depth + 3 >= old.depth as i32
            || (old.flags >> 2) != self.generation;
        if !replace {
            return;
        }
        // Keep the old move when the new entry has none for the same position.
        let mv = if mv == 0 && same { old.mv } else { mv };
        self.slots[i] = Slot {
            check: key as u32,
            mv,
            score: score.clamp(i16::MIN as i32, i16::MAX as i32) as i16,
            eval: eval.clamp(i16::MIN as i32, i16::MAX as i32) as i16,
            depth: depth.clamp(-1, 127) as i8,
            flags: bound as u8 | (self.generation << 2),
        };
    }

    /// Permille of a sample of slots written in this search (UCI `hashfull`).
    pub fn hashfull(&self) -> u32 {
        let n = self.slots.len().min(1000);
        self.slots[..n]
            .iter()
            .filter(|s| s.flags != 0 && (s.flags >> 2) == self.generation)
            .count() as u32
            * 1000
            / n as u32
    }
}

/// A move in 16 bits: from | to << 6 | promotion << 12; castling is king
/// to rook, as shakmaty represents it. 0 is no move.
#[inline]
pub fn pack(m: Move) -> u16 {
    match m {
        Move::Normal {
            from,
            to,
            promotion,
            ..
        } => from as u16 | (to as u16) << 6 | (promotion.map_or(0, |r| r as u16)) << 12,
        Move::EnPassant { from, to } => from as u16 | (to as u16) << 6,
        Move::Castle { king, rook } => king as u16 | (rook as u16) << 6,
        Move::Put { .. } => 0,
    }
}

/// The from and to squares of a packed move (for history tables).
#[inline]
pub fn from_to(code: u16) -> (usize, usize) {
    ((code & 63) as usize, ((code >> 6) & 63) as usize)
}
