//! `learnbook fit` (Texel tuning) on the repository's sample games: it lowers
//! the loss, is reproducible and independent of threads, resumes after a
//! kill to the same weights, and refuses bad input clearly.

mod common;

use std::{
    fs,
    path::Path,
    process::{Command, Stdio},
    thread::sleep,
    time::{Duration, Instant},
};

use common::{ok, run, s, sample};
use learnbook::{engine::params::Weights, tune::fit::State};
use tempfile::TempDir;

fn fit_args(d: &Path, name: &str, epochs: u32, threads: u32) -> Vec<String> {
    [
        "fit",
        "--positions",
        s(&sample()),
        "--out",
        s(&d.join(format!("{name}.toml"))),
        "--checkpoint",
        s(&d.join(format!("{name}.ckpt"))),
        "--checkpoint-every",
        "1",
        "--epochs",
        &epochs.to_string(),
        "--threads",
        &threads.to_string(),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn a_fit_lowers_the_loss_and_writes_loadable_weights() {
    let dir = TempDir::new().expect("tmp");
    let d = dir.path();
    let mut args = fit_args(d, "a", 30, 2);
    args.extend(["--plot".into(), s(&d.join("loss.png")).into()]);
    ok(&strs(&args));
    let state = State::load(&d.join("a.ckpt")).expect("checkpoint");
    assert_eq!(state.epoch, 30);
    assert_eq!(state.losses.len(), 31);
    let (first, last) = (state.losses[0], state.losses[30]);
    assert!(last < first - 0.002, "loss {first} -> {last}");
    // Adam on the exact gradient: every epoch lowers the loss here.
    assert!(
        state.losses.windows(2).all(|w| w[1] <= w[0] + 1e-9),
        "{:?}",
        state.losses
    );
    assert!(state.k > 0.3 && state.k < 3.0, "K {}", state.k);
    let w = Weights::load(&d.join("a.toml")).expect("fitted weights load");
    assert_ne!(w, Weights::default());
    assert!(fs::metadata(d.join("loss.png")).expect("plot").len() > 1000);
}

#[test]
fn the_l2_penalty_keeps_the_weights_nearer_their_start() {
    let dir = TempDir::new().expect("tmp");
    let d = dir.path();
    ok(&strs(&fit_args(d, "free", 40, 2)));
    let mut args = fit_args(d, "held", 40, 2);
    args.extend(["--l2".into(), "0.01".into()]);
    ok(&strs(&args));
    // Sum of squared distances from the start, over every fitted weight.
    let distance = |name: &str| {
        let st = State::load(&d.join(format!("{name}.ckpt"))).expect("checkpoint");
        st.settings
            .fitted
            .iter()
            .map(|&i| (st.x[i] - f64::from(st.settings.start[i])).powi(2))
            .sum::<f64>()
    };
    let (free, held) = (distance("free"), distance("held"));
    assert!(free > 0.0, "the free fit moved nothing");
    assert!(held < 0.5 * free, "with --l2 {held}, without {free}");
    let held_state = State::load(&d.join("held.ckpt")).expect("checkpoint");
    assert_eq!(held_state.settings.l2, 0.01);
}

#[test]
fn held_out_games_are_not_fitted_and_their_loss_is_reported() {
    let dir = TempDir::new().expect("tmp");
    let d = dir.path();
    let all = ok(&strs(&fit_args(d, "all", 20, 2)));
    let mut args = fit_args(d, "held", 20, 2);
    args.extend(["--holdout".into(), "4".into()]);
    let held = ok(&strs(&args));
    let positions = |out: &std::process::Output| -> usize {
        let text = String::from_utf8_lossy(&out.stderr).to_string();
        let first = text.split_whitespace().next().unwrap_or("");
        first
            .parse()
            .unwrap_or_else(|_| panic!("no position count in {text}"))
    };
    let text = String::from_utf8_lossy(&held.stderr).to_string();
    let held_out: usize = text
        .lines()
        .find(|l| l.contains(" held-out positions: validation loss "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no held-out count in {text}"));
    // A quarter of the games are kept apart: their positions are not fitted.
    assert!(held_out > 0);
    assert_eq!(positions(&held) + held_out, positions(&all));
    let state = State::load(&d.join("held.ckpt")).expect("checkpoint");
    assert_eq!(state.validation.first().map(|v| v.0), Some(0));
    assert_eq!(state.validation.last().map(|v| v.0), Some(20));
    assert!(state.validation.iter().all(|v| v.1 > 0.0 && v.1 < 0.25));
    assert!(State::load(&d.join("all.ckpt"))
        .expect("checkpoint")
        .validation
        .is_empty());
}

#[test]
fn the_same_fit_gives_the_same_weights_on_one_or_two_threads() {
    let dir = TempDir::new().expect("tmp");
    let d = dir.path();
    ok(&strs(&fit_args(d, "one", 15, 1)));
    ok(&strs(&fit_args(d, "two", 15, 2)));
    assert_eq!(
        fs::read(d.join("one.toml")).expect("one"),
        fs::read(d.join("two.toml")).expect("two")
    );
    let (a, b) = (
        State::load(&d.join("one.ckpt")).expect("a"),
        State::load(&d.join("two.ckpt")).expect("b"),
    );
    assert_eq!(a.x, b.x);
    assert_eq!(a.losses, b.losses);
}

#[test]
fn a_fit_killed_and_resumed_ends_with_the_weights_of_an_uninterrupted_fit() {
    let dir = TempDir::new().expect("tmp");
    let d = dir.path();
    let epochs = 200;
    ok(&strs(&fit_args(d, "whole", epochs, 2)));
    let mut child = Command::new(common::bin())
        .args(fit_args(d, "cut", epochs, 2))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fit");
    let ckpt = d.join("cut.ckpt");
    let t = Instant::now();
    let killed_at = loop {
        if let Ok(st) = State::load(&ckpt) {
            if st.epoch >= 5 {
                break st.epoch;
            }
        }
        assert!(t.elapsed() < common::WATCHDOG, "no progress");
        sleep(Duration::from_millis(2));
    };
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let cut = State::load(&ckpt).expect("the checkpoint survives a kill");
    assert!(
        cut.epoch >= killed_at && cut.epoch < epochs,
        "killed at {}",
        cut.epoch
    );
    ok(&[
        "fit",
        "--resume",
        "--checkpoint",
        s(&ckpt),
        "--positions",
        s(&sample()),
        "--out",
        s(&d.join("cut.toml")),
    ]);
    let (whole, resumed) = (
        State::load(&d.join("whole.ckpt")).expect("whole"),
        State::load(&ckpt).expect("resumed"),
    );
    assert_eq!(resumed.epoch, epochs);
    assert_eq!(resumed.x, whole.x, "same weights, bit for bit");
    assert_eq!(
        fs::read(d.join("whole.toml")).expect("whole"),
        fs::read(d.join("cut.toml")).expect("cut")
    );
}

#[test]
fn bad_input_is_refused_with_a_clear_message() {
    let dir = TempDir::new().expect("tmp");
    let d = dir.path();
    let fails = |args: &[&str], expect: &str| {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    };
    let out = d.join("o.toml");
    let params = d.join("p.toml");
    fs::write(
        &params,
        "pawn_mg = { c_end = 5 }\nno_such_weight = { c_end = 5 }\n",
    )
    .expect("write");
    fails(
        &[
            "fit",
            "--positions",
            s(&sample()),
            "--out",
            s(&out),
            "--params",
            s(&params),
        ],
        "unknown evaluation parameter \"no_such_weight\"",
    );
    let no_results = d.join("unfinished.pgn");
    fs::write(
        &no_results,
        "[White \"a\"]\n[Black \"b\"]\n\n1. e4 e5 2. Nf3 *\n",
    )
    .expect("write");
    fails(
        &["fit", "--positions", s(&no_results), "--out", s(&out)],
        "no usable positions",
    );
    fails(
        &[
            "fit",
            "--positions",
            s(&d.join("missing.pgn")),
            "--out",
            s(&out),
        ],
        "missing.pgn",
    );
    fails(
        &[
            "fit",
            "--positions",
            s(&sample()),
            "--out",
            s(&out),
            "--start",
            "nonsense",
        ],
        "nonsense",
    );
    let bad_ckpt = d.join("bad.ckpt");
    fs::write(&bad_ckpt, "learnbook-fit 1 10 0\n{}\n").expect("write");
    fails(
        &[
            "fit",
            "--resume",
            "--checkpoint",
            s(&bad_ckpt),
            "--positions",
            s(&sample()),
            "--out",
            s(&out),
        ],
        "corrupt checkpoint",
    );
    assert!(!out.exists(), "nothing written on bad input");
}
