//! No stale file reaches a book (issue 53). SQLite names a book's WAL and
//! its index after the book's path, and nothing in the WAL ties it to one
//! database file: a `-wal` left beside a path by another book (a crash,
//! then only the book deleted) is replayed into whatever book is renamed
//! there next. Each command that creates a book is run with the real WAL
//! of another book in place, and must leave a book that `check` passes,
//! the same as the one it makes at a clean path. A book that a process
//! still has open is never replaced: the commands refuse.

mod common;

use std::path::{Path, PathBuf};

use common::{count, differences, ok, positions, run, s, sample_text};
use learnbook::book::{
    pgn::{
        game::Game,
        input::{open_input, GameStream},
        validate::Filter,
    },
    Book,
};
use tempfile::TempDir;

/// The sample's games split in two PGN files: `first.pgn` (book A, whose
/// WAL goes stale) and `second.pgn` (what the commands then write).
struct Inputs {
    dir: TempDir,
    first: PathBuf,
    second: PathBuf,
}

fn inputs() -> Inputs {
    let dir = TempDir::new().expect("tmp");
    let text = sample_text();
    let starts: Vec<usize> = (0..text.len())
        .filter(|&i| text[i..].starts_with(b"\n[Event "))
        .collect();
    assert!(starts.len() > 1000, "the sample has {} games", starts.len());
    // Each file starts at an Event tag (one past its newline).
    let cut = starts[699] + 1;
    let first = dir.path().join("first.pgn");
    let second = dir.path().join("second.pgn");
    std::fs::write(&first, &text[..cut]).expect("write");
    std::fs::write(&second, &text[cut..]).expect("write");
    Inputs { dir, first, second }
}

/// The first `n` games of `pgn`.
fn games(pgn: &Path, n: usize) -> Vec<Game> {
    let filter = Filter {
        max_ply: 40,
        min_elo: None,
        allow_duplicates: false,
        no_tails: false,
    };
    let mut stream = GameStream::new(open_input(pgn).expect("open"));
    let mut out = Vec::new();
    while out.len() < n {
        let batch = stream.next_batch(256);
        assert!(!batch.is_empty(), "{} is too short", pgn.display());
        out.extend(
            batch
                .into_iter()
                .filter_map(|raw| raw.validate(&filter).ok())
                .take(n - out.len()),
        );
    }
    out
}

fn sidecar(book: &Path, suffix: &str) -> PathBuf {
    let mut p = book.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Leaves at `dest` what a crash of book A there leaves once the user has
/// deleted A itself: A's `-wal` (holding committed games not yet written
/// back) and `-shm`. A is built from `first`, then learns games of
/// `second` through an open connection, whose files are copied as a kill
/// would leave them.
fn stale_wal_at(dest: &Path, inp: &Inputs) {
    ok(&["build", "--book", s(dest), s(&inp.first)]);
    let saved = inp.dir.path().join("saved");
    std::fs::create_dir_all(&saved).expect("mkdir");
    {
        let mut a = Book::open(dest).expect("open A");
        for g in games(&inp.second, 40) {
            a.add_game(&g, "A").expect("learn");
        }
        for suffix in ["-wal", "-shm"] {
            std::fs::copy(sidecar(dest, suffix), saved.join(suffix)).expect("copy A's WAL");
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(sidecar(dest, suffix));
    }
    for suffix in ["-wal", "-shm"] {
        std::fs::copy(saved.join(suffix), sidecar(dest, suffix)).expect("restore");
    }
    // A WAL of committed frames (32 bytes of header, then frames of 24
    // bytes and a 4096-byte page each): what SQLite would replay.
    let wal = std::fs::metadata(sidecar(dest, "-wal")).expect("wal").len();
    assert!(wal > 32 + 10 * 4120, "A's WAL holds {wal} bytes");
    assert!(!dest.exists());
}

/// `check` passes, and the book is the one the command made at a clean
/// path, table for table and as the book reads it.
fn assert_clean(book: &Path, clean: &Path) {
    let out = run(&["check", "--book", s(book)]);
    assert!(
        out.status.success(),
        "check failed on {}: {}{}",
        book.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for table in ["positions", "moves", "parents", "games", "tail_index"] {
        assert_eq!(
            differences(book, clean, table, "*"),
            (0, 0),
            "{table} differ from the book made at a clean path"
        );
    }
    assert_eq!(positions(book), positions(clean), "the books read alike");
    assert!(count(book, "SELECT count(*) FROM positions") > 1_000);
}

#[test]
fn build_at_a_path_with_another_books_wal_makes_a_consistent_book() {
    let inp = inputs();
    let clean = inp.dir.path().join("clean.sqlite");
    ok(&["build", "--book", s(&clean), s(&inp.second)]);
    let dest = inp.dir.path().join("x.sqlite");
    stale_wal_at(&dest, &inp);
    ok(&["build", "--book", s(&dest), s(&inp.second)]);
    assert_clean(&dest, &clean);
    let games = count(&dest, "SELECT count(*) FROM games");
    assert!(games > 700, "{games} games");
}

#[test]
fn a_spilled_build_at_a_path_with_another_books_wal_makes_a_consistent_book() {
    // The journal's path (`--memory` below the counts) commits on its own.
    let inp = inputs();
    let clean = inp.dir.path().join("clean.sqlite");
    ok(&[
        "build",
        "--memory",
        "4M",
        "--book",
        s(&clean),
        s(&inp.second),
    ]);
    let dest = inp.dir.path().join("x.sqlite");
    stale_wal_at(&dest, &inp);
    let out = ok(&[
        "build",
        "--memory",
        "4M",
        "--book",
        s(&dest),
        s(&inp.second),
    ]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("journalled"),
        "the build did not spill: {text}"
    );
    assert_clean(&dest, &clean);
}

#[test]
fn merge_at_a_path_with_another_books_wal_makes_a_consistent_book() {
    let inp = inputs();
    let shards: Vec<PathBuf> = (0..2)
        .map(|i| {
            let p = inp.dir.path().join(format!("shard{i}.sqlite"));
            let shard = format!("{i}/2");
            ok(&["build", "--shard", &shard, "--book", s(&p), s(&inp.second)]);
            p
        })
        .collect();
    let clean = inp.dir.path().join("clean.sqlite");
    ok(&["merge", "--book", s(&clean), s(&shards[0]), s(&shards[1])]);
    let dest = inp.dir.path().join("x.sqlite");
    stale_wal_at(&dest, &inp);
    ok(&["merge", "--book", s(&dest), s(&shards[0]), s(&shards[1])]);
    assert_clean(&dest, &clean);
}

#[test]
fn import_at_a_path_with_another_books_wal_makes_a_consistent_book() {
    let inp = inputs();
    let source = inp.dir.path().join("source.sqlite");
    ok(&["build", "--book", s(&source), s(&inp.second)]);
    let bin = inp.dir.path().join("book.bin");
    ok(&["export", "--book", s(&source), "--out", s(&bin)]);
    let clean = inp.dir.path().join("clean.sqlite");
    ok(&["import", "--book", s(&clean), "--in", s(&bin)]);
    let dest = inp.dir.path().join("x.sqlite");
    stale_wal_at(&dest, &inp);
    ok(&["import", "--book", s(&dest), "--in", s(&bin)]);
    assert_clean(&dest, &clean);
    assert!(count(&dest, "SELECT count(*) FROM moves") > 1000);
}

/// Runs `args`, which must refuse (exit 2) and say why.
fn assert_refused(args: &[&str], why: &str) {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(why), "{args:?} said: {stderr}");
}

#[test]
fn a_book_open_in_another_process_is_never_replaced() {
    // `merge` into an existing book writes the merged book beside it and
    // renames it over the old one: not while a process reads the old one
    // (it would go on with the old file while its WAL, by name, went to
    // the new one).
    let inp = inputs();
    let dest = inp.dir.path().join("x.sqlite");
    ok(&["build", "--book", s(&dest), s(&inp.first)]);
    let other = inp.dir.path().join("other.sqlite");
    ok(&["build", "--book", s(&other), s(&inp.second)]);
    let before = count(&dest, "SELECT count(*) FROM games");
    let reader = Book::open(&dest).expect("open");
    assert_refused(
        &["merge", "--book", s(&dest), s(&other)],
        "is open in another process",
    );
    drop(reader);
    assert_eq!(count(&dest, "SELECT count(*) FROM games"), before);
    ok(&["check", "--book", s(&dest)]);
    // Closed, it is merged into.
    ok(&["merge", "--book", s(&dest), s(&other)]);
    assert!(count(&dest, "SELECT count(*) FROM games") > before);
    ok(&["check", "--book", s(&dest)]);
}

#[test]
fn the_wal_of_a_deleted_book_still_open_is_neither_removed_nor_built_over() {
    // A process still has book A open after A was deleted: its WAL and
    // index beside the path are live. A new book there would share them.
    let inp = inputs();
    let dest = inp.dir.path().join("x.sqlite");
    ok(&["build", "--book", s(&dest), s(&inp.first)]);
    let mut a = Book::open(&dest).expect("open A");
    for g in games(&inp.second, 5) {
        a.add_game(&g, "A").expect("learn");
    }
    std::fs::remove_file(&dest).expect("delete A");
    let bin = inp.dir.path().join("book.bin");
    let source = inp.dir.path().join("source.sqlite");
    ok(&["build", "--book", s(&source), s(&inp.second)]);
    ok(&["export", "--book", s(&source), "--out", s(&bin)]);
    for args in [
        vec!["build", "--book", s(&dest), s(&inp.second)],
        vec!["merge", "--book", s(&dest), s(&source)],
        vec!["import", "--book", s(&dest), "--in", s(&bin)],
    ] {
        assert_refused(&args, "is open in another process");
        assert!(!dest.exists(), "{args:?} left a book");
        assert!(sidecar(&dest, "-wal").exists(), "{args:?} removed A's WAL");
    }
    // A, still open, still works.
    for g in games(&inp.second, 10).iter().skip(5) {
        a.add_game(g, "A").expect("learn");
    }
    drop(a);
    // Once A's process has closed it, nothing is live there.
    ok(&["build", "--book", s(&dest), s(&inp.second)]);
    ok(&["check", "--book", s(&dest)]);
}

/// `analyze --shard --out` creates its file in place (it resumes there
/// too), without a rename: SQLite itself removes a WAL it finds beside an
/// empty database file, so no check of ours is needed. This keeps it so.
#[test]
fn an_analysis_shard_at_a_path_with_another_books_wal_is_clean() {
    let inp = inputs();
    let book = inp.dir.path().join("book.sqlite");
    ok(&["build", "--book", s(&book), s(&inp.second)]);
    let analyse = |out: &Path| {
        ok(&[
            "analyze",
            "--book",
            s(&book),
            "--threads",
            "1",
            "--nodes",
            "1000",
            "--min-games",
            "30",
            "--shard",
            "0/1",
            "--out",
            s(out),
        ])
    };
    let clean = inp.dir.path().join("clean-analysis.sqlite");
    analyse(&clean);
    let dest = inp.dir.path().join("x.sqlite");
    stale_wal_at(&dest, &inp);
    analyse(&dest);
    // Each file, added to a copy of the book, gives the same analysis.
    let added: Vec<PathBuf> = [&clean, &dest]
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let copy = inp.dir.path().join(format!("copy{i}.sqlite"));
            std::fs::copy(&book, &copy).expect("copy");
            ok(&["merge", "--book", s(&copy), s(file)]);
            copy
        })
        .collect();
    assert!(count(&added[0], "SELECT count(*) FROM analysis") > 10);
    assert_eq!(
        differences(&added[1], &added[0], "analysis", "*"),
        (0, 0),
        "the analysis made beside a stale WAL differs"
    );
    let out = run(&["check", "--book", s(&added[1])]);
    assert!(
        out.status.success(),
        "check: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
