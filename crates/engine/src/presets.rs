//! Parameter presets: `default` (the evaluation fitted to self-play games by
//! `learnbook fit`, the search parameters tuned by SPSA), `search-hand` (the
//! default before that tune: the fitted evaluation with the hand-set search
//! parameters), `hand` (the hand-set values of both, the default before the
//! fit), and `kaissa` and `kotok` mapped from the published weights in
//! `../shared/data/eval-presets.md`. The
//! mapping and every term without a counterpart are written into the TOML
//! header, so the file says what it is.

use anyhow::{bail, Context, Result};

use super::params::{is_search_param, Weights};

/// The named preset and its notes (TOML comment lines).
pub fn preset(name: &str) -> Result<(Weights, String)> {
    match name {
        "default" => Ok((Weights::default(), String::new())),
        "hand" => Ok((
            Weights::from_toml(HAND).context("the hand preset")?,
            HAND_NOTES.to_string(),
        )),
        "search-hand" => Ok((search_hand()?, SEARCH_HAND_NOTES.to_string())),
        "kaissa" => Ok((kaissa(), KAISSA_NOTES.to_string())),
        "kotok" => Ok((kotok(), KOTOK_NOTES.to_string())),
        _ => bail!("unknown preset {name:?} (default, search-hand, hand, kaissa, kotok)"),
    }
}

/// The hand-set defaults before the fit, as `learnbook weights` wrote them.
const HAND: &str = include_str!("hand.toml");

const HAND_NOTES: &str = "\
# The hand-set parameters: learnbook's defaults until a Texel fit on
# self-play games replaced the evaluation's (docs/BENCHMARKS.md, 2026-11-24).
";

const SEARCH_HAND_NOTES: &str = "\
# The fitted evaluation with the hand-set search parameters: learnbook's
# defaults until the SPSA tune of the search (20,000 games at 25,000 nodes)
# gained at 10+0.1 (docs/BENCHMARKS.md, issue 51).
";

/// The default evaluation with the search parameters of [`HAND`], which
/// were the search's defaults until its tune.
fn search_hand() -> Result<Weights> {
    let hand = Weights::from_toml(HAND).context("the hand preset")?;
    let mut w = Weights::default();
    for p in hand.params().into_iter().filter(|p| p.is_search()) {
        w.set(&p.name, p.value)?;
    }
    Ok(w)
}

/// Weights named on the command line: a TOML file (`learnbook weights`
/// writes one) if `spec` is an existing path, else a preset's name.
pub fn load(spec: &str) -> Result<Weights> {
    let path = std::path::Path::new(spec);
    if path.exists() {
        Weights::load(path)
    } else {
        Ok(preset(spec)
            .with_context(|| format!("{spec}: no such file or preset"))?
            .0)
    }
}

/// Chebyshev distance of a half-board square (index rank*4+file, files a..d)
/// to the four centre squares.
fn center_distance(i: usize) -> i32 {
    let (file, rank) = ((i % 4) as i32, (i / 4) as i32);
    let df = 3 - file; // d is the centre file of the half board
    let dr = if rank < 3 {
        3 - rank
    } else if rank > 4 {
        rank - 4
    } else {
        0
    };
    df.max(dr)
}

/// Everything positional set to zero; material and the tables' shapes come
/// from the preset. The search's parameters keep their defaults.
fn blank() -> Weights {
    let mut w = Weights::default();
    let names: Vec<String> = w.params().into_iter().map(|p| p.name).collect();
    for name in names {
        let keep = ["pawn_", "knight_", "bishop_", "rook_", "queen_"]
            .iter()
            .any(|p| {
                name.starts_with(p)
                    && (name.ends_with("_mg") || name.ends_with("_eg"))
                    && name.matches('_').count() == 1
            });
        if !keep && name != "king_attack_divisor" && !is_search_param(&name) {
            // Every non-material bound admits 0 except the divisor.
            let _ = w.set(&name, 0);
        }
    }
    w.scale_no_pawns = 64;
    w.king_attack_cap = 0;
    w
}

fn material(w: &mut Weights, p: i32, n: i32, b: i32, r: i32, q: i32) {
    (w.pawn_mg, w.pawn_eg) = (p, p);
    (w.knight_mg, w.knight_eg) = (n, n);
    (w.bishop_mg, w.bishop_eg) = (b, b);
    (w.rook_mg, w.rook_eg) = (r, r);
    (w.queen_mg, w.queen_eg) = (q, q);
}

const KAISSA_NOTES: &str = "\
# Kaissa (1974), from eval-presets.md. Scale: 1 material unit = 50 cp
# (pawn 2 -> 100), 1 positional unit = 0.5 cp.
# Mapped: isolated, doubled, backward, phalanx, pawns in the centre (pawn
# table d4 d5 d6 / e4 e5 e6), piece and pawn attacks on the centre
# (center_control), rook on open/semi-open file, rook on the seventh,
# bishop pair, castled, castling right lost (castling_rights), minor pieces
# at home (undeveloped_minor), blocked d/e pawns at home, knight in the
# centre (knight table), king distance from the centre in the endgame (king
# table), king distance from passed pawns, mobility (+1 per square ~ 1 cp),
# bishop/knight attacks next to the king (king_attack_*, quadratic here,
# linear in Kaissa).
# No counterpart: isolated pawn on a semi-open file (extra), pawn attacks
# per square, strong squares and pieces on them, pawn attacks next to the
# enemy king, blocked c/f pawns, bishop/knight attacks on rook/queen, king
# opposition, rook attacks along open files, rooks behind passed pawns,
# knight and queen both present, piece attacked by a bishop, queen mobility
# from the king's square, passed pawn blocked.
";

fn kaissa() -> Weights {
    let mut w = blank();
    material(&mut w, 100, 350, 350, 500, 950);
    // Pawn in the centre +20 on d4 d5 d6 (e mirrors d).
    for i in [3 * 4 + 3, 4 * 4 + 3, 5 * 4 + 3] {
        w.pst_pawn_mg[i] = 10;
        w.pst_pawn_eg[i] = 10;
    }
    // Knight in the centre +20.
    for i in [3 * 4 + 3, 4 * 4 + 3] {
        w.pst_knight_mg[i] = 10;
        w.pst_knight_eg[i] = 10;
    }
    // King distance from the centre, -200 scaled by distance (endgame).
    for (i, v) in w.pst_king_eg.iter_mut().enumerate() {
        *v = -100 * center_distance(i) / 3;
    }
    (w.isolated_mg, w.isolated_eg) = (5, 5);
    (w.doubled_mg, w.doubled_eg) = (3, 3);
    (w.backward_mg, w.backward_eg) = (5, 5);
    (w.phalanx_mg, w.phalanx_eg) = (10, 10);
    w.passed_own_king_eg = 1;
    (w.knight_mobility_mg, w.knight_mobility_eg) = (1, 1);
    (w.bishop_mobility_mg, w.bishop_mobility_eg) = (1, 1);
    (w.rook_mobility_mg, w.rook_mobility_eg) = (1, 1);
    (w.queen_mobility_mg, w.queen_mobility_eg) = (1, 1);
    (w.rook_open_mg, w.rook_open_eg) = (17, 17);
    (w.rook_semi_open_mg, w.rook_semi_open_eg) = (12, 12);
    (w.rook_seventh_mg, w.rook_seventh_eg) = (20, 10);
    (w.bishop_pair_mg, w.bishop_pair_eg) = (10, 10);
    w.castled_mg = 15;
    w.castling_rights_mg = 30;
    w.center_control_mg = 5;
    w.undeveloped_minor_mg = 7;
    w.blocked_center_pawn_mg = 25;
    w.king_attack_knight = 3;
    w.king_attack_bishop = 3;
    w.king_attack_divisor = 2;
    w.king_attack_cap = 200;
    w
}

const KOTOK_NOTES: &str = "\
# Kotok (1962), from eval-presets.md. Scale: pawn 1 -> 100 cp; material x60
# against the positional terms, so 1 centre point = 100/60 cp.
# Mapped: material; centre control (the 16-square table reduced to the four
# centre squares: d5/e5 8 points, d4/e4 4 points, mean 6 -> 10 cp per
# attack, middlegame only as Kotok faded it out by move 30); development
# (3-4 points per piece at 1/15 pawn -> 23 cp per minor at home, 1 point per
# centre pawn -> blocked d/e pawn 7 cp); pawn structure at 1/20 pawn per
# point (isolated, backward, doubled, passed, rook on an open file: 5 cp).
# No counterpart: the other 12 centre squares of the table, trading down
# when 4 points ahead, development of pawns other than d/e. Everything else
# (piece-square tables, mobility, king safety, bishop pair) is zero: Kotok
# had none of it.
";

fn kotok() -> Weights {
    let mut w = blank();
    material(&mut w, 100, 300, 300, 500, 900);
    w.center_control_mg = 10;
    w.undeveloped_minor_mg = 23;
    w.blocked_center_pawn_mg = 7;
    (w.isolated_mg, w.isolated_eg) = (5, 5);
    (w.backward_mg, w.backward_eg) = (5, 5);
    (w.doubled_mg, w.doubled_eg) = (5, 5);
    for r in 1..7 {
        w.passed_mg[r] = 5;
        w.passed_eg[r] = 5;
    }
    (w.rook_open_mg, w.rook_open_eg) = (5, 5);
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_valid_and_distinct() {
        let (d, _) = preset("default").unwrap();
        let (ka, notes) = preset("kaissa").unwrap();
        let (ko, _) = preset("kotok").unwrap();
        let (hand, _) = preset("hand").unwrap();
        assert_ne!(
            hand, d,
            "the fitted defaults differ from the hand-set values"
        );
        assert_eq!(hand.pawn_mg, 85);
        assert_eq!(hand.search_lmr_moves, d.search_lmr_moves);
        assert!(notes.contains("No counterpart"));
        assert_ne!(d, ka);
        assert_ne!(ka, ko);
        for w in [&d, &ka, &ko, &hand] {
            // Every preset survives its own TOML within bounds.
            assert_eq!(&Weights::from_toml(&w.to_toml("t")).unwrap(), w);
        }
        assert_eq!(ka.pawn_mg, 100);
        assert_eq!(ko.knight_mobility_mg, 0);
        assert_eq!(ka.pst_king_eg[3 * 4 + 3], 0);
        assert_eq!(ka.pst_king_eg[0], -100);
        assert!(preset("nope").is_err());
    }

    #[test]
    fn the_default_is_the_confirmed_tune_and_search_hand_its_start() {
        // The two sides of the confirmation match at 10+0.1 (issue 51).
        let tuned = include_str!("../../../docs/bench/tune-night/candidate.toml");
        let start = include_str!("../../../docs/bench/tune-night/baseline.toml");
        assert_eq!(Weights::from_toml(tuned).unwrap(), Weights::default());
        let (search_hand, notes) = preset("search-hand").unwrap();
        assert_eq!(Weights::from_toml(start).unwrap(), search_hand);
        assert!(notes.contains("hand-set search"));
    }
}
