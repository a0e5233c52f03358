//! Every script in scripts/ run for real, at a tiny size: the experiments'
//! settings shrunk (a few games, small node counts, the repository's
//! sample games), so that each one is known to work before a night is spent
//! on it. scripts/tune_night.sh is in tests/tune_night.rs and
//! scripts/make_malformed_corpus.py in tests/malformed.rs; the scripts in
//! parts (scripts/lib/parts.sh) are run twice, the second time on a fresh
//! WORK, to show that they go on from their journal.

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use common::{bin, have_program, have_python_chess, ok, repo, s, sample, tune_setup};

/// Runs `interpreter script args` from the repository root with `env`, and
/// fails the test unless it succeeded; its stdout.
fn script(interpreter: &str, name: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut c = Command::new(interpreter);
    c.arg(repo().join("scripts").join(name))
        .args(args)
        .current_dir(repo())
        .env("LEARNBOOK", bin());
    for (k, v) in env {
        c.env(k, v);
    }
    let out: Output = c.output().expect("run the script");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "scripts/{name} {args:?} failed ({}): {stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The games in a gzipped PGN.
fn games_in_gz(path: &Path) -> usize {
    let out = Command::new("gzip")
        .args(["-dc", s(path)])
        .output()
        .expect("gzip");
    String::from_utf8_lossy(&out.stdout)
        .matches("[Result ")
        .count()
}

/// Two short openings as PGN (strength_match.py reads PGN).
fn openings_pgn(dir: &Path) -> PathBuf {
    let p = dir.join("openings.pgn");
    fs::write(
        &p,
        "[Event \"a\"]\n[Result \"*\"]\n\n1. e4 e5 *\n\n[Event \"b\"]\n[Result \"*\"]\n\n1. d4 d5 *\n",
    )
    .expect("write openings");
    p
}

#[test]
fn tune_confirm_plays_in_parts_and_goes_on_from_its_journal() {
    let (dir, openings, _) = tune_setup();
    let d = dir.path();
    let journal = d.join("journal");
    fs::create_dir_all(&journal).expect("journal");
    let weights = ok(&["weights"]).stdout;
    let (cand, base) = (d.join("cand.toml"), d.join("base.toml"));
    fs::write(&cand, &weights).expect("write");
    fs::write(&base, &weights).expect("write");
    // The clock is not what is tested: any result of a game counts.
    for (work, games) in [("work1", "2"), ("work2", "4")] {
        let out = script(
            "sh",
            "tune_confirm.sh",
            &[s(&d.join(work)), "10m", s(&cand), s(&base)],
            &[
                ("JOURNAL", s(&journal)),
                ("GAMES", games),
                ("TC", "1+0.01"),
                ("OPENINGS", s(&openings)),
            ],
        );
        assert!(out.contains(&format!("games so far: {games}")), "{out}");
    }
    assert_eq!(games_in_gz(&journal.join("cand-vs-base.pgn.gz")), 4);
    let report = fs::read_to_string(journal.join("cand-vs-base.txt")).expect("report");
    assert!(report.contains("4 games"), "{report}");
}

#[test]
fn tune_engine_check_plays_in_parts_and_goes_on_from_its_journal() {
    let (dir, openings, _) = tune_setup();
    let d = dir.path();
    let journal = d.join("journal");
    let engine = format!("cmd={} uci,option.Hash=16", bin());
    for (work, games) in [("work1", "2"), ("work2", "4")] {
        let out = script(
            "sh",
            "tune_engine_check.sh",
            &[s(&d.join(work)), "10m", "a-vs-b", "/dev/null", "/dev/null"],
            &[
                ("JOURNAL", s(&journal)),
                ("ENGINE", &engine),
                ("LIMIT", "--nodes 1000"),
                ("GAMES", games),
                ("OPENINGS", s(&openings)),
            ],
        );
        assert!(out.contains(&format!("games so far: {games}")), "{out}");
    }
    assert_eq!(games_in_gz(&journal.join("a-vs-b.pgn.gz")), 4);
    let report = fs::read_to_string(journal.join("a-vs-b.txt")).expect("report");
    assert!(report.contains("a vs b: 4 games"), "{report}");
}

#[test]
fn strength_parts_plays_in_parts_and_goes_on_from_its_journal() {
    if !have_python_chess() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let openings = openings_pgn(d);
    let journal = d.join("match.pgn.gz");
    let opponent = format!("{} uci", bin());
    for (work, games) in [("work1", "2"), ("work2", "4")] {
        let out = script(
            "sh",
            "strength_parts.sh",
            &[
                s(&journal),
                s(&d.join(work)),
                "10m",
                games,
                &opponent,
                "uci",
                "--tc",
                "1+0.01",
                "--concurrency",
                "1",
                "--openings",
                s(&openings),
            ],
            &[],
        );
        assert!(out.contains(&format!("games so far: {games}")), "{out}");
    }
    assert_eq!(games_in_gz(&journal), 4);
    let summary = fs::read_to_string(d.join("match.txt")).expect("summary");
    assert!(!summary.contains(s(d)), "no machine's paths: {summary}");
}

#[test]
fn tune_external_runs_both_tunes_and_the_match() {
    let (dir, openings, _) = tune_setup();
    let d = dir.path();
    let out_dir = d.join("out");
    let out = script(
        "sh",
        "tune_external.sh",
        &[],
        &[
            ("OUT", s(&out_dir)),
            ("ITERATIONS", "2"),
            ("PAIRS", "1"),
            ("NODES", "300"),
            ("THREADS", "1"),
            ("GAMES", "2"),
            ("OPENINGS", s(&openings)),
            ("SPRT_OPENINGS", s(&openings)),
        ],
    );
    for part in ["== in-process run", "== external run", "== tuned options"] {
        assert!(out.contains(part), "{out}");
    }
    assert!(out.contains("tuned vs start: 2 games"), "{out}");
    assert!(out_dir.join("both.png").is_file());
    assert!(out_dir.join("external.csv").is_file());
}

#[test]
fn merge_check_finds_the_merged_sample_equal_to_one_build() {
    if !(have_program("/usr/bin/sqlite3")
        && have_program("/usr/bin/bc")
        && have_program("/usr/bin/time"))
    {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = script(
        "bash",
        "merge_check.sh",
        &[s(dir.path()), "2", bin()],
        &[("PGN", s(&sample()))],
    );
    // table|only in one|only in the other|rows
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.matches('|').count() == 3)
        .collect();
    assert_eq!(rows.len(), 4, "{out}");
    for r in rows {
        let f: Vec<&str> = r.split('|').collect();
        assert_eq!((f[1], f[2]), ("0", "0"), "{out}");
        assert_ne!(f[3], "0", "{out}");
    }
}

#[test]
fn same_books_finds_one_binary_the_same_as_itself() {
    if !have_program("/usr/bin/sqlite3") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = script(
        "bash",
        "same_books.sh",
        &[bin(), bin(), s(dir.path())],
        &[("MASTER", s(&sample()))],
    );
    assert!(!out.contains("DIFF"), "{out}");
    assert!(out.contains("same  merged.positions"), "{out}");
    assert!(out.contains("same  x.bin"), "{out}");
}

#[test]
fn killer_book_plays_learning_and_static() {
    if !have_program("/usr/games/glaurung") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = script(
        "bash",
        "killer_book.sh",
        &[s(dir.path()), "2", "500", "2"],
        &[("PGN", s(&sample()))],
    );
    assert!(out.contains("== learn"), "{out}");
    assert!(out.contains("== static"), "{out}");
    assert!(dir.path().join("learn.pgn").is_file());
}

#[test]
fn hossa_vs_stockfish_learns_its_games() {
    if !have_program("/usr/games/stockfish") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = script(
        "bash",
        "hossa_vs_stockfish.sh",
        &[s(dir.path()), "25", "300", "1"],
        &[("PGN", s(&sample()))],
    );
    assert!(out.contains("after 25 games"), "{out}");
    let pgn = fs::read_to_string(dir.path().join("hossa.pgn")).expect("games");
    assert_eq!(pgn.matches("[Event ").count(), 25);
}

#[test]
fn book_duels_writes_a_finished_duels_report() {
    if !have_program("/usr/games/stockfish") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let (improved, before) = (d.join("improved.sqlite"), d.join("before.sqlite"));
    ok(&["build", "--book", s(&improved), s(&sample())]);
    ok(&[
        "build",
        "--book",
        s(&before),
        "--max-ply",
        "8",
        s(&sample()),
    ]);
    let reports = d.join("reports");
    let out = script(
        "bash",
        "book_duels.sh",
        &[
            s(&improved),
            s(&before),
            s(&d.join("work")),
            "2",
            "before-best",
        ],
        &[
            ("NODES", "1000"),
            ("STARTS", s(&sample())),
            ("REPORTS", s(&reports)),
            ("CONCURRENCY", "1"),
        ],
    );
    assert!(out.contains("== before-best"), "{out}");
    let report = fs::read_to_string(reports.join("before-best.json")).expect("report");
    assert!(report.trim_start().starts_with('{'), "{report}");
}

#[test]
fn fuzz_runs_each_target_once_and_reports_their_summaries() {
    // A stand-in for cargo (the real one is busy running this test): it
    // answers each target's run with the summary line the fuzz tests print,
    // and fails the uci target.
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let calls = d.join("calls");
    let stub = d.join("cargo");
    fs::write(
        &stub,
        format!(
            "#!/bin/sh\necho \"$* SECS=$LEARNBOOK_FUZZ_SECS SEED=$LEARNBOOK_FUZZ_SEED\" >>{}\n\
             case \"$*\" in *--no-run*) exit 0 ;; esac\n\
             t=$(echo \"$*\" | sed 's/.*--test fuzz_\\([a-z]*\\).*/\\1/')\n\
             echo \"fuzz $t: 3 inputs, 0 panics\"\n\
             case \"$*\" in *fuzz_uci*) exit 1 ;; esac\n",
            s(&calls)
        ),
    )
    .expect("stub");
    Command::new("chmod")
        .args(["+x", s(&stub)])
        .status()
        .expect("chmod");
    let path = format!("{}:{}", s(d), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("bash")
        .arg(repo().join("scripts/fuzz.sh"))
        .args(["7", "42", s(&d.join("logs")), "pgn", "uci"])
        .current_dir(repo())
        .env("PATH", path)
        .output()
        .expect("run scripts/fuzz.sh");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "a failed target fails the run: {text}"
    );
    assert!(text.contains("seed 42, 7 s per target"), "{text}");
    assert!(text.contains("fuzz pgn: 3 inputs, 0 panics [ok,"), "{text}");
    assert!(text.contains("[FAILED,"), "{text}");
    let calls = fs::read_to_string(&calls).expect("calls");
    assert!(
        calls.contains("test --release --no-run --test fuzz_pgn --test fuzz_uci"),
        "built once, before the runs: {calls}"
    );
    assert!(
        calls.contains(
            "test --release --test fuzz_pgn pgn_ingest_survives_random_and_mutated_games \
             -- --exact --nocapture --test-threads=1 SECS=7 SEED=42"
        ),
        "{calls}"
    );
}

#[test]
fn veto_floor_reads_a_book_quality_csv() {
    if !(have_python_chess() && have_program("/usr/games/stockfish")) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let book = d.join("b.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    let csv = d.join("verdicts.csv");
    ok(&[
        "bench",
        "book-quality",
        "--book",
        s(&book),
        "--judge",
        "cmd=/usr/games/stockfish,option.Threads=1",
        "--nodes",
        "5000",
        "--positions",
        "4",
        "--threads",
        "1",
        "--csv",
        s(&csv),
    ]);
    let engine = format!("{} uci", bin());
    let out = script(
        "python3",
        "veto_floor.py",
        &[s(&csv), &engine, "nodes", "500", "5000"],
        &[("JUDGE", "/usr/games/stockfish")],
    );
    assert!(out.contains("T= inf: mean"), "{out}");
    assert!(out.contains("the better of the two"), "{out}");
}

#[test]
fn set_default_weights_writes_a_presets_values_and_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let params = d.join("params.rs");
    let original = repo().join("crates/engine/src/params.rs");
    fs::copy(&original, &params).expect("copy");
    let kaissa = d.join("kaissa.toml");
    fs::write(&kaissa, ok(&["weights", "--preset", "kaissa"]).stdout).expect("write");
    let out = script(
        "python3",
        "set_default_weights.py",
        &[s(&kaissa), s(&params)],
        &[],
    );
    assert!(out.contains("defaults written"), "{out}");
    assert_ne!(
        fs::read(&params).expect("read"),
        fs::read(&original).expect("read"),
        "kaissa's values differ from the defaults"
    );
    // The defaults written back give the file as it was.
    let default = d.join("default.toml");
    fs::write(&default, ok(&["weights"]).stdout).expect("write");
    script(
        "python3",
        "set_default_weights.py",
        &[s(&default), s(&params)],
        &[],
    );
    assert_eq!(
        fs::read_to_string(&params).expect("read"),
        fs::read_to_string(&original).expect("read")
    );
}
