//! Texel tuning: fit the evaluation's weights to game results by minimising
//! the logistic loss `mean (target - sigmoid(K * eval))^2` over quiet
//! positions, with Adam on the exact gradient ([`model`]); full batch, so a
//! fit is the same for any number of threads and resumes exactly.

pub mod model;
pub mod samples;

use std::path::Path;

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::checkpoint::{parse_framed, save_framed};
use crate::engine::params::Weights;
use model::Model;
use samples::{Samples, Selection};

/// Rows per parallel chunk: fixed, so that sums are added in one order.
const CHUNK: usize = 8192;
const MAGIC: &str = "learnbook-fit";
const VERSION: u32 = 1;

/// What a fit does (stored in its checkpoint; a resume keeps it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub selection: Selection,
    /// The start weights, every number in [`Weights::params`] order.
    pub start: Vec<i32>,
    /// Indices of the fitted weights.
    pub fitted: Vec<usize>,
    pub epochs: u32,
    /// Adam's step size, centipawns.
    pub learning_rate: f64,
    /// Weight of the penalty `l2 * sum(((x - start) / 100)^2)` that holds
    /// each weight near its start unless the data pulls it away (absent in
    /// checkpoints written before it existed: 0).
    #[serde(default)]
    pub l2: f64,
    /// The data the fit ran on ([`Samples::fingerprint`]).
    pub data: u64,
}

/// A fit in progress.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub settings: Settings,
    /// The scaling constant K, fitted to the start weights.
    pub k: f64,
    pub epoch: u32,
    /// The weights, in real numbers.
    pub x: Vec<f64>,
    m: Vec<f64>,
    v: Vec<f64>,
    /// Loss at the start and after each epoch.
    pub losses: Vec<f64>,
    /// Loss of the held-out positions at the start and after each
    /// report (`(epoch, loss)`; empty without a holdout).
    #[serde(default)]
    pub validation: Vec<(u32, f64)>,
}

fn sigmoid(k: f64, e: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-k * e / 400.0))
}

/// Mean loss, and its gradient if asked, over all rows; chunked in a fixed
/// way and summed in order, so the result does not depend on the threads.
pub fn loss(model: &Model, data: &Samples, x: &[f64], k: f64, gradient: bool) -> (f64, Vec<f64>) {
    let n = model.n_params;
    let parts: Vec<(f64, Vec<f64>)> = data
        .rows
        .par_chunks(CHUNK)
        .map(|rows| {
            let mut grad = if gradient { vec![0.0; n] } else { Vec::new() };
            let mut sum = 0.0;
            for row in rows {
                let terms = data.terms_of(row);
                let e = model.eval(row, terms, x, None);
                let s = sigmoid(k, e);
                let err = f64::from(row.target) - s;
                sum += err * err;
                if gradient {
                    let factor = -2.0 * err * s * (1.0 - s) * k * std::f64::consts::LN_10 / 400.0;
                    model.eval(row, terms, x, Some((&mut grad, factor)));
                }
            }
            (sum, grad)
        })
        .collect();
    let count = data.rows.len().max(1) as f64;
    let mut total = 0.0;
    let mut grad = if gradient { vec![0.0; n] } else { Vec::new() };
    for (s, g) in parts {
        total += s;
        for (a, b) in grad.iter_mut().zip(&g) {
            *a += b;
        }
    }
    grad.iter_mut().for_each(|g| *g /= count);
    (total / count, grad)
}

/// The K that makes the start weights' evaluations fit the labels best
/// (golden-section search on 0.05..=5).
pub fn fit_k(model: &Model, data: &Samples, x: &[f64]) -> f64 {
    let f = |k: f64| loss(model, data, x, k, false).0;
    let (mut a, mut b) = (0.05f64, 5.0f64);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..40 {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = f(d);
        }
    }
    (a + b) / 2.0
}

impl State {
    /// A new fit: K fitted to the start weights, the loss at the start.
    pub fn begin(settings: Settings, model: &Model, data: &Samples) -> State {
        let x: Vec<f64> = settings.start.iter().map(|&v| f64::from(v)).collect();
        let k = fit_k(model, data, &x);
        let start_loss = loss(model, data, &x, k, false).0;
        let n = x.len();
        State {
            settings,
            k,
            epoch: 0,
            x,
            m: vec![0.0; n],
            v: vec![0.0; n],
            losses: vec![start_loss],
            validation: Vec::new(),
        }
    }

    /// One Adam step over the whole data; returns the loss before the step.
    pub fn step(&mut self, model: &Model, data: &Samples, bounds: &[(f64, f64)]) -> f64 {
        let (l, grad) = loss(model, data, &self.x, self.k, true);
        let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-8);
        self.epoch += 1;
        let t = self.epoch as i32;
        let lr = self.settings.learning_rate;
        let l2 = self.settings.l2;
        for &i in &self.settings.fitted {
            // Adam scales every gradient to a step of about `lr`, so a weight
            // that few positions use would drift on their noise alone; the
            // penalty's pull grows with the distance and stops it.
            let g = grad[i] + 2.0 * l2 * (self.x[i] - f64::from(self.settings.start[i])) / 1e4;
            self.m[i] = b1 * self.m[i] + (1.0 - b1) * g;
            self.v[i] = b2 * self.v[i] + (1.0 - b2) * g * g;
            let m_hat = self.m[i] / (1.0 - b1.powi(t));
            let v_hat = self.v[i] / (1.0 - b2.powi(t));
            self.x[i] =
                (self.x[i] - lr * m_hat / (v_hat.sqrt() + eps)).clamp(bounds[i].0, bounds[i].1);
        }
        l
    }

    /// The weights rounded to integers (within their bounds).
    pub fn weights(&self) -> Weights {
        let mut w = Weights::default();
        let v: Vec<i32> = self.x.iter().map(|x| x.round() as i32).collect();
        w.set_values(&v);
        w
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let body = serde_json::to_string(self).context("cannot serialize the fit")?;
        save_framed(path, MAGIC, VERSION, &body)
    }

    pub fn load(path: &Path) -> Result<State> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read checkpoint {}", path.display()))?;
        let state: State = parse_framed(&text, MAGIC, VERSION)
            .and_then(|body| serde_json::from_str(body).context("bad fit state"))
            .with_context(|| format!("corrupt checkpoint {}", path.display()))?;
        let n = Weights::default().params().len();
        if state.x.len() != n
            || state.m.len() != n
            || state.v.len() != n
            || state.settings.start.len() != n
            || state.settings.fitted.iter().any(|&i| i >= n)
        {
            bail!("checkpoint {} is for another parameter set", path.display());
        }
        Ok(state)
    }
}

/// The bounds of every weight, as reals.
pub fn bounds() -> Vec<(f64, f64)> {
    Weights::default()
        .params()
        .iter()
        .map(|p| (f64::from(p.min), f64::from(p.max)))
        .collect()
}

/// Indices of the weights named in a parameter file (`name = ...` lines, as
/// `tune --params` reads; the values are not used), or of every evaluation weight.
pub fn fitted_indices(names: Option<&[String]>) -> Result<Vec<usize>> {
    let params = Weights::default().params();
    match names {
        // The search's parameters do not change the evaluation: `tune` (SPSA) reaches them.
        None => Ok((0..params.len())
            .filter(|&i| !params[i].is_search())
            .collect()),
        Some(names) => {
            let mut out = Vec::new();
            for name in names {
                let Some(i) = params.iter().position(|p| &p.name == name) else {
                    bail!("unknown evaluation parameter {name:?}");
                };
                if params[i].is_search() {
                    bail!("{name} is a search parameter: the fit cannot change it (use `tune`)");
                }
                out.push(i);
            }
            if out.is_empty() {
                bail!("the parameter file names no parameter");
            }
            out.sort_unstable();
            out.dedup();
            Ok(out)
        }
    }
}

/// What `learnbook fit` was asked.
pub struct Options {
    pub files: Vec<std::path::PathBuf>,
    /// Start weights: a TOML file or a preset name.
    pub start: String,
    /// Parameter file naming the weights to fit (default: all).
    pub params: Option<std::path::PathBuf>,
    pub out: std::path::PathBuf,
    pub epochs: u32,
    pub learning_rate: f64,
    pub l2: f64,
    pub selection: Selection,
    pub checkpoint: Option<std::path::PathBuf>,
    /// Epochs between checkpoints.
    pub checkpoint_every: u32,
    pub resume: bool,
    pub plot: Option<std::path::PathBuf>,
    /// Print a line every this many epochs (0: none).
    pub report_every: u32,
}

/// How a fit ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Done,
    Interrupted,
}

/// The names in a parameter file: its top-level keys (the `tune --params`
/// format; the values are not needed here).
pub fn read_param_names(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read parameter file {}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("parameter file {} is not valid TOML", path.display()))?;
    Ok(table.keys().cloned().collect())
}

/// Runs (or resumes) a fit; writes `out` at the end (and on Ctrl-C).
pub fn run(opts: &Options) -> Result<(State, Outcome)> {
    let model = Model::new()?;
    let bounds = bounds();
    let (mut state, data) = if opts.resume {
        let Some(ckpt) = &opts.checkpoint else {
            bail!("--resume needs --checkpoint");
        };
        let state = State::load(ckpt)?;
        let mut start = Weights::default();
        start.set_values(&state.settings.start);
        let data = samples::read(&opts.files, &state.settings.selection, &start)?;
        if data.fingerprint() != state.settings.data {
            bail!(
                "the positions differ from those the fit in {} started on (other files?)",
                ckpt.display()
            );
        }
        eprintln!(
            "resuming {} at epoch {} of {}",
            ckpt.display(),
            state.epoch,
            state.settings.epochs
        );
        (state, data)
    } else {
        let start = super::run::load_start(&opts.start)?;
        let names = opts.params.as_deref().map(read_param_names).transpose()?;
        let fitted = fitted_indices(names.as_deref()).with_context(|| {
            format!(
                "in parameter file {}",
                opts.params.as_deref().unwrap_or(Path::new("")).display()
            )
        })?;
        let data = samples::read(&opts.files, &opts.selection, &start)?;
        let settings = Settings {
            selection: opts.selection,
            start: start.values(),
            fitted,
            epochs: opts.epochs,
            learning_rate: opts.learning_rate,
            l2: opts.l2,
            data: data.fingerprint(),
        };
        (State::begin(settings, &model, &data), data)
    };
    eprintln!(
        "{} positions from {} games ({}); K = {:.4}, loss {:.6}",
        data.rows.len(),
        data.games,
        data.skipped.report(),
        state.k,
        state.losses[0]
    );
    // The held-out loss under the same K: lower than at the start means the
    // fit learned something that holds beyond its own games.
    let validate = |state: &mut State| -> Option<f64> {
        let v = data.validation.as_deref()?;
        let l = loss(&model, v, &state.x, state.k, false).0;
        if state
            .validation
            .last()
            .is_none_or(|&(e, _)| e < state.epoch)
        {
            state.validation.push((state.epoch, l));
        }
        Some(l)
    };
    if let Some(l) = validate(&mut state) {
        let v = data.validation.as_deref().map_or(0, |v| v.rows.len());
        eprintln!("{v} held-out positions: validation loss {l:.6}");
    }
    let mut outcome = Outcome::Done;
    while state.epoch < state.settings.epochs {
        if crate::interrupt::interrupted() {
            outcome = Outcome::Interrupted;
            break;
        }
        // `losses[e]` is the loss after e steps; a step computes the loss
        // of the weights it starts from anyway.
        let before = state.step(&model, &data, &bounds);
        if state.losses.len() < state.epoch as usize {
            state.losses.push(before);
        }
        if opts.report_every > 0 && state.epoch % opts.report_every == 0 {
            let held = validate(&mut state)
                .map(|l| format!(", validation {l:.6}"))
                .unwrap_or_default();
            eprintln!(
                "epoch {}/{}: loss {before:.6}{held}",
                state.epoch, state.settings.epochs
            );
        }
        if let Some(ckpt) = &opts.checkpoint {
            if state.epoch % opts.checkpoint_every.max(1) == 0 {
                state.save(ckpt)?;
            }
        }
    }
    let end = loss(&model, &data, &state.x, state.k, false).0;
    state.losses.truncate(state.epoch as usize);
    state.losses.push(end);
    if let Some(l) = validate(&mut state) {
        eprintln!("validation loss {:.6} -> {l:.6}", state.validation[0].1);
    }
    if let Some(ckpt) = &opts.checkpoint {
        state.save(ckpt)?;
    }
    let title = format!(
        "fitted to {} positions, {} epochs, K {:.4}, loss {:.6} -> {:.6}",
        data.rows.len(),
        state.epoch,
        state.k,
        state.losses[0],
        end
    );
    crate::atomic_file::write(&opts.out, state.weights().to_toml(&title).as_bytes())?;
    if let Some(png) = &opts.plot {
        plot_losses(&state, png)?;
    }
    Ok((state, outcome))
}

/// After Ctrl-C: the epoch reached, and how the fit continues (from its
/// `checkpoint`, if it has one).
pub fn interrupted_line(state: &State, checkpoint: Option<&Path>, out: &Path) -> String {
    match checkpoint {
        Some(c) => format!(
            "interrupted at epoch {}; `learnbook fit --resume --checkpoint {} --positions ... --out {}` continues\n",
            state.epoch,
            c.display(),
            out.display()
        ),
        None => format!(
            "interrupted at epoch {} (no --checkpoint: it cannot be resumed)\n",
            state.epoch
        ),
    }
}

/// The weights that moved most, for the summary.
pub fn summary(state: &State) -> String {
    let params = Weights::default().params();
    let mut moved: Vec<(usize, f64)> = state
        .settings
        .fitted
        .iter()
        .map(|&i| (i, state.x[i] - f64::from(state.settings.start[i])))
        .collect();
    moved.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    let mut s = format!(
        "{} epochs; loss {:.6} -> {:.6} (K {:.4}); {} weights fitted, the most changed:\n",
        state.epoch,
        state.losses.first().copied().unwrap_or(f64::NAN),
        state.losses.last().copied().unwrap_or(f64::NAN),
        state.k,
        state.settings.fitted.len()
    );
    for &(i, d) in moved.iter().take(12) {
        s.push_str(&format!(
            "  {:<28} {:>6} -> {:>6}  ({d:+.1})\n",
            params[i].name,
            state.settings.start[i],
            state.x[i].round() as i64
        ));
    }
    s
}

/// The loss per epoch as a PNG.
pub fn plot_losses(state: &State, path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot draw {}: {e}", path.display());
    let points: Vec<(f64, f64)> = state
        .losses
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_finite())
        .map(|(i, &l)| (i as f64, l))
        .collect();
    let (lo, hi) = points
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &(_, l)| (a.min(l), b.max(l)));
    let pad = ((hi - lo) * 0.05).max(1e-6);
    let root = BitMapBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Texel fit: loss per epoch (K {:.3})", state.k),
            (crate::plot::font()?, 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..(state.epoch.max(1)) as f64, (lo - pad)..(hi + pad))
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc("mean squared error")
        .draw()
        .map_err(|e| err(&e))?;
    chart
        .draw_series(LineSeries::new(points, BLUE.stroke_width(2)))
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::eval::{evaluate, trace};
    use shakmaty::{fen::Fen, CastlingMode, Chess, Color, Position as _};

    fn positions() -> Vec<Chess> {
        [
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
            "r2q1rk1/pp2bppp/2n1pn2/3p4/3P4/2NBPN2/PP3PPP/R2Q1RK1 b - - 0 10",
            "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
            "4k3/8/8/8/8/8/8/2B1K3 w - - 0 1",
            "r4rk1/ppp2ppp/8/3q4/3Q4/2N5/PPP2PPP/R4RK1 w - - 0 15",
            "2r3k1/5ppp/p7/1p6/8/P3Q3/1q3PPP/4R1K1 b - - 0 30",
            "6k1/6p1/6Np/4Q3/8/8/5PPP/4r1K1 w - - 0 1",
            "r1b1k2r/ppppqppp/2n2n2/2b1p1N1/2B1P3/8/PPPP1PPP/RNBQK2R w KQkq - 6 5",
            "3qr1k1/pp3ppp/2n5/3Q4/8/2N5/PPP2PPP/3R2K1 w - - 0 20",
        ]
        .iter()
        .map(|f| {
            f.parse::<Fen>()
                .expect("fen")
                .into_position(CastlingMode::Standard)
                .expect("legal")
        })
        .collect()
    }

    #[test]
    fn the_model_is_the_evaluation_in_real_numbers() {
        let model = Model::new().expect("model");
        for w in [
            Weights::default(),
            crate::engine::presets::preset("kaissa").expect("preset").0,
        ] {
            let x: Vec<f64> = w.values().iter().map(|&v| f64::from(v)).collect();
            for pos in positions() {
                let mut terms = Vec::new();
                let row = model::terms_of(&trace(&pos, &w), model.n_params, &mut terms);
                let white = model.eval(&row, &terms, &x, None);
                let stm = if pos.turn() == Color::White {
                    white
                } else {
                    -white
                };
                // Off by the integer rounding of the taper, the king attack and the scaling.
                let e = f64::from(evaluate(&pos, &w));
                assert!(
                    (stm - e).abs() <= 2.0,
                    "{}: model {stm} evaluate {e}",
                    shakmaty::fen::Fen::from_position(&pos, shakmaty::EnPassantMode::Legal)
                );
            }
        }
    }

    #[test]
    fn the_gradient_is_the_derivative() {
        let model = Model::new().expect("model");
        let w = Weights::default();
        let x: Vec<f64> = w.values().iter().map(|&v| f64::from(v)).collect();
        for pos in positions() {
            let mut terms = Vec::new();
            let row = model::terms_of(&trace(&pos, &w), model.n_params, &mut terms);
            let mut grad = vec![0.0; x.len()];
            model.eval(&row, &terms, &x, Some((&mut grad, 1.0)));
            // Central differences on every weight, as a check of the exact gradient.
            for i in 0..x.len() {
                let mut up = x.clone();
                let mut down = x.clone();
                up[i] += 0.5;
                down[i] -= 0.5;
                let numeric =
                    model.eval(&row, &terms, &up, None) - model.eval(&row, &terms, &down, None);
                assert!(
                    (numeric - grad[i]).abs() < 1e-6 * (1.0 + numeric.abs()) + 0.05,
                    "weight {i}: exact {} numeric {numeric}",
                    grad[i]
                );
            }
        }
    }
}
