//! The engine's parameter set: every number the evaluation uses, then the
//! search's margins and reductions (the `search_` group, last), each with a
//! name, a default and bounds. The UCI options, the TOML files and the tuner
//! all go through [`Weights::params`] and [`Weights::set`], so a name means the
//! same number everywhere.
//!
//! Arrays expand to one parameter per entry: piece-square tables are stored
//! for the half board a..d (files e..h mirror them) and named by square
//! (`pst_knight_mg_c3`); per-rank tables are named `passed_mg_r6`.

use std::{fmt::Write as _, path::Path};

use anyhow::{bail, Context, Result};

/// One named number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub value: i32,
    pub min: i32,
    pub max: i32,
}

/// How the entries of an array parameter are named.
#[derive(Clone, Copy)]
enum Labels {
    /// `a1 b1 c1 d1 a2 ... d8`: a half-board table.
    HalfBoard,
    /// `r1 ... r8`: relative ranks.
    Ranks,
}

impl Labels {
    fn label(self, i: usize) -> String {
        match self {
            Labels::HalfBoard => format!("{}{}", (b'a' + (i % 4) as u8) as char, i / 4 + 1),
            Labels::Ranks => format!("r{}", i + 1),
        }
    }
}

/// A parameter field: a single number or an array of them.
trait Field {
    fn len(&self) -> usize;
    fn get(&self, i: usize) -> i32;
    fn slot(&mut self, i: usize) -> &mut i32;
}

impl Field for i32 {
    fn len(&self) -> usize {
        1
    }
    fn get(&self, _: usize) -> i32 {
        *self
    }
    fn slot(&mut self, _: usize) -> &mut i32 {
        self
    }
}

impl<const N: usize> Field for [i32; N] {
    fn len(&self) -> usize {
        N
    }
    fn get(&self, i: usize) -> i32 {
        self[i]
    }
    fn slot(&mut self, i: usize) -> &mut i32 {
        &mut self[i]
    }
}

fn entry_name(field: &str, labels: Option<Labels>, len: usize, i: usize) -> String {
    match labels {
        Some(l) if len > 1 => format!("{field}_{}", l.label(i)),
        _ => field.to_string(),
    }
}

macro_rules! weights {
    ($( $(#[doc = $doc:literal])* $field:ident : $ty:ty = $default:expr, $labels:expr, [$lo:expr, $hi:expr]; )*) => {
        /// The evaluation's weights, in centipawns (`_mg`: middlegame,
        /// `_eg`: endgame; the evaluation tapers between them), then the
        /// search's parameters (`search_`, see [`is_search_param`]).
        ///
        /// `repr(C)` and only `i32` fields: a field's offset / 4 is its index
        /// in [`Weights::params`] (the evaluation's trace relies on it).
        #[derive(Clone, Debug, PartialEq, Eq)]
        #[repr(C)]
        pub struct Weights {
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        impl Default for Weights {
            fn default() -> Self {
                Weights { $( $field: $default, )* }
            }
        }

        impl Weights {
            /// Every number, in a fixed order, with its name and bounds.
            pub fn params(&self) -> Vec<Param> {
                let mut out = Vec::new();
                $(
                    let f = &self.$field;
                    for i in 0..Field::len(f) {
                        out.push(Param {
                            name: entry_name(stringify!($field), $labels, Field::len(f), i),
                            value: Field::get(f, i),
                            min: $lo,
                            max: $hi,
                        });
                    }
                )*
                out
            }

            /// The slot of the `index`-th number of [`Weights::params`].
            fn slot(&mut self, mut index: usize) -> Option<&mut i32> {
                $(
                    let n = Field::len(&self.$field);
                    if index < n {
                        return Some(Field::slot(&mut self.$field, index));
                    }
                    index -= n;
                )*
                let _ = index;
                None
            }
        }
    };
}

const NONE: Option<Labels> = None;
const SQ: Option<Labels> = Some(Labels::HalfBoard);
const RANKS: Option<Labels> = Some(Labels::Ranks);

#[rustfmt::skip]
weights! {
    /// Material.
    pawn_mg: i32 = 74, NONE, [40, 200];
    pawn_eg: i32 = 90, NONE, [40, 250];
    knight_mg: i32 = 317, NONE, [150, 600];
    knight_eg: i32 = 303, NONE, [150, 600];
    bishop_mg: i32 = 328, NONE, [150, 600];
    bishop_eg: i32 = 325, NONE, [150, 600];
    rook_mg: i32 = 473, NONE, [250, 900];
    rook_eg: i32 = 544, NONE, [250, 900];
    queen_mg: i32 = 963, NONE, [500, 1800];
    queen_eg: i32 = 974, NONE, [500, 1800];

    /// Piece-square tables, ranks 1..8 of files a..d from the owner's side.
    pst_pawn_mg: [i32; 32] = [
          0,   0,   0,   0,
         -6,   3,   7,  -9,
          3,   3,  10,   3,
         -2,  -5,  11,  23,
          4,  -1,  10,  18,
         13,  15,  26,  34,
         40,  40,  40,  40,
          0,   0,   0,   0], SQ, [-100, 150];
    pst_pawn_eg: [i32; 32] = [
          0,   0,   0,   0,
          8,  -1,   6,   3,
          8,   4,   3,   7,
         14,   9,   6,   6,
         24,  14,  12,  16,
         41,  39,  39,  36,
         65,  69,  69,  68,
          0,   0,   0,   0], SQ, [-100, 200];
    pst_knight_mg: [i32; 32] = [
        -60, -23, -18, -14,
        -31, -13,  -1,   5,
        -19,   3,   2,  13,
        -11,   7,  14,  16,
         -9,  10,  21,  22,
        -15,  11,  21,  27,
        -25, -10,   5,  10,
        -60, -30, -20, -15], SQ, [-150, 150];
    pst_knight_eg: [i32; 32] = [
        -40, -25, -14, -10,
        -24,  -9,  -4,   2,
        -15,  -5,  -1,   9,
        -10,   0,  10,  14,
         -9,   1,  11,  16,
        -14,  -4,   6,  11,
        -25, -10,  -5,   0,
        -40, -25, -15, -10], SQ, [-150, 150];
    pst_bishop_mg: [i32; 32] = [
        -12,  -5, -10,  -6,
         -2,  16,   2,   2,
         -3,   8,   5,   2,
         -5,   4,   4,  11,
         -5,   9,  10,  11,
         -5,   5,  10,   9,
        -11,   0,  -1,   0,
        -20, -10, -10, -10], SQ, [-150, 150];
    pst_bishop_eg: [i32; 32] = [
        -13, -10,  -6,  -5,
        -10,  -6,  -1,  -2,
         -4,   0,   9,   5,
         -5,   1,   4,   8,
         -4,   0,   6,   9,
         -5,   0,   6,   3,
        -10,  -5,   1,   1,
        -14, -10,  -5,  -5], SQ, [-150, 150];
    pst_rook_mg: [i32; 32] = [
         -5,  -1,  10,  11,
        -10,  -6,  -1,   1,
        -11,  -6,  -1,  -5,
        -10,  -5,  -2,  -2,
         -5,   2,   1,   6,
          1,   7,   7,  11,
          9,  15,  15,  15,
          6,   6,   6,  10], SQ, [-150, 150];
    pst_rook_eg: [i32; 32] = [
         -1,   0,  -1,  -4,
         -2,  -2,  -1,  -1,
          0,   1,   1,  -2,
          1,   1,   1,  -1,
          3,   3,   3,   2,
          3,   2,   3,   1,
         10,   9,   9,   8,
          8,   7,   6,   6], SQ, [-150, 150];
    pst_queen_mg: [i32; 32] = [
         -9,  -5,  -5,   2,
         -9,   0,  11,  10,
         -4,  -2,   1,   1,
         -7,   1,   3,   3,
         -5,   0,   5,   4,
        -10,   0,   5,   5,
        -10,  -6,   1,   1,
        -20,  -9, -10,  -5], SQ, [-150, 150];
    pst_queen_eg: [i32; 32] = [
        -30, -20, -10,  -6,
        -20,  -9,   0,   5,
        -10,   0,  10,  14,
         -5,   6,  15,  19,
         -5,   5,  15,  20,
        -10,   0,  10,  15,
        -20, -10,   0,   6,
        -30, -19, -10,  -5], SQ, [-150, 150];
    pst_king_mg: [i32; 32] = [
         15,  24,   4,  -6,
         13,  15,  -8, -19,
         -9, -19, -24, -31,
        -20, -30, -35, -41,
        -30, -40, -45, -51,
        -40, -50, -55, -60,
        -40, -50, -55, -60,
        -40, -50, -55, -60], SQ, [-200, 150];
    pst_king_eg: [i32; 32] = [
        -49, -31, -20, -15,
        -27, -11,  -4,   1,
        -18,  -3,  11,  10,
        -16,  -1,  12,  20,
        -15,   1,  13,  21,
        -19,  -3,  11,  14,
        -30, -14,  -4,   0,
        -50, -29, -20, -15], SQ, [-200, 150];

    /// Pawn structure (penalties are subtracted).
    isolated_mg: i32 = 11, NONE, [0, 100];
    isolated_eg: i32 = 13, NONE, [0, 100];
    doubled_mg: i32 = 8, NONE, [0, 100];
    doubled_eg: i32 = 21, NONE, [0, 100];
    backward_mg: i32 = 6, NONE, [0, 100];
    backward_eg: i32 = 10, NONE, [0, 100];
    phalanx_mg: i32 = 0, NONE, [0, 100];
    phalanx_eg: i32 = 3, NONE, [0, 100];
    /// Passed pawn bonus by relative rank.
    passed_mg: [i32; 8] = [0, 0, 0, 6, 23, 42, 60, 0], RANKS, [0, 300];
    passed_eg: [i32; 8] = [0, 3, 6, 30, 59, 86, 131, 0], RANKS, [0, 400];
    /// Endgame: per square of the own king's distance to a passed pawn's stop square (subtracted).
    passed_own_king_eg: i32 = 12, NONE, [0, 50];
    /// Endgame: per square of the enemy king's distance to that square (added).
    passed_their_king_eg: i32 = 17, NONE, [0, 50];

    /// Mobility per reachable square (not own-occupied, not attacked by enemy pawns).
    knight_mobility_mg: i32 = 5, NONE, [0, 30];
    knight_mobility_eg: i32 = 5, NONE, [0, 30];
    bishop_mobility_mg: i32 = 5, NONE, [0, 30];
    bishop_mobility_eg: i32 = 6, NONE, [0, 30];
    rook_mobility_mg: i32 = 1, NONE, [0, 30];
    rook_mobility_eg: i32 = 8, NONE, [0, 30];
    queen_mobility_mg: i32 = 0, NONE, [0, 30];
    queen_mobility_eg: i32 = 13, NONE, [0, 30];

    /// Rooks.
    rook_open_mg: i32 = 26, NONE, [0, 100];
    rook_open_eg: i32 = 3, NONE, [0, 100];
    rook_semi_open_mg: i32 = 13, NONE, [0, 100];
    rook_semi_open_eg: i32 = 15, NONE, [0, 100];
    rook_seventh_mg: i32 = 19, NONE, [0, 100];
    rook_seventh_eg: i32 = 26, NONE, [0, 100];

    bishop_pair_mg: i32 = 30, NONE, [0, 150];
    bishop_pair_eg: i32 = 53, NONE, [0, 150];

    /// King safety (middlegame): own pawns in front of the king.
    shield_rank2_mg: i32 = 13, NONE, [0, 60];
    shield_rank3_mg: i32 = 8, NONE, [0, 60];
    /// No own pawn on the king's file (subtracted).
    king_open_file_mg: i32 = 18, NONE, [0, 100];
    /// Attack units per square of the king zone attacked, by piece.
    king_attack_knight: i32 = 1, NONE, [0, 20];
    king_attack_bishop: i32 = 2, NONE, [0, 20];
    king_attack_rook: i32 = 3, NONE, [0, 20];
    king_attack_queen: i32 = 7, NONE, [0, 20];
    /// With two or more attackers: penalty = units^2 / divisor, at most the cap.
    king_attack_divisor: i32 = 7, NONE, [1, 64];
    king_attack_cap: i32 = 500, NONE, [0, 1000];
    castled_mg: i32 = 16, NONE, [0, 100];
    castling_rights_mg: i32 = 16, NONE, [0, 100];

    /// Attacks (by pawns and pieces) on d4 e4 d5 e5, each.
    center_control_mg: i32 = 2, NONE, [0, 30];
    /// Knights and bishops still on their initial squares (subtracted).
    undeveloped_minor_mg: i32 = 6, NONE, [0, 60];
    /// A d or e pawn on its initial square blocked by a piece (subtracted).
    blocked_center_pawn_mg: i32 = 21, NONE, [0, 80];

    /// The side to move's bonus.
    tempo: i32 = 0, NONE, [0, 50];
    /// Scale (of 64) of the stronger side's edge when it has no pawns and is up less than a rook.
    scale_no_pawns: i32 = 16, NONE, [0, 64];

    /// Search: the aspiration window (centipawns) around the last score, from this depth on.
    search_aspiration_window: i32 = 16, NONE, [5, 200];
    search_aspiration_depth: i32 = 5, NONE, [1, 20];
    /// Search: reverse futility up to this depth (0: never), when the eval
    /// is above beta by margin * depth (less `improving` when improving).
    search_rfp_depth: i32 = 6, NONE, [0, 16];
    search_rfp_margin: i32 = 83, NONE, [20, 300];
    search_rfp_improving: i32 = 36, NONE, [0, 200];
    /// Search: null move from this depth on, reduced by base + depth / divisor
    /// + min((eval - beta) / eval_divisor, eval_max).
    search_nmp_depth: i32 = 3, NONE, [1, 16];
    search_nmp_base: i32 = 3, NONE, [1, 6];
    search_nmp_divisor: i32 = 4, NONE, [1, 16];
    search_nmp_eval_divisor: i32 = 185, NONE, [50, 1000];
    search_nmp_eval_max: i32 = 4, NONE, [0, 6];
    /// Search: internal iterative reduction (one ply without a table move) from this depth on.
    search_iir_depth: i32 = 4, NONE, [2, 32];
    /// Search: late move pruning of quiet moves up to this depth (0: never),
    /// after (base + depth^2 * per_depth_sq_x100 / 100) moves, half that when not improving.
    search_lmp_depth: i32 = 4, NONE, [0, 16];
    search_lmp_base: i32 = 4, NONE, [0, 20];
    search_lmp_per_depth_sq_x100: i32 = 143, NONE, [25, 400];
    /// Search: futility pruning of quiet moves up to this depth (0: never),
    /// when eval + base + per_depth * depth cannot reach alpha.
    search_futility_depth: i32 = 6, NONE, [0, 16];
    search_futility_base: i32 = 94, NONE, [0, 400];
    search_futility_per_depth: i32 = 70, NONE, [20, 300];
    /// Search: captures that are not good are skipped up to this depth (0: never)
    /// when their static exchange loses more than see_capture * depth.
    search_see_depth: i32 = 6, NONE, [0, 16];
    search_see_capture: i32 = 83, NONE, [20, 400];
    /// Search: late move reductions from this depth on, after this many moves
    /// (one more at PV nodes); the table is base + ln(depth) ln(move) / divisor
    /// (both in hundredths); the history score divided by history_divisor is subtracted.
    search_lmr_depth: i32 = 3, NONE, [2, 16];
    search_lmr_moves: i32 = 2, NONE, [1, 16];
    search_lmr_base_x100: i32 = 85, NONE, [0, 300];
    search_lmr_divisor_x100: i32 = 185, NONE, [100, 600];
    search_lmr_history_divisor: i32 = 6804, NONE, [1024, 65536];
    /// Quiescence: delta pruning margin, and the loss by static exchange
    /// (centipawns) beyond which a capture is skipped.
    search_qs_delta: i32 = 198, NONE, [0, 1000];
    search_qs_see: i32 = 1, NONE, [0, 300];
}

/// Every search parameter's name starts with this; every other parameter is the evaluation's.
pub const SEARCH_PREFIX: &str = "search_";

/// Is `name` a parameter of the search (not of the evaluation)? The search
/// parameters come after all evaluation parameters in [`Weights::params`].
pub fn is_search_param(name: &str) -> bool {
    name.starts_with(SEARCH_PREFIX)
}

impl Param {
    /// Is this a parameter of the search (not of the evaluation)?
    pub fn is_search(&self) -> bool {
        is_search_param(&self.name)
    }
}

impl Weights {
    /// The number with this name.
    pub fn get(&self, name: &str) -> Option<i32> {
        self.params()
            .into_iter()
            .find(|p| p.name == name)
            .map(|p| p.value)
    }

    /// Sets the number `name`; errors on an unknown name or a value out of bounds.
    pub fn set(&mut self, name: &str, value: i32) -> Result<()> {
        let params = self.params();
        let Some(i) = params.iter().position(|p| p.name == name) else {
            bail!("unknown parameter {name:?}");
        };
        self.set_at(&params[i], i, value)
    }

    /// Sets number `i`, whose [`Param`] is `p`, checking its bounds.
    fn set_at(&mut self, p: &Param, i: usize, value: i32) -> Result<()> {
        let name = &p.name;
        if value < p.min || value > p.max {
            bail!(
                "{name} = {value} is outside its bounds [{}, {}]",
                p.min,
                p.max
            );
        }
        if let Some(slot) = self.slot(i) {
            *slot = value;
        }
        Ok(())
    }

    /// All numbers in [`Weights::params`] order (for the tuner).
    pub fn values(&self) -> Vec<i32> {
        self.params().into_iter().map(|p| p.value).collect()
    }

    /// Sets all numbers in [`Weights::params`] order, clamped to their bounds.
    pub fn set_values(&mut self, values: &[i32]) {
        let params = self.params();
        for (i, (p, &v)) in params.iter().zip(values).enumerate() {
            if let Some(slot) = self.slot(i) {
                *slot = v.clamp(p.min, p.max);
            }
        }
    }

    /// The parameter set as TOML: one `name = value` per number, bounds in comments.
    pub fn to_toml(&self, title: &str) -> String {
        let mut s = format!(
            "# learnbook weights (evaluation, then search_): {title}\n# name = value  # [min, max]\n"
        );
        for p in self.params() {
            let _ = writeln!(s, "{} = {}  # [{}, {}]", p.name, p.value, p.min, p.max);
        }
        s
    }

    /// Reads TOML written by [`Weights::to_toml`]; names not given keep their
    /// defaults, unknown names and out-of-bounds values are errors.
    pub fn from_toml(text: &str) -> Result<Weights> {
        let table: toml::Table = text.parse().context("not valid TOML")?;
        let mut w = Weights::default();
        // One list of names for the whole file (not one per number).
        let params = w.params();
        let index: std::collections::HashMap<&str, usize> = params
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.as_str(), i))
            .collect();
        for (name, value) in &table {
            let Some(v) = value.as_integer() else {
                bail!("{name}: expected an integer, found {value}");
            };
            let v = i32::try_from(v).with_context(|| format!("{name}: {v} is out of range"))?;
            let Some(&i) = index.get(name.as_str()) else {
                bail!("unknown evaluation parameter {name:?}");
            };
            w.set_at(&params[i], i, v)?;
        }
        Ok(w)
    }

    pub fn load(path: &Path) -> Result<Weights> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read weights file {}", path.display()))?;
        Weights::from_toml(&text).with_context(|| format!("in weights file {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_defaults_in_bounds() {
        let params = Weights::default().params();
        let mut names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), params.len());
        for p in &params {
            assert!(p.min <= p.value && p.value <= p.max, "{p:?}");
        }
        assert!(params.iter().any(|p| p.name == "pst_knight_mg_c3"));
        assert!(params.iter().any(|p| p.name == "passed_eg_r7"));
    }

    #[test]
    fn toml_round_trip_and_errors() {
        let mut w = Weights::default();
        w.set("pst_knight_mg_c3", 33).unwrap();
        w.set("pawn_eg", 111).unwrap();
        let back = Weights::from_toml(&w.to_toml("test")).unwrap();
        assert_eq!(back, w);
        assert_eq!(back.pst_knight_mg[2 * 4 + 2], 33);
        assert!(Weights::from_toml("no_such_weight = 3").is_err());
        assert!(Weights::from_toml("pawn_mg = 100000").is_err());
        assert!(Weights::from_toml("pawn_mg = \"x\"").is_err());
        assert!(w.set("pawn_mg", 10).is_err());
    }

    /// How many evaluation parameters there were when the search group was
    /// added; the evaluation fitting relies on them coming first, in order.
    const EVAL_PARAMS: usize = 452;

    #[test]
    fn the_evaluation_parameters_come_first_in_their_order_then_the_search_ones() {
        let params = Weights::default().params();
        let (eval, search) = params.split_at(EVAL_PARAMS);
        assert!(eval.iter().all(|p| !p.is_search()), "{eval:?}");
        assert!(!search.is_empty());
        assert!(search
            .iter()
            .all(|p| p.is_search() && is_search_param(&p.name)));
        // Names and defaults of the evaluation's parameters, as they were
        // (the defaults as fitted on 2026-11-24; the hand-set ones are the preset `hand`).
        let listing: String = eval
            .iter()
            .map(|p| format!("{}={} [{},{}]\n", p.name, p.value, p.min, p.max))
            .collect();
        assert_eq!(
            format!("{:016x}", learnbook_base::fnv::fnv1a(listing.as_bytes())),
            "68430f9ad08c967b"
        );
        assert_eq!(eval[0].name, "pawn_mg");
        assert_eq!(eval[10].name, "pst_pawn_mg_a1");
        assert_eq!(eval[EVAL_PARAMS - 1].name, "scale_no_pawns");
        assert_eq!(search[0].name, "search_aspiration_window");
    }

    #[test]
    fn old_toml_without_search_parameters_keeps_the_search_defaults() {
        let w = Weights::from_toml("pawn_mg = 90\nknight_mg = 310\n").unwrap();
        let d = Weights::default();
        assert_eq!(w.pawn_mg, 90);
        let search = |w: &Weights| -> Vec<Param> {
            w.params().into_iter().filter(Param::is_search).collect()
        };
        assert_eq!(search(&w), search(&d));
        let w = Weights::from_toml("search_rfp_margin = 120\n").unwrap();
        assert_eq!(w.search_rfp_margin, 120);
        assert!(Weights::from_toml("search_lmr_divisor_x100 = 0\n").is_err());
    }

    #[test]
    fn values_round_trip_clamped() {
        let w = Weights::default();
        let mut v = w.values();
        v[0] = 1_000_000;
        let mut w2 = Weights::default();
        w2.set_values(&v);
        assert_eq!(w2.pawn_mg, 200);
        assert_eq!(w2.values()[1..], w.values()[1..]);
    }
}
