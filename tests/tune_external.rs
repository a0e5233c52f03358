//! `learnbook tune --engine`: SPSA over the spin options of an external UCI
//! engine (this crate's own `learnbook uci`, so the tests run on a fresh
//! clone): the same games as the in-process tuner, SIGKILL and resume, bad
//! options refused, a crashing engine, and `tune-report --compare`.

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread::sleep,
    time::{Duration, Instant},
};

use common::{ok, run, s, tune_setup};
use learnbook::{engine::params::Weights, tune::checkpoint::State};

/// `learnbook uci` as an engine spec: the hand-crafted evaluation the
/// in-process tuner plays (`--net none`); Hash=2 is what it gives its
/// node-limited engines.
fn engine() -> String {
    format!("name=lb,cmd={} uci --net none,option.Hash=2", common::bin())
}

/// `tune` arguments for a small run in `dir`; `engine`: `--engine SPEC`,
/// else the in-process tuner from the default weights.
#[allow(clippy::too_many_arguments)]
fn args(
    dir: &Path,
    openings: &Path,
    params: &Path,
    engine: Option<&str>,
    iterations: u32,
    threads: u32,
    name: &str,
) -> Vec<String> {
    let mut v: Vec<String> = match engine {
        Some(spec) => vec!["tune".into(), "--engine".into(), spec.into()],
        None => vec!["tune".into(), "--start".into(), "default".into()],
    };
    v.extend(
        [
            "--params",
            s(params),
            "--nodes",
            "600",
            "--pairs-per-iteration",
            "2",
            "--iterations",
            &iterations.to_string(),
            "--openings",
            s(openings),
            "--seed",
            "11",
            "--threads",
            &threads.to_string(),
            "--checkpoint",
            s(&dir.join(format!("{name}.ckpt"))),
            "--out",
            s(&dir.join(format!("{name}.toml"))),
        ]
        .iter()
        .map(|a| a.to_string()),
    );
    v
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn load(dir: &Path, name: &str) -> State {
    State::load(&dir.join(format!("{name}.ckpt"))).expect("checkpoint loads")
}

/// `name = value` lines of a TOML file, comments left out.
fn values(path: &Path) -> std::collections::BTreeMap<String, i64> {
    let table: toml::Table = fs::read_to_string(path)
        .expect("read")
        .parse()
        .expect("TOML");
    table
        .iter()
        .map(|(k, v)| (k.clone(), v.as_integer().expect("integer")))
        .collect()
}

#[test]
fn tuning_learnbook_uci_through_engine_plays_the_same_games_as_the_in_process_tuner() {
    let (dir, openings, params) = tune_setup();
    let d = dir.path();
    let spec = engine();
    let out = ok(&strs(&args(
        d,
        &openings,
        &params,
        Some(&spec),
        3,
        2,
        "ext",
    )));
    ok(&strs(&args(d, &openings, &params, None, 3, 2, "in")));
    let (ext, inp) = (load(d, "ext"), load(d, "in"));
    assert_eq!(ext.iteration(), 3);
    assert_eq!(ext.games(), 3 * 4);
    // The same search behind a pipe: game for game the same results, so the same theta.
    assert_eq!(ext.history, inp.history);
    assert_eq!(ext.settings.params.len(), 3 + 8);
    let target = ext.settings.engine.as_ref().expect("an engine run");
    assert_eq!(target.spec.text(), spec);
    assert!(inp.settings.engine.is_none());
    // The start is the engine's own values (its defaults: the default weights).
    assert_eq!(ext.settings.params[0].name, "knight_mg");
    assert_eq!(
        ext.settings.params[0].start,
        f64::from(Weights::default().knight_mg)
    );
    assert_eq!(ext.settings.params[0].max, 600.0, "the engine's own max");

    // --out: the tuned options, rounded, and the spec line to play them with.
    let tuned = values(&d.join("ext.toml"));
    assert_eq!(tuned.len(), ext.settings.params.len());
    for (p, t) in ext.settings.params.iter().zip(&ext.theta) {
        assert_eq!(tuned.get(&p.name), Some(&(t.round() as i64)), "{}", p.name);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains("option.knight_mg="))
        .expect("the spec line is printed");
    assert!(line.starts_with(&spec), "{line}");
    // It plays, and the option values arrive (the engine would say otherwise).
    let play = ok(&[
        "play",
        "--engine",
        &format!("name=tuned,{line}"),
        "--engine",
        "name=base,cmd=builtin",
        "--nodes",
        "300",
        "--games",
        "2",
    ]);
    assert!(String::from_utf8_lossy(&play.stdout).contains("2 games"));

    // --out as --start of the next run: its start is where this one ended.
    let next = args(d, &openings, &params, Some(&spec), 1, 1, "next");
    let mut next = next.clone();
    next.extend(["--start".into(), s(&d.join("ext.toml")).into()]);
    ok(&strs(&next));
    let n = load(d, "next");
    for p in &n.settings.params {
        assert_eq!(
            Some(p.start as i64),
            tuned.get(&p.name).copied(),
            "{}",
            p.name
        );
    }
}

/// Waits until the checkpoint records at least `n` iterations.
fn wait_for_iteration(ckpt: &Path, n: u64) -> u64 {
    let t = Instant::now();
    loop {
        if let Ok(st) = State::load(ckpt) {
            if st.iteration() >= n {
                return st.iteration();
            }
        }
        assert!(t.elapsed() < common::WATCHDOG, "no progress");
        sleep(Duration::from_millis(5));
    }
}

#[test]
fn sigkill_then_resume_of_an_engine_run_gives_the_same_history_as_an_uninterrupted_run() {
    let (dir, openings, params) = tune_setup();
    let d = dir.path();
    let spec = engine();
    let total = 12;
    ok(&strs(&args(
        d,
        &openings,
        &params,
        Some(&spec),
        total,
        2,
        "whole",
    )));
    let mut child = Command::new(common::bin())
        .args(args(d, &openings, &params, Some(&spec), total, 2, "cut"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tune");
    let ckpt = d.join("cut.ckpt");
    wait_for_iteration(&ckpt, 2);
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let killed = load(d, "cut");
    assert!(
        killed.iteration() < u64::from(total),
        "killed before the end"
    );
    let cut_out = d.join("cut.toml");
    let resume = |extra: &[&str]| {
        let mut a = vec![
            "tune",
            "--resume",
            "--checkpoint",
            s(&ckpt),
            "--out",
            s(&cut_out),
            "--threads",
            "1",
        ];
        a.extend_from_slice(extra);
        run(&a)
    };
    // Another engine than the checkpoint's is refused, and nothing changes.
    let other = format!("name=lb,cmd={} uci --net none,option.Hash=4", common::bin());
    let out = resume(&["--engine", &other]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is a run of --engine"), "{err}");
    assert_eq!(load(d, "cut"), killed);
    // The same engine, or none (the checkpoint's), goes on.
    let out = resume(&["--engine", &spec]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (whole, resumed) = (load(d, "whole"), load(d, "cut"));
    assert_eq!(resumed.history[..killed.history.len()], killed.history[..]);
    assert_eq!(
        resumed.history, whole.history,
        "same as an uninterrupted run"
    );
    assert_eq!(
        fs::read(d.join("cut.toml")).unwrap(),
        fs::read(d.join("whole.toml")).unwrap()
    );

    // An in-process checkpoint is not resumed as an engine run.
    ok(&strs(&args(d, &openings, &params, None, 1, 1, "inproc")));
    let out = run(&[
        "tune",
        "--resume",
        "--engine",
        &spec,
        "--checkpoint",
        s(&d.join("inproc.ckpt")),
        "--out",
        s(&d.join("inproc.toml")),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is an in-process run"), "{err}");
}

#[test]
fn unknown_and_non_spin_options_are_refused_with_a_clear_message() {
    let (dir, openings, _) = tune_setup();
    let d = dir.path();
    let spec = engine();
    let bad = d.join("bad-params.toml");
    let start = d.join("start.toml");
    for (params, start_text, says) in [
        (
            "knight_mg = {}\nknight_value = {}\n",
            None,
            vec![
                "unknown option \"knight_value\"",
                "spin options are",
                "pawn_mg",
            ],
        ),
        (
            "Ponder = {}\n",
            None,
            vec!["\"Ponder\" is a check option", "only spin options"],
        ),
        ("\"BookFile\" = {}\n", None, vec!["is a string option"]),
        ("\"zz_*\" = {}\n", None, vec!["unknown option \"zz_\""]),
        (
            "knight_mg = { max = 700 }\n",
            None,
            vec!["outside the parameter's range [150, 600]"],
        ),
        (
            "knight_mg = {}\n",
            Some("knight_mg = 320\nknight_value = 3\n"),
            vec!["--start", "unknown option \"knight_value\""],
        ),
        (
            "knight_mg = {}\n",
            Some("knight_mg = 900\n"),
            vec!["outside the engine's range"],
        ),
        (
            "knight_mg = {}\n",
            Some("OwnBook = 1\n"),
            vec!["is a check option"],
        ),
    ] {
        fs::write(&bad, params).unwrap();
        let mut a = args(d, &openings, &bad, Some(&spec), 2, 1, "bad");
        if let Some(t) = start_text {
            fs::write(&start, t).unwrap();
            a.extend(["--start".into(), s(&start).into()]);
        }
        let out = run(&strs(&a));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{params}: {err}");
        for s in says {
            assert!(err.contains(s), "{params}: expected {s:?} in {err}");
        }
        assert!(!d.join("bad.ckpt").exists() && !d.join("bad.toml").exists());
    }
    // --engine needs --params; an xboard engine or cmd=builtin is refused.
    let mut no_params = args(d, &openings, &bad, Some(&spec), 2, 1, "bad");
    let i = no_params.iter().position(|a| a == "--params").unwrap();
    no_params.drain(i..i + 2);
    let out = run(&strs(&no_params));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--engine needs --params"));
    for (spec, says) in [
        ("cmd=builtin", "in-process engine"),
        ("cmd=x,proto=xboard", "only UCI engines"),
        ("cmd=/nonexistent/engine", "cannot read the options"),
    ] {
        let out = run(&strs(&args(d, &openings, &bad, Some(spec), 2, 1, "bad")));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}");
        assert!(err.contains(says), "{spec}: {err}");
    }
}

/// A fake engine: `learnbook uci` itself, unless a file `crash` lies next to
/// the script; then it answers the handshake and dies at the first `go`
/// (or, with a file `none` there instead, answers every `go` with
/// `bestmove (none)`, as Glaurung 2.2 does when its node limit comes first).
fn fake_engine(dir: &Path) -> PathBuf {
    let script = dir.join("engine.sh");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\n\
             if [ -e \"$(dirname \"$0\")/crash\" ]; then\n\
               while read -r line; do\n\
                 case \"$line\" in\n\
                   uci) echo 'id name fake'; echo 'option name knight_mg type spin default {0} min 150 max 600'; echo uciok ;;\n\
                   isready) echo readyok ;;\n\
                   go*) exit 3 ;;\n\
                   quit) exit 0 ;;\n\
                 esac\n\
               done\n\
               exit 0\n\
             fi\n\
             if [ -e \"$(dirname \"$0\")/none\" ]; then\n\
               while read -r line; do\n\
                 case \"$line\" in\n\
                   uci) echo 'id name fake'; echo 'option name knight_mg type spin default {0} min 150 max 600'; echo uciok ;;\n\
                   isready) echo readyok ;;\n\
                   go*) echo 'bestmove (none)' ;;\n\
                   quit) exit 0 ;;\n\
                 esac\n\
               done\n\
               exit 0\n\
             fi\n\
             exec {1} uci --net none\n",
            // The real engine's default, so a mended run resumes as a sound one.
            Weights::default().knight_mg,
            common::bin()
        ),
    )
    .expect("write the fake engine");
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod");
    script
}

#[test]
fn an_engine_that_plays_no_legal_move_loses_the_game_and_the_tune_goes_on() {
    let (dir, openings, _) = tune_setup();
    let d = dir.path();
    let params = d.join("one.toml");
    fs::write(&params, "knight_mg = {}\n").unwrap();
    let spec = format!("name=fake,cmd={}", s(&fake_engine(d)));
    fs::write(d.join("none"), "").unwrap();
    let out = run(&strs(&args(
        d,
        &openings,
        &params,
        Some(&spec),
        2,
        1,
        "none",
    )));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // White moves first and never plays: each game is White's loss, the
    // plus side's in even games, the minus side's in odd ones.
    for says in [
        ("game 1 (pair 1): white illegal move: ", "plus"),
        ("game 2 (pair 1): white illegal move: ", "minus"),
    ] {
        let line = err.lines().find(|l| l.starts_with(says.0));
        let lost = "played \"(none)\" in ";
        assert!(
            line.is_some_and(
                |l| l.contains(lost) && l.ends_with(&format!("a loss for the {} side", says.1))
            ),
            "expected {says:?} in {err}"
        );
    }
    // At once: no game played again.
    assert!(!err.contains("restarting"), "{err}");
    assert_eq!(load(d, "none").iteration(), 2);
}

#[test]
fn a_crashing_engine_gives_a_clear_error_and_a_resumable_checkpoint() {
    let (dir, openings, _) = tune_setup();
    let d = dir.path();
    let params = d.join("one.toml");
    fs::write(&params, "knight_mg = {}\n").unwrap();
    let spec = format!("name=fake,cmd={}", s(&fake_engine(d)));
    fs::write(d.join("crash"), "").unwrap();
    let out = run(&strs(&args(
        d,
        &openings,
        &params,
        Some(&spec),
        3,
        2,
        "crash",
    )));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for says in [
        "iteration 1 failed",
        "failed 3 times in a row",
        "fake (",
        "exited",
        "--resume",
    ] {
        assert!(err.contains(says), "expected {says:?} in {err}");
    }
    let st = load(d, "crash");
    assert_eq!(
        st.iteration(),
        0,
        "the checkpoint holds the finished iterations"
    );
    // Mended, it resumes and ends as a run that never crashed.
    fs::remove_file(d.join("crash")).unwrap();
    ok(&[
        "tune",
        "--resume",
        "--checkpoint",
        s(&d.join("crash.ckpt")),
        "--out",
        s(&d.join("crash.toml")),
    ]);
    ok(&strs(&args(
        d,
        &openings,
        &params,
        Some(&spec),
        3,
        2,
        "sound",
    )));
    assert_eq!(load(d, "crash").history, load(d, "sound").history);
    assert_eq!(load(d, "crash").iteration(), 3);
}

#[test]
fn tune_report_compares_two_runs_and_draws_both_trajectories() {
    let (dir, openings, params) = tune_setup();
    let d = dir.path();
    ok(&strs(&args(
        d,
        &openings,
        &params,
        Some(&engine()),
        2,
        2,
        "a",
    )));
    ok(&strs(&args(d, &openings, &params, None, 2, 2, "b")));
    let png = d.join("both.png");
    let out = ok(&[
        "tune-report",
        "--checkpoint",
        s(&d.join("a.ckpt")),
        "--compare",
        s(&d.join("b.ckpt")),
        "--plot",
        s(&png),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("a.ckpt: --engine"), "{text}");
    assert!(text.contains("b.ckpt: in-process"), "{text}");
    assert!(
        text.contains("11 of 11 parameters end on the same side of their start in both runs"),
        "{text}"
    );
    let bytes = fs::read(&png).unwrap();
    assert!(bytes.len() > 10_000 && bytes.starts_with(b"\x89PNG"));
}

#[test]
fn sigint_stops_an_engine_run_with_its_finished_iterations_checkpointed() {
    let (dir, openings, params) = tune_setup();
    let d = dir.path();
    let spec = engine();
    let child = Command::new(common::bin())
        .args(args(d, &openings, &params, Some(&spec), 200, 2, "int"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tune");
    let ckpt = d.join("int.ckpt");
    wait_for_iteration(&ckpt, 2);
    // SAFETY: signalling our own child by its pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(130), "exit code after SIGINT");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--resume"), "{text}");
    let st = load(d, "int");
    assert!(st.iteration() >= 2 && st.iteration() < 200);
    // What it wrote is the checkpoint's theta.
    let tuned = values(&d.join("int.toml"));
    assert_eq!(
        tuned.get("knight_mg").copied(),
        Some(st.theta[0].round() as i64)
    );
}
