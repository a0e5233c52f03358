//! `learn --follow`: a PGN file appended game by game, as cutechess-cli's
//! and fastchess's `-pgnout` write it, learned as it grows; every game in
//! the book once, also across a restart of the follower; an engine plays
//! from the same book meanwhile.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, ok, s, sample_text, WATCHDOG};

/// The sample's first `n` games, each as its PGN text (ending in a blank line).
fn sample_games(n: usize) -> Vec<String> {
    let text = String::from_utf8_lossy(&sample_text()).into_owned();
    let mut games: Vec<String> = text
        .split("\n\n[Event ")
        .take(n)
        .enumerate()
        .map(|(i, g)| {
            let g = g.trim_end();
            if i == 0 {
                format!("{g}\n\n")
            } else {
                format!("[Event {g}\n\n")
            }
        })
        .collect();
    games.truncate(n);
    games
}

fn games_from(book: &Path, file: &Path) -> i64 {
    common::count(
        book,
        &format!(
            "SELECT count(*) FROM games WHERE source = (SELECT id FROM sources WHERE name = '{}')",
            file.display()
        ),
    )
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < WATCHDOG, "no progress: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn follower(book: &Path, file: &Path) -> Child {
    Command::new(bin())
        .args([
            "learn",
            "--book",
            s(book),
            "--follow",
            s(file),
            "--poll-ms",
            "20",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn learn --follow")
}

fn interrupt(child: Child) -> String {
    let pid = child.id().to_string();
    let status = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(130), "exit after Ctrl-C");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn append(file: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .expect("open");
    f.write_all(text.as_bytes()).expect("append");
}

#[test]
fn a_followed_pgn_is_learned_game_by_game_once_across_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = dir.path().join("b.sqlite");
    let seed = dir.path().join("seed.pgn");
    let games = sample_games(12);
    std::fs::write(&seed, games[11].as_bytes()).expect("write");
    ok(&["build", "--book", s(&book), s(&seed)]);
    let pgn = dir.path().join("match.pgn");
    let child = follower(&book, &pgn);
    // The runner writes each game as it ends; one is caught half written.
    for (i, g) in games[..5].iter().enumerate() {
        append(&pgn, g);
        wait_for("each game learned as it is appended", || {
            games_from(&book, &pgn) == i as i64 + 1
        });
    }
    let (head, tail) = games[5].split_at(games[5].len() / 2);
    append(&pgn, head);
    // An engine plays from the book while it is written.
    let mut engine = Command::new(bin())
        .args(["uci", "--book", s(&book)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn uci");
    engine
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"uci\nposition startpos\ngo depth 1\nisready\nquit\n")
        .expect("write");
    let out = engine.wait_with_output().expect("wait");
    assert!(String::from_utf8_lossy(&out.stdout).contains("bestmove"));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        games_from(&book, &pgn),
        5,
        "a half-written game was learned"
    );
    append(&pgn, tail);
    wait_for("the completed game learned", || {
        games_from(&book, &pgn) == 6
    });
    let report = interrupt(child);
    assert!(report.contains("games learned: 6"), "{report}");
    // Restarted: more games appended meanwhile; the first six are not counted again.
    for g in &games[6..9] {
        append(&pgn, g);
    }
    let child = follower(&book, &pgn);
    wait_for("the games appended while it was down", || {
        games_from(&book, &pgn) == 9
    });
    append(&pgn, &games[9]);
    wait_for("the next game", || games_from(&book, &pgn) == 10);
    let report = interrupt(child);
    assert!(
        report.contains("games learned: 4, already in the book: 6"),
        "{report}"
    );
    assert_eq!(
        common::count(&book, "SELECT count(*) FROM games"),
        11,
        "every game once"
    );
    ok(&["check", "--book", s(&book)]);
}
