//! The match runner: faults of a misbehaving engine, real UCI and xboard
//! engines, PGN read back by python-chess, learning into a book, SPRT.

mod common;

use std::path::Path;

use common::{ok, repo, s, sample, shared};

fn fake(mode: &str) -> String {
    format!(
        "name=fake-{mode},cmd=python3 {} {mode}",
        s(&repo().join("tests/py/fake_engine.py"))
    )
}

/// Reads a PGN with python-chess; fails on any parse error. Returns (games, terminations).
fn python_chess_reads(pgn: &Path) -> (usize, Vec<String>) {
    let script = r#"
import sys, chess.pgn
f = open(sys.argv[1])
n = 0
while True:
    g = chess.pgn.read_game(f)
    if g is None:
        break
    if g.errors:
        sys.exit("errors: %r" % g.errors)
    for tag in ("Event", "White", "Black", "Result", "TimeControl", "Termination", "PlyCount"):
        if tag not in g.headers:
            sys.exit("missing tag " + tag)
    print(g.headers["Termination"])
    n += 1
print(n)
"#;
    let text = common::python(&["-c", script, s(pgn)]);
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let n = lines.pop().and_then(|l| l.parse().ok()).expect("count");
    (n, lines)
}

#[test]
fn every_fault_loses_the_game_and_the_match_goes_on() {
    if !(common::have_python_chess()) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for (mode, reason) in [
        ("crash", "crash"),
        ("hang", "no answer"),
        ("illegal", "illegal move"),
        ("garbage", "illegal move"),
    ] {
        let pgn = dir.path().join(format!("{mode}.pgn"));
        let out = ok(&[
            "play",
            "--engine",
            &fake(mode),
            "--engine",
            // lb at a node count: only the fake's clock (its hang found 2 s
            // after the clock runs out) is timed.
            "name=lb,cmd=builtin,nodes=2000",
            "--tc",
            "1+0",
            "--games",
            "2",
            "--pgnout",
            s(&pgn),
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("fake-{mode} vs lb: 2 games, +0 =0 -2")),
            "{mode}: {text}"
        );
        let (n, terminations) = python_chess_reads(&pgn);
        assert_eq!(n, 2);
        for t in terminations {
            assert!(t.contains(reason), "{mode}: termination {t:?}");
        }
    }
}

#[test]
fn real_engines_complete_matches() {
    if !(common::have_shared()
        && common::have_python_chess()
        && common::have_program("/usr/games/glaurung")
        && common::have_program("/usr/games/phalanx")
        && common::have_program("/usr/games/fairymax"))
    {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let pgn = dir.path().join("games.pgn");
    let lb = format!("name=learnbook,cmd={} uci", env!("CARGO_BIN_EXE_learnbook"));
    // Node and depth limits, so that a busy machine plays the same games
    // (slower). Phalanx takes no depth over xboard: it plays on a clock, a
    // generous one (its verdict here is "no answer", 2 s past its whole clock).
    for other in [
        "name=glaurung,cmd=/usr/games/glaurung,option.Threads=1",
        "name=phalanx,cmd=/usr/games/phalanx -l- -b-,proto=xboard,tc=10+0.1",
        "name=fairymax,cmd=/usr/games/fairymax,proto=xboard,depth=4",
    ] {
        let out = ok(&[
            "play",
            "--engine",
            &lb,
            "--engine",
            other,
            "--nodes",
            "20000",
            "--games",
            "2",
            "--repeat",
            "--openings",
            s(&shared().join("openings/8moves_v3.pgn.gz")),
            "--random",
            "--pgnout",
            s(&pgn),
            "--maxmoves",
            "150",
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(": 2 games"), "{text}");
        assert!(
            !text.contains("illegal") && !text.contains("no answer") && !text.contains("crash"),
            "{text}"
        );
    }
    let (n, _) = python_chess_reads(&pgn);
    assert_eq!(n, 6);
}

#[test]
fn learning_adds_every_game_to_the_book() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = dir.path().join("b.sqlite");
    ok(&["build", "--book", s(&book), "--max-ply", "12", s(&sample())]);
    let before = String::from_utf8_lossy(&ok(&["stats", "--book", s(&book)]).stdout).to_string();
    let out = ok(&[
        "play",
        "--engine",
        &format!("name=lb,cmd=builtin,book={}", s(&book)),
        "--engine",
        "name=opp,cmd=builtin",
        "--nodes",
        "3000",
        "--games",
        "4",
        "--concurrency",
        "2",
        "--learn",
        s(&book),
        "--learn-as",
        "lb",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("games learned into the book: 4"), "{text}");
    ok(&["check", "--book", s(&book)]);
    let after = String::from_utf8_lossy(&ok(&["stats", "--book", s(&book)]).stdout).to_string();
    assert_ne!(before, after);

    // The same with our UCI engine as a separate process reading the book
    // (BookFile) while the runner writes to it: WAL, no "database is locked".
    let out = ok(&[
        "play",
        "--engine",
        &format!(
            "name=lbuci,cmd={} uci --book {}",
            env!("CARGO_BIN_EXE_learnbook"),
            s(&book)
        ),
        "--engine",
        "name=opp,cmd=builtin",
        "--nodes",
        "3000",
        "--games",
        "6",
        "--concurrency",
        "2",
        "--learn",
        s(&book),
        "--learn-as",
        "lbuci",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("games learned into the book: 6"), "{text}");
    assert!(
        !text.contains("locked") && !text.contains("crash"),
        "{text}"
    );
    ok(&["check", "--book", s(&book)]);
}

/// A lopsided match at 2,000 nodes: the default evaluation (the embedded
/// net) against Kotok's hand-crafted one (`net=none`; its weights as a
/// file, or by the preset's name with `by_name`).
fn lopsided(dir: &Path, by_name: bool, games: &str, extra: &[&str]) -> String {
    let weak = dir.join("kotok.toml");
    std::fs::write(&weak, ok(&["weights", "--preset", "kotok"]).stdout).expect("write");
    let engine = if by_name {
        "name=kotok,cmd=builtin,weights=kotok,net=none".to_string()
    } else {
        format!("name=kotok,cmd=builtin,weights={},net=none", s(&weak))
    };
    let openings = shared().join("openings/8moves_v3.pgn.gz");
    let mut args = vec![
        "play",
        "--engine",
        "name=default,cmd=builtin",
        "--engine",
        &engine,
        "--nodes",
        "2000",
        "--games",
        games,
        "--concurrency",
        "2",
        "--repeat",
        "--openings",
        s(&openings),
        "--random",
        "--sprt",
        "elo0=0,elo1=50",
    ];
    args.extend_from_slice(extra);
    String::from_utf8_lossy(&ok(&args).stdout).into_owned()
}

fn games_played(text: &str) -> usize {
    text.split("default vs kotok: ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("game count")
}

#[test]
fn sprt_stops_a_lopsided_match_early() {
    if !(common::have_shared()) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let text = lopsided(dir.path(), false, "400", &[]);
    assert!(text.contains("H1 accepted"), "{text}");
    assert!(games_played(&text) < 400, "{text}");
    assert!(text.contains("Elo from the "), "pentanomial Elo: {text}");
}

/// `--sprt-play-on`: the decision is kept and reported with the game it
/// came at, and the match goes on to --games.
#[test]
fn sprt_play_on_keeps_the_decision_and_plays_every_game() {
    if !(common::have_shared()) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let text = lopsided(dir.path(), true, "120", &["--sprt-play-on"]);
    assert_eq!(games_played(&text), 120, "{text}");
    assert!(text.contains("H1 accepted"), "{text}");
    let after: usize = text
        .split("(decided after ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("where the SPRT decided");
    assert!(after < 120, "{text}");
}

#[test]
fn report_counts_windows_and_repeated_losses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pgn = dir.path().join("g.pgn");
    let game = |white: &str, black: &str, result: &str, moves: &str| {
        format!("[White \"{white}\"]\n[Black \"{black}\"]\n[Result \"{result}\"]\n\n{moves} {result}\n\n")
    };
    let text = [
        game("lb", "x", "0-1", "1. f3 e5 2. g4 Qh4#"),
        game("x", "lb", "0-1", "1. e4 e5"),
        game("lb", "x", "0-1", "1. f3 e5 2. g4 Qh4#"),
        game("lb", "x", "0-1", "1. f4 e5 2. g4 Qh4#"),
        game("x", "y", "1-0", "1. e4 e5"),
    ]
    .concat();
    std::fs::write(&pgn, text).expect("write");
    let text = report(&pgn, "lb", 2);
    assert!(text.contains("lb: 4 games, score 25.0%"), "{text}");
    assert!(
        text.contains(&format!("games {:>5}-{:<5} {:>5.1}%", 1, 2, 50.0)),
        "{text}"
    );
    assert!(
        text.contains(&format!("games {:>5}-{:<5} {:>5.1}%", 3, 4, 0.0)),
        "{text}"
    );
    assert!(
        text.contains("lost games: 3, of which repeat an earlier lost game move for move: 1"),
        "{text}"
    );
}

/// `learnbook report` of `player`'s games in `pgn`, in windows of `window`.
fn report(pgn: &std::path::Path, player: &str, window: usize) -> String {
    let out = ok(&[
        "report",
        "--pgn",
        s(pgn),
        "--player",
        player,
        "--window",
        &window.to_string(),
    ]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_learning_engine_never_repeats_a_lost_game() {
    // Both sides deterministic (fixed nodes, tables cleared per game), the
    // learner much weaker: without learning every game as White would be
    // the same loss, and so would every game as Black.
    let dir = tempfile::tempdir().expect("tempdir");
    let book = dir.path().join("b.sqlite");
    let pgn = dir.path().join("g.pgn");
    ok(&["build", "--book", s(&book), "--max-ply", "8", s(&sample())]);
    ok(&[
        "play",
        "--engine",
        &format!("name=lb,cmd=builtin,book={},nodes=150", s(&book)),
        "--engine",
        "name=strong,cmd=builtin,nodes=5000",
        "--games",
        "30",
        "--pgnout",
        s(&pgn),
        "--learn",
        s(&book),
        "--learn-as",
        "lb",
    ]);
    ok(&["check", "--book", s(&book)]);
    let text = report(&pgn, "lb", 10);
    let lost: usize = common::number_after(&text, "lost games: ", ',');
    assert!(lost >= 10, "the weak learner should lose often: {text}");
    assert!(
        text.contains("of which repeat an earlier lost game move for move: 0"),
        "{text}"
    );
}

/// `play` as a test runs it: builtin engines at a node count, the repo's
/// openings, `games` games into `pgn`, `seed` for the opening order.
fn play_into(pgn: &Path, games: usize, seed: &str) -> std::process::Output {
    common::run(&[
        "play",
        "--engine",
        "name=a,cmd=builtin",
        "--engine",
        "name=b,cmd=builtin",
        "--nodes",
        "300",
        "--games",
        &games.to_string(),
        "--concurrency",
        "2",
        "--repeat",
        "--openings",
        s(&repo().join("data/openings-sample.epd")),
        "--random",
        "--seed",
        seed,
        "--pgnout",
        s(pgn),
    ])
}

/// (round, white, result) of every game in `pgn`, by round.
fn rounds(pgn: &Path) -> Vec<(usize, String, String)> {
    let text = std::fs::read_to_string(pgn).expect("read the PGN");
    let tag = |game: &str, name: &str| {
        game.lines()
            .find_map(|l| l.strip_prefix(&format!("[{name} \"")))
            .and_then(|v| v.strip_suffix("\"]"))
            .unwrap_or_default()
            .to_string()
    };
    let mut out: Vec<(usize, String, String)> = text
        .split("[Event ")
        .skip(1)
        .map(|g| {
            (
                tag(g, "Round").parse().expect("round"),
                tag(g, "White"),
                tag(g, "Result"),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_stopped_match_continues_from_its_pgn_without_playing_a_round_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pgn = dir.path().join("match.pgn");
    let first = play_into(&pgn, 6, "5");
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let before = rounds(&pgn);
    assert_eq!(before.len(), 6);
    // A kill in the middle of writing a game leaves part of it behind.
    let mut text = std::fs::read(&pgn).expect("read");
    text.extend_from_slice(
        b"[Event \"learnbook match\"]\n[Site \"learnbook\"]\n[Round \"7\"]\n\n1. e4 e5 2. N",
    );
    std::fs::write(&pgn, &text).expect("write");

    let second = play_into(&pgn, 10, "5");
    let out = String::from_utf8_lossy(&second.stdout);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let after = rounds(&pgn);
    let numbers: Vec<usize> = after.iter().map(|r| r.0).collect();
    assert_eq!(numbers, (1..=10).collect::<Vec<_>>(), "each round once");
    assert_eq!(
        after[..6],
        before[..],
        "the first six games are kept as they were"
    );
    // The report counts all ten games, six of them read back.
    let score = |(_, white, result): &(usize, String, String)| match result.as_str() {
        "1/2-1/2" => 1,
        r if (r == "1-0") == (white == "a") => 2,
        _ => 0,
    };
    let count = |points| after.iter().filter(|r| score(r) == points).count();
    let expected = format!(
        "a vs b: 10 games, +{} ={} -{}",
        count(2),
        count(1),
        count(0)
    );
    assert!(out.contains(&expected), "{expected} in {out}");
    assert!(out.contains("of them 6 read back"), "{out}");
    if common::have_python_chess() {
        assert_eq!(python_chess_reads(&pgn).0, 10);
    }

    // Another opening order is another match: refused, the file untouched.
    let other = play_into(&pgn, 12, "6");
    assert!(!other.status.success());
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(err.contains("not this match's game"), "{err}");
    assert_eq!(rounds(&pgn), after);
}

#[test]
fn the_report_says_where_a_book_player_leaves_its_book() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = dir.path().join("b.sqlite");
    let pgn = dir.path().join("games.pgn");
    ok(&["build", "--book", s(&book), "--max-ply", "12", s(&sample())]);
    let out = ok(&[
        "play",
        "--engine",
        &format!("name=lb,cmd=builtin,book={},bookmode=weighted", s(&book)),
        "--engine",
        "name=opp,cmd=builtin",
        "--nodes",
        "2000",
        "--games",
        "6",
        "--pgnout",
        s(&pgn),
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("lb leaves its book at ply "))
        .unwrap_or_else(|| panic!("{text}"));
    let reported: f64 = line["lb leaves its book at ply ".len()..]
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(line.contains("6 games"), "{line}");
    assert!(!text.contains("opp leaves its book"), "{text}");
    // The same from the PGN, read by python-chess: lb's first move with a
    // search score in its comment (book moves have none).
    if !common::have_python_chess() {
        return;
    }
    let script = r#"
import sys, chess.pgn
f = open(sys.argv[1])
plies = []
while True:
    g = chess.pgn.read_game(f)
    if g is None:
        break
    white = g.headers["White"] == "lb"
    exit_ply = None
    for i, node in enumerate(g.mainline(), start=1):
        if (i % 2 == 1) == white and "/" in node.comment:
            exit_ply = i
            break
    plies.append(exit_ply if exit_ply else len(list(g.mainline())) + 1)
print(sum(plies) / len(plies))
"#;
    let py = std::process::Command::new("python3")
        .args(["-c", script, s(&pgn)])
        .output()
        .expect("python3 (.ci/run installs python-chess)");
    let expected: f64 = String::from_utf8_lossy(&py.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&py.stderr)));
    assert!(
        (reported - expected).abs() < 0.051,
        "{reported} vs {expected}"
    );
    assert!(
        reported > 2.0,
        "the sample book has moves from the start: {line}"
    );
}
