//! Match statistics: Elo with 95% error bars, likelihood of superiority,
//! pentanomial counts of game pairs, and the generalized SPRT as fishtest
//! and fastchess use it (normal approximation of the log-likelihood ratio).

/// Results from one player's point of view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wdl {
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
}

/// Counts of game pairs (same opening, colours swapped) by the pair's
/// score: 0, 0.5, 1, 1.5, 2 points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pentanomial(pub [u32; 5]);

/// The Elo difference that gives the expected `score` (0..1).
pub fn elo_from_score(score: f64) -> f64 {
    let s = score.clamp(1e-9, 1.0 - 1e-9);
    -400.0 * (1.0 / s - 1.0).log10()
}

/// The expected score of a player `elo` points stronger.
pub fn score_from_elo(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// Error function (Abramowitz-Stegun 7.1.26, |error| < 1.5e-7).
fn erf(x: f64) -> f64 {
    let sign = if x < 0.0 { -1.0 } else { 1.0 };
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    sign * y
}

/// Elo, its 95% interval, and the rest of a match summary.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    pub games: u32,
    pub score: f64,
    pub elo: f64,
    pub elo_low: f64,
    pub elo_high: f64,
    /// Likelihood of superiority, 0..1.
    pub los: f64,
    pub draw_ratio: f64,
}

impl Wdl {
    pub fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    pub fn add(&mut self, score: f64) {
        if score > 0.75 {
            self.wins += 1;
        } else if score < 0.25 {
            self.losses += 1;
        } else {
            self.draws += 1;
        }
    }

    pub fn summary(&self) -> Summary {
        let n = self.games().max(1) as f64;
        let (w, d, l) = (self.wins as f64, self.draws as f64, self.losses as f64);
        let score = (w + 0.5 * d) / n;
        let var = (w * (1.0 - score).powi(2) + d * (0.5 - score).powi(2) + l * score.powi(2)) / n;
        let margin = 1.959_964 * (var / n).sqrt();
        let los = if w + l > 0.0 {
            0.5 * (1.0 + erf((w - l) / (2.0 * (w + l)).sqrt()))
        } else {
            0.5
        };
        Summary {
            games: self.games(),
            score,
            elo: elo_from_score(score),
            elo_low: elo_from_score(score - margin),
            elo_high: elo_from_score(score + margin),
            los,
            draw_ratio: d / n,
        }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "score {:.1}%, Elo {:+.1} (95%: {:+.1} .. {:+.1}), LOS {:.1}%, draws {:.1}%",
            100.0 * self.score,
            self.elo,
            self.elo_low,
            self.elo_high,
            100.0 * self.los,
            100.0 * self.draw_ratio
        )
    }
}

impl Pentanomial {
    /// Adds a pair from its two game scores.
    pub fn add_pair(&mut self, a: f64, b: f64) {
        let i = ((a + b) * 2.0).round().clamp(0.0, 4.0) as usize;
        self.0[i] += 1;
    }

    pub fn pairs(&self) -> u32 {
        self.0.iter().sum()
    }

    /// `(pairs, mean, variance)` of a pair's score divided by 2 (0, 0.25,
    /// .. 1), as fishtest's LLRcalc counts them: an empty class counts 0.001
    /// pairs, so that a match of identical pairs still has a (tiny) variance
    /// and its normalized Elo is defined.
    pub fn pair_moments(&self) -> (f64, f64, f64) {
        let counts = self.0.map(|c| if c == 0 { 1e-3 } else { f64::from(c) });
        let n: f64 = counts.iter().sum();
        let x = |i: usize| i as f64 / 4.0;
        let mean = counts
            .iter()
            .enumerate()
            .map(|(i, c)| c * x(i))
            .sum::<f64>()
            / n;
        let var = counts
            .iter()
            .enumerate()
            .map(|(i, c)| c * (x(i) - mean).powi(2))
            .sum::<f64>()
            / n;
        (n, mean, var)
    }
}

/// The generalized SPRT between `elo0` and `elo1` (logistic Elo).
#[derive(Clone, Copy, Debug)]
pub struct Sprt {
    pub elo0: f64,
    pub elo1: f64,
    pub alpha: f64,
    pub beta: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SprtState {
    Continue,
    /// H1 accepted: the gain is at least elo1.
    AcceptH1,
    /// H0 accepted: the gain is at most elo0.
    AcceptH0,
}

impl Sprt {
    /// (lower, upper) bounds of the log-likelihood ratio.
    pub fn bounds(&self) -> (f64, f64) {
        (
            (self.beta / (1.0 - self.alpha)).ln(),
            ((1.0 - self.beta) / self.alpha).ln(),
        )
    }

    /// The LLR from outcomes with `probs[i]` frequency of score `scores[i]`.
    fn llr(&self, scores: &[f64], counts: &[u32]) -> f64 {
        let n: f64 = counts.iter().map(|&c| c as f64).sum();
        if n == 0.0 {
            return 0.0;
        }
        let max = *scores.last().unwrap_or(&1.0);
        let mean = scores
            .iter()
            .zip(counts)
            .map(|(s, &c)| s / max * c as f64)
            .sum::<f64>()
            / n;
        let var = scores
            .iter()
            .zip(counts)
            .map(|(s, &c)| (s / max - mean).powi(2) * c as f64)
            .sum::<f64>()
            / n;
        if var <= 0.0 {
            return 0.0;
        }
        let (s0, s1) = (score_from_elo(self.elo0), score_from_elo(self.elo1));
        // Normal approximation: LLR = n (s1 - s0)(2 mean - s0 - s1) / (2 var).
        n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * var)
    }

    pub fn llr_trinomial(&self, r: &Wdl) -> f64 {
        self.llr(&[0.0, 0.5, 1.0], &[r.losses, r.draws, r.wins])
    }

    pub fn llr_pentanomial(&self, p: &Pentanomial) -> f64 {
        self.llr(&[0.0, 0.5, 1.0, 1.5, 2.0], &p.0)
    }

    pub fn state(&self, llr: f64) -> SprtState {
        let (lo, hi) = self.bounds();
        if llr >= hi {
            SprtState::AcceptH1
        } else if llr <= lo {
            SprtState::AcceptH0
        } else {
            SprtState::Continue
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elo_of_known_scores() {
        assert!((elo_from_score(0.5)).abs() < 1e-9);
        assert!((elo_from_score(0.75) - 190.85).abs() < 0.01);
        assert!((score_from_elo(elo_from_score(0.6)) - 0.6).abs() < 1e-12);
    }

    #[test]
    fn summary_error_bars_and_los() {
        let r = Wdl {
            wins: 60,
            draws: 20,
            losses: 20,
        };
        let s = r.summary();
        assert!((s.score - 0.7).abs() < 1e-12);
        assert!(s.elo_low < s.elo && s.elo < s.elo_high);
        // sd of one game's score: sqrt((60*0.09 + 20*0.04 + 20*0.49)/100) = 0.4
        let margin = 1.959_964 * 0.4 / 10.0;
        assert!((s.elo_high - elo_from_score(0.7 + margin)).abs() < 1e-9);
        assert!(s.los > 0.999);
        let even = Wdl {
            wins: 10,
            draws: 5,
            losses: 10,
        }
        .summary();
        assert!((even.los - 0.5).abs() < 1e-9);
        assert!((erf(1.0) - 0.842_700_79).abs() < 1e-6);
    }

    #[test]
    fn pair_moments_of_known_counts() {
        // fishtest's example: pairs [39, 2226, 31451, 2412, 40] (no empty class).
        let (n, mean, var) = Pentanomial([39, 2226, 31451, 2412, 40]).pair_moments();
        assert_eq!(n, 36168.0);
        assert!((mean - 0.501_299_491).abs() < 1e-9);
        assert!((var - 0.008_559_056).abs() < 1e-9);
        // Pair scores 1, 1, 1.5, 1.5: mean 0.625, each 0.125 from it; the
        // three empty classes add 0.001 pairs each.
        let (n, mean, var) = Pentanomial([0, 0, 2, 2, 0]).pair_moments();
        assert!((n - 4.003).abs() < 1e-12);
        assert!((mean - 0.625).abs() < 1e-3 && (var - 0.015_625).abs() < 1e-3);
        // All pairs 1-1: the mean is exactly even, the variance tiny but not 0.
        let (_, mean, var) = Pentanomial([0, 0, 10, 0, 0]).pair_moments();
        assert!((mean - 0.5).abs() < 1e-12 && var > 0.0 && var < 1e-4);
    }

    #[test]
    fn sprt_decides_clear_cases() {
        let sprt = Sprt {
            elo0: 0.0,
            elo1: 10.0,
            alpha: 0.05,
            beta: 0.05,
        };
        let (lo, hi) = sprt.bounds();
        assert!((hi - 2.944).abs() < 0.001 && (lo + 2.944).abs() < 0.001);
        let strong = Wdl {
            wins: 600,
            draws: 300,
            losses: 300,
        };
        assert_eq!(sprt.state(sprt.llr_trinomial(&strong)), SprtState::AcceptH1);
        let weak = Wdl {
            wins: 300,
            draws: 300,
            losses: 600,
        };
        assert_eq!(sprt.state(sprt.llr_trinomial(&weak)), SprtState::AcceptH0);
        let few = Wdl {
            wins: 3,
            draws: 2,
            losses: 2,
        };
        assert_eq!(sprt.state(sprt.llr_trinomial(&few)), SprtState::Continue);
        let mut p = Pentanomial::default();
        for _ in 0..200 {
            p.add_pair(1.0, 0.5);
        }
        for _ in 0..100 {
            p.add_pair(0.5, 0.0);
        }
        assert_eq!(p.pairs(), 300);
        assert_eq!(p.0, [0, 100, 0, 200, 0]);
        assert_eq!(sprt.state(sprt.llr_pentanomial(&p)), SprtState::AcceptH1);
    }
}
