//! The tuner's settings, as a run is started with them and as its checkpoint
//! records them: the move limit, adjudication, SPSA schedule and parameters,
//! the engine of an `--engine` run ([`TunedEngine`], its spec parsed where
//! it comes in: the command line or the checkpoint); and what iteration `k`
//! plays ([`draw`]), which every player of the tuner plays (`player.rs`).
//! A leaf below them all: it names no other part of the tuner but the SPSA
//! arithmetic and the parameter file formats.

use std::{fmt, path::PathBuf, str::FromStr, sync::Arc};

use anyhow::{bail, Context, Result};
use rand::Rng;
use serde::{Deserialize, Serialize};

use super::{
    paramfile::Format,
    spsa::{self, Schedule, TuneParam},
};
use crate::{
    engine::{
        default_net::{embedded_bytes, NetChoice, EMBEDDED_NAME},
        net::Network,
    },
    engine_io::protocol::{EngineSpec, Proto},
    fnv::fnv1a,
    play::{
        game::{Adjudication, Limit},
        runner::PlayerSpec,
        spec::parse_player,
    },
};

/// How long each move may take, in the checkpoint's words.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LimitSpec {
    Nodes(u64),
    /// `moves/seconds+increment` as `--tc` takes it.
    Clock(String),
}

/// Early ends of tuning games (cutechess `-draw`, `-resign`, `-maxmoves`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdjudicationSpec {
    pub draw: Option<(u32, u32, i32)>,
    pub resign: Option<(u32, i32)>,
    pub max_moves: Option<u32>,
}

/// What a run was started with; a resume takes these, not the command line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub limit: LimitSpec,
    pub pairs_per_iteration: usize,
    pub schedule: Schedule,
    pub seed: u64,
    pub openings: PathBuf,
    /// Checked on resume: the openings file must still hold as many.
    pub openings_count: usize,
    pub adjudication: AdjudicationSpec,
    /// Every number of the start weights, in [`crate::engine::params::Weights::params`] order
    /// (empty for an `--engine` run).
    pub base: Vec<i32>,
    pub params: Vec<TuneParam>,
    /// `--engine` runs: the engine whose options are tuned (absent in
    /// in-process runs, and in checkpoints written before `--engine` was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineTarget>,
    /// `--match-every`: a short match of the current values against the
    /// start now and then, so a run shows its gain as it goes (absent in
    /// checkpoints written before it existed: no matches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_match: Option<MatchPlan>,
    /// `--net`: the net both in-process sides evaluate with, so that the
    /// search's numbers are tuned for its scale (absent: the hand-crafted
    /// evaluation of the weights, as in checkpoints written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<TunedNet>,
}

/// The net of an in-process run, as its checkpoint records it: where it
/// is and a fingerprint of its bytes, so a resume or a shard on another
/// machine plays with the same net or refuses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TunedNet {
    /// The embedded net's name ([`EMBEDDED_NAME`]), or the file's absolute path.
    pub source: String,
    /// FNV-1a of the net's bytes.
    pub fnv1a: u64,
}

impl TunedNet {
    /// The net `choice` names, read and fingerprinted (`None`: the
    /// hand-crafted evaluation).
    pub fn of(choice: &NetChoice) -> Result<Option<TunedNet>> {
        let (source, bytes) = match choice {
            NetChoice::HandCrafted => return Ok(None),
            NetChoice::Embedded => (EMBEDDED_NAME.to_string(), embedded_bytes().to_vec()),
            NetChoice::File(p) => {
                let path = std::fs::canonicalize(p)
                    .with_context(|| format!("--net: cannot find {}", p.display()))?;
                let bytes = std::fs::read(&path)
                    .with_context(|| format!("--net: cannot read {}", path.display()))?;
                (path.to_string_lossy().into_owned(), bytes)
            }
        };
        Network::from_bytes(&bytes).with_context(|| format!("--net {source}"))?;
        Ok(Some(TunedNet {
            fnv1a: fnv1a(&bytes),
            source,
        }))
    }

    /// The net, checked to be the one the run began with.
    pub fn load(&self) -> Result<Arc<Network>> {
        let bytes = if self.source == EMBEDDED_NAME {
            embedded_bytes().to_vec()
        } else {
            std::fs::read(&self.source)
                .with_context(|| format!("cannot read the run's net {}", self.source))?
        };
        if fnv1a(&bytes) != self.fnv1a {
            bail!(
                "the net {} is not the one this run began with (its bytes differ)",
                self.source
            );
        }
        let net = Network::from_bytes(&bytes)
            .with_context(|| format!("the run's net {}", self.source))?;
        Ok(Arc::new(net))
    }
}

/// How often the current values meet the start, and for how many pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchPlan {
    /// After every this many iterations.
    pub every: u64,
    /// Game pairs (one opening, colours swapped) a match.
    pub pairs: usize,
}

/// A spin option: what can be tuned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpinOption {
    pub name: String,
    pub default: i64,
    pub min: i64,
    pub max: i64,
}

/// The UCI engine whose options an `--engine` run tunes: the spec as
/// given (the checkpoint records it as that text, and the spec lines the
/// run writes start from it) and as parsed, once, where it comes in.
#[derive(Clone, Debug)]
pub struct TunedEngine {
    text: String,
    engine: EngineSpec,
}

impl TunedEngine {
    /// `--engine` as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The engine as the spec starts it (its `option.X=` included).
    pub fn engine(&self) -> &EngineSpec {
        &self.engine
    }

    /// `spec` (cutechess style), which must be an external UCI engine.
    pub fn parse(spec: &str) -> Result<TunedEngine> {
        let engine = match parse_player(spec).with_context(|| format!("--engine {spec:?}"))? {
            PlayerSpec::Builtin { .. } => bail!(
                "--engine {spec:?}: cmd=builtin is the in-process engine; tune its weights \
                 with --start and --params, without --engine"
            ),
            PlayerSpec::External(e) if e.proto != Proto::Uci => {
                bail!("--engine {spec:?}: only UCI engines can be tuned (their spin options)")
            }
            PlayerSpec::External(e) => e,
            PlayerSpec::Booked { .. } | PlayerSpec::DeepStart { .. } => {
                bail!("--engine {spec:?}: a tuned engine plays without book= (give --openings)")
            }
        };
        Ok(TunedEngine {
            text: spec.to_string(),
            engine,
        })
    }
}

/// The same spec text is the same engine.
impl PartialEq for TunedEngine {
    fn eq(&self, other: &TunedEngine) -> bool {
        self.text == other.text
    }
}

impl fmt::Display for TunedEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// As the command line parses `--engine` (clap shows the message).
impl FromStr for TunedEngine {
    type Err = String;

    fn from_str(s: &str) -> Result<TunedEngine, String> {
        TunedEngine::parse(s).map_err(|e| format!("{e:#}"))
    }
}

/// In a checkpoint: the spec's text, as before it was parsed on reading.
impl Serialize for TunedEngine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for TunedEngine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TunedEngine, D::Error> {
        let text = String::deserialize(d)?;
        TunedEngine::parse(&text).map_err(|e| serde::de::Error::custom(format!("{e:#}")))
    }
}

/// The engine of an `--engine` run, as recorded in its checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineTarget {
    /// `--engine`.
    pub spec: TunedEngine,
    /// The tuned options as the engine declared them, in parameter order.
    pub options: Vec<SpinOption>,
    /// Options `--start` set that are not tuned: sent once to each process.
    pub fixed: Vec<(String, i64)>,
    /// The format `--params` was read in, which the tuned values are also
    /// written back in, beside `--out` (absent: TOML, and checkpoints
    /// written before there were other formats).
    #[serde(default, skip_serializing_if = "Format::is_toml")]
    pub format: Format,
}

pub fn limit_of(spec: &LimitSpec) -> Result<Limit> {
    Ok(match spec {
        LimitSpec::Nodes(n) => Limit::Nodes(*n),
        LimitSpec::Clock(tc) => Limit::Clock(tc.parse().map_err(anyhow::Error::msg)?),
    })
}

pub fn adjudication_of(a: &AdjudicationSpec) -> Adjudication {
    Adjudication {
        draw: a.draw,
        resign: a.resign,
        max_moves: a.max_moves,
    }
}

/// What iteration `k` plays, drawn from its own random stream: the
/// perturbation, each pair's opening, and the two sides' parameters.
pub struct Draw {
    pub flip: Vec<f64>,
    /// One opening index per pair.
    pub picks: Vec<usize>,
    /// theta + c_k * flip and theta - c_k * flip, clamped and rounded
    /// stochastically to integers.
    pub plus: Vec<f64>,
    pub minus: Vec<f64>,
}

/// The draw of iteration `k` (0-based) from `theta`.
pub fn draw(settings: &Settings, theta: &[f64], k: u64, n_openings: usize) -> Draw {
    let mut rng = spsa::iteration_rng(settings.seed, k);
    let flip = spsa::flips(&mut rng, settings.params.len());
    let picks: Vec<usize> = (0..settings.pairs_per_iteration)
        .map(|_| rng.random_range(0..n_openings))
        .collect();
    let (mut plus, mut minus) =
        spsa::perturbed(&settings.schedule, &settings.params, theta, &flip, k);
    for x in plus.iter_mut().chain(minus.iter_mut()) {
        *x = spsa::round_stochastic(&mut rng, *x);
    }
    Draw {
        flip,
        picks,
        plus,
        minus,
    }
}
