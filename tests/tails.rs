//! Single-game tails (the rest of a game no other game reaches, kept as its
//! moves instead of a row per position): a book with them reads exactly as
//! the book with a row for every position (`build --no-tails`): every
//! position and move with its counts, value and choice, single reads as
//! `show` and the move choice make them, the Polyglot export in every
//! weighting, `check`. It stays so when games are learned into it and when
//! search scores land on tail positions, which turn tails into rows.

mod common;

use std::path::Path;

use common::{book_moves, ok, positions, s, sample, shared, tail_positions};
use learnbook::book::Book;
use rusqlite::Connection;
use tempfile::TempDir;

fn build(book: &Path, input: &Path, extra: &[&str]) {
    let mut args = vec!["build", "--book", s(book)];
    args.extend_from_slice(extra);
    args.push(s(input));
    ok(&args);
}

fn count(book: &Path, sql: &str) -> i64 {
    Connection::open(book)
        .expect("open")
        .query_row(sql, [], |r| r.get(0))
        .expect("count")
}

/// Asserts that two books read alike, whatever they store as rows.
fn assert_same_reading(a: &Path, b: &Path, dir: &Path) {
    let (pa, pb) = (positions(a), positions(b));
    assert_eq!(pa.len(), pb.len(), "as many positions");
    let first = pa.iter().zip(&pb).find(|(x, y)| x != y);
    assert!(
        first.is_none(),
        "positions, counts, values or choices differ, first: {first:?}"
    );
    assert!(
        book_moves(a) == book_moves(b),
        "moves or their counts differ"
    );
    // Single reads, as `show`, `choose` and the analysis make them: every
    // position of a small book, a spread of a large one.
    let (ba, bb) = (
        Book::open(a).expect("open a"),
        Book::open(b).expect("open b"),
    );
    let step = (pa.len() / 4000).max(1);
    for row in pa.iter().step_by(step) {
        let key = learnbook::book::keys::Key::from_sql(row.0);
        assert_eq!(
            ba.position(key).expect("read"),
            bb.position(key).expect("read"),
            "position {key}"
        );
        assert_eq!(
            format!("{:?}", ba.moves(key).expect("read")),
            format!("{:?}", bb.moves(key).expect("read")),
            "moves of {key}"
        );
        assert_eq!(
            ba.stored_best(key).expect("read"),
            bb.stored_best(key).expect("read"),
            "choice at {key}"
        );
    }
    for weights in ["polyglot", "games", "value"] {
        let (ea, eb) = (dir.join("a.bin"), dir.join("b.bin"));
        for (book, out) in [(a, &ea), (b, &eb)] {
            ok(&[
                "export",
                "--book",
                s(book),
                "--polyglot",
                s(out),
                "--weights",
                weights,
            ]);
        }
        assert!(
            std::fs::read(&ea).expect("read") == std::fs::read(&eb).expect("read"),
            "the {weights} exports differ"
        );
    }
    for book in [a, b] {
        let out = ok(&["check", "--book", s(book)]);
        assert!(String::from_utf8_lossy(&out.stdout).contains("book is consistent"));
    }
}

fn tails_and_rows_read_alike(input: &Path) -> (u64, u64) {
    let dir = TempDir::new().expect("tmp");
    let (tails, rows) = (
        dir.path().join("tails.sqlite"),
        dir.path().join("rows.sqlite"),
    );
    build(&tails, input, &[]);
    build(&rows, input, &["--no-tails"]);
    assert!(tail_positions(&tails) > 0);
    assert_eq!(tail_positions(&rows), 0);
    assert_same_reading(&tails, &rows, dir.path());
    let size = |p: &Path| std::fs::metadata(p).expect("size").len();
    (size(&tails), size(&rows))
}

#[test]
fn a_book_with_tails_reads_as_the_book_with_a_row_per_position() {
    let (tails, rows) = tails_and_rows_read_alike(&sample());
    assert!(
        (tails as f64) < 0.6 * rows as f64,
        "tails make the file smaller: {tails} against {rows} bytes"
    );
}

#[test]
fn on_the_master_games_the_two_representations_read_alike() {
    if !common::have_shared() {
        return;
    }
    let (tails, rows) = tails_and_rows_read_alike(&shared().join("games/master-games.pgn.gz"));
    eprintln!("master games: {tails} bytes with tails, {rows} without");
    assert!((tails as f64) < 0.6 * rows as f64);
}

#[test]
fn learned_games_and_search_scores_turn_tails_into_rows_and_the_book_reads_the_same() {
    let dir = TempDir::new().expect("tmp");
    let text = common::sample_text();
    let starts: Vec<usize> = (0..text.len())
        .filter(|&i| text[i..].starts_with(b"[Event ") && (i == 0 || text[i - 1] == b'\n'))
        .collect();
    let mid = starts[starts.len() / 2];
    let (first, second) = (dir.path().join("a.pgn"), dir.path().join("b.pgn"));
    std::fs::write(&first, &text[..mid]).expect("write");
    std::fs::write(&second, &text[mid..]).expect("write");
    let (tails, rows) = (
        dir.path().join("tails.sqlite"),
        dir.path().join("rows.sqlite"),
    );
    build(&tails, &first, &[]);
    build(&rows, &first, &["--no-tails"]);
    let tail_count = |b: &Path| tail_positions(b);
    let before = tail_count(&tails);
    let built_games = count(&tails, "SELECT max(id) FROM games");
    // The tail positions of the games built, and of the games learned.
    let tails_of = |b: &Path, learned: bool| {
        count(
            b,
            &format!(
                "SELECT coalesce(sum(length(moves) / 2 - tail + 1), 0) FROM games
                 WHERE tail IS NOT NULL AND (id > {built_games}) = {learned}"
            ),
        )
    };

    // Learned game by game: a game that reaches a tail position makes the
    // tail rows up to there; where it leaves every other game, the rest of
    // it is a tail as `build` makes them (rows in the book built without).
    for book in [&tails, &rows] {
        ok(&["learn", "--quiet", "--book", s(book), s(&second)]);
    }
    let left = tails_of(&tails, false);
    assert!(
        left < before,
        "some learned games follow a single game of the book: {left} of {before} tail positions left"
    );
    assert!(tails_of(&tails, true) > 0, "learned games end in tails");
    assert_eq!(
        tail_count(&rows),
        0,
        "a book built without tails learns none"
    );
    let learned = tail_count(&tails);
    assert_same_reading(&tails, &rows, dir.path());

    // Added in bulk to an existing book: the same.
    let (bulk_tails, bulk_rows) = (dir.path().join("bt.sqlite"), dir.path().join("br.sqlite"));
    build(&bulk_tails, &first, &[]);
    build(&bulk_rows, &first, &["--no-tails"]);
    for book in [&bulk_tails, &bulk_rows] {
        build(book, &second, &[]);
    }
    assert!(tail_count(&bulk_tails) < before);
    assert_same_reading(&bulk_tails, &bulk_rows, dir.path());

    // Search scores: the analysis scores the children of the positions it
    // searches, tail positions among them.
    for book in [&tails, &rows] {
        ok(&[
            "analyze",
            "--book",
            s(book),
            "--nodes",
            "300",
            "--threads",
            "1",
            "--min-games",
            "4",
        ]);
    }
    let analysed = tail_count(&tails);
    assert!(
        analysed < learned,
        "scored tail positions became rows: {analysed} of {learned} left"
    );
    assert!(count(&tails, "SELECT count(*) FROM analysis") > 100);
    assert_same_reading(&tails, &rows, dir.path());
}

#[test]
fn a_schema_5_book_with_a_row_per_tails_entry_is_upgraded_and_reads_the_same() {
    let dir = TempDir::new().expect("tmp");
    let (old, rows) = (
        dir.path().join("old.sqlite"),
        dir.path().join("rows.sqlite"),
    );
    build(&old, &sample(), &[]);
    build(&rows, &sample(), &["--no-tails"]);
    let entries = {
        // Schema 5 kept the index as a row per (key prefix, game), which
        // schema 6 packs into buckets of six-byte entries (the prefix's low
        // 16 bits, the game id in 32, little-endian).
        let c = Connection::open(&old).expect("open");
        let buckets: Vec<(i64, Vec<u8>)> = c
            .prepare("SELECT bucket, entries FROM tail_index")
            .expect("prepare")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("read");
        c.execute_batch(
            "CREATE TABLE tails(prefix INTEGER NOT NULL, game INTEGER NOT NULL,
               PRIMARY KEY(prefix, game)) WITHOUT ROWID;
             DROP TABLE tail_index;
             UPDATE meta SET value = '5' WHERE key = 'schema_version';",
        )
        .expect("downgrade");
        let mut n = 0;
        for (bucket, blob) in buckets {
            assert_eq!(blob.len() % 6, 0);
            for e in blob.chunks_exact(6) {
                let low = i64::from(u16::from_le_bytes([e[0], e[1]]));
                let game = i64::from(u32::from_le_bytes([e[2], e[3], e[4], e[5]]));
                c.execute(
                    "INSERT INTO tails(prefix, game) VALUES (?1, ?2)",
                    [(bucket << 16) | low, game],
                )
                .expect("insert");
                n += 1;
            }
        }
        n
    };
    assert!(entries > 1000, "{entries} entries");
    // `check` upgrades the book, then finds every tail position listed and
    // nothing else.
    let out = ok(&["check", "--book", s(&old)]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("book is consistent"));
    assert_eq!(
        count(
            &old,
            "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'"
        ),
        i64::from(learnbook::book::db::SCHEMA_VERSION)
    );
    assert_eq!(
        count(
            &old,
            "SELECT count(*) FROM sqlite_master WHERE name = 'tails'"
        ),
        0
    );
    assert_same_reading(&old, &rows, dir.path());
}
