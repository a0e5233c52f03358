//! A match's resolution from its pentanomial counts: Elo and normalized
//! Elo (fishtest's nElo, Michel Van den Bergh's LLRcalc) with their 95%
//! intervals, and the GSPRT's expected length. The SPRT's cost goes as
//! 1/nElo^2, so the opening suite whose pairs vary less tells two engines
//! apart in fewer games (`bench suite` compares suites by it).

use serde::Serialize;

use super::stats::{elo_from_score, score_from_elo, Pentanomial, Sprt};

/// Normalized Elo per unit of normalized t-value (LLRcalc's `nelo_divided_by_nt`).
pub const NELO_PER_NT: f64 = 800.0 / std::f64::consts::LN_10;

/// The two-sided 95% quantile of the normal law.
const Z95: f64 = 1.959_963_984_540_054;

/// A value and its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// What a match's pentanomial counts say about its resolution.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Resolution {
    /// Mean of a pair's score / 2 (fishtest's regularized counts).
    pub pair_mean: f64,
    /// Variance of a pair's score / 2.
    pub variance_per_pair: f64,
    /// sqrt(2 * variance_per_pair): the standard deviation of one game's
    /// score once the pairing has taken the opening's bias out.
    pub sigma_per_game: f64,
    /// Logistic Elo, 95% interval from the pentanomial variance.
    pub elo: Interval,
    /// Normalized Elo, the same interval of the mean mapped with sigma fixed.
    pub nelo: Interval,
}

/// Normalized Elo of an expected score `score` when one game's score has
/// standard deviation `sigma_per_game`.
pub fn nelo(score: f64, sigma_per_game: f64) -> f64 {
    (score - 0.5) / sigma_per_game * NELO_PER_NT
}

impl Resolution {
    pub fn of(pairs: &Pentanomial) -> Resolution {
        let (n, mean, var) = pairs.pair_moments();
        let sigma = (2.0 * var).sqrt();
        let margin = Z95 * (var / n).sqrt();
        let (low, high) = (mean - margin, mean + margin);
        Resolution {
            pair_mean: mean,
            variance_per_pair: var,
            sigma_per_game: sigma,
            elo: Interval {
                value: elo_from_score(mean),
                low: elo_from_score(low),
                high: elo_from_score(high),
            },
            nelo: Interval {
                value: nelo(mean, sigma),
                low: nelo(low, sigma),
                high: nelo(high, sigma),
            },
        }
    }
}

/// Expected number of game pairs the GSPRT of `sprt` runs when a pair's
/// score / 2 has mean `mean` and variance `var`. The LLR is taken as a
/// Brownian motion with fishtest's normal-approximation drift and variance
/// per pair (LLRcalc's `LLR_drift_variance_alt2`) between Wald's bounds;
/// the overshoot at the bounds is ignored (Wald's approximation).
pub fn expected_sprt_pairs(sprt: &Sprt, mean: f64, var: f64) -> f64 {
    let (s0, s1) = (score_from_elo(sprt.elo0), score_from_elo(sprt.elo1));
    let (a, b) = sprt.bounds();
    let drift = (mean - (s0 + s1) / 2.0) * (s1 - s0) / var;
    let spread = (s1 - s0).powi(2) / var;
    let h = 2.0 * drift / spread;
    if (h * (b - a)).abs() < 1e-6 {
        // No drift: the expected exit time of a Brownian motion from (a, b).
        return -a * b / spread;
    }
    // P(the upper bound first), written so that no exponent is positive.
    let p_upper = if h > 0.0 {
        ((h * a).exp() - 1.0) / ((h * (a - b)).exp() - 1.0)
    } else {
        ((h * b).exp() - (h * (b - a)).exp()) / (1.0 - (h * (b - a)).exp())
    };
    (p_upper * b + (1.0 - p_upper) * a) / drift
}

/// The GSPRT's expected length in games, at two true strengths.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SprtLength {
    /// If the true Elo is `elo1`, with the measured variance. (LLRcalc's
    /// small-shift estimate var + (s1 - mean)^2 is not used: between
    /// engines far apart in strength the shift would swamp the variance,
    /// the very thing that tells suites apart.)
    pub games_at_elo1: f64,
    /// If the true score is the measured one.
    pub games_at_score: f64,
}

impl SprtLength {
    pub fn of(sprt: &Sprt, r: &Resolution) -> SprtLength {
        let s1 = score_from_elo(sprt.elo1);
        SprtLength {
            games_at_elo1: 2.0 * expected_sprt_pairs(sprt, s1, r.variance_per_pair),
            games_at_score: 2.0 * expected_sprt_pairs(sprt, r.pair_mean, r.variance_per_pair),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sprt(elo0: f64, elo1: f64) -> Sprt {
        Sprt {
            elo0,
            elo1,
            alpha: 0.05,
            beta: 0.05,
        }
    }

    #[test]
    fn even_pairs_have_no_normalized_elo() {
        let r = Resolution::of(&Pentanomial([0, 0, 10, 0, 0]));
        assert!(r.nelo.value.abs() < 1e-9 && r.elo.value.abs() < 1e-9);
        let r = Resolution::of(&Pentanomial([3, 5, 10, 5, 3]));
        assert!(r.nelo.value.abs() < 1e-9);
        assert!((r.nelo.low + r.nelo.high).abs() < 1e-9);
    }

    #[test]
    fn hand_computed_pairs() {
        // Pair scores 1, 1, 1.5, 1.5 (plus fishtest's 0.001 in each empty
        // class): mean 0.625, variance 0.015625, sigma per game 0.1768,
        // nt = 0.125 / 0.1768 = 0.7071, nElo = 0.7071 * 347.44 = 245.7.
        let r = Resolution::of(&Pentanomial([0, 0, 2, 2, 0]));
        assert!((r.pair_mean - 0.625).abs() < 1e-3);
        assert!((r.sigma_per_game - 0.176_78).abs() < 2e-3);
        assert!((r.nelo.value - 245.7).abs() < 2.0, "{}", r.nelo.value);
        assert!((r.elo.value - elo_from_score(0.625)).abs() < 0.5);
    }

    #[test]
    fn fishtest_example() {
        // fishtest's stat_util tests give these pairs with logistic bounds
        // (0.2, 0.9) as normalized bounds (0.764, 3.439).
        let r = Resolution::of(&Pentanomial([39, 2226, 31451, 2412, 40]));
        assert!((nelo(score_from_elo(0.2), r.sigma_per_game) - 0.764).abs() < 5e-4);
        assert!((nelo(score_from_elo(0.9), r.sigma_per_game) - 3.439).abs() < 5e-4);
        // Computed from LLRcalc's formulas: nElo 3.4508 [0.9189, 5.9827],
        // Elo 0.9030 [0.2405, 1.5655].
        assert!((r.nelo.value - 3.4508).abs() < 1e-3);
        assert!((r.nelo.low - 0.9189).abs() < 1e-3 && (r.nelo.high - 5.9827).abs() < 1e-3);
        assert!((r.elo.value - 0.9030).abs() < 1e-3);
        assert!((r.elo.low - 0.2405).abs() < 1e-3 && (r.elo.high - 1.5655).abs() < 1e-3);
    }

    #[test]
    fn nelo_scales_with_the_spread_and_the_interval_with_the_pairs() {
        let base = Resolution::of(&Pentanomial([10, 20, 40, 30, 20]));
        let more = Resolution::of(&Pentanomial([40, 80, 160, 120, 80]));
        // The same distribution: the same nElo, an interval half as wide.
        assert!((base.nelo.value - more.nelo.value).abs() < 1e-9);
        let width = |r: &Resolution| r.nelo.high - r.nelo.low;
        assert!((width(&base) / width(&more) - 2.0).abs() < 1e-9);
        // The same mean with half the spread (pairs pulled toward 1-1 pairs
        // symmetrically) doubles the normalized t-value.
        let mean = base.pair_mean;
        let sigma = base.sigma_per_game;
        assert!((nelo(mean, sigma / 2.0) - 2.0 * base.nelo.value).abs() < 1e-9);
        assert!((base.nelo.value - (mean - 0.5) / sigma * NELO_PER_NT).abs() < 1e-12);
    }

    #[test]
    fn expected_sprt_length_in_closed_forms() {
        let t = sprt(0.0, 5.0);
        let (a, b) = t.bounds();
        let (s0, s1) = (score_from_elo(0.0), score_from_elo(5.0));
        let var = 0.03;
        let spread = (s1 - s0).powi(2) / var;
        // Halfway between the hypotheses there is no drift: -a*b / spread.
        let mid = expected_sprt_pairs(&t, (s0 + s1) / 2.0, var);
        assert!((mid - (-a * b / spread)).abs() / mid < 1e-9);
        // At H1 the drift is spread/2 and H1 is accepted with probability
        // 1 - beta: Wald's ((1-beta) b + beta a) / (spread / 2).
        let at_h1 = expected_sprt_pairs(&t, s1, var);
        let wald = (0.95 * b + 0.05 * a) / (spread / 2.0);
        assert!((at_h1 - wald).abs() / wald < 1e-9, "{at_h1} {wald}");
        // At H0 symmetrically.
        let at_h0 = expected_sprt_pairs(&t, s0, var);
        let wald0 = (0.05 * b + 0.95 * a) / (-spread / 2.0);
        assert!((at_h0 - wald0).abs() / wald0 < 1e-9);
        // The length goes as the variance (as 1/nElo^2).
        let half = expected_sprt_pairs(&t, s1, var / 2.0);
        assert!((at_h1 / half - 2.0).abs() < 1e-9);
        // Far from both bounds: finite, a few pairs, no overflow.
        let far = expected_sprt_pairs(&sprt(0.0, 0.5), 0.999, 1e-3);
        assert!(far.is_finite() && far > 0.0 && far < 10.0, "{far}");
        let far = expected_sprt_pairs(&sprt(0.0, 0.5), 0.001, 1e-3);
        assert!(far.is_finite() && far > 0.0 && far < 10.0, "{far}");
    }

    #[test]
    fn sprt_length_at_elo1_uses_the_measured_variance() {
        let r = Resolution::of(&Pentanomial([10, 20, 40, 30, 20]));
        let t = sprt(0.0, 5.0);
        let len = SprtLength::of(&t, &r);
        let s1 = score_from_elo(5.0);
        let pairs = expected_sprt_pairs(&t, s1, r.variance_per_pair);
        assert!((len.games_at_elo1 - 2.0 * pairs).abs() < 1e-9);
        // This match is far above elo1: measured, the test ends much sooner.
        assert!(len.games_at_score < len.games_at_elo1);
        // A suite with less variance per pair: a higher nElo and a shorter test.
        let tight = Resolution::of(&Pentanomial([5, 20, 50, 30, 15]));
        assert!(tight.variance_per_pair < r.variance_per_pair);
        assert!(tight.nelo.value > r.nelo.value);
        assert!(SprtLength::of(&t, &tight).games_at_elo1 < len.games_at_elo1);
    }
}
