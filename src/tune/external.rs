//! `learnbook tune --engine SPEC`: SPSA over the spin options of any UCI
//! engine, as fishtest and OpenBench tune theirs. The engine's `uci` reply
//! names the options and their ranges; every game of an iteration is two
//! processes of the engine, one given theta + c (rounded) and one theta - c
//! by `setoption` before `ucinewgame` (the [`Arena`], the tuner's
//! [`Player`] of an external engine), played by the match runner's game loop
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
};

use anyhow::{anyhow, bail, Context, Result};
use shakmaty::Color;

use super::{
    checkpoint::State,
    paramfile::{self, Entry, Format},
    player::{Player, Values},
    settings::{adjudication_of, limit_of, EngineTarget, Settings, SpinOption, TunedEngine},
    spsa::{self, TuneParam},
};
use crate::engine_io::{
    options::{declared_options, UciOption},
    protocol::{EngineSpec, UciEngine},
};
use crate::play::game::{play_game, Adjudication, Limit, Opening};
use crate::workers;

/// Tries of one game before the run stops with the engine's fault.
const ATTEMPTS: usize = 3;

/// The spin option `o` is, if it is one.
fn spin_of(o: &UciOption) -> Option<SpinOption> {
    let range = o.spin_range()?;
    Some(SpinOption {
        name: o.name.clone(),
        default: range.default,
        min: range.min,
        max: range.max,
    })
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
    declared_options(spec).map_err(fault)
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
        .filter(|o| o.spin_range().is_some())
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
    engine: TunedEngine,
    params_path: &Path,
    start: Option<&Path>,
    format: Option<Format>,
) -> Result<(EngineTarget, Vec<TuneParam>)> {
    let spec = engine.engine();
    let options = probe(spec)?;
    let spins: Vec<SpinOption> = options.iter().filter_map(spin_of).collect();
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
        Format::Toml => paramfile::toml::select_params(&text, &all, true, &|key| {
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
        spec: engine,
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
    let index = |k: &str| -> Result<usize> {
        spins
            .iter()
            .position(|o| o.name.eq_ignore_ascii_case(k))
            .with_context(|| not_a_spin(k, options))
    };
    let in_range = |&i: &usize, k: &str, v: i64| -> Result<()> {
        let o = &spins[i];
        if v < o.min || v > o.max {
            bail!(
                "{k} = {v} is outside the engine's range [{}, {}]",
                o.min,
                o.max
            );
        }
        Ok(())
    };
    paramfile::toml::read_values(&text, index, in_range)
        .with_context(|| format!("in --start {}", path.display()))
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
    pub fn engine_spec(&self) -> EngineSpec {
        let mut spec = self.spec.engine().clone();
        spec.options
            .extend(self.fixed.iter().map(|(k, v)| (k.clone(), v.to_string())));
        spec
    }

    /// Starts the engine and checks that it still declares the options the
    /// run was begun with (a resume must go on with the same engine).
    pub fn check_engine(&self) -> Result<()> {
        let spec = self.engine_spec();
        let options = probe(&spec)?;
        for o in &self.options {
            match find(&options, &o.name).and_then(spin_of) {
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
            if find(&options, name).and_then(spin_of).is_none() {
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

/// `--out` of an `--engine` run: `Name = value` (usable as `--start`), with
/// the spec line and the files written beside it in comments.
pub fn options_toml(state: &State, target: &EngineTarget, out: &Path) -> String {
    let values = values_at(state, target);
    let mut header = format!(
        "# learnbook tune --engine {:?}: iteration {} of {}, {} games, seed {}\n\
         # as an engine: {}\n",
        target.spec.text(),
        state.iteration(),
        state.settings.schedule.iterations,
        state.games(),
        state.settings.seed,
        spec_line(target.spec.text(), &values)
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
    header.push_str(&format!(
        "# also written beside this file, its name with: {}\n",
        beside.join(", ")
    ));
    paramfile::toml::write_values(&header, &values, state.settings.params.len())
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
        (beside(out, "uci"), paramfile::uci::setoption_lines(&values)),
        (
            beside(out, "options"),
            paramfile::match_runner::match_runner_options(&values),
        ),
    ];
    if let (Some(suffix), Some(text)) = (target.format.suffix(), params_file(state, target)) {
        files.push((beside(out, suffix), text));
    }
    files
}

/// `--out` and the files beside it (`written_beside`), each replaced
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
    options: [&'a [(String, String)]; 2],
    picks: &'a [usize],
    openings: &'a [Opening],
    limit: Limit,
    adj: Adjudication,
}

impl Arena {
    /// `threads` games at once; no process starts before the first game.
    pub fn new(target: &EngineTarget, threads: usize) -> Arena {
        let spec = target.engine_spec();
        let side = |s: &str| EngineSpec {
            name: format!("{} ({s})", spec.name),
            ..spec.clone()
        };
        Arena {
            specs: [side("plus"), side("minus")],
            slots: (0..threads.max(1)).map(|_| [None, None]).collect(),
        }
    }
}

/// Each side is the `setoption` values of the tuned options.
impl Player for Arena {
    type Side = Vec<(String, String)>;

    fn side(&self, settings: &Settings, values: Values<'_>) -> Vec<(String, String)> {
        match values {
            Values::At(theta) => option_values(&settings.params, theta),
            Values::Start => {
                let start: Vec<f64> = settings.params.iter().map(|p| p.start).collect();
                option_values(&settings.params, &start)
            }
        }
    }

    fn play(
        &mut self,
        settings: &Settings,
        sides: [&Vec<(String, String)>; 2],
        picks: &[usize],
        openings: &[Opening],
    ) -> Result<Option<Vec<f64>>> {
        let job = Job {
            options: [sides[0].as_slice(), sides[1].as_slice()],
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
    plus.set_options(job.options[0])
        .map_err(|f| (0, f.to_string()))?;
    minus
        .set_options(job.options[1])
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
    fn spec_lines_replace_the_tuned_options() {
        let v = vec![
            ("pawn_mg".to_string(), 90),
            ("Move Overhead".to_string(), 10),
        ];
        assert_eq!(
            spec_line("name=e,cmd=eng uci,option.PAWN_MG=3,option.Hash=16", &v),
            "name=e,cmd=eng uci,option.Hash=16,option.pawn_mg=90,option.Move Overhead=10"
        );
    }
}
