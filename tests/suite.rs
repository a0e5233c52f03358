//! `learnbook suite`: opening suites cut from a book, read back by our
//! runner and by python-chess, the same file for the same seed, and clear
//! errors for options that cannot give a suite.

mod common;

use common::*;
use std::path::Path;

/// A book of the sample games with its exits at plies 6..8 analysed by the
/// search core (a small budget: the scores only need to exist).
fn analysed_book(dir: &Path) -> std::path::PathBuf {
    let book = dir.join("b.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    let out = ok(&[
        "suite",
        "--book",
        s(&book),
        "--out",
        s(&dir.join("all.epd")),
        "--plies",
        "6..8",
        "--min-games",
        "3",
        "--analyze",
        "--engine",
        "builtin",
        "--nodes",
        "300",
        "--threads",
        "2",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("analysed"), "{text}");
    book
}

fn suite(book: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["suite", "--book", s(book), "--out", s(out)];
    args.extend_from_slice(extra);
    String::from_utf8_lossy(&ok(&args).stdout).into_owned()
}

#[test]
fn suites_are_legal_unique_reproducible_and_read_by_python_chess_and_our_runner() {
    let dir = tempfile::tempdir().unwrap();
    let book = analysed_book(dir.path());
    let window = [
        "--plies",
        "6..8",
        "--min-games",
        "3",
        "--window=-0.60..0.60",
    ];

    // Every exit analysed: the window sees them all.
    let all = suite(&book, &dir.path().join("w.epd"), &window);
    let considered: usize = number_after(&all, "exits considered ", ',');
    let analysed: usize = number_after(&all, "analysed ", ';');
    assert_eq!(considered, analysed, "{all}");
    let kept: usize = number_after(&all, "kept ", '\n');
    assert!(kept >= 20, "{all}");

    // Sampled: the same seed gives the same file, another seed another.
    let count = ["--count", "15", "--seed", "7"];
    let a = dir.path().join("a.epd");
    let b = dir.path().join("b.epd");
    let c = dir.path().join("c.epd");
    suite(&book, &a, &[&window[..], &count[..]].concat());
    suite(&book, &b, &[&window[..], &count[..]].concat());
    suite(
        &book,
        &c,
        &[&window[..], &["--count", "15", "--seed", "8"][..]].concat(),
    );
    let (ta, tb, tc) = (
        std::fs::read_to_string(&a).unwrap(),
        std::fs::read_to_string(&b).unwrap(),
        std::fs::read_to_string(&c).unwrap(),
    );
    assert_eq!(ta, tb, "the same seed wrote different suites");
    assert_ne!(ta, tc, "two seeds wrote the same suite");
    assert_eq!(ta.lines().count(), 15);

    // One side to move, stratified over first moves, as PGN.
    let pgn = dir.path().join("s.pgn");
    let text = suite(
        &book,
        &pgn,
        &[
            &window[..],
            &[
                "--side",
                "white",
                "--stratify",
                "first-moves",
                "--count",
                "12",
            ][..],
        ]
        .concat(),
    );
    assert!(text.contains("groups: "), "{text}");

    if have_python_chess() {
        let check = r#"
import sys, chess, chess.pgn
epd, pgn = sys.argv[1], sys.argv[2]
seen = set()
for line in open(epd):
    board = chess.Board(line.strip())
    assert board.is_valid(), line
    assert board.epd() not in seen, "repeated " + line
    seen.add(board.epd())
ends = set()
games = 0
with open(pgn) as f:
    while (g := chess.pgn.read_game(f)) is not None:
        assert not g.errors, g.errors
        assert len(g.headers) == 7 and g.headers["Result"] == "*", dict(g.headers)
        board = g.end().board()
        assert board.is_valid() and board.turn == chess.WHITE
        assert board.epd() not in ends
        ends.add(board.epd())
        games += 1
print(len(seen), games)
"#;
        let out = common::python(&["-c", check, s(&a), s(&pgn)]);
        assert_eq!(out.trim(), "15 12");
    }

    // Our runner plays from both files.
    for openings in [&a, &pgn] {
        let out = ok(&[
            "play",
            "--engine",
            "name=a,cmd=builtin",
            "--engine",
            "name=b,cmd=builtin",
            "--nodes",
            "200",
            "--games",
            "2",
            "--openings",
            s(openings),
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("a vs b: 2 games"), "{text}");
    }
}

#[test]
fn options_that_cannot_give_a_suite_are_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("b.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    let out_file = dir.path().join("s.epd");
    let fail = |args: &[&str], expect: &str| {
        let mut all = vec!["suite", "--book", s(&book), "--out", s(&out_file)];
        all.extend_from_slice(args);
        let out = run(&all);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(!out_file.exists(), "{args:?} wrote a suite");
    };
    fail(&["--window", "1.09..0.80"], "empty range");
    fail(&["--plies", "60"], "beyond the book");
    fail(
        &["--min-games", "3", "--window", "0.80..1.09"],
        "no exit is analysed",
    );
    fail(&["--draw-rate", "0.48..0.52"], "no exit is analysed");
    fail(&["--min-games", "100000"], "no line");
    let bad = dir.path().join("s.txt");
    let out = run(&["suite", "--book", s(&book), "--out", s(&bad)]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(".epd or .pgn"));
}
