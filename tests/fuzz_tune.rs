//! Fuzzing the tuner's files: SPSA checkpoints, weights and parameter files
//! (the harness and its environment: `tests/common/fuzz.rs`).

mod common;

use std::{path::Path, sync::OnceLock, time::Duration};

use common::fuzz::*;
use learnbook::{
    engine::{eval::evaluate, params::Weights, presets::preset},
    tune::{
        checkpoint::{Iteration, State},
        paramfile::toml::read_param_file,
        report, run,
        settings::{AdjudicationSpec, LimitSpec, Settings},
        spsa::{self, all_params, Schedule},
    },
};
use rand::{rngs::StdRng, Rng};
use shakmaty::{fen::Fen, CastlingMode, Chess};

// ------------------------------------------------------------- checkpoint

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Real checkpoints: a few parameters and three iterations, and every
/// parameter with none.
fn checkpoint_seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let w = Weights::default();
        let make = |params: Vec<spsa::TuneParam>, iterations: u64| {
            let mut s = State::new(Settings {
                limit: LimitSpec::Clock("40/10+0.1".into()),
                pairs_per_iteration: 4,
                schedule: Schedule::new(10),
                seed: 7,
                openings: "openings.epd".into(),
                openings_count: 3,
                adjudication: AdjudicationSpec {
                    draw: Some((40, 8, 10)),
                    resign: Some((3, 400)),
                    max_moves: Some(200),
                },
                base: w.values(),
                net: None,
                params,
                engine: None,
                progress_match: None,
            });
            for k in 0..iterations {
                s.theta[0] += 1.5;
                s.history.push(Iteration {
                    number: k + 1,
                    wins: 3,
                    draws: 2,
                    losses: 3,
                    theta: s.theta.clone(),
                });
            }
            let scratch = scratch();
            let path = scratch.path().join("seed.ckpt");
            s.save(&path).expect("save");
            std::fs::read(&path).expect("read")
        };
        vec![
            make(all_params(&w)[..4].to_vec(), 3),
            make(all_params(&w), 0),
        ]
    })
}

const JSON_DICT: &[&[u8]] = &[
    b"-1",
    b"0",
    b"1e308",
    b"-1e308",
    b"1e-320",
    b"18446744073709551616",
    b"-0",
    b"null",
    b"true",
    b"\"x\"",
    b"[]",
    b"{}",
    b",",
    b":",
    b"\"min\":",
    b"\"max\":",
    b"\"c_end\":",
    b"\"index\":",
    b"\"iterations\":",
    b"\"alpha\":",
    b"\"theta\":[",
    b"\"history\":[",
    b"\"Nodes\":",
    b"\"Clock\":\"",
];

fn seal(body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "learnbook-tune-checkpoint 1 {} {:016x}\n",
        body.len(),
        fnv1a(body)
    )
    .into_bytes();
    out.extend_from_slice(body);
    out.push(b'\n');
    out
}

fn gen_checkpoint(rng: &mut StdRng) -> Vec<u8> {
    let seeds = checkpoint_seeds();
    let seed = &seeds[rng.random_range(0..seeds.len())];
    match rng.random_range(0..10) {
        0 => random_bytes(rng, 2048),
        1 | 2 => mutate(rng, seed, seeds, JSON_DICT),
        _ => {
            // The body changed and the header made to match, so that the
            // JSON and the consistency checks are reached.
            let nl = seed.iter().position(|&c| c == b'\n').unwrap_or(0);
            let body = &seed[nl + 1..seed.len() - 1];
            seal(&mutate(rng, body, &[], JSON_DICT))
        }
    }
}

fn run_checkpoint(dir: &Path, bytes: Vec<u8>) -> CaseResult {
    let path = dir.join("case.ckpt");
    std::fs::write(&path, &bytes).map_err(|e| e.to_string())?;
    let state = match State::load(&path) {
        Err(e) => return Ok(vec![format!("{e:#}")]),
        Ok(s) => s,
    };
    // What a resume and tune-report do with it before any game.
    let mut errors = Vec::new();
    let s = &state.settings;
    let base = state.base();
    let _ = spsa::weights_at(&base, &s.params, &state.theta);
    let k = state.iteration();
    let flip = spsa::flips(&mut spsa::iteration_rng(s.seed, k), s.params.len());
    let _ = spsa::perturbed(&s.schedule, &s.params, &state.theta, &flip, k);
    let mut theta = state.theta.clone();
    spsa::step(&s.schedule, &s.params, &mut theta, &flip, k, 3.0);
    let _ = run::summary(&state);
    let _ = report::csv(&state);
    if bytes.len().is_multiple_of(8) {
        if let Err(e) = report::plot(&state, &dir.join("case.png")) {
            errors.push(format!("{e:#}"));
        }
    }
    let out = dir.join("case.toml");
    match run::write_weights(&state, &out) {
        Err(e) => errors.push(format!("{e:#}")),
        Ok(()) => {
            Weights::load(&out).map_err(|e| format!("written weights do not load: {e:#}"))?;
        }
    }
    let again = dir.join("again.ckpt");
    state.save(&again).map_err(|e| format!("save: {e:#}"))?;
    if State::load(&again).map_err(|e| format!("a saved state does not load: {e:#}"))? != state {
        let back = State::load(&again).map_err(|e| format!("{e:#}"))?;
        let (a, b) = (format!("{state:?}"), format!("{back:?}"));
        let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let from = a[..at].char_indices().rev().nth(80).map_or(0, |(i, _)| i);
        return Err(format!(
            "a saved state loads as another state: …{}… became …{}…",
            a[from..].chars().take(160).collect::<String>(),
            b[from..].chars().take(160).collect::<String>()
        ));
    }
    Ok(errors)
}

#[test]
fn checkpoints_survive_random_and_mutated_files() {
    // Dropped (removed) when the test ends.
    let dir = scratch();
    let path = dir.path().to_path_buf();
    fuzz(
        "checkpoint",
        3000,
        Duration::from_secs(20),
        gen_checkpoint,
        move |bytes| run_checkpoint(&path, bytes),
    );
}

// ---------------------------------------------------------------- weights

fn weights_seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut seeds = Vec::new();
        for f in ["material-mobility.toml", "scalars.toml", "scrambled.toml"] {
            seeds.push(std::fs::read(common::repo().join("data/tune").join(f)).expect("data/tune"));
        }
        for name in ["default", "kaissa", "kotok"] {
            let (w, notes) = preset(name).expect("preset");
            seeds.push(format!("{notes}{}", w.to_toml(name)).into_bytes());
        }
        seeds
    })
}

const TOML_DICT: &[&[u8]] = &[
    b"nan",
    b"inf",
    b"-inf",
    b"+nan",
    b"1e400",
    b"9999999999",
    b"-9223372036854775808",
    b"0x10",
    b"0b1",
    b"\"x\"",
    b"[1, 2]",
    b"{}",
    b"{ c_end = 0 }",
    b"{ min = nan }",
    b"{ max = -1e9 }",
    b"{ r_end = inf }",
    b" = ",
    b"\n",
    b"*",
    b"pawn_mg",
    b"\"pst_knight_mg_*\"",
    b"[table]\n",
    b"[[arr]]\n",
    b"#",
    b"'''",
    b"\"\"\"",
    b"1979-05-27T07:32:00Z",
    b"true",
];

/// A few positions to evaluate with loaded weights.
fn positions() -> Vec<Chess> {
    [
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP3PPP/R2QKB1R w KQ - 1 9",
        "8/5k2/8/3K4/8/8/8/8 w - - 0 1",
        "6k1/5ppp/8/8/8/8/1P3PPP/6K1 b - - 0 40",
        "8/P7/8/8/8/8/6kp/4K3 w - - 0 1",
    ]
    .iter()
    .map(|f| {
        f.parse::<Fen>()
            .expect("fen")
            .into_position(CastlingMode::Standard)
            .expect("position")
    })
    .collect()
}

fn gen_weights(rng: &mut StdRng) -> Vec<u8> {
    let seeds = weights_seeds();
    match rng.random_range(0..10) {
        0 | 1 => return random_bytes(rng, 1024),
        2 => {
            let name = ["default", "kaissa", "kotok"][rng.random_range(0..3)];
            return mutate(rng, name.as_bytes(), &[], &[]);
        }
        _ => {}
    }
    let seed = &seeds[rng.random_range(0..seeds.len())];
    if rng.random() {
        return mutate(rng, seed, seeds, TOML_DICT);
    }
    // Values replaced line by line, so that the TOML still parses and the
    // loaders' own checks are reached.
    let text = String::from_utf8_lossy(seed);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..rng.random_range(1..=4) {
        let i = rng.random_range(0..lines.len());
        if let Some((key, _)) = lines[i].split_once(" = ") {
            let value = TOML_VALUES[rng.random_range(0..TOML_VALUES.len())];
            lines[i] = format!("{key} = {value}");
        }
    }
    lines.join("\n").into_bytes()
}

/// Values for a `name = value` line of a weights or parameter file.
const TOML_VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "2147483648",
    "-2147483649",
    "nan",
    "inf",
    "-inf",
    "1.5",
    "\"x\"",
    "[]",
    "{}",
    "{ c_end = 0 }",
    "{ c_end = -3 }",
    "{ c_end = nan }",
    "{ c_end = inf }",
    "{ r_end = 0 }",
    "{ r_end = nan }",
    "{ min = nan }",
    "{ max = nan }",
    "{ min = -nan, max = nan }",
    "{ min = -inf }",
    "{ max = inf }",
    "{ min = 10, max = 5 }",
    "{ min = 1e300 }",
    "{ min = 1 }",
    "{ max = 1 }",
    "{ step = 1 }",
    "{ c_end = \"x\" }",
    "{ min = [] }",
    "{ c_end = 1e-300, r_end = 1e300 }",
];

fn run_weights(dir: &Path, bytes: Vec<u8>) -> CaseResult {
    let mut errors = Vec::new();
    let Ok(text) = std::str::from_utf8(&bytes) else {
        // Not UTF-8: the file loader refuses it.
        let path = dir.join("case.toml");
        std::fs::write(&path, &bytes).map_err(|e| e.to_string())?;
        return match Weights::load(&path) {
            Ok(_) => Err("a file that is not UTF-8 loaded".into()),
            Err(e) => Ok(vec![format!("{e:#}")]),
        };
    };
    if bytes.len() <= 24 {
        // A preset name (`learnbook weights --preset`).
        if let Err(e) = preset(text.trim()) {
            errors.push(format!("{e:#}"));
        }
    }
    // Both loaders read every text; the errors counted are those of the
    // loader the text is meant for (a parameter file has `name = { ... }`),
    // the other's must name a problem too.
    let param_file = text.lines().any(|l| {
        l.split_once('=')
            .is_some_and(|(_, v)| v.trim_start().starts_with('{'))
    });
    let mut other = Vec::new();
    let (weights_errors, param_errors) = if param_file {
        (&mut other, &mut errors)
    } else {
        (&mut errors, &mut other)
    };
    match Weights::from_toml(text) {
        Err(e) => weights_errors.push(format!("{e:#}")),
        Ok(w) => {
            for p in w.params() {
                if p.value < p.min || p.value > p.max {
                    return Err(format!(
                        "{} = {} is outside [{}, {}]",
                        p.name, p.value, p.min, p.max
                    ));
                }
            }
            for pos in positions() {
                let _ = evaluate(&pos, &w);
            }
            let back =
                Weights::from_toml(&w.to_toml("fuzz")).map_err(|e| format!("round trip: {e:#}"))?;
            if back != w {
                return Err("weights change in a TOML round trip".into());
            }
        }
    }
    // The same text as an SPSA parameter file, and one step with it.
    match read_param_file(text, &Weights::default()) {
        Err(e) => param_errors.push(format!("{e:#}")),
        Ok(params) => {
            let schedule = Schedule::new(100);
            let mut theta: Vec<f64> = params.iter().map(|p| p.start).collect();
            let flip = spsa::flips(&mut spsa::iteration_rng(1, 0), params.len());
            let _ = spsa::perturbed(&schedule, &params, &theta, &flip, 0);
            spsa::step(&schedule, &params, &mut theta, &flip, 0, 2.0);
            let _ = spsa::weights_at(&Weights::default(), &params, &theta);
        }
    }
    if let Some(e) = other.iter().find(|e| !names_a_problem(e)) {
        return Err(format!("an error that says nothing: {e:?}"));
    }
    Ok(errors)
}

#[test]
fn weights_and_parameter_files_survive_random_and_mutated_text() {
    // Dropped (removed) when the test ends.
    let dir = scratch();
    let path = dir.path().to_path_buf();
    fuzz(
        "weights",
        3000,
        Duration::from_secs(20),
        gen_weights,
        move |bytes| run_weights(&path, bytes),
    );
}
