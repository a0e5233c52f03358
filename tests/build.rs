//! `build` through the CLI: adding to an existing book equals building at
//! once, re-running adds nothing, inputs may be compressed or on stdin.

mod common;

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use common::{bin, book_moves, positions, run, s, sample, sample_text, MoveRow, PositionRow};
use rusqlite::Connection;
use tempfile::TempDir;

/// `(success, stdout, stderr)` of a learnbook run.
fn learnbook(args: &[&str]) -> (bool, String, String) {
    let out = run(args);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// The sample's games as plain text, split into two halves at a game start.
fn halves(dir: &Path) -> (PathBuf, PathBuf, usize) {
    let text = sample_text();
    let starts: Vec<usize> = (0..text.len())
        .filter(|&i| text[i..].starts_with(b"[Event ") && (i == 0 || text[i - 1] == b'\n'))
        .collect();
    let mid = starts[starts.len() / 2];
    let (a, b) = (dir.join("a.pgn"), dir.join("b.pgn"));
    std::fs::write(&a, &text[..mid]).expect("write");
    std::fs::write(&b, &text[mid..]).expect("write");
    (a, b, starts.len())
}

/// Everything a book knows, in key order.
fn dump(book: &Path) -> (Vec<PositionRow>, Vec<MoveRow>, i64) {
    let c = Connection::open(book).expect("open");
    let games = c
        .query_row("SELECT count(*) FROM games", [], |r| r.get(0))
        .expect("games");
    (positions(book), book_moves(book), games)
}

#[test]
fn adding_to_a_book_equals_building_at_once() {
    let dir = TempDir::new().expect("tmp");
    let (a, b, n) = halves(dir.path());
    let once = dir.path().join("once.sqlite");
    let twice = dir.path().join("twice.sqlite");
    assert!(learnbook(&["build", "--book", s(&once), s(&a), s(&b)]).0);
    assert!(learnbook(&["build", "--book", s(&twice), s(&a)]).0);
    let (ok, _, summary) = learnbook(&["build", "--book", s(&twice), s(&b)]);
    assert!(ok, "{summary}");
    let (d1, d2) = (dump(&once), dump(&twice));
    assert_eq!(d1.2, n as i64, "every sample game is in the book");
    assert_eq!(d1.2, d2.2);
    assert_eq!(d1.1, d2.1, "moves differ");
    assert!(d1.0 == d2.0, "positions or values differ");
    for book in [&once, &twice] {
        let (ok, out, _) = learnbook(&["check", "--book", s(book)]);
        assert!(ok, "{out}");
    }
}

#[test]
fn rebuilding_the_same_file_adds_nothing() {
    let dir = TempDir::new().expect("tmp");
    let book = dir.path().join("book.sqlite");
    assert!(learnbook(&["build", "--book", s(&book), s(&sample())]).0);
    let before = dump(&book);
    let (ok, _, summary) = learnbook(&["build", "--book", s(&book), s(&sample())]);
    assert!(ok);
    assert!(
        summary.contains(&format!("used: 0, skipped: {}", before.2)),
        "{summary}"
    );
    assert!(summary.contains("duplicate game"), "{summary}");
    assert!(dump(&book) == before);
}

#[test]
fn stdin_and_zstd_inputs_give_the_same_book() {
    let dir = TempDir::new().expect("tmp");
    let text = sample_text();
    let zst = dir.path().join("sample.pgn.zst");
    std::fs::write(&zst, zstd::encode_all(&text[..], 3).expect("zstd")).expect("write");
    let (gz_book, zst_book, stdin_book) = (
        dir.path().join("gz.sqlite"),
        dir.path().join("zst.sqlite"),
        dir.path().join("stdin.sqlite"),
    );
    assert!(learnbook(&["build", "--book", s(&gz_book), s(&sample())]).0);
    assert!(learnbook(&["build", "--book", s(&zst_book), s(&zst)]).0);
    let mut child = Command::new(bin())
        .args(["build", "--book", s(&stdin_book), "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&text)
        .expect("pipe");
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference = dump(&gz_book);
    assert_eq!(reference.2, 1458);
    assert!(dump(&zst_book) == reference, "zstd input differs");
    assert!(dump(&stdin_book) == reference, "stdin input differs");
}

#[test]
fn show_marks_the_stored_choice_and_choose_agrees() {
    let dir = TempDir::new().expect("tmp");
    let book = dir.path().join("book.sqlite");
    assert!(learnbook(&["build", "--book", s(&book), s(&sample())]).0);
    let (ok, show, _) = learnbook(&["show", "--book", s(&book), "--moves", "e2e4 c7c5"]);
    assert!(ok);
    let marked: Vec<&str> = show.lines().filter(|l| l.starts_with('*')).collect();
    assert_eq!(marked.len(), 1, "exactly one move is marked: {show}");
    let san = marked[0].split_whitespace().nth(1).expect("move");
    let (ok, chosen, _) = learnbook(&["choose", "--book", s(&book), "--moves", "e2e4 c7c5"]);
    assert!(ok);
    // The marked move (SAN) and the chosen move (UCI) are the same move.
    let c = Connection::open(&book).expect("open");
    let uci: String = c
        .query_row(
            "SELECT m.uci FROM positions p JOIN moves m ON m.parent = p.key AND m.move = p.best WHERE p.key = 0x644d4afe02564aeb",
            [],
            |r| r.get(0),
        )
        .expect("stored choice");
    assert_eq!(chosen.trim(), uci);
    assert_eq!(
        san, "Nf3",
        "the sample's choice after 1. e4 c5 (185 of 222 games)"
    );
    let (ok, _, err) = learnbook(&["show", "--book", s(&book), "--moves", "e2e5"]);
    assert!(
        !ok && err.contains("not legal"),
        "an illegal move is a clear error: {err}"
    );
}

#[test]
fn learn_prints_the_choices_that_changed() {
    use learnbook::book::{
        choose::{choose, Mode},
        Book,
    };
    use shakmaty::{san::SanPlus, Chess};
    let dir = TempDir::new().expect("tmp");
    let book = dir.path().join("book.sqlite");
    assert!(learnbook(&["build", "--book", s(&book), s(&sample())]).0);
    // The line the book plays against itself, lost three times by White.
    let mut movetext = String::new();
    {
        let b = Book::open(&book).expect("open");
        let mut pos = Chess::default();
        let mut rng = rand::rng();
        for ply in 0..16 {
            let Some(m) = choose(&b, &pos, Mode::Best, &mut rng).expect("choose") else {
                break;
            };
            if ply % 2 == 0 {
                movetext.push_str(&format!("{}. ", ply / 2 + 1));
            }
            movetext.push_str(&format!(
                "{} ",
                SanPlus::from_move_and_play_unchecked(&mut pos, m)
            ));
        }
    }
    let pgn: String = (1..=3)
        .map(|r| format!("[White \"learnbook\"]\n[Black \"opponent\"]\n[Round \"{r}\"]\n[Result \"0-1\"]\n\n{movetext}0-1\n\n"))
        .collect();
    let file = dir.path().join("losses.pgn");
    std::fs::write(&file, pgn).expect("write");
    let (ok, out, err) = learnbook(&["learn", "--book", s(&book), s(&file)]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("learnbook - opponent 0-1"))
        .collect();
    assert_eq!(lines.len(), 3, "one line per game: {out}");
    assert!(
        out.contains("book choice changed") || out.contains("book choices changed"),
        "three losses changed nothing: {out}"
    );
    assert!(err.contains("games read: 3, used: 3"), "{err}");
    let (ok, out, _) = learnbook(&["check", "--book", s(&book)]);
    assert!(ok, "{out}");
}

#[test]
fn learn_into_a_closed_pipe_stops_quietly_and_keeps_a_consistent_book() {
    use std::io::{BufRead, BufReader, Read};
    let dir = TempDir::new().expect("tmp");
    let (a, b, _) = halves(dir.path());
    let book = dir.path().join("book.sqlite");
    assert!(learnbook(&["build", "--book", s(&book), s(&a)]).0);
    let before = dump(&book).2;
    // `learnbook learn ... | head -1`: the reader goes after one line.
    let mut child = Command::new(bin())
        .args(["learn", "--book", s(&book), s(&b)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read");
    assert!(first.contains(" re-evaluated"), "{first}");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    let status = child.wait().expect("wait");
    // What a program killed by SIGPIPE reports through a shell.
    assert_eq!(status.code(), Some(141), "{status:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let (ok, out, _) = learnbook(&["check", "--book", s(&book)]);
    assert!(ok, "{out}");
    assert!(
        dump(&book).2 > before,
        "the games learned before the reader left are kept"
    );
}
