//! The tuner's state on disk: settings, theta, and every iteration's result
//! and theta so far. Written atomically (temporary file, fsync, rename) after
//! every iteration; a header line carries a format tag, the body's length and
//! an FNV-1a checksum, so a truncated or edited file is refused, not guessed at.
//!
//! The random state is the seed alone: iteration `k` draws from
//! [`super::spsa::iteration_rng`]`(seed, k)`, so the iteration count is
//! the whole position in the random stream.

use std::{fs, path::Path, sync::Arc};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::settings::{Settings, TunedNet};
use crate::{
    atomic_file,
    engine::{net::Network, params::Weights},
    fnv::fnv1a,
};

const MAGIC: &str = "learnbook-tune-checkpoint";
const VERSION: u32 = 1;

/// The result of one progress match: the values after `iteration` (rounded
/// as an engine plays them) against the start, from their point of view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchPoint {
    pub iteration: u64,
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
}

/// One finished iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    /// 1-based: the first iteration is 1.
    pub number: u64,
    /// Results of theta + c (against theta - c).
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    /// Theta after this iteration's step.
    pub theta: Vec<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub settings: Settings,
    pub theta: Vec<f64>,
    pub history: Vec<Iteration>,
    /// The progress matches played so far, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<MatchPoint>,
}

impl State {
    pub fn new(settings: Settings) -> State {
        let theta = settings.params.iter().map(|p| p.start).collect();
        State {
            settings,
            theta,
            history: Vec::new(),
            matches: Vec::new(),
        }
    }

    /// Iterations done.
    pub fn iteration(&self) -> u64 {
        self.history.len() as u64
    }

    pub fn games(&self) -> u64 {
        self.history
            .iter()
            .map(|i| u64::from(i.wins) + u64::from(i.draws) + u64::from(i.losses))
            .sum()
    }

    /// The start weights.
    pub fn base(&self) -> Weights {
        let mut w = Weights::default();
        w.set_values(&self.settings.base);
        w
    }

    /// The net the in-process sides evaluate with (`None`: the weights'
    /// evaluation), checked to be the one the run began with.
    pub fn net(&self) -> Result<Option<Arc<Network>>> {
        self.settings.net.as_ref().map(TunedNet::load).transpose()
    }

    /// Writes the state to `path` atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let body = serde_json::to_string(self).context("cannot serialize the tuner state")?;
        save_framed(path, MAGIC, VERSION, &body)
    }

    /// Reads and checks a checkpoint written by [`State::save`].
    pub fn load(path: &Path) -> Result<State> {
        let text = fs::read_to_string(path)
            .with_context(|| format!("cannot read checkpoint {}", path.display()))?;
        State::parse(&text).with_context(|| format!("corrupt checkpoint {}", path.display()))
    }

    fn parse(text: &str) -> Result<State> {
        let body = parse_framed(text, MAGIC, VERSION)?;
        let state: State = serde_json::from_str(body).context("bad state")?;
        state.validate()?;
        Ok(state)
    }

    /// Internal consistency: what a resume relies on.
    fn validate(&self) -> Result<()> {
        let s = &self.settings;
        match &s.engine {
            None => {
                let all = Weights::default().params();
                let n_all = all.len();
                // Checkpoints written before the search parameters existed
                // hold the evaluation's numbers only; the search keeps its
                // defaults.
                let n_eval = all.iter().filter(|p| !p.is_search()).count();
                if s.base.len() != n_all && s.base.len() != n_eval {
                    bail!("{} start numbers, expected {n_all}", s.base.len());
                }
                if s.params.is_empty() || s.params.iter().any(|p| p.index >= n_all) {
                    bail!("bad parameter list");
                }
                // What the tuner clamps and divides by: a parameter file is
                // checked the same way (paramfile::toml::read_param_file).
                for p in &s.params {
                    let o = &all[p.index];
                    if p.name != o.name {
                        bail!(
                            "parameter {:?} is recorded at the index of {}",
                            p.name,
                            o.name
                        );
                    }
                    let (lo, hi) = (f64::from(o.min), f64::from(o.max));
                    if !(lo <= p.min && p.min <= p.max && p.max <= hi) {
                        bail!(
                            "{}: bounds [{}, {}] are not within the parameter's range [{lo}, {hi}]",
                            p.name,
                            p.min,
                            p.max
                        );
                    }
                }
            }
            Some(engine) => {
                if !s.base.is_empty() {
                    bail!("an --engine run with start weights");
                }
                engine.validate(&s.params)?;
            }
        }
        for p in &s.params {
            if !(p.min <= p.max && p.min <= p.start && p.start <= p.max) {
                bail!(
                    "{}: the start value {} is outside its bounds [{}, {}]",
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
        }
        let sc = &s.schedule;
        let usable = |x: f64| x >= 0.0 && x.is_finite();
        if sc.iterations == 0 || !usable(sc.big_a) || !usable(sc.alpha) || !usable(sc.gamma) {
            bail!("bad schedule {sc:?}");
        }
        if s.pairs_per_iteration == 0 || s.openings_count == 0 {
            bail!("bad settings");
        }
        if self.theta.len() != s.params.len() {
            bail!(
                "theta has {} numbers for {} parameters",
                self.theta.len(),
                s.params.len()
            );
        }
        for (i, it) in self.history.iter().enumerate() {
            if it.number != i as u64 + 1 || it.theta.len() != s.params.len() {
                bail!("iteration record {} is out of order or malformed", i + 1);
            }
        }
        if let Some(last) = self.history.last() {
            if last.theta != self.theta {
                bail!("theta differs from the last iteration's");
            }
        }
        if self.iteration() > s.schedule.iterations {
            bail!("more iterations done than planned");
        }
        if s.progress_match
            .is_some_and(|m| m.every == 0 || m.pairs == 0)
        {
            bail!("bad progress match plan {:?}", s.progress_match);
        }
        let mut before = 0;
        for m in &self.matches {
            if m.iteration <= before || m.iteration > self.iteration() {
                bail!(
                    "progress match after iteration {} is out of order",
                    m.iteration
                );
            }
            before = m.iteration;
        }
        Ok(())
    }
}

/// Writes `body` behind a header line `MAGIC VERSION length checksum`, so
/// that a truncated or edited file is refused, not guessed at.
pub fn save_framed(path: &Path, magic: &str, version: u32, body: &str) -> Result<()> {
    let text = format!(
        "{magic} {version} {} {:016x}\n{body}\n",
        body.len(),
        fnv1a(body.as_bytes())
    );
    atomic_file::write(path, text.as_bytes())
}

/// The body of a file written by [`save_framed`], checked.
pub fn parse_framed<'a>(text: &'a str, magic: &str, version: u32) -> Result<&'a str> {
    let Some((header, rest)) = text.split_once('\n') else {
        bail!("no header line");
    };
    let fields: Vec<&str> = header.split(' ').collect();
    let [m, v, len, sum] = fields.as_slice() else {
        bail!("bad header line {header:?}");
    };
    if *m != magic {
        bail!("not a {magic} file");
    }
    if *v != version.to_string() {
        bail!("format version {v}, this learnbook reads {version}");
    }
    let len: usize = len.parse().context("bad length in the header")?;
    let body = rest
        .get(..len)
        .context("the file is shorter than its header says (truncated?)")?;
    if rest.len() != len + 1 || !rest.ends_with('\n') {
        bail!("the file is longer or shorter than its header says");
    }
    if format!("{:016x}", fnv1a(body.as_bytes())) != *sum {
        bail!("checksum mismatch (the file was changed or damaged)");
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::{
        settings::{AdjudicationSpec, LimitSpec, MatchPlan},
        spsa::{all_params, Schedule},
    };

    fn state() -> State {
        let w = Weights::default();
        let mut s = State::new(Settings {
            limit: LimitSpec::Nodes(2000),
            pairs_per_iteration: 4,
            schedule: Schedule::new(10),
            seed: 7,
            openings: "o.epd".into(),
            openings_count: 3,
            adjudication: AdjudicationSpec {
                draw: None,
                resign: Some((3, 400)),
                max_moves: None,
            },
            base: w.values(),
            params: all_params(&w)[..3].to_vec(),
            engine: None,
            progress_match: Some(MatchPlan { every: 5, pairs: 2 }),
            net: None,
        });
        s.theta[0] += 0.1 + 1e-12;
        s.history.push(Iteration {
            number: 1,
            wins: 3,
            draws: 2,
            losses: 3,
            theta: s.theta.clone(),
        });
        s.matches.push(MatchPoint {
            iteration: 1,
            wins: 2,
            draws: 1,
            losses: 1,
        });
        s
    }

    #[test]
    fn an_engine_run_round_trips_and_must_match_its_options() {
        use crate::tune::settings::{EngineTarget, SpinOption, TunedEngine};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.ckpt");
        let mut s = state();
        s.settings.base.clear();
        s.settings.params.truncate(1);
        s.settings.params[0].index = 0;
        s.theta.truncate(1);
        s.history[0].theta.truncate(1);
        let p = &s.settings.params[0];
        s.settings.engine = Some(EngineTarget {
            spec: TunedEngine::parse("cmd=engine").unwrap(),
            options: vec![SpinOption {
                name: p.name.clone(),
                default: 0,
                min: p.min as i64,
                max: p.max as i64,
            }],
            fixed: vec![("Hash".into(), 16)],
            format: Default::default(),
        });
        s.save(&path).unwrap();
        assert_eq!(State::load(&path).unwrap(), s);
        // An in-process checkpoint has no engine; an engine one no start weights.
        let mut bad = s.clone();
        bad.settings.base = Weights::default().values();
        assert!(bad.validate().is_err());
        let mut bad = s.clone();
        if let Some(e) = bad.settings.engine.as_mut() {
            e.options[0].name = "other".into();
        }
        assert!(bad.validate().is_err());
    }

    #[test]
    fn round_trip_is_exact_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ckpt");
        let s = state();
        s.save(&path).unwrap();
        assert_eq!(State::load(&path).unwrap(), s);
        let text = fs::read_to_string(&path).unwrap();
        for bad in [
            text.replace("\"wins\":3", "\"wins\":4"),
            text[..text.len() / 2].to_string(),
            String::new(),
            text.replacen(MAGIC, "something-else", 1),
        ] {
            fs::write(&path, &bad).unwrap();
            assert!(State::load(&path).is_err());
        }
    }

    #[test]
    fn a_checkpoint_from_before_the_search_parameters_resumes_with_their_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.ckpt");
        let mut s = state();
        let n_eval = Weights::default()
            .params()
            .iter()
            .filter(|p| !p.is_search())
            .count();
        s.settings.base.truncate(n_eval);
        s.settings.base[0] = 90;
        s.save(&path).unwrap();
        let back = State::load(&path).unwrap();
        let expected = Weights {
            pawn_mg: 90,
            ..Weights::default()
        };
        assert_eq!(back.base(), expected);
        // Any other length is still refused.
        s.settings.base.pop();
        s.save(&path).unwrap();
        assert!(State::load(&path).is_err());
    }

    /// Found by tests/fuzz.rs: bounds the wrong way round made the resume
    /// panic in `f64::clamp` (spsa::weights_at).
    #[test]
    fn a_checkpoint_with_reversed_bounds_is_refused_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ckpt");
        let mut s = state();
        (s.settings.params[1].min, s.settings.params[1].max) = (40.0, -1.0);
        s.save(&path).unwrap();
        let err = format!("{:#}", State::load(&path).unwrap_err());
        assert!(err.contains("bounds [40, -1]"), "{err}");
    }

    /// Found by tests/fuzz.rs: serde_json's default float parser is not
    /// correctly rounded; this number came back one ulp off.
    #[test]
    fn a_checkpoint_reads_back_bit_for_bit_where_the_fast_float_parser_is_off() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ckpt");
        let mut s = state();
        s.settings.params[0].c_end = 1.1844674407370955e20;
        s.save(&path).unwrap();
        let back = State::load(&path).unwrap();
        assert_eq!(
            back.settings.params[0].c_end.to_bits(),
            1.1844674407370955e20f64.to_bits()
        );
    }
}
