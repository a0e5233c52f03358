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
    let out = common::python(&[
        s(&script),
        bin(),
        s(book),
        opponent,
        &games.to_string(),
        limit,
    ]);
    serde_json::from_str(&out).expect("the script's JSON")
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
    // Both sides learned every game: each is in the book once (a game
    // played again move for move counts again).
    let games = report["games"].as_array().expect("games");
    assert!(
        learned_uci_games(&book) <= games.len() as i64,
        "a game counted twice: {report}"
    );
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn a_game_played_again_move_for_move_is_learned_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    let game = mating_game("a2a3", "e7e5");
    let learner = ["uci", "--book", s(&book), "--learn"];
    let out = uci_session(&learner, &format!("uci\n{game}{game}quit\n"));
    assert!(
        out.contains("info string learned the game (6 plies, 0-1): "),
        "{out}"
    );
    assert!(
        out.contains("info string learned the game (6 plies, 0-1) again (played 2 times): "),
        "{out}"
    );
    assert_eq!(learned_uci_games(&book), 2);
    // Another process, the same game: its third playing.
    let out = uci_session(&learner, &format!("uci\n{game}quit\n"));
    assert!(out.contains("again (played 3 times)"), "{out}");
    assert_eq!(learned_uci_games(&book), 3);
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
    mating_game_waiting(first, reply, "a7a6")
}

/// As `mating_game`, Black's second move `waiting` (one that keeps d8-h4 open).
fn mating_game_waiting(first: &str, reply: &str, waiting: &str) -> String {
    format!(
        "ucinewgame\nposition startpos moves {first} {reply} f2f3 {waiting} g2g4\ngo depth 2\nisready\n"
    )
}

const FIRSTS: [&str; 8] = [
    "a2a3", "a2a4", "b2b3", "b2b4", "h2h3", "h2h4", "c2c3", "d2d3",
];

/// Starts `learnbook args`, writes `input` to it and SIGKILLs it after `wait_ms`.
fn kill_after(args: &[&str], input: &str, wait_ms: u64) {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    // Written from a thread: the engine may die before it reads it all.
    let mut stdin = child.stdin.take().expect("stdin");
    let text = input.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(text.as_bytes());
    });
    std::thread::sleep(std::time::Duration::from_millis(wait_ms));
    let _ = child.kill();
    let _ = child.wait();
    let _ = writer.join();
}

#[test]
fn a_learner_killed_mid_game_leaves_a_book_that_checks_and_learns_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    // Each killed learner plays 32 games of its own (here 400 ms learn
    // about 12): a game played again is learned again, so a shared list
    // would not show where a kill landed.
    let runs = [
        (30u64, ["a7a6", "a7a5"]),
        (120, ["h7h6", "h7h5"]),
        (400, ["b7b6", "b7b5"]),
    ];
    for (wait_ms, waitings) in runs {
        let mut commands = String::from("uci\n");
        for waiting in waitings {
            for first in FIRSTS {
                for reply in ["e7e5", "e7e6"] {
                    commands.push_str(&mating_game_waiting(first, reply, waiting));
                }
            }
        }
        let earlier = learned_uci_games(&book);
        kill_after(&["uci", "--book", s(&book), "--learn"], &commands, wait_ms);
        ok(&["check", "--book", s(&book)]);
        let learned = learned_uci_games(&book) - earlier;
        assert!(
            learned < 32,
            "all 32 games learned before the kill at {wait_ms} ms"
        );
    }
    let before = learned_uci_games(&book);
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

// The adapter: the book and its learning in front of another UCI engine.

const STOCKFISH: &str = "/usr/games/stockfish";

/// `learnbook uci args` fed `input` line by line as a GUI feeds it: after
/// `uci`, `isready` and a `go` it waits for `uciok`, `readyok` and
/// `bestmove` (or the end of the output: a failing engine ends it), with
/// standard input open until it exits. Its status and output.
fn gui_session(args: &[&str], input: &str) -> (std::process::ExitStatus, String) {
    use std::io::BufRead;
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut out = String::new();
    for command in input.lines() {
        if stdin.write_all(format!("{command}\n").as_bytes()).is_err() {
            break;
        }
        let awaited = match command.split_whitespace().next() {
            Some("uci") => "uciok",
            Some("isready") => "readyok",
            Some("go") if !command.contains("infinite") => "bestmove",
            _ => continue,
        };
        // A guard against a hang of the test, not a verdict on speed.
        while let Ok(line) = rx.recv_timeout(std::time::Duration::from_secs(120)) {
            out.push_str(&line);
            out.push('\n');
            if line.starts_with(awaited) {
                break;
            }
        }
    }
    let status = child.wait().expect("wait");
    drop(stdin);
    let _ = reader.join();
    out.extend(rx.try_iter().map(|l| l + "\n"));
    (status, out)
}

#[test]
fn python_chess_uses_stockfish_through_the_adapter_as_a_gui_does() {
    if !(common::have_python_chess() && common::have_program(STOCKFISH)) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    let script = repo().join("tests/py/uci_adapter.py");
    let text = common::python(&[s(&script), bin(), s(&book), STOCKFISH]);
    let r: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let options: Vec<&str> = r["options"]
        .as_array()
        .expect("options")
        .iter()
        .filter_map(|o| o.as_str())
        .collect();
    // The inner engine's options and the book's, each once.
    for name in [
        "Threads",
        "Hash",
        "MultiPV",
        "SyzygyPath",
        "BookFile",
        "BookLearning",
    ] {
        assert_eq!(
            options.iter().filter(|o| **o == name).count(),
            1,
            "{name}: {r}"
        );
    }
    assert!(
        r["id_name"]
            .as_str()
            .is_some_and(|n| n.starts_with("Stockfish")),
        "{r}"
    );
    // The book answers in the start position as the search core's engine
    // with the same book does.
    let core = uci_session(
        &["uci", "--book", s(&book)],
        "uci\nposition startpos\ngo depth 1\nisready\nquit\n",
    );
    let best = r["book_move"].as_str().expect("book move");
    assert!(core.contains("info string book move"), "{core}");
    assert!(core.contains(&format!("bestmove {best}")), "{r} {core}");
    for key in ["searched_move", "after_ponder", "infinite_best"] {
        assert!(r[key].as_str().is_some_and(|m| m.len() >= 4), "{key}: {r}");
    }
    assert_eq!(r["multipv_lines"], 3, "{r}");
}

#[test]
fn the_adapter_learns_the_game_its_inner_engine_mates_in() {
    if !common::have_program(STOCKFISH) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    let args = ["uci", "--engine", STOCKFISH, "--book", s(&book), "--learn"];
    let (_, text) = gui_session(
        &args,
        &format!("uci\n{}quit\n", mating_game("a2a3", "e7e5")),
    );
    assert!(text.contains("bestmove d8h4"), "{text}");
    assert!(
        text.contains("info string learned the game (6 plies, 0-1)"),
        "{text}"
    );
    assert_eq!(learned_uci_games(&book), 1);
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn an_adapter_killed_while_learning_leaves_a_book_that_checks_and_learns_on() {
    if !common::have_program(STOCKFISH) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    let args = ["uci", "--engine", STOCKFISH, "--book", s(&book), "--learn"];
    let mut commands = String::from("uci\n");
    for first in FIRSTS {
        commands.push_str(&mating_game(first, "e7e5"));
    }
    for wait_ms in [60u64, 250, 600] {
        kill_after(&args, &commands, wait_ms);
        ok(&["check", "--book", s(&book)]);
    }
    let before = learned_uci_games(&book);
    let (_, text) = gui_session(
        &args,
        &format!("uci\n{}quit\n", mating_game("b1c3", "e7e5")),
    );
    assert!(text.contains("learned the game (6 plies, 0-1)"), "{text}");
    assert_eq!(learned_uci_games(&book), before + 1);
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn an_inner_engine_that_fails_is_said_and_the_adapter_exits_with_status_1() {
    if !common::have_python_chess() {
        return;
    }
    let fake = repo().join("tests/py/fake_engine.py");
    // Two moves answered, then the fault on the third `go`.
    let three_gos = "uci\nisready\nposition startpos\ngo depth 1\nposition startpos moves e2e4\ngo depth 1\nposition startpos moves e2e4 e7e5\ngo infinite\nstop\n";
    for (mode, said) in [
        ("crash", "exited (exit status: 3)"),
        ("hang", "sent no bestmove within 5 s"),
        ("illegal", "played an illegal move: \"bestmove a1a8\""),
        ("garbage", "played an illegal move: \"bestmove\""),
    ] {
        let inner = format!("python3 {} {mode}", s(&fake));
        let (status, out) = gui_session(
            &["uci", "--engine", &inner, "--engine-timeout", "5"],
            three_gos,
        );
        assert_eq!(status.code(), Some(1), "{mode}: {out}");
        assert!(
            out.contains("info string the inner engine"),
            "{mode}: {out}"
        );
        assert!(out.contains(said), "{mode}: {out}");
        // The two moves before the fault reached the GUI.
        let moves = out.lines().filter(|l| l.starts_with("bestmove ")).count();
        assert_eq!(moves, 2, "{mode}: {out}");
    }
    // Not a UCI engine at all: no `uciok`.
    let (status, out) = gui_session(
        &["uci", "--engine", "/bin/cat", "--engine-timeout", "1"],
        "uci\n",
    );
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(out.contains("sent no uciok within 1 s"), "{out}");
    // Not there.
    let (status, out) = gui_session(&["uci", "--engine", "/nonexistent/engine"], "uci\n");
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(out.contains("cannot start the inner engine"), "{out}");
}

#[test]
fn a_missing_or_broken_book_or_an_illegal_position_is_said_and_play_goes_on() {
    if !(common::have_python_chess() && common::have_program(STOCKFISH)) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let not_a_book = dir.path().join("notes.sqlite");
    std::fs::write(&not_a_book, "not a book\n").expect("write");
    let missing = dir.path().join("missing.sqlite");
    let game = mating_game("a2a3", "e7e5");
    for (book, said) in [(&missing, "no book at"), (&not_a_book, "cannot open book")] {
        let args = ["uci", "--engine", STOCKFISH, "--book", s(book), "--learn"];
        let (_, text) = gui_session(
            &args,
            &format!("uci\n{game}position startpos moves e2e5\nisready\nquit\n"),
        );
        assert!(text.contains(said), "{text}");
        assert!(text.contains("bestmove d8h4"), "{text}");
        assert!(text.contains("game not learned"), "{text}");
        assert!(
            text.contains("position ignored: illegal move \"e2e5\""),
            "{text}"
        );
        assert!(text.contains("readyok"), "{text}");
    }
    assert!(!missing.exists(), "a missing book is not created");
    assert_eq!(std::fs::read(&not_a_book).expect("read"), b"not a book\n");
}
