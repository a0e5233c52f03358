//! The gathering WAL VFS (docs/FASTPATHS.md) against the plain path the
//! commands use: games learned into a book through the VFS that gathers a
//! transaction's WAL frames (`Book::open_gathered`) and through SQLite's
//! own VFS (`Book::open`) give the same book, row for row in every table,
//! and a copy of the files of the open book, as a killed process leaves
//! them, recovers every commit.

mod common;

use std::path::Path;

use common::{differences, s, sample};
use learnbook::book::{
    ingest::{open_input, Filter, Game, GameStream},
    Book,
};
use tempfile::TempDir;

/// Games `skip + 1 ..` of `path`, `n` of them, validated as `learn` does.
fn read_games(path: &Path, skip: usize, n: usize) -> Vec<Game> {
    let filter = Filter {
        max_ply: 40,
        min_elo: None,
        allow_duplicates: false,
        no_tails: false,
    };
    let mut stream = GameStream::new(open_input(path).expect("open"));
    let mut out = Vec::new();
    let mut seen = 0;
    while out.len() < n {
        let batch = stream.next_batch(1024);
        assert!(!batch.is_empty(), "input too short");
        for raw in batch {
            seen += 1;
            if seen > skip && out.len() < n {
                if let Ok(g) = raw.validate(&filter) {
                    out.push(g);
                }
            }
        }
    }
    out
}

fn integrity(book: &Path) -> String {
    rusqlite::Connection::open(book)
        .expect("open")
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check")
}

/// Every table of `a` (the two books have the same schema) has the same
/// rows in `b`, both ways.
fn assert_same_tables(a: &Path, b: &Path) {
    let tables: Vec<String> = rusqlite::Connection::open(a)
        .expect("open")
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
        assert_eq!(differences(a, b, table, "*"), (0, 0), "{table} differs");
        let count = |book: &Path| common::count(book, &format!("SELECT count(*) FROM {table}"));
        assert_eq!(count(a), count(b), "{table}");
    }
}

#[test]
fn a_book_learned_through_the_gathering_vfs_is_the_book_sqlites_own_vfs_writes() {
    let dir = TempDir::new().expect("tmp");
    // The first 1,300 games of the sample make the book; the next are learned.
    let text = common::sample_text();
    let starts: Vec<usize> = (0..text.len())
        .filter(|&i| text[i..].starts_with(b"\n[Event "))
        .collect();
    assert!(
        starts.len() > 1_400,
        "the sample has {} games",
        starts.len()
    );
    let head = dir.path().join("head.pgn");
    std::fs::write(&head, &text[..starts[1_299] + 1]).expect("write");
    let built = dir.path().join("built.sqlite");
    common::ok(&["build", "--book", s(&built), s(&head)]);
    let ours = dir.path().join("ours.sqlite");
    let plain = dir.path().join("plain.sqlite");
    std::fs::copy(&built, &ours).expect("copy");
    std::fs::copy(&built, &plain).expect("copy");
    // The games after the head, and a few of the head's (learned as none).
    let mut games = read_games(&sample(), 1_300, 60);
    games.extend(read_games(&sample(), 10, 3));
    let mut a = Book::open_gathered(&ours).expect("open through the gathering VFS");
    let mut b = Book::open(&plain).expect("open through SQLite's VFS");
    let mut learned = 0;
    for g in &games {
        let x = a.add_game(g, "test").expect("learn");
        let y = b.add_game(g, "test").expect("learn");
        assert_eq!(x.is_some(), y.is_some());
        learned += usize::from(x.is_some());
        // Each commit is in the WAL as a killed process leaves it: a copy
        // of the book and its WAL, taken while it is open, recovers it.
        if learned == 3 {
            let copy = dir.path().join("copy.sqlite");
            std::fs::copy(&ours, &copy).expect("copy the book");
            let wal = dir.path().join("ours.sqlite-wal");
            std::fs::copy(&wal, dir.path().join("copy.sqlite-wal")).expect("copy the WAL");
            assert_eq!(integrity(&copy), "ok");
            assert_eq!(
                common::count(&copy, "SELECT count(*) FROM games"),
                common::count(&built, "SELECT count(*) FROM games") + 3
            );
        }
    }
    assert!(learned >= 40, "{learned} games learned");
    drop((a, b));
    assert_same_tables(&ours, &plain);
    assert_eq!(integrity(&ours), "ok");
    common::ok(&["check", "--book", s(&ours)]);
}
