//! The fast paths against their plain paths (docs/FASTPATHS.md): a new
//! book's tables written as SQLite's pages and the same book written by
//! SQLite's own inserts (`LEARNBOOK_PLAIN_WRITES`) are the same book, row
//! for row in every table. (Learning through the VFS that gathers WAL
//! frames against SQLite's own VFS: tests/learning.rs.)

mod common;

use std::path::Path;
use std::process::Command;

use common::{differences, s, sample_text};
use tempfile::TempDir;

/// `learnbook build` over its memory budget (so written by
/// `bulk_load_games`), the plain path if `plain`; its stderr.
fn build(book: &Path, input: &Path, plain: bool) -> String {
    let mut cmd = Command::new(common::bin());
    cmd.args(["build", "--memory", "8M", "--book", s(book), s(input)]);
    if plain {
        cmd.env("LEARNBOOK_PLAIN_WRITES", "1");
    } else {
        cmd.env_remove("LEARNBOOK_PLAIN_WRITES");
    }
    let out = cmd.output().expect("run learnbook");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "build failed: {stderr}");
    stderr
}

fn integrity(book: &Path) -> String {
    rusqlite::Connection::open(book)
        .expect("open")
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check")
}

#[test]
fn a_book_written_as_pages_is_the_book_sqlite_writes_row_for_row() {
    let dir = TempDir::new().expect("tmp");
    let mut text = sample_text();
    // A game whose row does not fit in a page of 4 KB: inserted by SQLite
    // on the fast path too.
    let event = "Long event ".repeat(600);
    text.extend_from_slice(
        format!(
            "\n[Event \"{event}\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"1-0\"]\n\n\
             1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 1-0\n"
        )
        .as_bytes(),
    );
    let input = dir.path().join("games.pgn");
    std::fs::write(&input, text).expect("write");
    let fast = dir.path().join("fast.sqlite");
    let plain = dir.path().join("plain.sqlite");
    let said_fast = build(&fast, &input, false);
    let said_plain = build(&plain, &input, true);
    for said in [&said_fast, &said_plain] {
        assert!(said.contains("over the memory budget"), "{said}");
    }
    assert!(!said_fast.contains("through SQLite"), "{said_fast}");
    assert!(
        said_plain.contains("tables written through SQLite: LEARNBOOK_PLAIN_WRITES is set"),
        "{said_plain}"
    );
    // Every table, every column (ids and sources too: the same input).
    let conn = rusqlite::Connection::open(&fast).expect("open");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .expect("tables");
    for table in [
        "games",
        "meta",
        "moves",
        "parents",
        "positions",
        "sources",
        "tail_index",
    ] {
        assert!(
            tables.iter().any(|t| t == table),
            "no {table} in {tables:?}"
        );
    }
    for table in &tables {
        assert_eq!(
            differences(&fast, &plain, table, "*"),
            (0, 0),
            "{table} differs"
        );
        let count = |book: &Path| common::count(book, &format!("SELECT count(*) FROM {table}"));
        assert_eq!(count(&fast), count(&plain), "{table}");
    }
    for (table, least) in [
        ("positions", 1_000),
        ("moves", 1_000),
        ("parents", 10),
        ("games", 1_000),
    ] {
        let n = common::count(&fast, &format!("SELECT count(*) FROM {table}"));
        assert!(n >= least, "{n} rows in {table}");
    }
    // The long game, and the games' hash index as SQLite reads it.
    assert_eq!(
        common::count(
            &fast,
            "SELECT count(*) FROM games WHERE length(event) > 4096"
        ),
        1
    );
    assert_eq!(
        common::count(
            &fast,
            "SELECT count(*) FROM games INDEXED BY sqlite_autoindex_games_1 WHERE hash IS NOT NULL"
        ),
        common::count(&fast, "SELECT count(*) FROM games")
    );
    assert_eq!(integrity(&fast), "ok");
    assert_eq!(integrity(&plain), "ok");
    common::ok(&["check", "--book", s(&fast)]);
    common::ok(&["check", "--book", s(&plain)]);
}
