//! `learnbook selfplay`: the PGN reads back with a score on every engine
//! move, the same seed gives the same games on any number of threads, a
//! run cut short (games removed, SIGKILL, SIGINT) continues to the same
//! file, and bad input is refused with exit 2.

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread::sleep,
    time::{Duration, Instant},
};

use common::{ok, repo, run, s};
use learnbook::{
    book::pgn::{
        input::{GameStream, RawGame},
        validate::Filter,
    },
    play::game::Eval,
};

fn openings() -> PathBuf {
    repo().join("data/openings-sample.epd")
}

/// `selfplay` arguments: `games` games at `nodes` nodes into `out`.
fn args(out: &Path, games: usize, nodes: u64, concurrency: usize) -> Vec<String> {
    [
        "selfplay",
        "--pgnout",
        s(out),
        "--games",
        &games.to_string(),
        "--nodes",
        &nodes.to_string(),
        "--openings",
        s(&openings()),
        "--concurrency",
        &concurrency.to_string(),
        "--seed",
        "7",
    ]
    .map(String::from)
    .to_vec()
}

fn selfplay(out: &Path, games: usize, nodes: u64, concurrency: usize) -> String {
    let a = args(out, games, nodes, concurrency);
    let out = ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The file without its Date tags (the day each game was written).
fn games_text(path: &Path) -> String {
    fs::read_to_string(path)
        .expect("read the PGN")
        .lines()
        .filter(|l| !l.starts_with("[Date "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every game of the file, with its comments, read by the crate's reader.
fn read_games(path: &Path) -> Vec<RawGame> {
    let input = learnbook::book::pgn::input::open_input(path).expect("open");
    let mut stream = GameStream::with_comments(input);
    let mut games = Vec::new();
    loop {
        let batch = stream.next_batch(100);
        if batch.is_empty() {
            break;
        }
        games.extend(batch);
    }
    assert!(stream.error.is_none(), "{:?}", stream.error);
    games
}

/// Checks every game: valid, numbered in order, each move after the first
/// `opening_plies` with exactly one comment that reads as a score.
fn check_games(path: &Path, games: usize, opening_plies: usize) {
    let read = read_games(path);
    assert_eq!(read.len(), games, "games in {}", path.display());
    let filter = Filter {
        max_ply: 1000,
        min_elo: None,
        allow_duplicates: true,
        no_tails: false,
    };
    for (i, g) in read.iter().enumerate() {
        g.validate(&filter)
            .unwrap_or_else(|e| panic!("game {} is not valid: {e}", i + 1));
        assert!(g.identity.contains(&format!("Round={}", i + 1)));
        assert!(g.identity.contains(&"Event=learnbook selfplay".to_string()));
        assert_eq!(g.white, "learnbook-default");
        assert!(
            g.sans.len() > opening_plies,
            "game {} has engine moves",
            i + 1
        );
        let after: Vec<usize> = g.comments.iter().map(|(k, _)| *k).collect();
        let expected: Vec<usize> = (opening_plies + 1..=g.sans.len()).collect();
        assert_eq!(
            after,
            expected,
            "game {}: one comment after each engine move",
            i + 1
        );
        for (k, c) in &g.comments {
            let e = Eval::parse(c).unwrap_or_else(|| panic!("game {} ply {k}: {c:?}", i + 1));
            assert!(e.depth >= 1, "game {} ply {k}: depth {}", i + 1, e.depth);
        }
    }
}

/// The number of `[Event` lines in the file so far.
fn games_in(path: &Path) -> usize {
    fs::read_to_string(path)
        .map(|t| t.matches("[Event ").count())
        .unwrap_or(0)
}

/// Starts selfplay and waits until `n` games are in its file.
fn start_and_wait(a: &[String], out: &Path, n: usize) -> std::process::Child {
    let child = Command::new(common::bin())
        .args(a)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn selfplay");
    let t = Instant::now();
    while games_in(out) < n {
        assert!(t.elapsed() < common::WATCHDOG, "no games appear");
        sleep(Duration::from_millis(5));
    }
    child
}

#[test]
fn every_game_reads_back_valid_with_a_score_comment_on_every_engine_move() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("games.pgn");
    let stdout = selfplay(&out, 6, 2000, 2);
    assert!(
        stdout.contains("6 games (0 already there, 6 played now"),
        "{stdout}"
    );
    check_games(&out, 6, 0);
    let text = fs::read_to_string(&out).expect("read");
    assert_eq!(
        text.matches("[SetUp \"1\"]").count(),
        6,
        "EPD openings as FEN tags"
    );
    assert_eq!(text.matches("[TimeControl \"nodes=2000\"]").count(), 6);

    // PGN openings: their moves are played without comment, the engine's with one.
    let pgn = dir.path().join("openings.pgn");
    fs::write(
        &pgn,
        "[Event \"a\"]\n\n1. e4 e5 2. Nf3 Nc6 *\n\n[Event \"b\"]\n\n1. d4 d5 2. c4 e6 *\n",
    )
    .expect("write openings");
    let out2 = dir.path().join("from-pgn.pgn");
    let a = [
        "selfplay",
        "--pgnout",
        s(&out2),
        "--games",
        "2",
        "--nodes",
        "2000",
        "--openings",
        s(&pgn),
    ];
    ok(&a);
    check_games(&out2, 2, 4);
    let text = fs::read_to_string(&out2).expect("read");
    assert!(
        !text.contains("[FEN"),
        "games from the start position have no FEN"
    );
}

#[test]
fn the_same_seed_gives_the_same_file_on_one_and_two_threads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (one, two) = (dir.path().join("one.pgn"), dir.path().join("two.pgn"));
    selfplay(&one, 8, 2000, 1);
    selfplay(&two, 8, 2000, 2);
    assert_eq!(games_text(&one), games_text(&two));
    // Another seed takes other openings.
    let other = dir.path().join("other.pgn");
    let mut a = args(&other, 8, 2000, 2);
    let n = a.len();
    a[n - 1] = "8".into();
    ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_ne!(games_text(&one), games_text(&other));
}

#[test]
fn a_run_with_its_last_games_removed_or_cut_off_continues_to_the_same_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let full = dir.path().join("full.pgn");
    selfplay(&full, 8, 2000, 2);
    let text = fs::read_to_string(&full).expect("read");
    let starts: Vec<usize> = text.match_indices("[Event ").map(|(i, _)| i).collect();
    assert_eq!(starts.len(), 8);

    // Five whole games, and the sixth cut in the middle of its moves (a kill during a write).
    let cut = dir.path().join("cut.pgn");
    let sixth = &text[starts[5]..starts[6]];
    let mid = starts[5] + sixth.find("\n\n").expect("movetext") + 40;
    fs::write(&cut, &text[..mid]).expect("write");
    let stdout = selfplay(&cut, 8, 2000, 2);
    assert!(stdout.contains("removed a partial game"), "{stdout}");
    assert!(stdout.contains("already holds 5 games"), "{stdout}");
    assert!(
        stdout.contains("8 games (5 already there, 3 played now"),
        "{stdout}"
    );
    assert_eq!(fs::read_to_string(&cut).expect("read"), text);

    // Cut right after the tags of the seventh game, and with its last blank line missing.
    for end in [
        starts[6] + text[starts[6]..].find("\n\n").expect("tags") + 2,
        starts[7] - 1,
    ] {
        fs::write(&cut, &text[..end]).expect("write");
        selfplay(&cut, 8, 2000, 1);
        assert_eq!(fs::read_to_string(&cut).expect("read"), text);
    }

    // Asking for no more than the file holds plays nothing and keeps it.
    let stdout = selfplay(&cut, 6, 2000, 2);
    assert!(stdout.contains("nothing to play"), "{stdout}");
    assert_eq!(fs::read_to_string(&cut).expect("read"), text);
}

#[test]
fn a_killed_run_continues_to_the_games_of_an_uninterrupted_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (games, nodes) = (24, 2000);
    let full = dir.path().join("full.pgn");
    selfplay(&full, games, nodes, 2);

    let killed = dir.path().join("killed.pgn");
    let a = args(&killed, games, nodes, 2);
    let mut child = start_and_wait(&a, &killed, 3);
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    let kept = games_in(&killed);
    assert!(kept < games, "killed before the end ({kept} games)");

    selfplay(&killed, games, nodes, 2);
    assert_eq!(games_text(&killed), games_text(&full));
    check_games(&killed, games, 0);
}

#[test]
fn ctrl_c_writes_the_games_under_way_and_exits_130() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (games, nodes) = (24, 2000);
    let out = dir.path().join("int.pgn");
    let a = args(&out, games, nodes, 2);
    let child = start_and_wait(&a, &out, 2);
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let result = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert_eq!(result.status.code(), Some(130), "{stdout}");
    assert!(stdout.contains("interrupted"), "{stdout}");
    // Only whole games, nothing to remove on the next run.
    let n = games_in(&out);
    assert!((2..games).contains(&n), "{n} games");
    check_games(&out, n, 0);
    let stdout = selfplay(&out, games, nodes, 2);
    assert!(!stdout.contains("removed"), "{stdout}");
    assert!(
        stdout.contains(&format!("already holds {n} games")),
        "{stdout}"
    );
    check_games(&out, games, 0);
}

#[test]
fn bad_openings_weights_or_another_runs_file_exit_2_with_a_clear_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("g.pgn");
    let fails = |a: &[&str], message: &str| {
        let o = run(a);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {stderr}");
        assert!(stderr.contains(message), "{a:?}: {stderr}");
    };
    let o = s(&out);
    let sample = openings();
    let epd = s(&sample);
    let missing = dir.path().join("missing.epd");
    fails(
        &[
            "selfplay",
            "--pgnout",
            o,
            "--games",
            "2",
            "--openings",
            s(&missing),
        ],
        "--openings: cannot open",
    );
    let garbage = dir.path().join("garbage.epd");
    fs::write(&garbage, "not a position\n").expect("write");
    fails(
        &[
            "selfplay",
            "--pgnout",
            o,
            "--games",
            "2",
            "--openings",
            s(&garbage),
        ],
        "--openings",
    );
    let empty = dir.path().join("empty.pgn");
    fs::write(&empty, "").expect("write");
    fails(
        &[
            "selfplay",
            "--pgnout",
            o,
            "--games",
            "2",
            "--openings",
            s(&empty),
        ],
        "no openings",
    );
    fails(&["selfplay", "--pgnout", o, "--games", "2"], "--openings");
    fails(
        &[
            "selfplay",
            "--pgnout",
            o,
            "--games",
            "2",
            "--openings",
            epd,
            "--weights",
            "nosuch",
        ],
        "--weights: nosuch: no such file or preset",
    );
    let bad = dir.path().join("bad.toml");
    fs::write(&bad, "knight_mg = \"heavy\"\n").expect("write");
    fails(
        &[
            "selfplay",
            "--pgnout",
            o,
            "--games",
            "2",
            "--openings",
            epd,
            "--weights",
            s(&bad),
        ],
        "--weights",
    );
    assert!(!out.exists(), "nothing written on bad input");

    // A file of another run (other nodes) or not of selfplay is left alone.
    selfplay(&out, 2, 2000, 2);
    let before = fs::read(&out).expect("read");
    fails(
        &[
            "selfplay",
            "--pgnout",
            o,
            "--games",
            "3",
            "--openings",
            epd,
            "--seed",
            "7",
            "--nodes",
            "2100",
        ],
        "TimeControl tag is \"nodes=2000\", this run's would be \"nodes=2100\"",
    );
    fails(
        &[
            "selfplay",
            "--pgnout",
            o,
            "--games",
            "3",
            "--openings",
            epd,
            "--seed",
            "8",
            "--nodes",
            "2000",
        ],
        "other settings",
    );
    fails(
        &[
            "selfplay",
            "--pgnout",
            o,
            "--games",
            "3",
            "--openings",
            epd,
            "--seed",
            "7",
            "--nodes",
            "2000",
            "--maxmoves",
            "150",
        ],
        "its Selfplay tag is",
    );
    assert_eq!(fs::read(&out).expect("read"), before);
    let foreign = dir.path().join("foreign.pgn");
    fs::write(&foreign, "% a comment line\n[Event \"x\"]\n\n1. e4 *\n\n").expect("write");
    fails(
        &[
            "selfplay",
            "--pgnout",
            s(&foreign),
            "--games",
            "3",
            "--openings",
            epd,
        ],
        "not a file that selfplay wrote",
    );
}
