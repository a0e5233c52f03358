//! `learnbook tune --engine SPEC`: SPSA over the spin options of any UCI
//! engine, as fishtest and OpenBench tune theirs. The engine's `uci` reply
//! names the options and their ranges; every game of an iteration is two
//! processes of the engine, one given theta + c (rounded) and one theta - c
//! by `setoption` before `ucinewgame`, played by the match runner's game loop
//! ([`crate::play::game::play_game`]) through its UCI client
//! ([`crate::engine_io::protocol::UciEngine`]). Each worker keeps its two
//! processes from game to game and from iteration to iteration; a process is
//! replaced only after a fault, and the game is then played again (with a
//! node limit it comes out the same). A game that fails three times in a
//! row stops the run with the engine's fault; the checkpoint holds every
//! finished iteration.

use std::{
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Mutex,
    },
    time::{Duration, Instant},
};

use anyhow::{anyhow, bail, Context, Result};
use shakmaty::Color;

use super::{
    checkpoint::State,
    paramfile::{self, Entry, Format},
    settings::{adjudication_of, draw, limit_of, Draw, EngineTarget, Settings, SpinOption},
    spsa::{self, TuneParam},
};
use crate::engine_io::protocol::{EngineSpec, Process, Proto, UciEngine};
use crate::play::{
    game::{play_game, Adjudication, Limit, Opening},
    runner::PlayerSpec,
    spec::parse_player,
    stats::Wdl,
};
use crate::workers;

/// How long the engine may take to list its options.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// Tries of one game before the run stops with the engine's fault.
const ATTEMPTS: usize = 3;

/// An option as an engine's `uci` reply declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UciOption {
    pub name: String,
    /// `spin`, `check`, `combo`, `button` or `string`.
    pub kind: String,
    pub default: String,
    pub min: Option<i64>,
    pub max: Option<i64>,
}

/// Parses `option name <id> type <t> [default <x>] [min <m>] [max <m>] [var <v>]*`.
pub fn parse_option_line(line: &str) -> Option<UciOption> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let ["option", "name", rest @ ..] = words.as_slice() else {
        return None;
    };
    // The name runs to the first `type` (names may hold spaces).
    let type_at = rest.iter().position(|w| *w == "type")?;
    let name = rest[..type_at].join(" ");
    let (mut kind, mut default, mut min, mut max) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut vars = Vec::new();
    let mut field = &mut kind;
    for &w in &rest[type_at + 1..] {
        match w {
            "default" => field = &mut default,
            "min" => field = &mut min,
            "max" => field = &mut max,
            "var" => field = &mut vars,
            _ => field.push(w),
        }
    }
    let number = |v: &[&str]| v.join(" ").parse::<i64>().ok();
    if name.is_empty() || kind.is_empty() {
        return None;
    }
    Some(UciOption {
        name,
        kind: kind.join(" ").to_ascii_lowercase(),
        default: default.join(" "),
        min: number(&min),
        max: number(&max),
    })
}

impl UciOption {
    fn spin(&self) -> Option<SpinOption> {
        if self.kind != "spin" {
            return None;
        }
        Some(SpinOption {
            name: self.name.clone(),
            default: self.default.trim().parse().ok()?,
            min: self.min?,
            max: self.max?,
        })
    }
}

/// The engine of `spec` (cutechess style), which must be an external UCI engine.
pub fn uci_spec(spec: &str) -> Result<EngineSpec> {
    match parse_player(spec).with_context(|| format!("--engine {spec:?}"))? {
        PlayerSpec::Builtin { .. } => bail!(
            "--engine {spec:?}: cmd=builtin is the in-process engine; tune its weights \
             with --start and --params, without --engine"
        ),
        PlayerSpec::External(e) if e.proto != Proto::Uci => {
            bail!("--engine {spec:?}: only UCI engines can be tuned (their spin options)")
        }
        PlayerSpec::External(e) => Ok(e),
        PlayerSpec::Booked { .. } | PlayerSpec::DeepStart { .. } => {
            bail!("--engine {spec:?}: a tuned engine plays without book= (give --openings)")
        }
    }
}

/// Starts the engine, sends `uci` and reads the options it declares.
pub fn probe(spec: &EngineSpec) -> Result<Vec<UciOption>> {
    let fault = |f: crate::engine_io::protocol::Fault| {
        anyhow!(
            "cannot read the options of engine {:?} ({}): {f}",
            spec.name,
            spec.argv.join(" ")
        )
    };
    let mut p = Process::spawn(&spec.argv, spec.dir.as_deref(), &spec.name).map_err(fault)?;
    p.send("uci").map_err(fault)?;
    let deadline = Instant::now() + HANDSHAKE;
    let mut options = Vec::new();
    loop {
        let line = p.recv(deadline, "uciok").map_err(fault)?;
        if line.trim() == "uciok" {
            break;
        }
        if let Some(o) = parse_option_line(&line) {
            options.push(o);
        }
    }
    Ok(options)
}

fn find<'a>(options: &'a [UciOption], name: &str) -> Option<&'a UciOption> {
    options.iter().find(|o| o.name.eq_ignore_ascii_case(name))
}

/// The error for a name that is not a spin option of the engine.
fn not_a_spin(name: &str, options: &[UciOption]) -> String {
    if let Some(o) = find(options, name) {
        return format!(
            "{:?} is a {} option of the engine, not a spin option: only spin options can be tuned",
            o.name, o.kind
        );
    }
    let spins: Vec<&str> = options
        .iter()
        .filter(|o| o.spin().is_some())
        .map(|o| o.name.as_str())
        .collect();
    const SHOWN: usize = 40;
    let mut list = spins
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if spins.len() > SHOWN {
        list.push_str(&format!(
            ", ... and {} more (the engine's reply to `uci` lists them)",
            spins.len() - SHOWN
        ));
    }
    if spins.is_empty() {
        format!("unknown option {name:?}: the engine declares no spin option")
    } else {
        format!(
            "unknown option {name:?}: the engine's {} spin options are {list}",
            spins.len()
        )
    }
}

/// `--engine SPEC --params P [--start S.toml]`: the engine, and the
/// parameters to tune with their start values (`--start`, else the start
/// of a parameter file that gives one, else the spec's `option.X=`, else
/// the engine's default). `format` names the parameter file's format
/// (default: told from its extension or content, [`paramfile::detect`]).
/// Everything is checked before a file is written.
pub fn prepare(
    spec_text: &str,
    params_path: &Path,
    start: Option<&Path>,
    format: Option<Format>,
) -> Result<(EngineTarget, Vec<TuneParam>)> {
    let spec = uci_spec(spec_text)?;
    let options = probe(&spec)?;
    let spins: Vec<SpinOption> = options.iter().filter_map(UciOption::spin).collect();
    let index = |name: &str| spins.iter().position(|o| o.name.eq_ignore_ascii_case(name));
    // The engine's own values: its defaults, as the spec's option.X=V changes them.
    let mut own: Vec<i64> = spins.iter().map(|o| o.default).collect();
    for (k, v) in &spec.options {
        if let Some(i) = index(k) {
            own[i] = v
                .trim()
                .parse()
                .with_context(|| format!("--engine: option.{k}={v} is not an integer"))?;
        }
    }
    let start_values = match start {
        Some(p) => read_start(p, &options, &spins)?,
        None => Vec::new(),
    };
    for &(i, v) in &start_values {
        own[i] = v;
    }
    let all: Vec<TuneParam> = spins
        .iter()
        .enumerate()
        .map(|(i, o)| spsa::default_param(&o.name, i, own[i] as f64, o.min as f64, o.max as f64))
        .collect();
    let text = std::fs::read_to_string(params_path)
        .with_context(|| format!("cannot read {}", params_path.display()))?;
    let format = match format {
        Some(f) => f,
        None => paramfile::detect(params_path, &text)?,
    };
    let mut params = match format {
        Format::Toml => spsa::select_params(&text, &all, true, &|key| {
            not_a_spin(key.trim_end_matches('*'), &options)
        }),
        _ => paramfile::parse(format, &text)
            .and_then(|entries| from_entries(&entries, &options, &spins, &all, &start_values)),
    }
    .with_context(|| {
        format!(
            "in parameter file {} ({format} format)",
            params_path.display()
        )
    })?;
    let tuned: Vec<SpinOption> = params.iter().map(|p| spins[p.index].clone()).collect();
    let fixed = start_values
        .iter()
        .filter(|(i, _)| !params.iter().any(|p| p.index == *i))
        .map(|&(i, v)| (spins[i].name.clone(), v))
        .collect();
    for (j, p) in params.iter_mut().enumerate() {
        p.index = j;
    }
    let target = EngineTarget {
        spec: spec_text.to_string(),
        options: tuned,
        fixed,
        format,
    };
    target.validate(&params)?;
    Ok((target, params))
}

/// The parameters an OpenBench, fishtest or Weather Factory file names,
/// in its order (`index` into `spins`): each a spin option of the engine,
/// an integer (`int`) one, within the engine's range; its start the file's
/// unless `--start` gives one (`start_values`), and its gains as given.
fn from_entries(
    entries: &[Entry],
    options: &[UciOption],
    spins: &[SpinOption],
    all: &[TuneParam],
    start_values: &[(usize, i64)],
) -> Result<Vec<TuneParam>> {
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let at = e.place();
        let Some(i) = spins
            .iter()
            .position(|o| o.name.eq_ignore_ascii_case(&e.name))
        else {
            bail!("{at}: {}", not_a_spin(&e.name, options));
        };
        let o = &spins[i];
        if e.float {
            bail!(
                "{at}: a float parameter, but the engine's {:?} is a spin option, whose values \
                 are integers: write the line as int",
                o.name
            );
        }
        if e.min < o.min as f64 || e.max > o.max as f64 {
            bail!(
                "{at}: the bounds [{}, {}] are outside the engine's range [{}, {}] of {:?}",
                e.min,
                e.max,
                o.min,
                o.max,
                o.name
            );
        }
        let start = match start_values.iter().find(|(j, _)| *j == i) {
            Some(&(_, v)) => {
                let v = v as f64;
                if v < e.min || v > e.max {
                    bail!(
                        "{at}: the start value {v} from --start is outside the file's bounds [{}, {}]",
                        e.min,
                        e.max
                    );
                }
                v
            }
            None => e.start,
        };
        out.push(TuneParam {
            start,
            min: e.min,
            max: e.max,
            c_end: e.c_end,
            r_end: e.r_end,
            ..all[i].clone()
        });
    }
    Ok(out)
}

/// `--start S.toml`: `Name = value` for spin options of the engine
/// (indices into `spins`).
fn read_start(
    path: &Path,
    options: &[UciOption],
    spins: &[SpinOption],
) -> Result<Vec<(usize, i64)>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read --start {}", path.display()))?;
    let inner = || -> Result<Vec<(usize, i64)>> {
        let table: toml::Table = text.parse().context("not valid TOML")?;
        let mut out = Vec::new();
        for (k, v) in &table {
            let Some(i) = spins.iter().position(|o| o.name.eq_ignore_ascii_case(k)) else {
                bail!("{}", not_a_spin(k, options));
            };
            let Some(v) = v.as_integer() else {
                bail!("{k}: expected an integer, found {v}");
            };
            let o = &spins[i];
            if v < o.min || v > o.max {
                bail!(
                    "{k} = {v} is outside the engine's range [{}, {}]",
                    o.min,
                    o.max
                );
            }
            out.push((i, v));
        }
        Ok(out)
    };
    inner().with_context(|| format!("in --start {}", path.display()))
}

impl EngineTarget {
    /// Consistency with the parameters (what a resume relies on).
    pub fn validate(&self, params: &[TuneParam]) -> Result<()> {
        if params.is_empty() || params.len() != self.options.len() {
            bail!("bad parameter list");
        }
        for (j, (p, o)) in params.iter().zip(&self.options).enumerate() {
            if p.index != j
                || p.name != o.name
                || p.min < o.min as f64
                || p.max > o.max as f64
                || p.min > p.max
            {
                bail!("parameter {} does not match the engine's option", p.name);
            }
        }
        Ok(())
    }

    /// The engine as started for a game: the spec's options, then the fixed ones.
    pub fn engine_spec(&self) -> Result<EngineSpec> {
        let mut spec = uci_spec(&self.spec)?;
        spec.options
            .extend(self.fixed.iter().map(|(k, v)| (k.clone(), v.to_string())));
        Ok(spec)
    }

    /// Starts the engine and checks that it still declares the options the
    /// run was begun with (a resume must go on with the same engine).
    pub fn check_engine(&self) -> Result<()> {
        let spec = self.engine_spec()?;
        let options = probe(&spec)?;
        for o in &self.options {
            match find(&options, &o.name).and_then(UciOption::spin) {
                Some(now) if now.min == o.min && now.max == o.max => {}
                Some(now) => bail!(
                    "the engine's option {} now has the range [{}, {}], the run began with [{}, {}]",
                    o.name,
                    now.min,
                    now.max,
                    o.min,
                    o.max
                ),
                None => bail!(
                    "the engine no longer declares the spin option {} ({})",
                    o.name,
                    not_a_spin(&o.name, &options)
                ),
            }
        }
        for (name, _) in &self.fixed {
            if find(&options, name).and_then(UciOption::spin).is_none() {
                bail!("the engine no longer declares the spin option {name} that --start set");
            }
        }
        Ok(())
    }
}

/// A tuned number as the engine gets it: clamped to its bounds and rounded.
fn rounded(p: &TuneParam, t: f64) -> i64 {
    t.clamp(p.min, p.max).round() as i64
}

/// `setoption` pairs for `theta`.
fn option_values(params: &[TuneParam], theta: &[f64]) -> Vec<(String, String)> {
    params
        .iter()
        .zip(theta)
        .map(|(p, &t)| (p.name.clone(), rounded(p, t).to_string()))
        .collect()
}

/// The values the engine plays with at `theta`: the tuned ones, then the fixed.
pub fn values_at(state: &State, target: &EngineTarget) -> Vec<(String, i64)> {
    let params = &state.settings.params;
    params
        .iter()
        .zip(&state.theta)
        .map(|(p, &t)| (p.name.clone(), rounded(p, t)))
        .chain(target.fixed.iter().cloned())
        .collect()
}

/// The `--engine` spec with `values` as its `option.X=`, replacing any it gave.
pub fn spec_line(spec: &str, values: &[(String, i64)]) -> String {
    let ours = |key: &str| {
        key.trim()
            .strip_prefix("option.")
            .is_some_and(|k| values.iter().any(|(n, _)| n.eq_ignore_ascii_case(k.trim())))
    };
    let mut parts: Vec<String> = spec
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .filter(|p| !ours(p.split_once('=').map_or(*p, |(k, _)| k)))
        .map(str::to_string)
        .collect();
    parts.extend(values.iter().map(|(n, v)| format!("option.{n}={v}")));
    parts.join(",")
}

/// A TOML key: bare if it can be, else quoted.
fn toml_key(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        name.to_string()
    } else {
        toml::Value::String(name.to_string()).to_string()
    }
}

/// `--out` of an `--engine` run: `Name = value` (usable as `--start`), with
/// the spec line and the files written beside it in comments.
pub fn options_toml(state: &State, target: &EngineTarget, out: &Path) -> String {
    let values = values_at(state, target);
    let mut s = format!(
        "# learnbook tune --engine {:?}: iteration {} of {}, {} games, seed {}\n\
         # as an engine: {}\n",
        target.spec,
        state.iteration(),
        state.settings.schedule.iterations,
        state.games(),
        state.settings.seed,
        spec_line(&target.spec, &values)
    );
    // Suffixes, not names: the same run written to another --out reads the same.
    let own = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let beside: Vec<String> = written_beside(state, target, out)
        .iter()
        .filter_map(|(p, _)| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .map(|n| {
            n.strip_prefix(own.as_str())
                .map_or(n.clone(), str::to_string)
        })
        .collect();
    s.push_str(&format!(
        "# also written beside this file, its name with: {}\n",
        beside.join(", ")
    ));
    let tuned = state.settings.params.len();
    for (i, (name, v)) in values.iter().enumerate() {
        if i == tuned {
            s.push_str("# not tuned (from --start):\n");
        }
        s.push_str(&format!("{} = {v}\n", toml_key(name)));
    }
    s
}

/// `out` with `.suffix` added: `tuned.toml` -> `tuned.toml.uci`.
pub fn beside(out: &Path, suffix: &str) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// The tuned values in the parameter file's own format (the tuned values
/// as the start, the bounds and gains as read), or `None` for TOML.
pub fn params_file(state: &State, target: &EngineTarget) -> Option<String> {
    target.format.suffix()?;
    let entries: Vec<Entry> = state
        .settings
        .params
        .iter()
        .zip(&state.theta)
        .map(|(p, &t)| Entry {
            line: 0,
            name: p.name.clone(),
            float: false,
            start: rounded(p, t) as f64,
            min: p.min,
            max: p.max,
            c_end: p.c_end,
            r_end: p.r_end,
        })
        .collect();
    Some(paramfile::write(target.format, &entries))
}

/// The files written beside `--out`, with their text: `.uci` (`setoption`
/// lines), `.options` (`option.X=V` for cutechess-cli and fastchess), and
/// the parameter file's format when it is not TOML (`.openbench`,
/// `.fishtest`, `.json`).
fn written_beside(state: &State, target: &EngineTarget, out: &Path) -> Vec<(PathBuf, String)> {
    let values = values_at(state, target);
    let mut files = vec![
        (beside(out, "uci"), paramfile::setoption_lines(&values)),
        (
            beside(out, "options"),
            paramfile::match_runner_options(&values),
        ),
    ];
    if let (Some(suffix), Some(text)) = (target.format.suffix(), params_file(state, target)) {
        files.push((beside(out, suffix), text));
    }
    files
}

/// `--out` and the files beside it ([`written_beside`]), each replaced
/// atomically.
pub fn write_options(state: &State, target: &EngineTarget, out: &Path) -> Result<()> {
    crate::atomic_file::write(out, options_toml(state, target, out).as_bytes())?;
    for (path, text) in written_beside(state, target, out) {
        crate::atomic_file::write(&path, text.as_bytes())?;
    }
    Ok(())
}

/// The processes of the engine, two per worker (the plus and the minus
/// side), kept from game to game.
pub struct Arena {
    specs: [EngineSpec; 2],
    slots: Vec<[Option<UciEngine>; 2]>,
}

/// What every game of an iteration shares.
struct Job<'a> {
    options: [Vec<(String, String)>; 2],
    picks: &'a [usize],
    openings: &'a [Opening],
    limit: Limit,
    adj: Adjudication,
}

impl Arena {
    /// `threads` games at once; no process starts before the first game.
    pub fn new(target: &EngineTarget, threads: usize) -> Result<Arena> {
        let spec = target.engine_spec()?;
        let side = |s: &str| EngineSpec {
            name: format!("{} ({s})", spec.name),
            ..spec.clone()
        };
        Ok(Arena {
            specs: [side("plus"), side("minus")],
            slots: (0..threads.max(1)).map(|_| [None, None]).collect(),
        })
    }

    /// Iteration `k` from `theta`: its perturbation and the plus side's
    /// results, or `None` if SIGINT came first (nothing of it is kept).
    pub fn play_iteration(
        &mut self,
        settings: &Settings,
        theta: &[f64],
        k: u64,
        openings: &[Opening],
    ) -> Result<Option<(Vec<f64>, Wdl)>> {
        let Draw {
            flip,
            picks,
            plus,
            minus,
        } = draw(settings, theta, k, openings.len());
        let options = [
            option_values(&settings.params, &plus),
            option_values(&settings.params, &minus),
        ];
        Ok(self
            .play_scores(settings, options, &picks, openings)?
            .map(|scores| (flip, total(&scores))))
    }

    /// The pairs numbered `pairs` (among the iteration's) of iteration `k`
    /// from `theta`: the plus side's score in each game, in order (a pair's
    /// game with the plus side White first), or `None` if SIGINT came
    /// first. `tune-shard` plays its share of an iteration so.
    pub fn play_iteration_pairs(
        &mut self,
        settings: &Settings,
        theta: &[f64],
        k: u64,
        openings: &[Opening],
        pairs: &[usize],
    ) -> Result<Option<Vec<f64>>> {
        let d = draw(settings, theta, k, openings.len());
        let options = [
            option_values(&settings.params, &d.plus),
            option_values(&settings.params, &d.minus),
        ];
        let picks: Vec<usize> = pairs.iter().map(|&p| d.picks[p]).collect();
        self.play_scores(settings, options, &picks, openings)
    }

    /// The progress match: the engine at `theta` (rounded) against the
    /// start, a pair per pick; `None` if SIGINT came first.
    pub fn play_match(
        &mut self,
        settings: &Settings,
        theta: &[f64],
        picks: &[usize],
        openings: &[Opening],
    ) -> Result<Option<Wdl>> {
        Ok(self
            .play_match_games(settings, theta, picks, openings)?
            .map(|scores| total(&scores)))
    }

    /// [`Arena::play_match`]'s games: the score of the engine at `theta`
    /// in each, in order.
    pub fn play_match_games(
        &mut self,
        settings: &Settings,
        theta: &[f64],
        picks: &[usize],
        openings: &[Opening],
    ) -> Result<Option<Vec<f64>>> {
        let start: Vec<f64> = settings.params.iter().map(|p| p.start).collect();
        let options = [
            option_values(&settings.params, theta),
            option_values(&settings.params, &start),
        ];
        self.play_scores(settings, options, picks, openings)
    }

    /// A game pair per pick between the engine with `options[0]` and with
    /// `options[1]`: the first's score in each game, in order (a pair's game
    /// with the first White first), or `None` if SIGINT came first.
    fn play_scores(
        &mut self,
        settings: &Settings,
        options: [Vec<(String, String)>; 2],
        picks: &[usize],
        openings: &[Opening],
    ) -> Result<Option<Vec<f64>>> {
        let job = Job {
            options,
            picks,
            openings,
            limit: limit_of(&settings.limit)?,
            adj: adjudication_of(&settings.adjudication),
        };
        let games = 2 * picks.len();
        let stop = AtomicBool::new(false);
        let specs = &self.specs;
        // Worker w plays with slot w's processes, kept from iteration to
        // iteration; only worker w ever takes slot w's lock.
        let slots: Vec<Mutex<&mut [Option<UciEngine>; 2]>> =
            self.slots.iter_mut().map(Mutex::new).collect();
        let mut scores: Vec<Option<f64>> = vec![None; games];
        let outcome = workers::run(
            games,
            slots.len(),
            &stop,
            |w| {
                slots[w]
                    .lock()
                    .map_err(|_| anyhow!("a game worker panicked"))
            },
            |slot, g| play_with_retries(slot, specs, &job, g),
            |g, score| {
                match score {
                    Some(score) => scores[g] = Some(score),
                    // SIGINT: no game starts any more.
                    None => stop.store(true, Ordering::Relaxed),
                }
                Ok(())
            },
        );
        let played = scores.iter().flatten().count();
        if crate::interrupt::interrupted() && played < games {
            return Ok(None);
        }
        outcome?;
        match scores.into_iter().collect::<Option<Vec<f64>>>() {
            Some(scores) => Ok(Some(scores)),
            None => bail!("{played} of {games} games were played"),
        }
    }
}

/// The results of a side's scores.
fn total(scores: &[f64]) -> Wdl {
    let mut wdl = Wdl::default();
    for &s in scores {
        wdl.add(s);
    }
    wdl
}

/// Game `g` of the iteration (pair `g / 2`; the plus side has White in
/// even games): the plus side's score. A side that plays an illegal move
/// (or none) loses the game at once, as cutechess and fastchess score it
/// (Glaurung 2.2 answers `bestmove (none)` when its node limit comes
/// before its first iteration ends; a replay would differ, the engines'
/// hash tables being other), and its engine is started afresh for the
/// next game. An engine that fails otherwise (exits, hangs) is replaced
/// and the game played again; `None` if SIGINT came meanwhile.
fn play_with_retries(
    slot: &mut [Option<UciEngine>; 2],
    specs: &[EngineSpec; 2],
    job: &Job,
    g: usize,
) -> Result<Option<f64>> {
    let pair = g / 2;
    let plus_white = g.is_multiple_of(2);
    let opening = &job.openings[job.picks[pair]];
    let mut faults = Vec::new();
    for _ in 0..ATTEMPTS {
        if crate::interrupt::interrupted() {
            return Ok(None);
        }
        match try_game(slot, specs, job, opening, plus_white) {
            Ok(score) => return Ok(Some(score)),
            Err((side, why)) => {
                // Killed (quit, then kill) and started afresh for the next try.
                slot[side] = None;
                if why.contains("illegal move") {
                    eprintln!(
                        "game {} (pair {}): {why}: a loss for the {} side",
                        g + 1,
                        pair + 1,
                        ["plus", "minus"][side]
                    );
                    return Ok(Some(if side == 0 { 0.0 } else { 1.0 }));
                }
                if !crate::interrupt::interrupted() {
                    eprintln!(
                        "game {} (pair {}): {why}; restarting the engine",
                        g + 1,
                        pair + 1
                    );
                }
                faults.push(why);
            }
        }
    }
    if crate::interrupt::interrupted() {
        return Ok(None);
    }
    faults.dedup();
    bail!(
        "the engine failed {ATTEMPTS} times in a row in game {} (pair {}, opening {}): {}",
        g + 1,
        pair + 1,
        job.picks[pair] + 1,
        faults.join("; ")
    )
}

/// One try of a game: the plus side's score, or the side (0 plus, 1 minus)
/// whose engine failed and how.
fn try_game(
    slot: &mut [Option<UciEngine>; 2],
    specs: &[EngineSpec; 2],
    job: &Job,
    opening: &Opening,
    plus_white: bool,
) -> Result<f64, (usize, String)> {
    for (side, engine) in slot.iter_mut().enumerate() {
        if engine.is_none() {
            let e = UciEngine::start(&specs[side])
                .map_err(|f| (side, format!("{} could not start: {f}", specs[side].name)))?;
            *engine = Some(e);
        }
    }
    let [plus, minus] = slot;
    let (Some(plus), Some(minus)) = (plus.as_mut(), minus.as_mut()) else {
        return Err((0, "internal: no engine".into()));
    };
    plus.set_options(&job.options[0])
        .map_err(|f| (0, f.to_string()))?;
    minus
        .set_options(&job.options[1])
        .map_err(|f| (1, f.to_string()))?;
    let limits = [&job.limit, &job.limit];
    let (record, plus_color) = if plus_white {
        (
            play_game(plus, minus, opening, limits, &job.adj),
            Color::White,
        )
    } else {
        (
            play_game(minus, plus, opening, limits, &job.adj),
            Color::Black,
        )
    };
    match record.fault {
        None => Ok(record.score_of(plus_color)),
        Some(c) => Err((usize::from(c != plus_color), record.termination)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_lines_are_read() {
        let o = parse_option_line("option name Move Overhead type spin default 30 min 0 max 5000")
            .unwrap();
        assert_eq!(
            o.spin(),
            Some(SpinOption {
                name: "Move Overhead".into(),
                default: 30,
                min: 0,
                max: 5000
            })
        );
        let o = parse_option_line("option name BookFile type string default <empty>").unwrap();
        assert_eq!((o.kind.as_str(), o.default.as_str()), ("string", "<empty>"));
        assert_eq!(o.spin(), None);
        let o = parse_option_line(
            "option name Style type combo default Normal var Solid var Normal var Risky",
        )
        .unwrap();
        assert_eq!((o.name.as_str(), o.kind.as_str()), ("Style", "combo"));
        let o = parse_option_line("option name Clear Hash type button").unwrap();
        assert_eq!(o.name, "Clear Hash");
        assert_eq!(parse_option_line("id name x"), None);
        assert_eq!(parse_option_line("option name X"), None);
    }

    #[test]
    fn spec_lines_replace_the_tuned_options() {
        let v = vec![
            ("pawn_mg".to_string(), 90),
            ("Move Overhead".to_string(), 10),
        ];
        assert_eq!(
            spec_line("name=e,cmd=eng uci,option.PAWN_MG=3,option.Hash=16", &v),
            "name=e,cmd=eng uci,option.Hash=16,option.pawn_mg=90,option.Move Overhead=10"
        );
        assert_eq!(toml_key("pawn_mg"), "pawn_mg");
        assert_eq!(toml_key("Move Overhead"), "\"Move Overhead\"");
    }
}
