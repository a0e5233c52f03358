//! Helpers shared by the integration tests: paths, running the binary,
//! reading a book back.
#![allow(dead_code)] // each test crate uses a different subset

pub mod browser;
pub mod fuzz;
pub mod serve;
pub mod slurm;

use rusqlite::Connection;
use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Command, Output},
};

/// How long a test waits for a process's progress before it calls it
/// stuck: a watchdog, not a time limit (a busy machine may take minutes
/// for what takes a second on a quiet one).
pub const WATCHDOG: std::time::Duration = std::time::Duration::from_secs(1200);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_learnbook")
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The 1,458 master games the repository ships.
pub fn sample() -> PathBuf {
    repo().join("data/master-sample.pgn.gz")
}

/// `../shared/data`.
pub fn shared() -> PathBuf {
    repo().join("../shared/data")
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Runs `learnbook` and fails the test if it panicked.
pub fn run(args: &[&str]) -> Output {
    let out = Command::new(bin())
        .args(args)
        .output()
        .expect("run learnbook");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked"),
        "learnbook {args:?} panicked: {stderr}"
    );
    out
}

/// Runs `learnbook` and fails the test unless it succeeded.
pub fn ok(args: &[&str]) -> Output {
    let out = run(args);
    assert!(
        out.status.success(),
        "learnbook {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Starts `learnbook args` and SIGKILLs it after `wait_ms` unless it has
/// ended by then. Returns whether it was killed, and how it ended.
pub fn run_killed_after(args: &[&str], wait_ms: u64) -> (bool, std::process::ExitStatus) {
    let mut child = Command::new(bin())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn learnbook");
    std::thread::sleep(std::time::Duration::from_millis(wait_ms));
    let running = child.try_wait().expect("wait").is_none();
    if running {
        child.kill().expect("kill");
    }
    (running, child.wait().expect("reap"))
}

/// The sample's PGN text, decompressed.
pub fn sample_text() -> Vec<u8> {
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(sample()).expect("sample"))
        .read_to_end(&mut text)
        .expect("gunzip");
    text
}

/// One position as stored: key, depth, white, draws, black, value, best.
pub type PositionRow = (i64, Option<i64>, i64, i64, i64, f64, Option<i64>);

/// Every position's counts, value and choice, in key order, as the book
/// reads it (rows and single-game tails alike).
pub fn positions(book: &Path) -> Vec<PositionRow> {
    let b = learnbook::book::Book::open(book).expect("open");
    let g = b.load_graph().expect("graph");
    let mut rows: Vec<PositionRow> = g
        .nodes
        .iter()
        .zip(&g.best)
        .map(|(n, best)| {
            (
                n.key.to_sql(),
                n.depth.map(i64::from),
                i64::from(n.counts.white),
                i64::from(n.counts.draws),
                i64::from(n.counts.black),
                n.value,
                best.map(|m| i64::from(m.0)),
            )
        })
        .collect();
    rows.sort_by_key(|r| r.0);
    rows
}

/// One move: parent, move, child, white, draws, black.
pub type MoveRow = (i64, i64, Option<i64>, i64, i64, i64);

/// Every move with its counts, in (parent, move) order, as the book reads
/// it (rows and single-game tails alike).
pub fn book_moves(book: &Path) -> Vec<MoveRow> {
    let b = learnbook::book::Book::open(book).expect("open");
    let mut out = Vec::new();
    b.for_each_move(|m| {
        out.push((
            m.parent.to_sql(),
            i64::from(m.mv.0),
            m.child.map(|c| c.to_sql()),
            i64::from(m.counts.white),
            i64::from(m.counts.draws),
            i64::from(m.counts.black),
        ))
    })
    .expect("moves");
    out.sort_unstable();
    out
}

/// The number that follows `label` in `text`, up to `end` (a report's figure).
pub fn number_after<T: std::str::FromStr>(text: &str, label: &str, end: char) -> T {
    text.split(label)
        .nth(1)
        .and_then(|t| t.split(end).next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no number after {label:?} in {text}"))
}

/// Whether a test may use `what`. Missing, the test is skipped with one
/// line on the terminal (not captured by the test harness), unless
/// `LEARNBOOK_REQUIRE_EXTERNAL=1` (set by `.ci/run`): then it fails.
pub fn have(what: &str, present: bool) -> bool {
    use std::io::Write;
    if present {
        return true;
    }
    if std::env::var("LEARNBOOK_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1") {
        panic!("{what} is missing and LEARNBOOK_REQUIRE_EXTERNAL=1");
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(std::io::stderr(), "skipped {test}: {what} is missing");
    false
}

/// `../shared/data` (the project's shared games, books and suites).
pub fn have_shared() -> bool {
    have("../shared/data", shared().is_dir())
}

/// An engine or tool installed from Debian's packages, by its path.
pub fn have_program(path: &str) -> bool {
    have(path, Path::new(path).is_file())
}

/// python3 with python-chess.
pub fn have_python_chess() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import chess"])
        .output()
        .is_ok_and(|o| o.status.success());
    have("python3 with python-chess", ok)
}

/// Runs `python3 ARGS` (a script of `tests/py` or `scripts`, or `-c
/// CODE`) and fails the test, with what it printed, unless it succeeded;
/// its standard output.
pub fn python(args: &[&str]) -> String {
    let out = Command::new("python3")
        .args(args)
        .output()
        .expect("python3 runs (.ci/run installs it with python-chess)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "python3 {} failed: {stdout}{}",
        args.first().copied().unwrap_or(""),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// SPSA's parameters in the tuner tests.
pub const TUNE_PARAMS: &str =
    "knight_mg = {}\nbishop_mg = {}\nrook_eg = { c_end = 20 }\n\"passed_eg_*\" = {}\n";

/// A tuner test's work directory: a few openings and a parameter file
/// ([`TUNE_PARAMS`]).
pub fn tune_setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let openings = dir.path().join("openings.epd");
    std::fs::write(
        &openings,
        "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2\n\
         rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2\n\
         rnbqkbnr/ppp1pppp/8/3p4/3P4/8/PPP1PPPP/RNBQKBNR w KQkq - 0 2\n\
         rnbqkb1r/pppppppp/5n2/8/2P5/8/PP1PPPPP/RNBQKBNR w KQkq - 1 2\n",
    )
    .expect("write openings");
    let params = dir.path().join("params.toml");
    std::fs::write(&params, TUNE_PARAMS).expect("write params");
    (dir, openings, params)
}

/// Rows of `table` (the given columns) in one book and not in the other,
/// both ways.
pub fn differences(a: &Path, b: &Path, table: &str, columns: &str) -> (i64, i64) {
    let c = Connection::open(a).expect("open");
    c.execute("ATTACH DATABASE ?1 AS other", [s(b)])
        .expect("attach");
    let count = |x: &str, y: &str| -> i64 {
        c.query_row(
            &format!(
                "SELECT count(*) FROM (SELECT {columns} FROM {x}.{table} EXCEPT SELECT {columns} FROM {y}.{table})"
            ),
            [],
            |r| r.get(0),
        )
        .expect("except")
    };
    (count("main", "other"), count("other", "main"))
}

pub fn count(book: &Path, sql: &str) -> i64 {
    Connection::open(book)
        .expect("open")
        .query_row(sql, [], |r| r.get(0))
        .expect("count")
}

/// Positions kept in single-game tails (a tail from ply `tail` on holds
/// the positions after its stored moves from there).
pub fn tail_positions(book: &Path) -> i64 {
    count(
        book,
        "SELECT coalesce(sum(length(moves) / 2 - tail + 1), 0) FROM games WHERE tail IS NOT NULL",
    )
}

/// Asserts that two books hold the same positions (counts, values, choices,
/// parent links), moves and games.
pub fn assert_same_book(a: &Path, b: &Path) {
    for (table, columns) in [
        ("positions", "*"),
        ("moves", "*"),
        ("parents", "*"),
        // The source names the input file, which differs between the parts and the whole.
        (
            "games",
            "hash, white, black, result, plies, start, copies, moves, expected, tail, white_elo, black_elo, date, event, site, round, fen, rest",
        ),
    ] {
        assert_eq!(
            differences(a, b, table, columns),
            (0, 0),
            "{table} differ between {} and {}",
            a.display(),
            b.display()
        );
    }
    // The tails index names games by id, which differs too. The games
    // (their tail plies among the columns) are the same; each book's index
    // lists exactly its tails' positions, so the two indexes are the same.
    for book in [a, b] {
        let problems = learnbook::book::db::Book::open(book)
            .and_then(|b| b.tail_problems())
            .expect("read the tails");
        assert!(problems.is_empty(), "{}: {problems:?}", book.display());
    }
    assert_eq!(positions(a), positions(b), "the books read alike");
    assert!(count(a, "SELECT count(*) FROM positions") > 1_000);
    assert!(tail_positions(a) > 10_000);
}
