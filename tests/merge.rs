//! `merge`: books built from parts of the games, merged, equal the book of
//! all the games (compared table by table with `EXCEPT` both ways); a game in
//! two parts counts once; books built alike only; a failed merge leaves the
//! old book as it was and nothing beside it.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_same_book, count, differences, ok, run, s, sample_text};
use tempfile::TempDir;

/// The sample's games split into `n` PGN files at game starts; the first
/// `repeat` games of part 0 are also appended to the last part.
fn parts(dir: &Path, n: usize, repeat: usize) -> (PathBuf, Vec<PathBuf>) {
    let text = sample_text();
    let mut starts: Vec<usize> = (0..text.len())
        .filter(|&i| text[i..].starts_with(b"[Event ") && (i == 0 || text[i - 1] == b'\n'))
        .collect();
    starts.push(text.len());
    let games = starts.len() - 1;
    let mut files = Vec::new();
    let mut all = Vec::new();
    for p in 0..n {
        let (a, b) = (starts[p * games / n], starts[(p + 1) * games / n]);
        let mut bytes = text[a..b].to_vec();
        if p == n - 1 && repeat > 0 {
            bytes.extend_from_slice(&text[starts[0]..starts[repeat]]);
        }
        all.extend_from_slice(&bytes);
        let path = dir.join(format!("part{p}.pgn"));
        std::fs::write(&path, &bytes).expect("write part");
        files.push(path);
    }
    let whole = dir.join("all.pgn");
    std::fs::write(&whole, &all).expect("write all");
    (whole, files)
}

fn build(book: &Path, input: &Path, extra: &[&str]) {
    let mut args = vec!["build", "--book", s(book)];
    args.extend_from_slice(extra);
    args.push(s(input));
    ok(&args);
}

/// Builds each part into its own book in `dir`, then merges them into
/// `merged` with the extra `merge` arguments.
fn build_and_merge(
    dir: &Path,
    files: &[PathBuf],
    merged: &Path,
    extra: &[&str],
) -> std::process::Output {
    let shards: Vec<PathBuf> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let shard = dir.join(format!("shard{i}.sqlite"));
            build(&shard, f, &[]);
            shard
        })
        .collect();
    let mut args = vec!["merge", "--book", s(merged)];
    args.extend_from_slice(extra);
    args.extend(shards.iter().map(|p| s(p)));
    ok(&args)
}

#[test]
fn four_merged_parts_equal_one_build_of_all_games_and_a_repeated_game_counts_once() {
    let dir = TempDir::new().expect("tmp");
    let (whole, files) = parts(dir.path(), 4, 7);
    let one = dir.path().join("one.sqlite");
    build(&one, &whole, &[]);
    let merged = dir.path().join("merged.sqlite");
    let out = build_and_merge(dir.path(), &files, &merged, &[]);
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(
        report.contains("(7 already in the book)"),
        "the repeated games are found: {report}"
    );
    assert_same_book(&one, &merged);
    ok(&["check", "--book", s(&merged)]);
    assert!(
        !dir.path().join("merged.sqlite.merging").exists(),
        "no temporary file is left"
    );
}

#[test]
fn merging_with_allow_duplicates_equals_a_build_that_allows_them() {
    let dir = TempDir::new().expect("tmp");
    let (whole, files) = parts(dir.path(), 2, 5);
    let one = dir.path().join("one.sqlite");
    build(&one, &whole, &["--allow-duplicates"]);
    let (a, b) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
    build(&a, &files[0], &["--allow-duplicates"]);
    build(&b, &files[1], &["--allow-duplicates"]);
    // Merged into an existing book: `a` itself is the first input.
    ok(&["merge", "--allow-duplicates", "--book", s(&a), s(&b)]);
    assert_same_book(&one, &a);
    assert_eq!(count(&a, "SELECT max(copies) FROM games"), 2);
}

#[test]
fn books_built_with_other_settings_are_refused_and_the_output_is_untouched() {
    let dir = TempDir::new().expect("tmp");
    let (_, files) = parts(dir.path(), 2, 0);
    let (a, b) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
    build(&a, &files[0], &[]);
    build(&b, &files[1], &["--max-ply", "30"]);
    let before = std::fs::read(&a).expect("read a");
    let out = run(&["merge", "--book", s(&a), s(&b)]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("max-ply 30 against 40"),
        "the setting is named: {err}"
    );
    assert_eq!(
        std::fs::read(&a).expect("read a"),
        before,
        "the book is unchanged"
    );
    assert!(!dir.path().join("a.sqlite.merging").exists());
    let out = run(&["merge", "--book", s(&a), s(&dir.path().join("none.sqlite"))]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no book at"));
}

#[test]
fn a_merge_killed_at_any_point_leaves_the_old_book_and_the_next_run_cleans_up() {
    let dir = TempDir::new().expect("tmp");
    let (whole, files) = parts(dir.path(), 2, 0);
    let one = dir.path().join("one.sqlite");
    build(&one, &whole, &[]);
    let (a, b) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
    build(&a, &files[0], &[]);
    build(&b, &files[1], &[]);
    let before = std::fs::read(&a).expect("read a");
    let leftovers = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .expect("dir")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".merging"))
            .collect()
    };
    let mut killed = 0;
    for wait_ms in [5, 40, 120, 250, 400] {
        if common::run_killed_after(&["merge", "--book", s(&a), s(&b)], wait_ms).0 {
            killed += 1;
        }
        if std::fs::read(&a).expect("read a") != before {
            // It finished before the kill: the merged book is complete.
            assert_same_book(&one, &a);
            return;
        }
        ok(&["check", "--book", s(&a)]);
    }
    assert!(killed > 0, "at least one merge was killed while running");
    ok(&["merge", "--book", s(&a), s(&b)]);
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
    assert_same_book(&one, &a);
}

#[test]
fn min_games_drops_the_same_rows_in_a_build_and_a_merge_and_pruned_books_do_not_merge() {
    let dir = TempDir::new().expect("tmp");
    let (whole, files) = parts(dir.path(), 3, 4);
    let one = dir.path().join("one.sqlite");
    build(&one, &whole, &["--min-games", "3"]);
    let rare = count(
        &one,
        "SELECT count(*) FROM moves WHERE white + draws + black < 3",
    );
    assert_eq!(rare, 0, "no move fewer than 3 games reach is kept");
    let full = dir.path().join("full.sqlite");
    build(&full, &whole, &[]);
    let kept = count(&one, "SELECT count(*) FROM positions");
    let all = common::positions(&full).len() as i64;
    assert!(
        kept * 5 < all,
        "pruning drops most positions ({kept} of {all} kept)"
    );
    ok(&["check", "--book", s(&one)]);
    let merged = dir.path().join("merged.sqlite");
    build_and_merge(dir.path(), &files, &merged, &["--min-games", "3"]);
    for (table, columns) in [("positions", "*"), ("moves", "*"), ("parents", "*")] {
        assert_eq!(
            differences(&one, &merged, table, columns),
            (0, 0),
            "{table}"
        );
    }
    let out = run(&["merge", "--book", s(&dir.path().join("x.sqlite")), s(&one)]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--min-games 3"));
}
