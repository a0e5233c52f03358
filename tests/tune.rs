//! `learnbook tune` and `tune-report`: reproducible trajectories, SIGKILL
//! and SIGINT with resume, bad input refused without changing anything.

mod common;

use std::{
    fs,
    path::Path,
    process::{Command, Stdio},
    thread::sleep,
    time::{Duration, Instant},
};

use common::{ok, run, s, tune_setup};
use learnbook::{engine::params::Weights, tune::checkpoint::State};

/// `tune` arguments for a small run in `dir`.
fn args(
    dir: &Path,
    openings: &Path,
    params: &Path,
    iterations: u32,
    threads: u32,
    name: &str,
) -> Vec<String> {
    [
        "tune",
        "--start",
        "default",
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
    .map(|a| a.to_string())
    .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn load(dir: &Path, name: &str) -> State {
    State::load(&dir.join(format!("{name}.ckpt"))).expect("checkpoint loads")
}

#[test]
fn a_fixed_seed_gives_the_same_trajectory() {
    let (dir, openings, params) = tune_setup();
    let d = dir.path();
    ok(&strs(&args(d, &openings, &params, 4, 2, "a")));
    ok(&strs(&args(d, &openings, &params, 4, 2, "b")));
    // Node-limited games do not depend on scheduling: one thread agrees too.
    ok(&strs(&args(d, &openings, &params, 4, 1, "c")));
    let (a, b, c) = (load(d, "a"), load(d, "b"), load(d, "c"));
    assert_eq!(a.iteration(), 4);
    assert_eq!(a.games(), 4 * 4);
    assert_eq!(a.history, b.history);
    assert_eq!(a.history, c.history);
    assert_eq!(a.settings.params.len(), 3 + 8);
    // Theta moved (the games decided something) and the weights file is it.
    assert!(a
        .theta
        .iter()
        .zip(&a.settings.params)
        .any(|(t, p)| (t - p.start).abs() > 1e-6));
    let w = Weights::load(&d.join("a.toml")).expect("tuned weights load");
    assert_eq!(
        fs::read(d.join("a.toml")).unwrap(),
        fs::read(d.join("b.toml")).unwrap()
    );
    for (p, t) in a.settings.params.iter().zip(&a.theta) {
        assert_eq!(w.get(&p.name), Some(t.round() as i32), "{}", p.name);
    }
    assert_eq!(
        w.pawn_mg,
        Weights::default().pawn_mg,
        "untuned numbers kept"
    );
    // A different seed takes another path.
    let mut other = args(d, &openings, &params, 4, 2, "d");
    let i = other.iter().position(|a| a == "--seed").unwrap();
    other[i + 1] = "12".into();
    ok(&strs(&other));
    assert_ne!(load(d, "d").history, a.history);
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
fn sigkill_then_resume_loses_and_repeats_no_iteration() {
    let (dir, openings, params) = tune_setup();
    let d = dir.path();
    let total = 24;
    ok(&strs(&args(d, &openings, &params, total, 2, "whole")));
    let cut = args(d, &openings, &params, total, 2, "cut");
    let mut child = Command::new(common::bin())
        .args(&cut)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tune");
    let ckpt = d.join("cut.ckpt");
    wait_for_iteration(&ckpt, 3);
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let killed = load(d, "cut");
    assert!(
        killed.iteration() < u64::from(total),
        "killed before the end"
    );
    // Only --out, --threads may accompany --resume; settings come from the checkpoint.
    ok(&[
        "tune",
        "--resume",
        "--checkpoint",
        s(&ckpt),
        "--out",
        s(&d.join("cut.toml")),
        "--threads",
        "1",
    ]);
    let (whole, resumed) = (load(d, "whole"), load(d, "cut"));
    let numbers: Vec<u64> = resumed.history.iter().map(|i| i.number).collect();
    assert_eq!(numbers, (1..=u64::from(total)).collect::<Vec<_>>());
    assert_eq!(resumed.history[..killed.history.len()], killed.history[..]);
    assert_eq!(
        resumed.history, whole.history,
        "same as an uninterrupted run"
    );
    assert_eq!(
        fs::read(d.join("cut.toml")).unwrap(),
        fs::read(d.join("whole.toml")).unwrap()
    );
}

#[test]
fn sigint_checkpoints_and_exits() {
    let (dir, openings, params) = tune_setup();
    let d = dir.path();
    let child = Command::new(common::bin())
        .args(args(d, &openings, &params, 200, 2, "int"))
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
    let w = Weights::load(&d.join("int.toml")).expect("weights written on SIGINT");
    let knight = st.theta[0].round() as i32;
    assert_eq!(w.knight_mg, knight);
}

#[test]
fn bad_input_gets_a_clear_error_and_changes_nothing() {
    let (dir, openings, params) = tune_setup();
    let d = dir.path();
    let bad_params = d.join("bad-params.toml");
    for (text, says) in [
        (
            "knight_mg = {}\nknight_value = {}\n",
            "unknown parameter \"knight_value\"",
        ),
        (
            "knight_mg = { min = 100 }\n",
            "outside the parameter's range",
        ),
        (
            "queen_mg = { max = 5000 }\n",
            "outside the parameter's range",
        ),
        ("knight_mg = { c_end = -1 }\n", "must be positive"),
    ] {
        fs::write(&bad_params, text).unwrap();
        let out = run(&strs(&args(d, &openings, &bad_params, 2, 1, "bad")));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(err.contains(says), "{text}: {err}");
        assert!(!d.join("bad.ckpt").exists() && !d.join("bad.toml").exists());
    }

    // A good run, then its checkpoint damaged: --resume refuses it and touches nothing.
    ok(&strs(&args(d, &openings, &params, 2, 1, "good")));
    let ckpt = d.join("good.ckpt");
    let out_file = d.join("good.toml");
    let weights_before = fs::read(&out_file).unwrap();
    let text = fs::read_to_string(&ckpt).unwrap();
    let resume = [
        "tune",
        "--resume",
        "--checkpoint",
        s(&ckpt),
        "--out",
        s(&out_file),
    ];
    for damaged in [
        text.replacen("\"wins\":", "\"wins\":1", 1),
        text[..text.len() - 20].to_string(),
        "not a checkpoint\n".to_string(),
    ] {
        fs::write(&ckpt, &damaged).unwrap();
        let out = run(&resume);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2));
        assert!(err.contains("corrupt checkpoint"), "{err}");
        assert_eq!(fs::read_to_string(&ckpt).unwrap(), damaged);
        assert_eq!(fs::read(&out_file).unwrap(), weights_before);
    }

    // A new run never overwrites an existing checkpoint.
    fs::write(&ckpt, &text).unwrap();
    let out = run(&strs(&args(d, &openings, &params, 2, 1, "good")));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--resume"));
    assert_eq!(fs::read_to_string(&ckpt).unwrap(), text);
}

#[test]
fn report_writes_the_trajectory() {
    let (dir, openings, params) = tune_setup();
    let d = dir.path();
    ok(&strs(&args(d, &openings, &params, 3, 2, "r")));
    let (csv, png) = (d.join("t.csv"), d.join("t.png"));
    let out = ok(&[
        "tune-report",
        "--checkpoint",
        s(&d.join("r.ckpt")),
        "--csv",
        s(&csv),
        "--plot",
        s(&png),
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 iterations, 12 games"));
    let st = load(d, "r");
    let text = fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows.len(),
        1 + 1 + 3,
        "header, start, one row per iteration"
    );
    assert_eq!(rows[0][..2], ["iteration", "games"]);
    assert_eq!(rows[0][5], "knight_mg");
    assert!(rows.iter().all(|r| r.len() == 5 + st.settings.params.len()));
    // The start row holds the start: the default knight_mg.
    assert_eq!(rows[1][5], Weights::default().knight_mg.to_string());
    let last: f64 = rows[4][5].parse().unwrap();
    assert!((last - st.theta[0]).abs() < 1e-3);
    assert_eq!(rows[4][1], "12");
    let bytes = fs::read(&png).unwrap();
    assert!(bytes.len() > 10_000 && bytes.starts_with(b"\x89PNG"));
    // The tuned file is what the UCI engine loads.
    let mut uci = Command::new(common::bin())
        .args(["uci", "--weights", s(&d.join("r.toml"))])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    uci.stdin
        .take()
        .unwrap()
        .write_all(b"uci\nisready\nquit\n")
        .unwrap();
    let out = uci.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("readyok"));
}

/// `--match-every`: the current values meet the start now and then, in the
/// log, the checkpoint and tune-report; the matches draw their openings
/// from a stream of their own, so the SPSA trajectory is the one a run
/// without them takes, and a kill at any point resumes to the same record.
#[test]
fn progress_matches_show_the_gain_and_leave_the_trajectory_alone() {
    let (dir, openings, params) = tune_setup();
    let d = dir.path();
    let total = 12;
    let with_matches = |name: &str| {
        let mut a = args(d, &openings, &params, total, 2, name);
        a.extend(["--match-every", "3", "--match-pairs", "2"].map(String::from));
        a
    };
    ok(&strs(&args(d, &openings, &params, total, 2, "plain")));
    let out = ok(&strs(&with_matches("m")));
    let (plain, m) = (load(d, "plain"), load(d, "m"));
    assert_eq!(m.history, plain.history, "matches do not move theta");
    let at: Vec<u64> = m.matches.iter().map(|p| p.iteration).collect();
    assert_eq!(at, [3, 6, 9, 12]);
    assert!(m.matches.iter().all(|p| p.wins + p.draws + p.losses == 4));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("match after iteration 3: values then against the start, 4 games"),
        "{log}"
    );
    assert!(log.contains("moved most:"), "{log}");
    let report = ok(&["tune-report", "--checkpoint", s(&d.join("m.ckpt"))]);
    let report = String::from_utf8_lossy(&report.stdout);
    assert!(report.contains("progress matches") && report.contains("match after iteration 12"));

    // Killed somewhere, resumed: the same iterations and the same matches.
    let mut child = Command::new(common::bin())
        .args(with_matches("cut"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tune");
    let ckpt = d.join("cut.ckpt");
    wait_for_iteration(&ckpt, 4);
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    assert!(
        load(d, "cut").iteration() < u64::from(total),
        "killed before the end"
    );
    ok(&[
        "tune",
        "--resume",
        "--checkpoint",
        s(&ckpt),
        "--out",
        s(&d.join("cut.toml")),
    ]);
    let cut = load(d, "cut");
    assert_eq!(cut.history, m.history);
    assert_eq!(cut.matches, m.matches);
    // --match-every with --resume replaces the checkpoint's plan: the
    // finished run without matches plays the one due at its end.
    ok(&[
        "tune",
        "--resume",
        "--checkpoint",
        s(&d.join("plain.ckpt")),
        "--out",
        s(&d.join("plain.toml")),
        "--match-every",
        "4",
    ]);
    let late = load(d, "plain");
    assert_eq!(late.history, plain.history);
    let at: Vec<u64> = late.matches.iter().map(|p| p.iteration).collect();
    assert_eq!(at, [12]);
}

/// Issue 52: the tune as rounds of `tune-shard` tasks (here plain
/// processes, 3 of them) and `tune-step`: the checkpoint and values of one
/// `tune`, progress matches included; a task run again does nothing; a
/// missing, doubled or foreign part is refused (exit 2) and nothing changes.
#[test]
fn shards_and_steps_reach_the_checkpoint_of_one_tune() {
    let (dir, openings, params) = tune_setup();
    let d = dir.path();
    let mut one = args(d, &openings, &params, 3, 2, "one");
    one.extend(["--match-every".into(), "3".into()]);
    ok(&strs(&one));
    let mut prepare = args(d, &openings, &params, 3, 2, "r");
    prepare.extend(["--match-every".into(), "3".into(), "--prepare".into()]);
    ok(&strs(&prepare));
    let ckpt = d.join("r.ckpt");
    let parts = d.join("parts");
    assert_eq!(load(d, "r").iteration(), 0);
    let shard = |i: u32, n: u32| {
        ok(&[
            "tune-shard",
            "--checkpoint",
            s(&ckpt),
            "--shard",
            &format!("{i}/{n}"),
            "--part",
            s(&parts),
            "--threads",
            "1",
        ])
    };
    let step = || {
        run(&[
            "tune-step",
            "--checkpoint",
            s(&ckpt),
            "--part",
            s(&parts),
            "--out",
            s(&d.join("r.toml")),
        ])
    };
    let refused = |what: &str, needle: &str| {
        let before = fs::read(&ckpt).unwrap();
        let out = step();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains(needle), "{what}: {err}");
        assert_eq!(
            fs::read(&ckpt).unwrap(),
            before,
            "{what}: checkpoint changed"
        );
    };
    // Round 0: a part missing, then a part of another N beside them.
    shard(0, 3);
    shard(2, 3);
    refused("missing", "shard 1/3 is missing");
    shard(1, 2);
    refused("another N", "same N");
    fs::remove_file(parts.join("round-0.shard-1-of-2.part")).unwrap();
    shard(1, 3);
    // Doubled: the same part under a second name.
    let copy = parts.join("round-0.shard-1-of-3.again.part");
    fs::copy(parts.join("round-0.shard-1-of-3.part"), &copy).unwrap();
    refused("doubled", "under another name");
    fs::remove_file(&copy).unwrap();
    // A task run again finds its part and plays nothing.
    let again = shard(1, 3);
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to do"));
    let out = step();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("next round: round 1 (iteration 2)"));
    // Foreign: round 1's part of shard 0 from another run (seed 12).
    let mut other = args(d, &openings, &params, 3, 2, "other");
    let i = other.iter().position(|a| a == "--seed").unwrap();
    other[i + 1] = "12".into();
    other.push("--prepare".into());
    ok(&strs(&other));
    ok(&[
        "tune-shard",
        "--checkpoint",
        s(&d.join("other.ckpt")),
        "--shard",
        "0/3",
        "--part",
        s(&d.join("other-parts")),
    ]);
    fs::copy(
        d.join("other-parts/round-0.shard-0-of-3.part"),
        parts.join("round-1.shard-0-of-3.part"),
    )
    .unwrap();
    shard(1, 3);
    shard(2, 3);
    refused("foreign", "is not a part of this state");
    // The task refuses to overwrite it too.
    let out = run(&[
        "tune-shard",
        "--checkpoint",
        s(&ckpt),
        "--shard",
        "0/3",
        "--part",
        s(&parts),
    ]);
    assert_eq!(out.status.code(), Some(2));
    fs::remove_file(parts.join("round-1.shard-0-of-3.part")).unwrap();
    // The rest of the run: round 1, round 2, then the match after 3.
    for round in 1..4 {
        for i in 0..3 {
            shard(i, 3);
        }
        let out = step();
        assert!(out.status.success(), "round {round}: {out:?}");
    }
    let last = String::from_utf8_lossy(&step().stdout).into_owned();
    assert!(last.contains("finished: 3 iterations"), "{last}");
    let (one, rounds) = (load(d, "one"), load(d, "r"));
    assert_eq!(one.matches.len(), 1);
    assert_eq!(rounds, one);
    assert_eq!(
        fs::read(d.join("r.toml")).unwrap(),
        fs::read(d.join("one.toml")).unwrap()
    );
}

/// Issue 52: an `--engine` run (`learnbook uci` with the in-process table,
/// so its node-limited games repeat) as rounds of 2 tasks ends with the
/// checkpoint of one `tune --engine`, progress matches included.
#[test]
fn an_engine_run_as_shards_reaches_the_checkpoint_of_one_tune() {
    let (dir, openings, _) = tune_setup();
    let d = dir.path();
    let params = d.join("engine-params.toml");
    fs::write(&params, "knight_mg = {}\nbishop_mg = {}\n").unwrap();
    // The hand-crafted evaluation, whose weights these are.
    let engine = format!("cmd={} uci --net none,option.Hash=2", common::bin());
    let options = |name: &str| -> Vec<String> {
        [
            "tune",
            "--engine",
            &engine,
            "--params",
            s(&params),
            "--nodes",
            "600",
            "--pairs-per-iteration",
            "3",
            "--iterations",
            "2",
            "--openings",
            s(&openings),
            "--seed",
            "3",
            "--match-every",
            "1",
            "--match-pairs",
            "2",
            "--checkpoint",
            s(&d.join(format!("{name}.ckpt"))),
            "--out",
            s(&d.join(format!("{name}.toml"))),
        ]
        .iter()
        .map(|a| a.to_string())
        .collect()
    };
    ok(&strs(&options("one")));
    let mut prepare = options("r");
    prepare.push("--prepare".into());
    ok(&strs(&prepare));
    let ckpt = d.join("r.ckpt");
    let parts = d.join("parts");
    let mut rounds = 0;
    loop {
        for i in 0..2 {
            ok(&[
                "tune-shard",
                "--checkpoint",
                s(&ckpt),
                "--shard",
                &format!("{i}/2"),
                "--part",
                s(&parts),
                "--threads",
                "1",
            ]);
        }
        let out = ok(&[
            "tune-step",
            "--checkpoint",
            s(&ckpt),
            "--part",
            s(&parts),
            "--out",
            s(&d.join("r.toml")),
        ]);
        rounds += 1;
        if String::from_utf8_lossy(&out.stdout).contains("finished:") {
            break;
        }
        assert!(rounds < 3, "more rounds than iterations and matches");
    }
    // Iterations 1 and 2, the matches after each: the last round is a match.
    assert_eq!(rounds, 3);
    let (one, r) = (load(d, "one"), load(d, "r"));
    assert_eq!(one.matches.len(), 2);
    assert_eq!(r, one);
}

#[test]
fn a_run_with_a_net_records_it_and_resumes_only_with_the_same_net() {
    let (dir, openings, _) = tune_setup();
    let d = dir.path();
    // The search's numbers: what a net leaves to tune.
    let params = d.join("search.toml");
    fs::write(
        &params,
        "search_futility_base = { c_end = 40 }\nsearch_lmr_base_x100 = { c_end = 40 }\n",
    )
    .unwrap();
    let with = |name: &str, net: &str, iterations: u32| {
        let mut a = args(d, &openings, &params, iterations, 2, name);
        a.extend(["--net".to_string(), net.to_string()]);
        a
    };
    ok(&strs(&args(d, &openings, &params, 3, 2, "hand")));
    ok(&strs(&with("embedded", "default", 3)));
    let (hand, embedded) = (load(d, "hand"), load(d, "embedded"));
    assert_eq!(hand.settings.net, None);
    let recorded = embedded.settings.net.clone().expect("the net recorded");
    assert_eq!(
        recorded.source,
        learnbook::engine::default_net::EMBEDDED_NAME
    );
    assert_ne!(
        hand.history, embedded.history,
        "the net's games are not the hand-crafted evaluation's"
    );

    // The same net as a file: a run prepared with it, its net then changed,
    // is refused on --resume with the checkpoint kept; with the file as it
    // was, it plays the embedded net's games.
    let file = d.join("copy.nnue");
    let bytes = learnbook::engine::default_net::embedded_bytes();
    fs::write(&file, bytes).unwrap();
    let mut prepare = with("file", s(&file), 3);
    prepare.push("--prepare".into());
    ok(&strs(&prepare));
    let ckpt = d.join("file.ckpt");
    let out = d.join("file.toml");
    let resume = [
        "tune",
        "--resume",
        "--checkpoint",
        s(&ckpt),
        "--out",
        s(&out),
    ];
    let mut changed = bytes.to_vec();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    fs::write(&file, &changed).unwrap();
    let before = fs::read(&ckpt).unwrap();
    let refused = run(&resume);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("not the one this run began with"), "{err}");
    assert_eq!(fs::read(&ckpt).unwrap(), before);
    fs::write(&file, bytes).unwrap();
    ok(&resume);
    let resumed = load(d, "file");
    assert_eq!(
        resumed.settings.net.as_ref().map(|n| n.fnv1a),
        Some(recorded.fnv1a)
    );
    assert_eq!(resumed.history, embedded.history);
    // --net is the checkpoint's on a resume, and no --engine's.
    let mut again = resume.to_vec();
    again.extend(["--net", "default"]);
    assert_eq!(run(&again).status.code(), Some(2));
    // A file that is not a net: refused before any checkpoint.
    let cut = d.join("cut.nnue");
    fs::write(&cut, &changed[..changed.len() / 2]).unwrap();
    let out = run(&strs(&with("cut", s(&cut), 2)));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--net"));
    assert!(!d.join("cut.ckpt").exists());
}
