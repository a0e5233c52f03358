//! `--memory` beyond `build`: with a budget far below the book, `export`,
//! `check`, `import` and `reevaluate` take their bounded paths (the book
//! read a position at a time, the values depth by depth, the Polyglot
//! entries sorted on disk) and give the files and books of the default
//! budget, byte for byte and row for row.

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
        .filter(|n| n.contains("export-sort") || n.contains("layers"))
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
