//! Bad input never loses good games: every file of tests/corpus (written by
//! scripts/make_malformed_corpus.py) mixes malformed cases with valid master
//! games. Each valid game is used, each bad one skipped with its reason, and
//! nothing panics. (`polyglot make-book` stops at the first illegal move.)

mod common;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use common::{ok, repo, s};
use rusqlite::Connection;
use tempfile::TempDir;

fn corpus(name: &str) -> PathBuf {
    repo().join("tests/corpus").join(name)
}

struct Run {
    read: u64,
    used: u64,
    reasons: BTreeMap<String, u64>,
    whites: Vec<String>,
    summary: String,
}

/// Builds a new book from `files` and reads back the summary and the games.
fn build(dir: &Path, files: &[PathBuf]) -> Run {
    let book = dir.join(format!("book-{}.sqlite", files.len()));
    let _ = std::fs::remove_file(&book);
    let mut args = vec!["build", "--book", s(&book)];
    args.extend(files.iter().map(|f| s(f)));
    let summary = String::from_utf8_lossy(&ok(&args).stderr).into_owned();
    let first = summary
        .lines()
        .find(|l| l.starts_with("games read:"))
        .expect("summary");
    let num = |label: &str| -> u64 {
        first
            .split(label)
            .nth(1)
            .and_then(|r| r.trim().split([',', ' ']).next())
            .and_then(|n| n.parse().ok())
            .expect(label)
    };
    let mut reasons = BTreeMap::new();
    for line in summary
        .lines()
        .filter(|l| l.trim_start().starts_with("skipped "))
    {
        let mut words = line.split_whitespace().skip(1);
        let n: u64 = words.next().and_then(|n| n.parse().ok()).expect("count");
        reasons.insert(words.collect::<Vec<_>>().join(" "), n);
    }
    ok(&["check", "--book", s(&book)]);
    let conn = Connection::open(&book).expect("open");
    let mut stmt = conn
        .prepare("SELECT white FROM games ORDER BY white")
        .expect("prep");
    let whites = stmt
        .query_map([], |r| r.get(0))
        .expect("q")
        .map(|r| r.expect("row"))
        .collect();
    Run {
        read: num("games read:"),
        used: num("used:"),
        reasons,
        whites,
        summary,
    }
}

fn reasons(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|&(r, n)| (r.to_string(), n)).collect()
}

/// Every used game is a valid one.
fn assert_only_valid(run: &Run) {
    for w in &run.whites {
        assert!(
            w.starts_with("Valid-"),
            "a bad game was used: {w}\n{}",
            run.summary
        );
    }
}

#[test]
fn mixed_file_skips_each_bad_game_with_its_reason() {
    let dir = TempDir::new().expect("tmp");
    let run = build(dir.path(), &[corpus("mixed.pgn")]);
    assert_eq!(run.read, 33);
    // Every good game and only them: the 13 valid master games.
    assert_eq!(run.used, 13, "{}", run.summary);
    assert_eq!(
        run.whites
            .iter()
            .filter(|w| w.starts_with("Valid-"))
            .count(),
        13
    );
    assert_only_valid(&run);
    assert_eq!(
        run.reasons,
        reasons(&[
            // Ke3, ambiguous Nd2, a move after mate, castling through check,
            // promotion without a piece, a null move, an illegal move after
            // variations.
            ("illegal move", 7),
            ("missing result", 2),
            ("unsupported variant", 1),
            ("Chess960", 2),
            ("bad FEN", 2),
            ("no moves", 1),
            ("duplicate game", 1),
            // Binary junk between the moves (pgn-reader drops it silently).
            ("unreadable token", 1),
            // A lowercase piece letter (nf3), Kx, and two moves glued
            // together (Nf3Nc6). pgn-reader drops such tokens silently.
            ("unparseable SAN", 3),
        ]),
        "{}",
        run.summary
    );
    assert!(
        run.summary.contains("illegal move \"Ke3\" at ply 3"),
        "{}",
        run.summary
    );
    for example in [
        "unreadable token \"\\0\\u{1}\u{fffd}\u{fffd}\\u{7f}\" in the moves at ply 2",
        "unparseable SAN \"nf3\" at ply 3",
        "unparseable SAN \"Kx\" at ply 4",
        "unparseable SAN \"Nf3Nc6\" at ply 3",
    ] {
        assert!(run.summary.contains(example), "{example}\n{}", run.summary);
    }
}

#[test]
fn annotations_nesting_bom_crlf_and_latin1_are_valid() {
    let dir = TempDir::new().expect("tmp");
    for (file, used) in [("annotated.pgn", 3), ("bom-crlf.pgn", 2), ("latin1.pgn", 2)] {
        let run = build(dir.path(), &[corpus(file)]);
        assert_eq!(
            (run.read, run.used),
            (used, used),
            "{file}: {}",
            run.summary
        );
        assert!(run.reasons.is_empty(), "{file}: {}", run.summary);
        assert_only_valid(&run);
        if file == "latin1.pgn" {
            assert!(
                run.whites.iter().any(|w| w == "Valid-latin1 M\u{fffd}ller"),
                "{:?}",
                run.whites
            );
        }
        if file == "annotated.pgn" {
            assert!(
                run.whites.iter().any(|w| w == "Valid-nested"),
                "2,000 nested variations: {:?}",
                run.whites
            );
        }
    }
}

#[test]
fn empty_truncated_garbage_and_cut_inputs() {
    let dir = TempDir::new().expect("tmp");
    // (file, games read, games used, skip reasons)
    type Case<'a> = (&'a str, u64, u64, &'a [(&'a str, u64)]);
    let cases: [Case; 5] = [
        ("empty.pgn", 0, 0, &[]),
        ("whitespace.pgn", 0, 0, &[]),
        ("truncated.pgn", 2, 1, &[("truncated game", 1)]),
        // The junk between two games reads as a game without a result.
        ("garbage.pgn", 3, 2, &[("missing result", 1)]),
        // A gzip stream cut at two thirds: the 25 games before the cut are
        // used, the game it cuts is unreadable (the reader used to fail
        // while looking ahead, and lost the 25th).
        ("cut.pgn.gz", 26, 25, &[("unreadable input", 1)]),
    ];
    for (file, read, used, why) in cases {
        let run = build(dir.path(), &[corpus(file)]);
        assert_eq!(
            (run.read, run.used),
            (read, used),
            "{file}: {}",
            run.summary
        );
        assert_eq!(run.reasons, reasons(why), "{file}: {}", run.summary);
        assert_only_valid(&run);
    }
}

#[test]
fn huge_comment_is_read_in_chunks() {
    let dir = TempDir::new().expect("tmp");
    let comment = "very long comment ".repeat(200_000); // 3.6 MB
    let text = format!(
        "[White \"Valid-huge-1\"]\n[Result \"1-0\"]\n\n1. e4 {{{comment}}} e5 2. Nf3 1-0\n\n\
         [White \"Valid-huge-2\"]\n[Result \"0-1\"]\n\n1. d4 d5 {{{comment}}} 0-1\n\n"
    );
    let file = dir.path().join("huge.pgn");
    std::fs::write(&file, text).expect("write");
    let run = build(dir.path(), &[file]);
    assert_eq!((run.read, run.used), (2, 2), "{}", run.summary);
    assert_eq!(run.whites, vec!["Valid-huge-1", "Valid-huge-2"]);
}

#[test]
fn the_whole_corpus_at_once_loses_no_valid_game() {
    let dir = TempDir::new().expect("tmp");
    let files: Vec<PathBuf> = [
        "mixed.pgn",
        "annotated.pgn",
        "bom-crlf.pgn",
        "latin1.pgn",
        "empty.pgn",
        "whitespace.pgn",
        "truncated.pgn",
        "garbage.pgn",
        "cut.pgn.gz",
    ]
    .iter()
    .map(|f| corpus(f))
    .collect();
    let run = build(dir.path(), &files);
    assert_eq!(run.used, 13 + 3 + 2 + 2 + 1 + 2 + 25, "{}", run.summary);
    assert_only_valid(&run);
    let skipped: u64 = run.reasons.values().sum();
    assert_eq!(run.read, run.used + skipped);
    assert_eq!(skipped, 20 + 1 + 1 + 1);
}

#[test]
fn the_corpus_is_what_its_script_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::python(&[
        s(&repo().join("scripts/make_malformed_corpus.py")),
        s(dir.path()),
    ]);
    let mut names: Vec<String> = std::fs::read_dir(repo().join("tests/corpus"))
        .expect("tests/corpus")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut written: Vec<String> = std::fs::read_dir(dir.path())
        .expect("written")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(names, written);
    for name in names {
        assert!(
            std::fs::read(corpus(&name)).expect("read")
                == std::fs::read(dir.path().join(&name)).expect("read"),
            "tests/corpus/{name} is not what scripts/make_malformed_corpus.py writes"
        );
    }
}
