//! SPSA as fishtest runs it: which parameters are tuned (with their own
//! bounds, `c_end` and `r_end`), the gain schedules, the random +-1
//! perturbation of an iteration and the step taken from its result.
//!
//! Fishtest's schedule, for N iterations and iteration k = 0, 1, ...:
//! `c_k = c_end * N^gamma / (k+1)^gamma`,
//! `a_k = r_end * c_end^2 * (A+N)^alpha / (A+k+1)^alpha`,
//! the engines play `theta +- c_k * flip`, and
//! `theta += a_k / c_k * result * flip` with `result` = wins - losses of
//! `theta + c_k * flip` over the iteration's games.

use std::collections::HashSet;

use anyhow::{bail, Context, Result};
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

/// Reads a parameter file: TOML, one entry per parameter to tune,
/// `name = { c_end = 20, r_end = 0.002, min = 150, max = 600 }` (every key
/// optional; `{}` takes the defaults). A name ending in `*` selects every
/// parameter with that prefix (`pst_knight_mg_* = {}`). Unknown names, keys
/// or bounds outside the parameter's own range are errors.
pub fn read_param_file(text: &str, start: &Weights) -> Result<Vec<TuneParam>> {
    select_params(text, &all_params(start), false, &|key| {
        format!("unknown parameter {key:?} (`learnbook weights` lists them all)")
    })
}

/// Reads a parameter file (as [`read_param_file`]) choosing among `all`;
/// `unknown` words the error for a name that selects nothing. With
/// `ignore_case` names match whatever their case (UCI option names).
pub fn select_params(
    text: &str,
    all: &[TuneParam],
    ignore_case: bool,
    unknown: &dyn Fn(&str) -> String,
) -> Result<Vec<TuneParam>> {
    let table: toml::Table = text.parse().context("not valid TOML")?;
    let fold = |s: &str| {
        if ignore_case {
            s.to_ascii_lowercase()
        } else {
            s.to_string()
        }
    };
    let mut chosen: Vec<TuneParam> = Vec::new();
    let mut seen = HashSet::new();
    for (key, value) in &table {
        let Some(opts) = value.as_table() else {
            bail!("{key}: expected a table such as {{ c_end = 10, r_end = 0.002 }}, found {value}");
        };
        let matches: Vec<&TuneParam> = match key.strip_suffix('*') {
            Some(prefix) => all
                .iter()
                .filter(|p| fold(&p.name).starts_with(&fold(prefix)))
                .collect(),
            None => all.iter().filter(|p| fold(&p.name) == fold(key)).collect(),
        };
        if matches.is_empty() {
            bail!("{}", unknown(key));
        }
        for base in matches {
            // The key names the parameter, unless it is a prefix with `*`.
            let p = apply_options(base.clone(), opts).map_err(|e| {
                if fold(key) == fold(&base.name) {
                    e
                } else {
                    e.context(key.clone())
                }
            })?;
            if !seen.insert(p.index) {
                bail!("{} is selected twice", p.name);
            }
            chosen.push(p);
        }
    }
    if chosen.is_empty() {
        bail!("the parameter file selects no parameter");
    }
    chosen.sort_by_key(|p| p.index);
    Ok(chosen)
}

fn apply_options(mut p: TuneParam, opts: &toml::Table) -> Result<TuneParam> {
    let (range_min, range_max) = (p.min, p.max);
    for (k, v) in opts {
        let x = v
            .as_float()
            .or_else(|| v.as_integer().map(|i| i as f64))
            .with_context(|| format!("{}: {k}: expected a number, found {v}", p.name))?;
        match k.as_str() {
            "c_end" => p.c_end = x,
            "r_end" => p.r_end = x,
            "min" => p.min = x,
            "max" => p.max = x,
            other => bail!("{}: unknown key {other:?} (c_end, r_end, min, max)", p.name),
        }
    }
    // Written so that nan (TOML has it) fails too.
    if !(range_min <= p.min && p.min <= p.max && p.max <= range_max) {
        bail!(
            "{}: bounds [{}, {}] are outside the parameter's range [{range_min}, {range_max}]",
            p.name,
            p.min,
            p.max
        );
    }
    if !(p.min <= p.start && p.start <= p.max) {
        bail!(
            "{}: the start value {} is outside the bounds [{}, {}]",
            p.name,
            p.start,
            p.min,
            p.max
        );
    }
    let positive = |x: f64| x > 0.0 && x.is_finite();
    if !positive(p.c_end) || !positive(p.r_end) {
        bail!("{}: c_end and r_end must be positive", p.name);
    }
    Ok(p)
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
    fn param_file_selects_and_validates() {
        let w = Weights::default();
        let ps =
            read_param_file("knight_mg = { c_end = 15 }\n\"pst_knight_mg_*\" = {}\n", &w).unwrap();
        assert_eq!(ps.len(), 33);
        assert_eq!(ps[0].name, "knight_mg");
        assert_eq!(ps[0].c_end, 15.0);
        assert_eq!(ps[0].r_end, R_END);
        for bad in [
            "knight_mgx = {}",
            "knight_mg = { c_end = 0 }",
            "knight_mg = { min = 100 }",
            "knight_mg = { max = 700 }",
            "knight_mg = { step = 3 }",
            "knight_mg = 3",
            "knight_mg = {}\n\"knight_*\" = {}",
        ] {
            assert!(read_param_file(bad, &w).is_err(), "{bad}");
        }
    }

    /// Every message names the parameter, once (the fuzzer's error list
    /// showed `min: expected a number` with no name, and names twice).
    #[test]
    fn a_parameter_file_error_names_the_parameter_once() {
        let w = Weights::default();
        for (text, want) in [
            (
                "knight_mg = { min = [] }",
                "knight_mg: min: expected a number, found []",
            ),
            (
                "knight_mg = { step = 1 }",
                "knight_mg: unknown key \"step\"",
            ),
            (
                "knight_mg = { c_end = 0 }",
                "knight_mg: c_end and r_end must be positive",
            ),
            ("\"knight_*\" = { c_end = 0 }", "knight_*: knight_mg: c_end"),
        ] {
            let err = format!("{:#}", read_param_file(text, &w).map(|_| ()).unwrap_err());
            assert!(err.starts_with(want), "{text}: {err}");
        }
    }

    /// TOML has nan: `min = nan` passed every comparison of the bounds
    /// check and made the first step panic in `f64::clamp`.
    #[test]
    fn a_parameter_file_with_nan_bounds_is_refused_not_a_panic() {
        let w = Weights::default();
        for bad in [
            "knight_mg = { min = nan }",
            "knight_mg = { max = nan }",
            "knight_mg = { min = -nan, max = nan }",
            "knight_mg = { min = -inf }",
        ] {
            let err = read_param_file(bad, &w).map(|_| ()).unwrap_err();
            assert!(format!("{err:#}").contains("bounds"), "{bad}: {err:#}");
        }
    }

    #[test]
    fn a_winning_plus_side_moves_theta_towards_it() {
        let w = Weights::default();
        let params = read_param_file("knight_mg = {}\nrook_mg = {}", &w).unwrap();
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
