//! A `learn` killed with SIGKILL leaves a book that opens and is consistent,
//! and re-running it counts every game exactly once.

mod common;

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use common::{bin, ok, positions, run, s, sample, shared};
use rusqlite::{Connection, OpenFlags};
use tempfile::TempDir;

fn games_in(book: &Path) -> i64 {
    let c = Connection::open_with_flags(book, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open");
    c.busy_timeout(Duration::from_secs(10)).expect("timeout");
    c.query_row("SELECT count(*) FROM games", [], |r| r.get(0))
        .expect("count")
}

/// `n` master games (not in the repo's sample) as a PGN file.
fn learn_input(dir: &Path, n: usize) -> PathBuf {
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(
        std::fs::File::open(shared().join("games/master-games.pgn.gz")).expect("master games"),
    )
    .take(40_000_000)
    .read_to_end(&mut bytes)
    .expect("read");
    // Game starts; the names may be Latin-1, so this works on bytes.
    let starts: Vec<usize> = bytes
        .windows(8)
        .enumerate()
        .filter(|(_, w)| w == b"\n[Event ")
        .map(|(i, _)| i + 1)
        .collect();
    let (from, to) = (starts[30_000], starts[30_000 + n]);
    let path = dir.join("learn.pgn");
    std::fs::write(&path, &bytes[from..to]).expect("write");
    path
}

fn build_sample(book: &Path) {
    ok(&["build", "--book", s(book), s(&sample())]);
}

fn check(book: &Path) {
    ok(&["check", "--book", s(book)]);
}

/// Starts `learnbook build` of `input` into `book` and SIGKILLs it after
/// `wait`, asserting that it was still running then.
fn kill_build_after(book: &Path, input: &Path, wait: Duration) {
    let mut child = Command::new(bin())
        .args(["build", "--book", s(book), s(input)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    thread::sleep(wait);
    assert!(
        child.try_wait().expect("wait").is_none(),
        "build finished before it could be killed"
    );
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
}

/// The "skipped N  duplicate game" count of a summary.
fn duplicates(summary: &str) -> u64 {
    summary
        .lines()
        .find(|l| l.trim_start().starts_with("skipped") && l.contains("duplicate game"))
        .and_then(|l| l.split_whitespace().nth(1))
        .map_or(0, |n| n.parse().expect("number"))
}

#[test]
fn sigkill_during_learn_loses_nothing() {
    if !(common::have_shared()) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let input = learn_input(dir.path(), 3000);
    let book = dir.path().join("book.sqlite");
    let reference = dir.path().join("reference.sqlite");
    build_sample(&book);
    build_sample(&reference);
    let base = games_in(&book);

    // The reference learns everything without interruption.
    let out = run(&["learn", "--quiet", "--book", s(&reference), s(&input)]);
    assert!(out.status.success());
    let internal_dups = duplicates(&String::from_utf8_lossy(&out.stderr));
    let all = games_in(&reference);
    assert!(
        all - base >= 2900,
        "expected ~3000 new games, got {}",
        all - base
    );

    // Kill the learner part-way.
    let mut child = Command::new(bin())
        .args(["learn", "--quiet", "--book", s(&book), s(&input)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    loop {
        let n = games_in(&book) - base;
        if n >= 200 {
            break;
        }
        assert!(start.elapsed() < common::WATCHDOG, "learn made no progress");
        assert!(
            child.try_wait().expect("wait").is_none(),
            "learn finished before it could be killed"
        );
        thread::sleep(Duration::from_millis(2));
    }
    assert!(
        child.try_wait().expect("wait").is_none(),
        "learn finished before it could be killed"
    );
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let partial = games_in(&book);
    assert!(
        partial > base && partial < all,
        "killed run added {} of {} games",
        partial - base,
        all - base
    );

    // The book opens, and its counts and values are consistent.
    check(&book);

    // Running learn again finishes the job, counting every game once.
    let out = run(&["learn", "--quiet", "--book", s(&book), s(&input)]);
    assert!(out.status.success());
    let summary = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        duplicates(&summary),
        (partial - base) as u64 + internal_dups,
        "the re-run should skip exactly the games already learned: {summary}"
    );
    assert_eq!(games_in(&book), all);
    check(&book);
    assert!(
        positions(&book) == positions(&reference),
        "interrupted + resumed book differs from the uninterrupted one"
    );
}

#[test]
fn sigkill_during_build_leaves_the_old_book_or_none() {
    if !(common::have_shared()) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let master = shared().join("games/master-games.pgn.gz");
    // A new book: killed before the end, there is no book, only the
    // temporary file, and a new build succeeds.
    let fresh = dir.path().join("fresh.sqlite");
    kill_build_after(&fresh, &master, Duration::from_millis(1500));
    assert!(!fresh.exists(), "a killed build left a book behind");
    build_sample(&fresh);
    check(&fresh);

    // An existing book: the added games are one transaction, so a kill
    // leaves the book exactly as it was.
    let book = dir.path().join("book.sqlite");
    build_sample(&book);
    let before = positions(&book);
    let games = games_in(&book);
    kill_build_after(&book, &master, Duration::from_millis(4000));
    check(&book);
    assert_eq!(games_in(&book), games);
    assert!(
        positions(&book) == before,
        "a killed build changed the book"
    );
}
