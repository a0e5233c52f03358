//! `build --memory`: past its budget, a build journals its games and keeps
//! a filter of shared positions instead of every count (crates/book/src/build/),
//! and writes the book a build in memory writes, row for row (compared
//! table by table with `EXCEPT` both ways). Its temporary files are gone
//! when it ends, or with the next build after a kill; a killed build leaves
//! no book, or the old one unchanged; a temporary directory that cannot be
//! used and a file-size limit (a full disk) give a clear error.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{assert_same_book, ok, run, s, sample, sample_text};
use tempfile::TempDir;

/// Runs `learnbook args` with files limited to 256 KB (a full disk).
fn limited(args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(common::bin());
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit and signal are async-signal-safe; nothing else
    // runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 256 * 1024,
                rlim_max: 256 * 1024,
            };
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    cmd.output().expect("run learnbook")
}

/// Names of the build's temporary files (and of a half-built book) in `dir`.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".spill-") || n.contains(".building") || n.contains(".merging"))
        .collect()
}

fn assert_no_temporaries(dir: &Path) {
    let left = temporaries(dir);
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

fn build(book: &Path, inputs: &[&Path], extra: &[&str]) -> String {
    let mut args = vec!["build", "--book", s(book)];
    args.extend_from_slice(extra);
    args.extend(inputs.iter().map(|p| s(p)));
    String::from_utf8_lossy(&ok(&args).stderr).into_owned()
}

/// The sample's games, then its first `repeat` games again.
fn with_repeats(dir: &Path, repeat: usize) -> PathBuf {
    let text = sample_text();
    let starts: Vec<usize> = (0..text.len())
        .filter(|&i| text[i..].starts_with(b"[Event ") && (i == 0 || text[i - 1] == b'\n'))
        .collect();
    let mut bytes = text.clone();
    bytes.extend_from_slice(&text[..starts[repeat]]);
    let path = dir.join("repeats.pgn");
    std::fs::write(&path, bytes).expect("write");
    path
}

#[test]
fn a_build_over_its_memory_budget_writes_the_book_a_build_in_memory_writes() {
    let dir = TempDir::new().expect("tmp");
    let whole = dir.path().join("whole.sqlite");
    let small = dir.path().join("small.sqlite");
    let said = build(&whole, &[&sample()], &[]);
    assert!(!said.contains("over the memory budget"), "{said}");
    // 2 MB: the counts outgrow it after a few dozen games, and the tails
    // index is sorted in several runs on disk.
    let said = build(&small, &[&sample()], &["--memory", "2M"]);
    assert!(said.contains("over the memory budget"), "{said}");
    assert_same_book(&whole, &small);
    ok(&["check", "--book", s(&small)]);
    assert_no_temporaries(dir.path());
}

/// A journalled build in one part (`bulk_load_games`), with a game whose
/// row is too large for a page: the book a build in memory writes, and a
/// sound SQLite file.
#[test]
fn a_journalled_build_in_one_part_is_the_book_a_build_in_memory_writes() {
    let dir = TempDir::new().expect("tmp");
    let mut text = sample_text();
    // A game whose row does not fit in a page of 4 KB.
    let event = "Long event ".repeat(600);
    text.extend_from_slice(
        format!(
            "\n[Event \"{event}\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"1-0\"]\n\n\
             1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 1-0\n"
        )
        .as_bytes(),
    );
    let input = dir.path().join("long.pgn");
    std::fs::write(&input, text).expect("write");
    let whole = dir.path().join("whole.sqlite");
    let paged = dir.path().join("paged.sqlite");
    build(&whole, &[&input], &[]);
    let said = build(&paged, &[&input], &["--memory", "8M"]);
    assert!(said.contains("over the memory budget"), "{said}");
    assert!(!said.contains("key ranges"), "{said}");
    assert_same_book(&whole, &paged);
    let conn = rusqlite::Connection::open(&paged).expect("open");
    let sound: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(sound, "ok");
    let long: i64 = conn
        .query_row(
            "SELECT count(*) FROM games WHERE length(event) > 4096",
            [],
            |r| r.get(0),
        )
        .expect("the long game");
    assert_eq!(long, 1);
    ok(&["check", "--book", s(&paged)]);
    assert_no_temporaries(dir.path());
}

#[test]
fn repeated_games_pruning_and_an_existing_book_give_the_same_book_over_the_budget() {
    let dir = TempDir::new().expect("tmp");
    let input = with_repeats(dir.path(), 100);
    for extra in [
        &[][..],
        &["--allow-duplicates"][..],
        &["--min-games", "3"][..],
        &["--no-tails"][..],
    ] {
        let (a, b) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
        let _ = std::fs::remove_file(&a);
        let _ = std::fs::remove_file(&b);
        build(&a, &[&input], extra);
        let mut small = extra.to_vec();
        small.extend_from_slice(&["--memory", "2M"]);
        build(&b, &[&input], &small);
        if extra.contains(&"--min-games") || extra.contains(&"--no-tails") {
            // No tails (and few rows): compare the tables alone.
            for table in ["positions", "moves", "parents"] {
                assert_eq!(
                    common::differences(&a, &b, table, "*"),
                    (0, 0),
                    "{table} with {extra:?}"
                );
            }
        } else {
            assert_same_book(&a, &b);
        }
    }
    // Into an existing book: the old book and the new games' book merged.
    let (a, b) = (
        dir.path().join("old-a.sqlite"),
        dir.path().join("old-b.sqlite"),
    );
    let first = dir.path().join("first.pgn");
    std::fs::write(&first, &sample_text()[..200_000]).expect("write");
    build(&a, &[&first], &[]);
    build(&b, &[&first], &[]);
    build(&a, &[&input], &[]);
    let said = build(&b, &[&input], &["--memory", "2M"]);
    assert!(said.contains("over the memory budget"), "{said}");
    // Adding to a book in memory turns the new games' tails into rows; the
    // merge keeps them as tails: the same book, read position by position.
    assert_eq!(common::positions(&a), common::positions(&b));
    assert_eq!(common::book_moves(&a), common::book_moves(&b));
    ok(&["check", "--book", s(&b)]);
    assert_no_temporaries(dir.path());
}

/// Generated games enough for a build that takes a while (about a second).
fn generated(dir: &Path) -> PathBuf {
    let book = dir.join("gen-book.sqlite");
    build(&book, &[&sample()], &[]);
    let out = dir.join("gen.pgn");
    ok(&[
        "bench",
        "generate",
        "--book",
        s(&book),
        "--games",
        "40000",
        "--out",
        s(&out),
        "--min-book-games",
        "5",
    ]);
    out
}

#[test]
fn a_build_killed_at_any_point_leaves_no_book_or_the_old_one_and_the_next_build_cleans_up() {
    let dir = TempDir::new().expect("tmp");
    let input = generated(dir.path());
    let fresh = dir.path().join("fresh.sqlite");
    let old = dir.path().join("old.sqlite");
    build(&old, &[&sample()], &[]);
    let before = std::fs::read(&old).expect("read");
    let mut killed = 0;
    for wait_ms in [30, 150, 400, 800, 1300] {
        for book in [&fresh, &old] {
            let args = ["build", "--memory", "4M", "--book", s(book), s(&input)];
            let (was_killed, status) = common::run_killed_after(&args, wait_ms);
            killed += usize::from(was_killed);
            if status.success() {
                // It finished first: a complete book, as the next one is.
                let _ = std::fs::remove_file(book);
                if book == &old {
                    std::fs::write(&old, &before).expect("restore");
                }
                continue;
            }
            if book == &fresh {
                assert!(!fresh.exists(), "a killed build left a book");
            } else {
                assert_eq!(
                    std::fs::read(&old).expect("read"),
                    before,
                    "old book changed"
                );
            }
        }
    }
    assert!(killed >= 4, "builds were killed while running ({killed})");
    let whole = dir.path().join("whole.sqlite");
    build(&whole, &[&input], &[]);
    let said = build(&fresh, &[&input], &["--memory", "4M"]);
    assert!(!said.contains("read from memory"), "{said}");
    assert_same_book(&whole, &fresh);
    // Past a budget of 256 MB late, with a journal small beside it: read
    // from memory, and counted on two threads.
    let roomy = dir.path().join("roomy.sqlite");
    let said = build(&roomy, &[&input], &["--memory", "256M"]);
    assert!(said.contains("over the memory budget"), "{said}");
    assert!(said.contains("read from memory"), "{said}");
    assert_same_book(&whole, &roomy);
    build(&old, &[&input], &["--memory", "4M"]);
    ok(&["check", "--book", s(&old)]);
    assert_no_temporaries(dir.path());
}

/// Over 16 MB of PGN a new book goes through the journal from the start,
/// and a repeated game is found when the journal's games are sorted (on
/// disk past the budget), not in a set of every game in memory: skipped
/// and reported as a build in memory reports it, the same book.
#[test]
fn repeated_games_of_a_large_input_are_found_in_the_sorted_journal() {
    let dir = TempDir::new().expect("tmp");
    let input = generated(dir.path());
    let text = std::fs::read(&input).expect("read");
    let twice = dir.path().join("twice.pgn");
    std::fs::write(&twice, [&text[..], &text[..]].concat()).expect("write");
    let once = dir.path().join("once.sqlite");
    let said = build(&once, &[&input], &[]);
    let number = |said: &str, label: &str| -> u64 {
        said.split(label)
            .nth(1)
            .and_then(|t| t.split(',').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {label:?} in {said}"))
    };
    let (read, used) = (number(&said, "games read: "), number(&said, "used: "));
    for budget in ["8M", "1G"] {
        let book = dir.path().join(format!("twice-{budget}.sqlite"));
        let said = build(&book, &[&twice], &["--memory", budget]);
        assert!(said.contains("more than 16 MB of PGN"), "{said}");
        assert!(
            said.contains(&format!(
                "games read: {}, used: {used}, skipped: {}",
                2 * read,
                2 * read - used
            )),
            "each game once, its repeat skipped: {said}"
        );
        assert!(said.contains("duplicate game"), "{said}");
        assert_same_book(&once, &book);
    }
    assert_no_temporaries(dir.path());
}

#[test]
fn an_unusable_temporary_directory_or_a_full_disk_is_a_clear_error() {
    let dir = TempDir::new().expect("tmp");
    let book = dir.path().join("b.sqlite");
    let missing = dir.path().join("no-such-dir");
    let out = run(&[
        "build",
        "--memory",
        "2M",
        "--temp-dir",
        s(&missing),
        "--book",
        s(&book),
        s(&sample()),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no-such-dir") && err.contains("not a directory"),
        "{err}"
    );
    assert!(!book.exists());

    // A file-size limit stands in for a full disk: writes past it fail
    // (EFBIG, as ENOSPC would) instead of killing the process.
    let out = limited(&["build", "--memory", "2M", "--book", s(&book), s(&sample())]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("File too large") || err.contains("disk") || err.contains("full"),
        "the error says what failed: {err}"
    );
    assert!(!book.exists());
    assert_no_temporaries(dir.path());

    // A merge on a full disk: the old book stays as it was.
    let (a, b) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
    build(&a, &[&sample()], &[]);
    build(&b, &[&sample()], &["--allow-duplicates"]);
    let before = std::fs::read(&a).expect("read");
    let out = limited(&["merge", "--allow-duplicates", "--book", s(&a), s(&b)]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("full") || err.contains("large") || err.contains("disk"),
        "the error says what failed: {err}"
    );
    assert_eq!(
        std::fs::read(&a).expect("read"),
        before,
        "the old book is unchanged"
    );
    assert_no_temporaries(dir.path());
}
