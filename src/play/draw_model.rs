//! The BayesElo draw model behind `bench suite`'s ceiling: how much any
//! opening suite could raise the resolution of a match between these two
//! engines. In the model (Rémi Coulom's BayesElo) a game between a player
//! ahead by `x` Elo (its strength gap plus the opening's bias towards its
//! colour) is won with probability `f(x - draw_elo)` and lost with
//! `f(-x - draw_elo)`, `f` the logistic Elo curve. A suite changes only the
//! bias; the engines fix the gap and the draw Elo. Fishtest's finding that
//! a book's draw ratio is what matters, best near 50% (Michel Van den
//! Bergh, "draw_ratio_to_normalized_elo"), is this model's.

use serde::Serialize;

use super::{
    resolution::NELO_PER_NT,
    stats::{elo_from_score, score_from_elo},
};

/// A match's fitted model, in Elo.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DrawModel {
    /// The first player's strength over the second's.
    pub gap: f64,
    /// How far White is ahead, on average over the suite's openings.
    pub bias: f64,
    pub draw_elo: f64,
}

/// Wins, draws and losses of the first player with one colour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ColourWdl {
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
}

impl ColourWdl {
    pub fn add(&mut self, score: f64) {
        if score > 0.75 {
            self.wins += 1;
        } else if score < 0.25 {
            self.losses += 1;
        } else {
            self.draws += 1;
        }
    }

    /// `(F(win rate), F(loss rate))`, `F` the Elo of a probability; half a
    /// game added to each count so that no rate is 0 or 1.
    fn logits(&self) -> (f64, f64) {
        let n = f64::from(self.wins + self.draws + self.losses) + 1.5;
        let elo = |k: u32| elo_from_score((f64::from(k) + 0.5) / n);
        (elo(self.wins), elo(self.losses))
    }
}

/// What the model says of one match and of the best suite for its engines.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Ceiling {
    pub model: DrawModel,
    /// The model's nElo and draw rate for this suite's bias.
    pub nelo_here: f64,
    pub draws_here: f64,
    /// The bias that gives the highest nElo with these engines, its nElo
    /// and draw rate.
    pub best_bias: f64,
    pub best_nelo: f64,
    pub best_draws: f64,
}

impl Ceiling {
    /// At most this many times the suite's nElo, for any suite; `None`
    /// for engines the model finds level (no suite resolves them).
    pub fn gain(&self) -> Option<f64> {
        let gain = self.best_nelo / self.nelo_here;
        (self.model.gap.abs() >= 0.5 && gain.is_finite()).then_some(gain)
    }
}

impl DrawModel {
    /// Fitted to the first player's results with White and with Black
    /// (each colour's win and loss rates give gap ± bias and the draw Elo;
    /// the two draw Elos are averaged by games).
    pub fn fit(white: &ColourWdl, black: &ColourWdl) -> Option<DrawModel> {
        let games = |c: &ColourWdl| f64::from(c.wins + c.draws + c.losses);
        let (nw, nb) = (games(white), games(black));
        if nw == 0.0 || nb == 0.0 {
            return None;
        }
        let (ww, lw) = white.logits();
        let (wb, lb) = black.logits();
        let ahead_white = (ww - lw) / 2.0;
        let ahead_black = (wb - lb) / 2.0;
        let draw_white = -(ww + lw) / 2.0;
        let draw_black = -(wb + lb) / 2.0;
        Some(DrawModel {
            gap: (ahead_white + ahead_black) / 2.0,
            bias: (ahead_white - ahead_black) / 2.0,
            draw_elo: (draw_white * nw + draw_black * nb) / (nw + nb),
        })
    }

    /// `(win, draw, loss)` of the first player when it is ahead by `x`.
    fn game(&self, x: f64) -> [f64; 3] {
        let win = score_from_elo(x - self.draw_elo);
        let loss = score_from_elo(-x - self.draw_elo);
        [win, (1.0 - win - loss).max(0.0), loss]
    }

    /// The probabilities of a pair's scores 0, 0.5, .., 2 (the first
    /// player White, then Black, from an opening of bias `bias`).
    pub fn pentanomial(&self, bias: f64) -> [f64; 5] {
        let white = self.game(self.gap + bias);
        let black = self.game(self.gap - bias);
        let mut p = [0.0; 5];
        // Index of a game's score in half points: win 2, draw 1, loss 0.
        for (i, a) in white.iter().enumerate() {
            for (j, b) in black.iter().enumerate() {
                p[(2 - i) + (2 - j)] += a * b;
            }
        }
        p
    }

    /// nElo and draw rate of a long match from openings of bias `bias`.
    pub fn nelo(&self, bias: f64) -> (f64, f64) {
        let p = self.pentanomial(bias);
        let mean: f64 = p.iter().enumerate().map(|(k, q)| q * k as f64 / 4.0).sum();
        let var: f64 = p
            .iter()
            .enumerate()
            .map(|(k, q)| q * (k as f64 / 4.0 - mean).powi(2))
            .sum();
        let draws = (self.game(self.gap + bias)[1] + self.game(self.gap - bias)[1]) / 2.0;
        ((mean - 0.5) / (2.0 * var).sqrt() * NELO_PER_NT, draws)
    }

    /// This match's ceiling: the model's nElo here and at the best bias
    /// (the largest in the gap's direction, searched in 1-Elo steps up to
    /// 1,500; a bias towards Black is the same by symmetry).
    pub fn ceiling(&self) -> Ceiling {
        let (nelo_here, draws_here) = self.nelo(self.bias);
        let sign = if self.gap < 0.0 { -1.0 } else { 1.0 };
        let (mut best_bias, mut best_draws) = (0.0, 0.0);
        let mut best_nelo = f64::NEG_INFINITY * sign;
        for b in 0..=1500 {
            let bias = f64::from(b);
            let (n, d) = self.nelo(bias);
            if n * sign > best_nelo * sign {
                (best_bias, best_nelo, best_draws) = (bias, n, d);
            }
        }
        Ceiling {
            model: *self,
            nelo_here,
            draws_here,
            best_bias,
            best_nelo,
            best_draws,
        }
    }

    /// The draw Elo the engines would need (the gap kept) for the best
    /// suite to give `gain` times a balanced suite's nElo; `None` if none
    /// up to 2,000 does. The suite does not change it: stronger engines
    /// (more time or nodes) draw more.
    pub fn draw_elo_for_gain(&self, gain: f64) -> Option<f64> {
        (0..=400).map(|k| f64::from(k) * 5.0).find(|&draw_elo| {
            let m = DrawModel {
                bias: 0.0,
                draw_elo,
                ..*self
            };
            m.ceiling().gain().is_some_and(|g| g >= gain)
        })
    }
}

/// The draw rate of two equal engines from balanced openings at `draw_elo`.
pub fn level_draw_rate(draw_elo: f64) -> f64 {
    1.0 - 2.0 * score_from_elo(-draw_elo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::play::resolution::Resolution;
    use crate::play::stats::Pentanomial;

    /// Counts in proportion to the model's probabilities, `n` games a colour.
    fn counts(m: &DrawModel, n: f64) -> (ColourWdl, ColourWdl) {
        let c = |x: f64| {
            let [w, d, l] = m.game(x);
            ColourWdl {
                wins: (w * n).round() as u32,
                draws: (d * n).round() as u32,
                losses: (l * n).round() as u32,
            }
        };
        (c(m.gap + m.bias), c(m.gap - m.bias))
    }

    #[test]
    fn the_fit_recovers_the_model_that_made_the_counts() {
        let truth = DrawModel {
            gap: 120.0,
            bias: 80.0,
            draw_elo: 300.0,
        };
        let (white, black) = counts(&truth, 1e7);
        let fit = DrawModel::fit(&white, &black).expect("both colours played");
        assert!((fit.gap - truth.gap).abs() < 0.5, "{fit:?}");
        assert!((fit.bias - truth.bias).abs() < 0.5, "{fit:?}");
        assert!((fit.draw_elo - truth.draw_elo).abs() < 0.5, "{fit:?}");
        assert_eq!(DrawModel::fit(&white, &ColourWdl::default()), None);
    }

    #[test]
    fn model_nelo_is_what_bench_suite_computes_from_the_same_pairs() {
        let m = DrawModel {
            gap: 60.0,
            bias: 150.0,
            draw_elo: 250.0,
        };
        let p = m.pentanomial(m.bias);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // A million pairs in the model's proportions.
        let pairs = Pentanomial(p.map(|q| (q * 1e6).round() as u32));
        let measured = Resolution::of(&pairs).nelo.value;
        let (model, _) = m.nelo(m.bias);
        assert!(
            (measured - model).abs() < 0.05 * model.abs(),
            "{measured} {model}"
        );
    }

    #[test]
    fn unbalanced_suites_pay_only_where_balanced_ones_draw_much() {
        // About half the games drawn from balanced openings: the best
        // suite is the balanced one, or hardly better.
        let even = DrawModel {
            gap: 20.0,
            bias: 0.0,
            draw_elo: 190.0,
        };
        let c = even.ceiling();
        assert!((0.45..0.55).contains(&c.draws_here), "{c:?}");
        assert!(c.gain().expect("a gap") < 1.02, "{c:?}");
        // Nine draws in ten: a biased suite that draws half as often
        // resolves the match far better.
        let drawish = DrawModel {
            draw_elo: 600.0,
            ..even
        };
        let c = drawish.ceiling();
        assert!(c.draws_here > 0.85, "{c:?}");
        assert!(c.gain().expect("a gap") > 1.5, "{c:?}");
        // The weaker engine first: the same ceiling, nElo negative.
        let behind = DrawModel {
            gap: -drawish.gap,
            ..drawish
        }
        .ceiling();
        assert!((behind.best_nelo + c.best_nelo).abs() < 1e-9, "{behind:?}");
        let (g1, g2) = (behind.gain().expect("a gap"), c.gain().expect("a gap"));
        assert!((g1 - g2).abs() < 1e-9, "{g1} {g2}");
        let level = DrawModel { gap: 0.0, ..even }.ceiling();
        assert_eq!(level.gain(), None);
        assert!((0.4..0.6).contains(&c.best_draws), "{c:?}");
        // The draw Elo a 1.2 x gain needs lies between.
        let needed = even.draw_elo_for_gain(1.2).expect("reachable");
        assert!(needed > 190.0 && needed < 600.0, "{needed}");
        let at = DrawModel {
            draw_elo: needed,
            ..even
        };
        assert!(at.ceiling().gain().expect("a gap") >= 1.2);
        let below = DrawModel {
            draw_elo: needed - 5.0,
            ..even
        };
        assert!(below.ceiling().gain().expect("a gap") < 1.2);
        assert!((level_draw_rate(190.0) - 0.5).abs() < 0.02);
    }
}
