//! scripts/gui_match.py, the GUI-like match runner for measuring learning:
//! `learnbook uci --book B --learn` against Glaurung for a few games, then
//! resumed; its report from a hand-written PGN; and a crashing opponent.

mod common;

use std::{
    fs,
    path::Path,
    process::{Command, Output},
};

use common::{bin, ok, repo, s, sample};

/// Runs scripts/gui_match.py with `args` from the repository root.
fn gui_match(args: &[&str]) -> Output {
    Command::new("python3")
        .arg(repo().join("scripts/gui_match.py"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("python3 runs (.ci/run installs python-chess)")
}

/// Like [`gui_match`], failing the test unless the script succeeded; its stdout.
fn gui_match_ok(args: &[&str]) -> String {
    let out = gui_match(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "gui_match.py {args:?} failed ({}): {stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn read_report(path: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(path).expect("the report")).expect("the report's JSON")
}

/// Each game's (White, Black, Round) tags, in file order.
fn players(pgn: &str) -> Vec<(String, String, String)> {
    let tag = |game: &str, name: &str| -> String {
        let start = format!("[{name} \"");
        game.lines()
            .find_map(|l| l.strip_prefix(&start))
            .and_then(|v| v.strip_suffix("\"]"))
            .unwrap_or_else(|| panic!("no {name} tag in {game}"))
            .to_string()
    };
    pgn.split("[Event ")
        .skip(1)
        .map(|g| (tag(g, "White"), tag(g, "Black"), tag(g, "Round")))
        .collect()
}

fn count(report: &serde_json::Value, key: &str) -> u64 {
    report[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key}: {report}"))
}

/// wins + draws + losses (+ unfinished, games stopped at --max-plies) is
/// the number of games, and the score is the points over the finished ones.
fn assert_consistent(report: &serde_json::Value, games: u64) {
    let (w, d, l, u) = (
        count(report, "wins"),
        count(report, "draws"),
        count(report, "losses"),
        count(report, "unfinished"),
    );
    assert_eq!(count(report, "games"), games, "{report}");
    assert_eq!(w + d + l + u, games, "{report}");
    let score = report["score"].as_f64().expect("a score");
    let expected = (w as f64 + d as f64 / 2.0) / (w + d + l) as f64;
    assert!((score - expected).abs() < 1e-9, "{report}");
    assert!(count(report, "repeated_losses") < l.max(1), "{report}");
}

#[test]
fn a_learner_against_glaurung_alternates_colours_and_resumes() {
    if !(common::have_python_chess() && common::have_program("/usr/games/glaurung")) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let book = dir.path().join("b.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    let pgn = dir.path().join("games.pgn");
    let report = dir.path().join("report.json");
    let learner = format!("{} uci --book {} --learn", bin(), s(&book));
    let run = |games: &str| {
        gui_match_ok(&[
            "--learner",
            &learner,
            "--opponent",
            "/usr/games/glaurung",
            "--opponent-option",
            "Threads=1",
            "--learner-limit",
            "depth=2",
            "--opponent-limit",
            "depth=2",
            "--games",
            games,
            "--pgn",
            s(&pgn),
            "--report",
            s(&report),
        ])
    };

    let out = run("4");
    assert!(out.contains("4 games"), "{out}");
    let first = fs::read_to_string(&pgn).expect("the PGN");
    let games = players(&first);
    assert_eq!(games.len(), 4, "{first}");
    for (i, (white, black, round)) in games.iter().enumerate() {
        assert_eq!(round, &(i + 1).to_string());
        let (learner_side, other) = if i % 2 == 0 {
            (white, black)
        } else {
            (black, white)
        };
        assert!(
            learner_side.starts_with("learnbook"),
            "game {}: {first}",
            i + 1
        );
        assert!(other.starts_with("Glaurung"), "game {}: {first}", i + 1);
    }
    let r = read_report(&report);
    assert_consistent(&r, 4);
    // Fewer than 400 games: the windows are the first and last quarter.
    assert_eq!(count(&r, "window"), 1, "{r}");
    assert_eq!(r["last"]["first_game"].as_u64(), Some(4), "{r}");

    let out = run("6");
    assert!(out.contains("resuming at game 5"), "{out}");
    let second = fs::read_to_string(&pgn).expect("the PGN");
    assert!(
        second.starts_with(&first),
        "the first 4 games changed on resuming"
    );
    let games = players(&second);
    assert_eq!(games.len(), 6, "{second}");
    assert!(games[4].0.starts_with("learnbook") && games[5].1.starts_with("learnbook"));
    let r = read_report(&report);
    assert_consistent(&r, 6);
    ok(&["check", "--book", s(&book)]);
}

/// Game 1 the learner (White) is mated, game 2 (Black) a draw, game 3
/// (White) the same mate again, game 4 (Black) a win.
const HAND_WRITTEN: &str = "\
[Event \"t\"]\n[Round \"1\"]\n[White \"lb\"]\n[Black \"x\"]\n[Result \"0-1\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n\
[Event \"t\"]\n[Round \"2\"]\n[White \"x\"]\n[Black \"lb\"]\n[Result \"1/2-1/2\"]\n\n1. e4 e5 1/2-1/2\n\n\
[Event \"t\"]\n[Round \"3\"]\n[White \"lb\"]\n[Black \"x\"]\n[Result \"0-1\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n\
[Event \"t\"]\n[Round \"4\"]\n[White \"x\"]\n[Black \"lb\"]\n[Result \"0-1\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n";

#[test]
fn summary_only_counts_a_loss_repeated_move_for_move() {
    if !common::have_python_chess() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let pgn = dir.path().join("hand.pgn");
    fs::write(&pgn, HAND_WRITTEN).expect("write the PGN");
    let report = dir.path().join("hand.json");
    let out = gui_match_ok(&["--summary-only", "--pgn", s(&pgn), "--report", s(&report)]);
    assert!(
        out.contains("1 of 2 losses repeat an earlier loss"),
        "{out}"
    );
    let r = read_report(&report);
    assert_consistent(&r, 4);
    assert_eq!(
        (count(&r, "wins"), count(&r, "draws"), count(&r, "losses")),
        (1, 1, 2),
        "{r}"
    );
    // Game 3 repeats game 1; game 4's same moves were a win.
    assert_eq!(count(&r, "repeated_losses"), 1, "{r}");
    assert_eq!(r["score"].as_f64(), Some(1.5 / 4.0), "{r}");
    assert_eq!(fs::read_to_string(&pgn).expect("the PGN"), HAND_WRITTEN);
}

#[test]
fn a_crashing_opponent_stops_the_match_and_keeps_the_games() {
    if !common::have_python_chess() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let pgn = dir.path().join("games.pgn");
    let one_game = HAND_WRITTEN.split("\n\n[Event").next().expect("game 1");
    let one_game = format!("{one_game}\n\n");
    fs::write(&pgn, &one_game).expect("write the PGN");
    let fake = repo().join("tests/py/fake_engine.py");
    let out = gui_match(&[
        "--learner",
        &format!("{} uci", bin()),
        "--opponent",
        &format!("python3 {} crash", s(&fake)),
        "--learner-limit",
        "depth=1",
        "--games",
        "3",
        "--pgn",
        s(&pgn),
        "--report",
        s(&dir.path().join("r.json")),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("game 2, ply")
            && stderr.contains("the opponent")
            && stderr.contains("died"),
        "{stderr}"
    );
    assert_eq!(fs::read_to_string(&pgn).expect("the PGN"), one_game);
}
