//! A run as `learnbook tune` asks for it: a new one planned from its
//! options (in-process weights, or an engine's spin options), or the
//! checkpoint's resumed; and the lines the command ends with. The command
//! line only parses the options into a [`Request`] and prints.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::{
    checkpoint::State,
    external,
    paramfile::Format,
    run,
    settings::{AdjudicationSpec, LimitSpec, MatchPlan, TunedEngine, TunedNet},
};
use crate::{
    engine::{default_net::NetChoice, params::Weights},
    play::game::Opening,
};

/// The options of `learnbook tune`, parsed.
pub struct Request {
    /// `--start`: weights (a TOML file or a preset), or with an engine a
    /// TOML file of option values.
    pub start: Option<String>,
    pub params: Option<PathBuf>,
    pub params_format: Option<Format>,
    /// `--engine`, parsed by the command line.
    pub engine: Option<TunedEngine>,
    pub nodes: Option<u64>,
    pub tc: Option<String>,
    pub pairs_per_iteration: usize,
    pub iterations: u64,
    pub openings: Option<PathBuf>,
    pub seed: u64,
    pub checkpoint: PathBuf,
    pub resume: bool,
    pub match_every: Option<u64>,
    pub match_pairs: usize,
    /// `--net`: the net the in-process sides evaluate with.
    pub net: NetChoice,
}

impl Request {
    /// The run's state and openings: the checkpoint's with `resume`, else a
    /// new run's (its checkpoint written). `adjudication` reads the
    /// adjudication options, after the start and the parameters (so a run
    /// with several bad options names the same one first as before).
    pub fn open(
        self,
        adjudication: impl FnOnce() -> Result<AdjudicationSpec>,
    ) -> Result<(State, Vec<Opening>)> {
        let Request {
            start,
            params,
            params_format,
            engine,
            nodes,
            tc,
            pairs_per_iteration,
            iterations,
            openings,
            seed,
            checkpoint,
            resume,
            match_every,
            match_pairs,
            net,
        } = self;
        if match_every.is_some() && match_pairs == 0 {
            bail!("--match-pairs must be at least 1");
        }
        let progress_match = match_every.filter(|&n| n > 0).map(|every| MatchPlan {
            every,
            pairs: match_pairs,
        });
        if resume && net != NetChoice::HandCrafted {
            bail!("--net is the checkpoint's on --resume: leave it out");
        }
        if engine.is_some() && net != NetChoice::HandCrafted {
            bail!("--net is for the in-process search core: an --engine evaluates as it does");
        }
        if resume {
            let (mut state, openings) = run::resume(&checkpoint, engine.as_ref())?;
            if match_every.is_some() {
                state.settings.progress_match = progress_match;
            }
            return Ok((state, openings));
        }
        let (start, params, engine) = match engine {
            None => {
                if params_format.is_some_and(|f| !f.is_toml()) {
                    bail!("--params-format other than toml needs --engine");
                }
                let start = run::load_start(start.as_deref().unwrap_or("default"))?;
                let params = run::load_params(params.as_deref(), &start)?;
                (start, params, None)
            }
            Some(spec) => {
                let params = params
                    .as_deref()
                    .context("--engine needs --params: which spin options to tune")?;
                let (target, params) = external::prepare(
                    spec,
                    params,
                    start.as_deref().map(Path::new),
                    params_format,
                )?;
                (Weights::default(), params, Some(target))
            }
        };
        let adjudication = adjudication()?;
        let net = TunedNet::of(&net)?;
        run::Plan {
            params,
            start,
            engine,
            limit: match (nodes, tc) {
                (_, Some(tc)) => LimitSpec::Clock(tc),
                (n, None) => LimitSpec::Nodes(n.unwrap_or(2000)),
            },
            pairs_per_iteration,
            iterations,
            openings: openings.context("--openings is required (a new run)")?,
            seed,
            adjudication,
            progress_match,
            net,
        }
        .begin(&checkpoint)
    }
}

/// `tune --prepare`'s line: the run written, its rounds to play.
pub fn prepared_line(state: &State, checkpoint: &Path) -> String {
    format!(
        "{} prepared: {} parameters, {} iterations of {} pairs; `learnbook tune-shard` \
         and `tune-step` play its rounds\n",
        checkpoint.display(),
        state.settings.params.len(),
        state.settings.schedule.iterations,
        state.settings.pairs_per_iteration
    )
}

/// After Ctrl-C: where the run stopped and how it continues.
pub fn interrupted_line(state: &State, checkpoint: &Path, out: &Path) -> String {
    format!(
        "interrupted after iteration {}; `learnbook tune --resume --checkpoint {} --out {}` continues\n",
        state.iteration(),
        checkpoint.display(),
        out.display()
    )
}

/// A finished run: where its values are; for an engine, the engine with them.
pub fn finished_lines(state: &State, out: &Path) -> String {
    match &state.settings.engine {
        None => format!("tuned weights written to {}\n", out.display()),
        Some(target) => format!(
            "tuned options written to {}; as an engine:\n{}\n",
            out.display(),
            external::spec_line(target.spec.text(), &external::values_at(state, target))
        ),
    }
}
