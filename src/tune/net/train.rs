//! The CPU trainer of the perspective net (768 -> N) x 2 -> 1, SCReLU,
//! that [`crate::engine::net`] reads.
//!
//! * Target: `lambda * result + (1 - lambda) * sigmoid(score / scale)`,
//!   the result for the side to move (0, 0.5, 1) and the search's score
//!   in centipawns; loss: the squared difference from `sigmoid(output)`
//!   (bullet's sigmoid MSE), the net's output times `scale` being its
//!   evaluation in centipawns.
//! * AdamW (beta 0.9, 0.999, decoupled weight decay), weights clipped to
//!   +-1.98 (as bullet's, so that the quantised weights fit
//!   [`crate::engine::net::MAX_L0`] and `MAX_L1`); the learning rate falls
//!   from `lr` to `final_lr` on a cosine over the epochs.
//! * Each epoch visits the training positions in an order shuffled by
//!   `(seed, epoch)`. A batch's gradient is the sum over a fixed number of
//!   slices of it ([`SLICES`]), each computed on the rayon pool and added
//!   up in slice order: the same data and seed give the same net on any
//!   number of threads.
//! * The checkpoint (after every epoch, and at the batch a Ctrl-C stops)
//!   holds the weights, Adam's moments, where the run is and the losses
//!   so far, gzipped; a resumed run ends with the net an uninterrupted one
//!   ends with, bit for bit.
//! * Quantised for the engine: input weights and biases x QA (255), output
//!   weights x QB (64), output bias x QA x QB.

use std::{
    io::{Read, Write},
    path::{Path, PathBuf},
};

use anyhow::{bail, Context, Result};
use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::data::Record;
use crate::engine::net::{Network, INPUTS, QA, QB};

/// Slices of a batch whose gradients are added in order.
pub const SLICES: usize = 32;
/// Bullet's weight clipping.
pub const CLIP: f32 = 1.98;
const BETA1: f32 = 0.9;
const BETA2: f32 = 0.999;
const EPSILON: f32 = 1e-8;
const MAGIC: &str = "learnbook net checkpoint 1";

/// What a run trains; kept in the checkpoint.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Config {
    pub hidden: usize,
    pub epochs: usize,
    pub batch: usize,
    pub lr: f32,
    pub final_lr: f32,
    pub weight_decay: f32,
    /// The weight of the game's result in the target (the rest: the score).
    pub lambda: f32,
    /// Centipawns per unit of output: the score's sigmoid scale.
    pub scale: f32,
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            hidden: 32,
            epochs: 20,
            batch: 16_384,
            lr: 0.001,
            final_lr: 0.00001,
            weight_decay: 0.01,
            lambda: 0.5,
            scale: 400.0,
            seed: 1,
        }
    }
}

/// The float net: `l0w` (`[INPUTS][N]`), `l0b` (`[N]`), `l1w` (`[2N]`), `l1b`, in one vector.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub hidden: usize,
    pub v: Vec<f32>,
}

impl Params {
    pub fn len(hidden: usize) -> usize {
        INPUTS * hidden + 3 * hidden + 1
    }

    fn l0b(&self) -> usize {
        INPUTS * self.hidden
    }

    fn l1w(&self) -> usize {
        INPUTS * self.hidden + self.hidden
    }

    fn l1b(&self) -> usize {
        INPUTS * self.hidden + 3 * self.hidden
    }

    /// Random weights from `seed`.
    pub fn init(hidden: usize, seed: u64) -> Params {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x6e65_745f_696e_6974);
        let mut v = vec![0f32; Params::len(hidden)];
        let p = Params { hidden, v: vec![] };
        let (l0b, l1w, l1b) = (p.l0b(), p.l1w(), p.l1b());
        for w in &mut v[..l0b] {
            *w = rng.random_range(-0.1..0.1);
        }
        for w in &mut v[l0b..l1w] {
            *w = rng.random_range(0.0..0.2);
        }
        let a = 1.0 / (2.0 * hidden as f32).sqrt();
        for w in &mut v[l1w..l1b] {
            *w = rng.random_range(-a..a);
        }
        Params { hidden, v }
    }

    /// The hidden layer's inputs of a record: (side to move's, other side's).
    fn accumulate(&self, r: &Record, us: &mut [f32], them: &mut [f32]) {
        let n = self.hidden;
        let b = &self.v[self.l0b()..self.l1w()];
        us.copy_from_slice(b);
        them.copy_from_slice(b);
        for (fu, ft) in r.features() {
            let (fu, ft) = (usize::from(fu) * n, usize::from(ft) * n);
            for (a, w) in us.iter_mut().zip(&self.v[fu..fu + n]) {
                *a += w;
            }
            for (a, w) in them.iter_mut().zip(&self.v[ft..ft + n]) {
                *a += w;
            }
        }
    }

    fn output(&self, us: &[f32], them: &[f32]) -> f32 {
        let n = self.hidden;
        let w = &self.v[self.l1w()..self.l1b()];
        let mut out = self.v[self.l1b()];
        for (a, w) in us.iter().zip(&w[..n]) {
            out += screlu(*a) * w;
        }
        for (a, w) in them.iter().zip(&w[n..]) {
            out += screlu(*a) * w;
        }
        out
    }

    /// The float net's evaluation in centipawns, side to move's view.
    pub fn eval_cp(&self, r: &Record, scale: f32) -> f32 {
        let n = self.hidden;
        let (mut us, mut them) = (vec![0f32; n], vec![0f32; n]);
        self.accumulate(r, &mut us, &mut them);
        self.output(&us, &them) * scale
    }

    /// The engine's net: the weights quantised (rounded, within the clipping).
    pub fn quantise(&self) -> Result<Network> {
        let q =
            |x: f32, k: i32, max: i32| (x * k as f32).round().clamp(-max as f32, max as f32) as i16;
        let l0 = |x: &f32| q(*x, QA, i32::from(crate::engine::net::MAX_L0));
        let l1 = |x: &f32| q(*x, QB, i32::from(crate::engine::net::MAX_L1));
        Network::new(
            self.hidden,
            self.v[..self.l0b()].iter().map(l0).collect(),
            self.v[self.l0b()..self.l1w()].iter().map(l0).collect(),
            self.v[self.l1w()..self.l1b()].iter().map(l1).collect(),
            q(self.v[self.l1b()], QA * QB, i32::from(i16::MAX)),
        )
    }
}

#[inline]
fn screlu(x: f32) -> f32 {
    let c = x.clamp(0.0, 1.0);
    c * c
}

#[inline]
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// The target of a record.
#[inline]
fn target(r: &Record, cfg: &Config) -> f32 {
    cfg.lambda * f32::from(r.result) / 2.0
        + (1.0 - cfg.lambda) * sigmoid(f32::from(r.score) / cfg.scale)
}

/// Scratch of one slice's pass.
struct Scratch {
    us: Vec<f32>,
    them: Vec<f32>,
    d_us: Vec<f32>,
    d_them: Vec<f32>,
}

impl Scratch {
    fn new(n: usize) -> Scratch {
        Scratch {
            us: vec![0.0; n],
            them: vec![0.0; n],
            d_us: vec![0.0; n],
            d_them: vec![0.0; n],
        }
    }
}

/// Adds the record's gradient to `grad`; its loss.
fn backprop(p: &Params, r: &Record, cfg: &Config, s: &mut Scratch, grad: &mut [f32]) -> f32 {
    let n = p.hidden;
    p.accumulate(r, &mut s.us, &mut s.them);
    let out = p.output(&s.us, &s.them);
    let pred = sigmoid(out);
    let err = pred - target(r, cfg);
    let g = 2.0 * err * pred * (1.0 - pred);
    let (l0b, l1w, l1b) = (p.l0b(), p.l1w(), p.l1b());
    grad[l1b] += g;
    let w1 = &p.v[l1w..l1b];
    for j in 0..n {
        let (a, b) = (s.us[j], s.them[j]);
        grad[l1w + j] += g * screlu(a);
        grad[l1w + n + j] += g * screlu(b);
        s.d_us[j] = if a > 0.0 && a < 1.0 {
            g * w1[j] * 2.0 * a
        } else {
            0.0
        };
        s.d_them[j] = if b > 0.0 && b < 1.0 {
            g * w1[n + j] * 2.0 * b
        } else {
            0.0
        };
        grad[l0b + j] += s.d_us[j] + s.d_them[j];
    }
    for (fu, ft) in r.features() {
        let (fu, ft) = (usize::from(fu) * n, usize::from(ft) * n);
        for (gw, d) in grad[fu..fu + n].iter_mut().zip(&s.d_us) {
            *gw += d;
        }
        for (gw, d) in grad[ft..ft + n].iter_mut().zip(&s.d_them) {
            *gw += d;
        }
    }
    err * err
}

/// The summed gradient and loss of the records `idx` of `data`, in [`SLICES`] slices.
fn gradient(p: &Params, data: &[Record], idx: &[u32], cfg: &Config) -> (Vec<f32>, f64) {
    let len = Params::len(p.hidden);
    let per = idx.len().div_ceil(SLICES).max(1);
    let parts: Vec<(Vec<f32>, f64)> = idx
        .par_chunks(per)
        .map(|slice| {
            let mut grad = vec![0f32; len];
            let mut s = Scratch::new(p.hidden);
            let mut loss = 0f64;
            for &i in slice {
                loss += f64::from(backprop(p, &data[i as usize], cfg, &mut s, &mut grad));
            }
            (grad, loss)
        })
        .collect();
    let mut total = vec![0f32; len];
    let mut loss = 0f64;
    for (g, l) in parts {
        for (t, x) in total.iter_mut().zip(&g) {
            *t += x;
        }
        loss += l;
    }
    (total, loss)
}

/// The mean loss over `data` (deterministic: slices added in order).
pub fn mean_loss(p: &Params, data: &[Record], cfg: &Config) -> f64 {
    if data.is_empty() {
        return f64::NAN;
    }
    let per = data.len().div_ceil(SLICES * 8).max(1);
    let parts: Vec<f64> = data
        .par_chunks(per)
        .map(|slice| {
            let n = p.hidden;
            let (mut us, mut them) = (vec![0f32; n], vec![0f32; n]);
            slice
                .iter()
                .map(|r| {
                    p.accumulate(r, &mut us, &mut them);
                    let e = sigmoid(p.output(&us, &them)) - target(r, cfg);
                    f64::from(e * e)
                })
                .sum()
        })
        .collect();
    parts.iter().sum::<f64>() / data.len() as f64
}

/// The loss of the hand-crafted evaluation (`weights`) on `data`: each
/// record's board as the side to move sees it, White to move (no castling
/// rights, no en passant: the record has none), its evaluation through the
/// same sigmoid. A baseline for the net's validation loss.
pub fn hand_loss(data: &[Record], cfg: &Config, weights: &crate::engine::params::Weights) -> f64 {
    use shakmaty::{fen::Fen, CastlingMode, Chess};
    if data.is_empty() {
        return f64::NAN;
    }
    let parts: Vec<(f64, usize)> = data
        .par_chunks(data.len().div_ceil(SLICES * 8).max(1))
        .map(|slice| {
            let (mut sum, mut n) = (0f64, 0usize);
            for r in slice {
                let fen = format!("{} w - - 0 1", r.board_fen());
                let Ok(pos) = fen.parse::<Fen>().map_err(|_| ()).and_then(|f| {
                    f.into_position::<Chess>(CastlingMode::Standard)
                        .map_err(|_| ())
                }) else {
                    continue;
                };
                let e = crate::engine::eval::evaluate(&pos, weights) as f32;
                let d = sigmoid(e / cfg.scale) - target(r, cfg);
                sum += f64::from(d * d);
                n += 1;
            }
            (sum, n)
        })
        .collect();
    let (sum, n) = parts.iter().fold((0.0, 0), |(s, k), (a, b)| (s + a, k + b));
    sum / n.max(1) as f64
}

/// The losses after an epoch.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct EpochLoss {
    pub epoch: usize,
    pub train: f64,
    /// NaN without validation positions (`null` in the checkpoint).
    #[serde(with = "nan_as_null")]
    pub valid: f64,
}

/// JSON has no NaN: a NaN is written `null` and read back as NaN.
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() {
            s.serialize_f64(*x)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

/// Where a run stands: everything a checkpoint holds.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    pub config: Config,
    pub params: Params,
    m: Vec<f32>,
    v: Vec<f32>,
    /// Adam steps taken.
    pub steps: u64,
    /// Epochs finished.
    pub epoch: usize,
    /// Batches done in the current epoch.
    pub batch: usize,
    /// The training loss summed over the current epoch's batches so far.
    pub epoch_loss: f64,
    pub history: Vec<EpochLoss>,
    /// Positions and a hash of the training data, checked on resume.
    pub data_id: (u64, u64),
}

/// What the checkpoint's text part holds.
#[derive(Serialize, Deserialize)]
struct Header {
    magic: String,
    config: Config,
    steps: u64,
    epoch: usize,
    batch: usize,
    epoch_loss: f64,
    history: Vec<EpochLoss>,
    data_id: (u64, u64),
}

/// The identity of a training set: its size and a hash of its records.
pub fn data_id(data: &[Record]) -> (u64, u64) {
    let mut h = crate::fnv::Fnv64::new();
    for r in data {
        h.write_field(&r.to_bytes());
    }
    (data.len() as u64, h.finish())
}

impl State {
    pub fn new(config: Config, data: &[Record]) -> State {
        let params = Params::init(config.hidden, config.seed);
        let len = params.v.len();
        State {
            config,
            params,
            m: vec![0.0; len],
            v: vec![0.0; len],
            steps: 0,
            epoch: 0,
            batch: 0,
            epoch_loss: 0.0,
            history: Vec::new(),
            data_id: data_id(data),
        }
    }

    /// A new run on `data` that starts from `from`'s weights and Adam
    /// moments (another run's checkpoint, on other data: the next part of
    /// a night), with `config`'s schedule; the hidden layers must agree.
    pub fn warm_start(from: State, config: Config, data: &[Record]) -> Result<State> {
        if from.config.hidden != config.hidden {
            bail!(
                "the starting checkpoint has a hidden layer of {}, not {}",
                from.config.hidden,
                config.hidden
            );
        }
        Ok(State {
            config,
            params: from.params,
            m: from.m,
            v: from.v,
            steps: from.steps,
            epoch: 0,
            batch: 0,
            epoch_loss: 0.0,
            history: Vec::new(),
            data_id: data_id(data),
        })
    }

    /// The checkpoint's bytes: a JSON line, then the weights and Adam's
    /// moments as little-endian f32, gzipped.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let header = Header {
            magic: MAGIC.into(),
            config: self.config.clone(),
            steps: self.steps,
            epoch: self.epoch,
            batch: self.batch,
            epoch_loss: self.epoch_loss,
            history: self.history.clone(),
            data_id: self.data_id,
        };
        let mut raw = serde_json::to_vec(&header)?;
        raw.push(b'\n');
        for x in self.params.v.iter().chain(&self.m).chain(&self.v) {
            raw.extend_from_slice(&x.to_le_bytes());
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&raw)?;
        Ok(gz.finish()?)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<State> {
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut raw)
            .context("not a gzipped checkpoint of `learnbook train`")?;
        let nl = raw
            .iter()
            .position(|&b| b == b'\n')
            .context("not a checkpoint of `learnbook train`")?;
        let h: Header =
            serde_json::from_slice(&raw[..nl]).context("not a checkpoint of `learnbook train`")?;
        if h.magic != MAGIC {
            bail!("not a checkpoint of `learnbook train` ({:?})", h.magic);
        }
        let len = Params::len(h.config.hidden);
        let floats = &raw[nl + 1..];
        if floats.len() != 3 * 4 * len {
            bail!(
                "the checkpoint is cut short or damaged: {} bytes of weights, {} expected",
                floats.len(),
                12 * len
            );
        }
        let all: Vec<f32> = floats
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(State {
            params: Params {
                hidden: h.config.hidden,
                v: all[..len].to_vec(),
            },
            m: all[len..2 * len].to_vec(),
            v: all[2 * len..].to_vec(),
            config: h.config,
            steps: h.steps,
            epoch: h.epoch,
            batch: h.batch,
            epoch_loss: h.epoch_loss,
            history: h.history,
            data_id: h.data_id,
        })
    }

    pub fn load(path: &Path) -> Result<State> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        State::from_bytes(&bytes).with_context(|| format!("{}", path.display()))
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        crate::atomic_file::write(path, &self.to_bytes()?)
    }

    /// The learning rate of a batch: cosine from `lr` to `final_lr` over the run.
    fn lr(&self, batches_per_epoch: usize) -> f32 {
        let c = &self.config;
        let total = (c.epochs * batches_per_epoch).max(1) as f64;
        let done = (self.epoch * batches_per_epoch + self.batch) as f64;
        let t = (done / total).min(1.0);
        let cos = 0.5 * (1.0 + (std::f64::consts::PI * t).cos());
        (f64::from(c.final_lr) + (f64::from(c.lr) - f64::from(c.final_lr)) * cos) as f32
    }

    /// One AdamW step with the batch's mean gradient.
    fn step(&mut self, grad: &[f32], count: usize, lr: f32) {
        self.steps += 1;
        let t = self.steps as i32;
        let (c1, c2) = (1.0 - BETA1.powi(t), 1.0 - BETA2.powi(t));
        let scale = 1.0 / count.max(1) as f32;
        let wd = self.config.weight_decay;
        for (((p, m), v), g) in self
            .params
            .v
            .iter_mut()
            .zip(&mut self.m)
            .zip(&mut self.v)
            .zip(grad)
        {
            let g = g * scale;
            *m = BETA1 * *m + (1.0 - BETA1) * g;
            *v = BETA2 * *v + (1.0 - BETA2) * g * g;
            let update = (*m / c1) / ((*v / c2).sqrt() + EPSILON);
            *p = (*p - lr * (update + wd * *p)).clamp(-CLIP, CLIP);
        }
    }
}

/// Where a run is, after each batch.
#[derive(Clone, Debug)]
pub struct Progress {
    pub epoch: usize,
    pub epochs: usize,
    pub batch: usize,
    pub batches: usize,
    /// Positions trained on by this process, and its seconds.
    pub positions: u64,
    pub seconds: f64,
    /// The mean loss of the epoch's batches so far.
    pub train_loss: f64,
    /// The validation loss after the last finished epoch.
    pub valid_loss: Option<f64>,
}

/// How [`train`] ended.
pub enum Outcome {
    Finished,
    /// Stopped (Ctrl-C) after a batch; the checkpoint holds where.
    Interrupted,
}

/// What else a run does after each epoch.
pub struct Outputs<'a> {
    /// The quantised net.
    pub net: Option<&'a Path>,
    /// The quantised net of the epoch with the lowest validation loss so far.
    pub best: Option<&'a Path>,
    pub checkpoint: Option<&'a Path>,
    pub plot: Option<&'a Path>,
}

/// Trains `state` on `data` to the end of its epochs (or until `stop`
/// says so after a batch), writing `out` after every epoch.
pub fn train(
    state: &mut State,
    data: &[Record],
    valid: &[Record],
    out: &Outputs,
    stop: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Outcome> {
    if data.is_empty() {
        bail!("no training positions");
    }
    if data.len() > u32::MAX as usize {
        bail!("more than {} training positions", u32::MAX);
    }
    let id = data_id(data);
    if id != state.data_id {
        bail!(
            "the checkpoint was trained on other data ({} positions, hash {:016x}; these are {} \
             positions, hash {:016x})",
            state.data_id.0,
            state.data_id.1,
            id.0,
            id.1
        );
    }
    let cfg = state.config.clone();
    let batch = cfg.batch.max(1);
    let batches = data.len().div_ceil(batch);
    let start = std::time::Instant::now();
    let mut seen = 0u64;
    let mut valid_loss = state.history.last().map(|h| h.valid);
    while state.epoch < cfg.epochs {
        let mut order: Vec<u32> = (0..data.len() as u32).collect();
        order.shuffle(&mut StdRng::seed_from_u64(
            cfg.seed ^ (state.epoch as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        ));
        while state.batch < batches {
            if stop() {
                if let Some(c) = out.checkpoint {
                    state.save(c)?;
                }
                return Ok(Outcome::Interrupted);
            }
            let idx = &order[state.batch * batch..((state.batch + 1) * batch).min(data.len())];
            let lr = state.lr(batches);
            let (grad, loss) = gradient(&state.params, data, idx, &cfg);
            state.step(&grad, idx.len(), lr);
            state.epoch_loss += loss / idx.len() as f64;
            state.batch += 1;
            seen += idx.len() as u64;
            progress(&Progress {
                epoch: state.epoch,
                epochs: cfg.epochs,
                batch: state.batch,
                batches,
                positions: seen,
                seconds: start.elapsed().as_secs_f64(),
                train_loss: state.epoch_loss / state.batch as f64,
                valid_loss,
            });
        }
        let v = mean_loss(&state.params, valid, &cfg);
        valid_loss = Some(v);
        // Lower than every earlier epoch's (NaN, no validation, never is).
        let best_so_far = state
            .history
            .iter()
            .all(|h| h.valid.is_nan() || v < h.valid);
        state.history.push(EpochLoss {
            epoch: state.epoch + 1,
            train: state.epoch_loss / batches as f64,
            valid: v,
        });
        state.epoch += 1;
        state.batch = 0;
        state.epoch_loss = 0.0;
        if let Some(c) = out.checkpoint {
            state.save(c)?;
        }
        if let Some(n) = out.net {
            crate::atomic_file::write(n, &state.params.quantise()?.to_bytes())?;
        }
        if let (Some(b), true) = (out.best, best_so_far && v.is_finite()) {
            crate::atomic_file::write(b, &state.params.quantise()?.to_bytes())?;
        }
        if let Some(p) = out.plot {
            plot_losses(&state.history, p)?;
        }
    }
    Ok(Outcome::Finished)
}

/// The training and validation loss per epoch as a PNG.
pub fn plot_losses(history: &[EpochLoss], path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot draw {}: {e}", path.display());
    let series = |f: fn(&EpochLoss) -> f64| -> Vec<(f64, f64)> {
        history
            .iter()
            .filter(|h| f(h).is_finite())
            .map(|h| (h.epoch as f64, f(h)))
            .collect()
    };
    let (train, valid) = (series(|h| h.train), series(|h| h.valid));
    let (lo, hi) = train
        .iter()
        .chain(&valid)
        .fold((f64::MAX, f64::MIN), |(a, b), &(_, l)| (a.min(l), b.max(l)));
    if lo > hi {
        return Ok(());
    }
    let pad = ((hi - lo) * 0.05).max(1e-6);
    let root = BitMapBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let font = crate::plot::font()?;
    let mut chart = ChartBuilder::on(&root)
        .caption("net training: loss per epoch", (font, 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..(history.len().max(1)) as f64, (lo - pad)..(hi + pad))
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc("sigmoid MSE")
        .draw()
        .map_err(|e| err(&e))?;
    chart
        .draw_series(LineSeries::new(train, BLUE.stroke_width(2)))
        .map_err(|e| err(&e))?
        .label("training")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    chart
        .draw_series(LineSeries::new(valid, RED.stroke_width(2)))
        .map_err(|e| err(&e))?
        .label("validation (held-out games)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .label_font((font, 16))
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// Reads data files one after the other.
pub fn read_data(paths: &[PathBuf]) -> Result<Vec<Record>> {
    let mut all = Vec::new();
    for p in paths {
        all.extend(super::data::read_file(p)?);
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Chess, Position as _};

    /// Positions of random walks, labelled with the hand-crafted
    /// evaluation and a result that follows its sign.
    fn labelled(count: usize, seed: u64) -> Vec<(Chess, Record)> {
        let mut rng = StdRng::seed_from_u64(seed);
        let w = crate::engine::params::Weights::default();
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let mut pos = Chess::default();
            for _ in 0..rng.random_range(4..120) {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                pos.play_unchecked(moves[rng.random_range(0..moves.len())]);
                let score = crate::engine::eval::evaluate(&pos, &w).clamp(-3000, 3000) as i16;
                let result = if score > 100 {
                    2
                } else if score < -100 {
                    0
                } else {
                    1
                };
                if pos.legal_moves().is_empty() {
                    break;
                }
                out.push((pos.clone(), Record::from_position(&pos, score, result)));
            }
        }
        out.truncate(count);
        out
    }

    fn config() -> Config {
        Config {
            hidden: 16,
            epochs: 3,
            batch: 1024,
            lr: 0.01,
            final_lr: 0.001,
            ..Config::default()
        }
    }

    fn run(state: &mut State, data: &[Record], valid: &[Record], stop_after: Option<usize>) {
        let out = Outputs {
            net: None,
            best: None,
            checkpoint: None,
            plot: None,
        };
        let done = std::cell::Cell::new(0usize);
        let stop = || stop_after.is_some_and(|k| done.get() >= k);
        train(state, data, valid, &out, &stop, &mut |_| {
            done.set(done.get() + 1)
        })
        .expect("train");
    }

    #[test]
    fn the_same_data_and_seed_give_the_same_net_on_any_threads_and_after_a_resume() {
        let all: Vec<Record> = labelled(6000, 5).into_iter().map(|(_, r)| r).collect();
        let (data, valid) = all.split_at(5000);
        let mut nets = Vec::new();
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            let mut s = State::new(config(), data);
            pool.install(|| run(&mut s, data, valid, None));
            nets.push(s);
        }
        assert_eq!(nets[0], nets[1]);
        assert_eq!(nets[0], nets[2]);
        // Stopped after 7 batches (mid-epoch), saved, read back, resumed.
        let mut s = State::new(config(), data);
        run(&mut s, data, valid, Some(7));
        assert_eq!((s.epoch, s.batch), (1, 2));
        let mut resumed = State::from_bytes(&s.to_bytes().expect("save")).expect("load");
        assert_eq!(resumed, s);
        run(&mut resumed, data, valid, None);
        assert_eq!(resumed, nets[0]);
        // Another seed, another net; training lowered the loss (on 5,000
        // positions of a few walks the validation loss soon rises: too few
        // games for 12,000 weights).
        let mut other = State::new(
            Config {
                seed: 2,
                ..config()
            },
            data,
        );
        run(&mut other, data, valid, None);
        assert_ne!(other.params, nets[0].params);
        let h = &nets[0].history;
        let before = mean_loss(&Params::init(16, 1), data, &config());
        assert!(
            h[2].train < h[0].train && h[0].train < before,
            "{h:?} vs {before}"
        );
        // A checkpoint for other data is refused.
        let e = train(
            &mut nets[0].clone(),
            valid,
            valid,
            &Outputs {
                net: None,
                best: None,
                checkpoint: None,
                plot: None,
            },
            &|| false,
            &mut |_| {},
        );
        assert!(e.is_err());
        assert!(State::from_bytes(b"not a checkpoint").is_err());
        // The next part of a night: another run from this one's weights.
        let warm = State::warm_start(nets[0].clone(), config(), valid).expect("warm");
        assert_eq!(
            (warm.params.clone(), warm.epoch),
            (nets[0].params.clone(), 0)
        );
        let wrong = Config {
            hidden: 8,
            ..config()
        };
        assert!(State::warm_start(nets[0].clone(), wrong, valid).is_err());
        // Without validation positions (NaN losses) it reads back too.
        let mut s = State::new(config(), data);
        run(&mut s, data, &[], Some(6));
        let back = State::from_bytes(&s.to_bytes().expect("save")).expect("load");
        assert!(back.history[0].valid.is_nan() && back.params == s.params);
        let bytes = nets[0].to_bytes().expect("bytes");
        assert!(State::from_bytes(&bytes[..bytes.len() / 2]).is_err());
    }

    /// The tolerance of the quantised net against the float net: QA = 255
    /// rounds each input weight by up to 0.002 and QB = 64 each output
    /// weight by up to 0.008, and the output is scaled by 400 (measured:
    /// mean 3.5 cp, max 19 cp, on evaluations of 271 cp on average).
    const MEAN_CP: f64 = 5.0;
    const MAX_CP: f64 = 30.0;

    #[test]
    fn the_quantised_net_is_within_tolerance_of_the_float_net_on_10000_positions() {
        let all = labelled(16_000, 9);
        let data: Vec<Record> = all[..6000].iter().map(|(_, r)| *r).collect();
        let mut s = State::new(
            Config {
                hidden: 32,
                epochs: 4,
                ..config()
            },
            &data,
        );
        run(&mut s, &data, &[], None);
        let net = s.params.quantise().expect("quantise");
        let net = Network::from_bytes(&net.to_bytes()).expect("reads back");
        let (mut sum, mut max, mut spread) = (0f64, 0f64, 0f64);
        for (pos, r) in &all[6000..] {
            let float = f64::from(s.params.eval_cp(r, 400.0));
            let quant = f64::from(net.evaluate_position(pos));
            let d = (float - quant).abs();
            sum += d;
            max = max.max(d);
            spread += float.abs();
        }
        let mean = sum / 10_000.0;
        eprintln!(
            "quantised vs float on 10,000 positions: mean {mean:.2} cp, max {max:.2} cp \
             (mean |eval| {:.0} cp)",
            spread / 10_000.0
        );
        assert!(spread / 10_000.0 > 50.0, "the net learnt something");
        assert!(mean <= MEAN_CP && max <= MAX_CP, "mean {mean} max {max}");
    }
}
