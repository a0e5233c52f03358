//! SPSA as fishtest runs it: which parameters are tuned (with their own
//! bounds, `c_end` and `r_end`; the files that choose them are read in
//! [`super::paramfile`]), the gain schedules, the random +-1 perturbation
//! of an iteration and the step taken from its result.
//!
//! Fishtest's schedule, for N iterations and iteration k = 0, 1, ...:
//! `c_k = c_end * N^gamma / (k+1)^gamma`,
//! `a_k = r_end * c_end^2 * (A+N)^alpha / (A+k+1)^alpha`,
//! the engines play `theta +- c_k * flip`, and
//! `theta += a_k / c_k * result * flip` with `result` = wins - losses of
//! `theta + c_k * flip` over the iteration's games.

use rand::{rngs::StdRng, Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::engine::params::Weights;

/// One tuned parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneParam {
    pub name: String,
    /// Its position in [`Weights::params`].
    pub index: usize,
    pub start: f64,
    pub min: f64,
    pub max: f64,
    /// The perturbation at the last iteration.
    pub c_end: f64,
    /// The learning rate at the last iteration (`a_end / c_end^2`).
    pub r_end: f64,
}

/// fishtest's default final learning rate.
pub const R_END: f64 = 0.002;

/// The default final perturbation: a twentieth of the range, at least 2
/// (a perturbation under 1 would round to nothing).
fn default_c_end(min: f64, max: f64) -> f64 {
    ((max - min) / 20.0).max(2.0)
}

/// A parameter with the default `c_end` and `r_end` over its whole range.
pub fn default_param(name: &str, index: usize, start: f64, min: f64, max: f64) -> TuneParam {
    TuneParam {
        name: name.to_string(),
        index,
        start,
        min,
        max,
        c_end: default_c_end(min, max),
        r_end: R_END,
    }
}

/// Every parameter of `start`, with the default `c_end` and `r_end`.
pub fn all_params(start: &Weights) -> Vec<TuneParam> {
    start
        .params()
        .into_iter()
        .enumerate()
        .map(|(index, p)| {
            default_param(
                &p.name,
                index,
                f64::from(p.value),
                f64::from(p.min),
                f64::from(p.max),
            )
        })
        .collect()
}

/// The gain schedule over `iterations` iterations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    pub iterations: u64,
    /// Stability constant, about a tenth of the iterations.
    pub big_a: f64,
    pub alpha: f64,
    pub gamma: f64,
}

impl Schedule {
    pub fn new(iterations: u64) -> Schedule {
        Schedule {
            iterations,
            big_a: (iterations as f64 / 10.0).round(),
            alpha: 0.602,
            gamma: 0.101,
        }
    }

    /// `(c_k, a_k / c_k)` of `p` at iteration `k` (0-based): the
    /// perturbation and the step per unit of result.
    pub fn gains(&self, p: &TuneParam, k: u64) -> (f64, f64) {
        let n = self.iterations as f64;
        let c = p.c_end * n.powf(self.gamma);
        let a = p.r_end * p.c_end * p.c_end * (self.big_a + n).powf(self.alpha);
        // Every tuned number is an integer: a perturbation under half a
        // unit would round to nothing (OpenBench keeps c at least 0.5).
        let c_k = (c / (k as f64 + 1.0).powf(self.gamma)).max(0.5);
        let a_k = a / (self.big_a + k as f64 + 1.0).powf(self.alpha);
        (c_k, a_k / c_k)
    }
}

/// The random stream of iteration `k`: a function of the seed and `k` alone,
/// so an iteration replays the same way after a resume, on any thread.
pub fn iteration_rng(seed: u64, k: u64) -> StdRng {
    // splitmix64 of (seed, k): distinct, well-mixed seeds per iteration.
    let mut z = seed ^ k.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    StdRng::seed_from_u64(z ^ (z >> 31))
}

/// A random +-1 per parameter.
pub fn flips(rng: &mut StdRng, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 })
        .collect()
}

/// `x` rounded to an integer at random, up with probability its fraction
/// (OpenBench's stochastic rounding): the expected value is `x` itself, so a
/// perturbation smaller than one unit still moves the engine on average.
pub fn round_stochastic(rng: &mut StdRng, x: f64) -> f64 {
    let floor = x.floor();
    if rng.random::<f64>() < x - floor {
        floor + 1.0
    } else {
        floor
    }
}

/// The weights an engine plays with: `base` with the tuned numbers rounded.
pub fn weights_at(base: &Weights, params: &[TuneParam], theta: &[f64]) -> Weights {
    let mut values = base.values();
    for (p, &t) in params.iter().zip(theta) {
        if let Some(v) = values.get_mut(p.index) {
            *v = t.clamp(p.min, p.max).round() as i32;
        }
    }
    let mut w = base.clone();
    w.set_values(&values);
    w
}

/// `theta +- c_k * flip`, clamped to the bounds: the two engines of an iteration.
pub fn perturbed(
    schedule: &Schedule,
    params: &[TuneParam],
    theta: &[f64],
    flip: &[f64],
    k: u64,
) -> (Vec<f64>, Vec<f64>) {
    let mut plus = Vec::with_capacity(params.len());
    let mut minus = Vec::with_capacity(params.len());
    for ((p, &t), &f) in params.iter().zip(theta).zip(flip) {
        let (c_k, _) = schedule.gains(p, k);
        plus.push((t + c_k * f).clamp(p.min, p.max));
        minus.push((t - c_k * f).clamp(p.min, p.max));
    }
    (plus, minus)
}

/// The SPSA step after iteration `k` scored `result` (wins - losses of the plus side).
pub fn step(
    schedule: &Schedule,
    params: &[TuneParam],
    theta: &mut [f64],
    flip: &[f64],
    k: u64,
    result: f64,
) {
    for ((p, t), &f) in params.iter().zip(theta.iter_mut()).zip(flip) {
        let (_, r) = schedule.gains(p, k);
        *t = (*t + r * result * f).clamp(p.min, p.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gains_end_at_c_end_and_r_end() {
        let s = Schedule::new(1000);
        let p = &all_params(&Weights::default())[0];
        let (c, step) = s.gains(p, 999);
        assert!((c - p.c_end).abs() < 1e-9, "{c} vs {}", p.c_end);
        // a_end / c_end = r_end * c_end
        assert!((step - p.r_end * p.c_end).abs() < 1e-9);
        let (c0, step0) = s.gains(p, 0);
        assert!(c0 > c && step0 > step, "gains decrease");
    }

    #[test]
    fn stochastic_rounding_keeps_the_mean_and_lands_on_neighbours() {
        let mut rng = iteration_rng(7, 0);
        let n = 20_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let r = round_stochastic(&mut rng, 3.3);
            assert!(r == 3.0 || r == 4.0, "{r}");
            sum += r;
        }
        let mean = sum / f64::from(n);
        assert!((mean - 3.3).abs() < 0.02, "mean {mean}");
        assert_eq!(round_stochastic(&mut rng, -2.0), -2.0);
    }

    #[test]
    fn the_perturbation_never_falls_below_half_a_unit() {
        let s = Schedule::new(1000);
        let mut p = all_params(&Weights::default())[0].clone();
        p.c_end = 0.1;
        let (c, _) = s.gains(&p, 999);
        assert_eq!(c, 0.5);
    }

    #[test]
    fn a_winning_plus_side_moves_theta_towards_it() {
        let w = Weights::default();
        let params =
            crate::tune::paramfile::toml::read_param_file("knight_mg = {}\nrook_mg = {}", &w)
                .unwrap();
        let s = Schedule::new(100);
        let mut theta: Vec<f64> = params.iter().map(|p| p.start).collect();
        let flip = [1.0, -1.0];
        let (plus, minus) = perturbed(&s, &params, &theta, &flip, 0);
        assert!(plus[0] > theta[0] && plus[1] < theta[1]);
        assert!(minus[0] < theta[0] && minus[1] > theta[1]);
        let start = theta.clone();
        step(&s, &params, &mut theta, &flip, 0, 3.0);
        assert!(theta[0] > start[0] && theta[1] < start[1]);
        let tuned = weights_at(&w, &params, &theta);
        assert_eq!(tuned.knight_mg, theta[0].round() as i32);
        assert_eq!(tuned.bishop_mg, w.bishop_mg);
    }
}
