//! Learning where the engine plays: `learnbook uci --book B --learn` driven
//! game by game by python-chess as a GUI drives it (an independent client),
//! against Glaurung and against a second learner on the same book; and a
//! learner killed mid-learning.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{bin, ok, repo, s, sample};

fn sample_book(dir: &Path) -> std::path::PathBuf {
    let book = dir.join("b.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    book
}

/// Plays `games` games through tests/py/uci_learning.py; its JSON report.
fn play(book: &Path, opponent: &str, games: u32, limit: &str) -> serde_json::Value {
    let script = repo().join("tests/py/uci_learning.py");
    let out = Command::new("python3")
        .args([
            s(&script),
            bin(),
            s(book),
            opponent,
            &games.to_string(),
            limit,
        ])
        .output()
        .expect("python3 runs (.ci/run installs python-chess)");
    assert!(
        out.status.success(),
        "uci_learning.py failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the script's JSON")
}

fn learned_uci_games(book: &Path) -> i64 {
    common::count(
        book,
        "SELECT count(*) FROM games WHERE source = (SELECT id FROM sources WHERE name = 'learnbook uci')",
    )
}

/// Every game python-chess saw end decisively by the rules is in the book
/// once, with its result, as one of the two views (the side that moved
/// last saw one ply more); nothing else was learned twice.
fn assert_decisive_games_learned_once(report: &serde_json::Value) {
    let games = report["games"].as_array().expect("games");
    let learned = report["learned"].as_array().expect("learned");
    assert!(
        learned.len() <= games.len(),
        "more learned than played: {report}"
    );
    for g in games {
        let result = g["result"].as_str().expect("result");
        if !(g["by_rule"].as_bool() == Some(true) && (result == "1-0" || result == "0-1")) {
            continue;
        }
        let plies = g["plies"].as_i64().expect("plies");
        let same = learned
            .iter()
            .filter(|l| {
                l["result"].as_str() == Some(result)
                    && (plies - 1..=plies).contains(&l["plies"].as_i64().unwrap_or(-9))
            })
            .count();
        assert!(
            same >= 1,
            "a decisive game ({result}, {plies} plies) was not learned: {report}"
        );
    }
    assert!(
        report["errors"].as_array().is_some_and(|e| e.is_empty()),
        "lock or write errors: {report}"
    );
}

#[test]
fn a_gui_driven_engine_learns_its_games_against_glaurung() {
    if !(common::have_python_chess() && common::have_program("/usr/games/glaurung")) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    let before = common::count(&book, "SELECT count(*) FROM games");
    let report = play(&book, "/usr/games/glaurung", 4, "nodes=5000");
    assert_decisive_games_learned_once(&report);
    let learned = learned_uci_games(&book);
    assert!(learned >= 1, "nothing learned: {report}");
    assert_eq!(
        common::count(&book, "SELECT count(*) FROM games"),
        before + learned
    );
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn two_learners_on_one_book_count_each_game_once() {
    if !common::have_python_chess() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    let report = play(&book, "learner", 4, "nodes=3000");
    assert_decisive_games_learned_once(&report);
    // Both sides learned every game: each is in the book once.
    let games = report["games"].as_array().expect("games");
    let mut distinct: Vec<&serde_json::Value> = Vec::new();
    for g in games {
        if !distinct.iter().any(|d| d["moves"] == g["moves"]) {
            distinct.push(g);
        }
    }
    assert!(
        learned_uci_games(&book) <= distinct.len() as i64,
        "a game counted twice: {report}"
    );
    ok(&["check", "--book", s(&book)]);
}

/// Runs `learnbook args` with `input` on its standard input; its output.
fn uci_session(args: &[&str], input: &str) -> String {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write");
    drop(stdin);
    String::from_utf8_lossy(&child.wait_with_output().expect("wait").stdout).into_owned()
}

/// The commands of a game in which the engine, Black, mates at once with
/// Qh4 after White's first move `first` and `f3`, `g4`.
fn mating_game(first: &str, reply: &str) -> String {
    format!(
        "ucinewgame\nposition startpos moves {first} {reply} f2f3 a7a6 g2g4\ngo depth 2\nisready\n"
    )
}

const FIRSTS: [&str; 8] = [
    "a2a3", "a2a4", "b2b3", "b2b4", "h2h3", "h2h4", "c2c3", "d2d3",
];

#[test]
fn a_learner_killed_mid_game_leaves_a_book_that_checks_and_learns_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    let mut commands = String::from("uci\n");
    for first in FIRSTS {
        for reply in ["e7e5", "e7e6"] {
            commands.push_str(&mating_game(first, reply));
        }
    }
    for wait_ms in [30u64, 120, 400] {
        let mut child = Command::new(bin())
            .args(["uci", "--book", s(&book), "--learn"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        // Written from a thread: the engine may die before it reads it all.
        let mut stdin = child.stdin.take().expect("stdin");
        let text = commands.clone();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(text.as_bytes());
        });
        std::thread::sleep(std::time::Duration::from_millis(wait_ms));
        let _ = child.kill();
        let _ = child.wait();
        let _ = writer.join();
        ok(&["check", "--book", s(&book)]);
    }
    let before = learned_uci_games(&book);
    assert!(before < 16, "every game learned before the kills");
    // The next learner learns a game none of the killed ones reached.
    let text = uci_session(
        &["uci", "--book", s(&book), "--learn"],
        &format!("uci\n{}quit\n", mating_game("b1c3", "e7e5")),
    );
    assert!(
        text.contains("info string learned the game (6 plies, 0-1)"),
        "{text}"
    );
    assert_eq!(learned_uci_games(&book), before + 1);
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn without_learning_or_a_book_nothing_is_written_and_the_engine_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    let run = uci_session;
    let game = mating_game("a2a3", "e7e5");
    // Learning off (the default): the book is left as it was.
    run(&["uci", "--book", s(&book)], &format!("uci\n{game}quit\n"));
    assert_eq!(learned_uci_games(&book), 0);
    // Learning on without a book: said, and play goes on.
    let out = run(&["uci", "--learn"], &format!("uci\n{game}quit\n"));
    assert!(out.contains("bestmove d8h4"), "{out}");
    assert!(out.contains("game not learned: no book"), "{out}");
    // On through the option; an illegal move in `position` is refused and
    // the game before it is still learned.
    let out = run(
        &["uci", "--book", s(&book)],
        &format!("uci\nsetoption name BookLearning value true\n{game}position startpos moves e2e5\nisready\nquit\n"),
    );
    assert!(out.contains("illegal move \"e2e5\""), "{out}");
    assert!(out.contains("learned the game (6 plies, 0-1)"), "{out}");
    assert_eq!(learned_uci_games(&book), 1);
}
