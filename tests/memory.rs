//! `--memory` beyond `build`: with a budget far below the book, `export`,
//! `check`, `import`, `reevaluate`, `analyze` and `improve` take their
//! bounded paths (the book read a position at a time, the values depth by
//! depth, the Polyglot entries and the positions to search sorted on disk)
//! and give the files and books of the default budget, byte for byte and
//! row for row (and the searches in the same order).

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// A budget the sample book's graph exceeds many times over.
const TINY: &str = "64K";

fn sample_book(dir: &Path) -> PathBuf {
    let book = dir.join("sample.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    book
}

#[test]
fn export_within_a_tiny_budget_writes_the_same_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    for (ext, extra) in [
        ("bin", &[][..]),
        ("bin", &["--weights", "games", "--min-games", "2"][..]),
        ("abk", &[][..]),
        ("exp", &[][..]),
        ("pgn", &[][..]),
        ("pgn", &["--pgn-lines", "--max-ply", "8"][..]),
        ("pgn", &["--weights", "games", "--min-games", "2"][..]),
        (
            "pgn",
            &["--weights", "games", "--max-ply", "16", "--pgn-lines"][..],
        ),
    ] {
        let plain = dir.path().join(format!("plain.{ext}"));
        let bounded = dir.path().join(format!("bounded.{ext}"));
        let mut args = vec!["export", "--book", s(&book), "--out", s(&plain)];
        args.extend(extra);
        let a = ok(&args);
        args[4] = s(&bounded);
        args.extend(["--memory", TINY]);
        let b = ok(&args);
        let text = |o: &std::process::Output| {
            String::from_utf8_lossy(&o.stdout).replace("bounded.", "plain.")
        };
        assert_eq!(text(&a), text(&b), "{ext} {extra:?}: the summaries differ");
        let (x, y) = (
            std::fs::read(&plain).expect("read"),
            std::fs::read(&bounded).expect("read"),
        );
        assert!(!x.is_empty() || ext == "exp", "{ext} {extra:?}: empty");
        assert!(x == y, "{ext} {extra:?}: the files differ");
    }
    // No temporary file is left beside the book.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("export-sort") || n.contains("layers") || n.contains("pgn-plan"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Issue 53: the PGN export's plan lives in a scratch database beside the
/// book. A killed export's (its database and a sorted run) is removed by
/// the next export of the book, a running export's is not, and an export
/// that fails leaves none.
#[test]
fn the_pgn_plan_leaves_no_scratch_file_and_spares_a_running_exports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    let scratch = |name: &str| dir.path().join(format!("sample.sqlite.pgn-plan-{name}"));
    // A running export's database: SQLite's lock held by a connection.
    let running = rusqlite::Connection::open(scratch("1")).expect("open");
    running
        .execute_batch(
            "PRAGMA locking_mode = EXCLUSIVE; CREATE TABLE t(x); BEGIN; INSERT INTO t VALUES (1);",
        )
        .expect("lock");
    std::fs::write(scratch("1.sort1"), b"run").expect("run");
    // A killed one's.
    std::fs::write(scratch("2"), b"killed").expect("killed");
    std::fs::write(scratch("2.sort1"), b"run").expect("run");
    let out = dir.path().join("x.pgn");
    ok(&[
        "export",
        "--book",
        s(&book),
        "--out",
        s(&out),
        "--memory",
        TINY,
    ]);
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("pgn-plan"))
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["sample.sqlite.pgn-plan-1", "sample.sqlite.pgn-plan-1.sort1"],
        "the killed export's files are not removed, or the running one's are"
    );
    // Once that export is gone, its files are a leftover too; an export
    // that fails (no folder for its file) removes them and its own plan.
    drop(running);
    let nowhere = dir.path().join("missing").join("x.pgn");
    let failed = run(&["export", "--book", s(&book), "--out", s(&nowhere)]);
    assert!(!failed.status.success());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("pgn-plan"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn reevaluate_and_import_within_a_tiny_budget_give_the_same_book() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    let bin = dir.path().join("sample.bin");
    ok(&[
        "export",
        "--book",
        s(&book),
        "--out",
        s(&bin),
        "--max-ply",
        "10",
    ]);
    let (plain, bounded) = (dir.path().join("plain.sqlite"), dir.path().join("b.sqlite"));
    for b in [&plain, &bounded] {
        std::fs::copy(&book, b).expect("copy");
    }
    let a = ok(&["reevaluate", "--book", s(&plain), "--engine-margin", "5"]);
    let b = ok(&[
        "reevaluate",
        "--book",
        s(&bounded),
        "--engine-margin",
        "5",
        "--memory",
        TINY,
    ]);
    assert_eq!(a.stdout, b.stdout);
    assert!(String::from_utf8_lossy(&a.stdout).contains("positions changed"));
    assert_same_book(&plain, &bounded);
    // An import into an existing book (its tails turned into rows where
    // the entries land) is valued the same way.
    ok(&["import", "--book", s(&plain), "--in", s(&bin)]);
    ok(&[
        "import",
        "--book",
        s(&bounded),
        "--in",
        s(&bin),
        "--memory",
        TINY,
    ]);
    assert_same_book(&plain, &bounded);
    for b in [&plain, &bounded] {
        ok(&["check", "--book", s(b), "--memory", TINY]);
    }
}

/// Issue 53: `import` into a new book (the usual case: `import --book
/// gnu.sqlite --polyglot gnu.bin`) within a tiny budget gives the book of
/// the default budget, row for row, for a Polyglot file with entries the
/// start position does not reach (value weights leave moves out) and for
/// an Arena file; importing the same file again (weights add up, every
/// child already linked) too.
#[test]
fn import_into_a_new_book_within_a_tiny_budget_gives_the_same_book() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    for ext in ["bin", "abk"] {
        let file = dir.path().join(format!("sample.{ext}"));
        ok(&["export", "--book", s(&book), "--out", s(&file)]);
        let plain = dir.path().join(format!("plain-{ext}.sqlite"));
        let bounded = dir.path().join(format!("bounded-{ext}.sqlite"));
        for _ in 0..2 {
            let a = ok(&["import", "--book", s(&plain), "--in", s(&file)]);
            let b = ok(&[
                "import",
                "--book",
                s(&bounded),
                "--in",
                s(&file),
                "--memory",
                TINY,
            ]);
            assert_eq!(a.stdout, b.stdout, "{ext}: the summaries differ");
        }
        if ext == "bin" {
            let unreached = "SELECT count(*) FROM moves WHERE child IS NULL";
            assert!(count(&plain, unreached) > 0, "every entry was reached");
        }
        assert!(count(&plain, "SELECT count(*) FROM positions") > 1_000);
        for table in ["positions", "moves", "parents", "meta"] {
            assert_eq!(
                differences(&plain, &bounded, table, "*"),
                (0, 0),
                "{ext}: {table} differ"
            );
        }
        for b in [&plain, &bounded] {
            ok(&["check", "--book", s(b), "--memory", TINY]);
        }
    }
}

/// Issue 53: `import` finds a position's entries by binary search, in file
/// order within a key; a `.bin` not sorted by key (its positions' runs of
/// entries in reverse) is indexed first and gives the same book, row for
/// row: the parent links are sorted (on disk within a tiny budget), so a
/// position's first parent does not depend on the file's order.
#[test]
fn import_of_a_bin_not_sorted_by_key_gives_the_same_book() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    let sorted = dir.path().join("sorted.bin");
    ok(&["export", "--book", s(&book), "--out", s(&sorted)]);
    let bytes = std::fs::read(&sorted).expect("read");
    let mut runs: Vec<Vec<u8>> = Vec::new();
    for entry in bytes.chunks_exact(16) {
        match runs.last_mut() {
            Some(run) if run[..8] == entry[..8] => run.extend_from_slice(entry),
            _ => runs.push(entry.to_vec()),
        }
    }
    assert!(runs.len() > 1_000, "{} positions", runs.len());
    let unsorted = dir.path().join("unsorted.bin");
    let reversed: Vec<u8> = runs.iter().rev().flatten().copied().collect();
    std::fs::write(&unsorted, reversed).expect("write");
    let (a, b) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
    let x = ok(&["import", "--book", s(&a), "--in", s(&sorted)]);
    let y = ok(&[
        "import",
        "--book",
        s(&b),
        "--in",
        s(&unsorted),
        "--memory",
        TINY,
    ]);
    let text = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stdout).replace("unsorted.bin", "sorted.bin")
    };
    assert_eq!(text(&x), text(&y));
    for table in ["positions", "moves", "parents"] {
        assert_eq!(differences(&a, &b, table, "*"), (0, 0), "{table} differ");
    }
    assert!(count(&a, "SELECT count(*) FROM positions WHERE depth IS NOT NULL") > 1_000);
    assert!(
        count(&a, "SELECT count(*) FROM parents") > 0,
        "no transpositions"
    );
    ok(&["check", "--book", s(&b)]);
}

#[test]
fn check_within_a_tiny_budget_finds_what_the_whole_check_finds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = sample_book(dir.path());
    let consistent = ok(&["check", "--book", s(&book), "--memory", TINY]);
    let whole = ok(&["check", "--book", s(&book)]);
    assert_eq!(consistent.stdout, whole.stdout);
    for (what, sql) in [
        (
            "a value",
            "UPDATE positions SET value = value + 0.25 WHERE key = (SELECT key FROM positions WHERE depth = 3 ORDER BY key LIMIT 1)",
        ),
        (
            "a choice",
            "UPDATE positions SET best = NULL WHERE key = (SELECT key FROM positions WHERE best IS NOT NULL AND depth = 2 ORDER BY key LIMIT 1)",
        ),
        (
            "a move's count",
            "UPDATE moves SET white = white + 1000 WHERE (parent, move) = (SELECT parent, move FROM moves WHERE child IS NOT NULL ORDER BY parent, move LIMIT 1)",
        ),
        (
            "a parent link",
            "UPDATE positions SET parent = NULL WHERE key = (SELECT key FROM positions WHERE parent IS NOT NULL AND key NOT IN (SELECT child FROM parents) ORDER BY key LIMIT 1)",
        ),
        (
            "the tails index",
            "DELETE FROM tail_index WHERE bucket = (SELECT min(bucket) FROM tail_index)",
        ),
        (
            "a top list",
            "UPDATE positions SET top = NULL WHERE key = (SELECT key FROM positions WHERE top IS NOT NULL ORDER BY key LIMIT 1)",
        ),
        ("a rating sum", "UPDATE moves SET rating_sum = rating_sum + 7 WHERE rated > 0 AND (parent, move) = (SELECT parent, move FROM moves WHERE rated > 0 ORDER BY parent, move LIMIT 1)"),
    ] {
        let broken = dir.path().join("broken.sqlite");
        std::fs::copy(&book, &broken).expect("copy");
        rusqlite::Connection::open(&broken)
            .and_then(|c| c.execute_batch(sql))
            .expect("break the book");
        for memory in [None, Some(TINY)] {
            let mut args = vec!["check", "--book", s(&broken)];
            if let Some(m) = memory {
                args.extend(["--memory", m]);
            }
            let out = run(&args);
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{what}, --memory {memory:?}: {text}"
            );
            assert!(text.contains("problem: "), "{what}: {text}");
        }
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(dir.path().join(format!("broken.sqlite{suffix}")));
        }
    }
}

/// Runs `learnbook` with its temporary files in `tmp`, which it must leave
/// empty; fails the test unless it succeeded.
fn ok_in_tmp(args: &[&str], tmp: &Path) -> String {
    std::fs::create_dir_all(tmp).expect("tmp dir");
    let out = std::process::Command::new(bin())
        .args(args)
        .env("TMPDIR", tmp)
        .output()
        .expect("run learnbook");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "learnbook {args:?} failed: {stderr}");
    let left: Vec<_> = std::fs::read_dir(tmp).expect("tmp dir").collect();
    assert!(
        left.is_empty(),
        "{args:?} left {left:?} in its temporary folder"
    );
    stderr
}

/// The results of a journal's parts (one part: one run), in the order
/// written.
fn journal_lines(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for e in std::fs::read_dir(dir).expect("journal dir") {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::MultiGzDecoder::new(
                std::fs::File::open(e.expect("entry").path()).expect("part"),
            ),
            &mut text,
        )
        .expect("read part");
        lines.extend(
            text.lines()
                .filter(|l| !l.starts_with('#'))
                .map(String::from),
        );
    }
    lines
}

#[test]
fn improve_and_analyze_within_a_tiny_budget_search_the_same_positions_in_the_same_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let book = sample_book(d);
    let tmp = d.join("tmp");
    // Thousands of targets: with a tiny budget the priorities are sorted
    // in runs of 1024 on disk. One engine: the journal's order is the
    // order searched.
    let plan = "games=2,nodes=200;games=5,ply=6,nodes=400";
    for (e, extra) in [
        &[][..],
        &["--shard", "1/3"][..],
        &["--one-search-a-child"][..],
    ]
    .into_iter()
    .enumerate()
    {
        let mut runs = Vec::new();
        for memory in [None, Some(TINY)] {
            let name = format!("improve-{e}-{}", runs.len());
            let copy = d.join(format!("{name}.sqlite"));
            std::fs::copy(&book, &copy).expect("copy");
            let journal = d.join(format!("{name}.journal"));
            std::fs::create_dir(&journal).expect("journal");
            let mut args = vec![
                "improve",
                "--book",
                s(&copy),
                "--engine",
                "builtin",
                "--threads",
                "1",
                "--plan",
                plan,
                "--journal",
                s(&journal),
            ];
            args.extend_from_slice(extra);
            if let Some(m) = memory {
                args.extend(["--memory", m]);
            }
            let stderr = ok_in_tmp(&args, &tmp);
            runs.push((copy, journal_lines(&journal), stderr));
        }
        let (whole, tiny) = (&runs[0], &runs[1]);
        assert!(
            whole.1.len() > 1000,
            "{extra:?}: {} results, too few to spill",
            whole.1.len()
        );
        assert!(
            whole.1 == tiny.1,
            "{extra:?}: the searches differ or come in another order"
        );
        if extra.is_empty() {
            assert!(whole.2.contains("analysed 4075 positions"), "{}", whole.2);
        }
        for table in ["analysis", "positions"] {
            assert_eq!(
                differences(&whole.0, &tiny.0, table, "*"),
                (0, 0),
                "{extra:?}: {table}"
            );
        }
    }
    let copies: Vec<PathBuf> = [None, Some(TINY)]
        .iter()
        .enumerate()
        .map(|(i, memory)| {
            let copy = d.join(format!("analyze-{i}.sqlite"));
            std::fs::copy(&book, &copy).expect("copy");
            let mut args = vec![
                "analyze",
                "--book",
                s(&copy),
                "--nodes",
                "300",
                "--min-games",
                "3",
                "--threads",
                "1",
            ];
            if let Some(m) = memory {
                args.extend(["--memory", *m]);
            }
            ok_in_tmp(&args, &tmp);
            copy
        })
        .collect();
    assert!(count(&copies[0], "SELECT count(*) FROM analysis") > 2000);
    for table in ["analysis", "positions"] {
        assert_eq!(
            differences(&copies[0], &copies[1], table, "*"),
            (0, 0),
            "analyze: {table}"
        );
    }
}
