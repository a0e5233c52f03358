//! `--shard I/N`: the shards of one build, merged, equal the build of all
//! the games; `merge` refuses a set with a shard missing, repeated or from
//! another job; a shard run again after it finished (a requeued task) is
//! left as it is; `auto/N` reads the scheduler's task number.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_same_book, ok, run, s, sample};
use tempfile::TempDir;

/// Builds shard `shard` of the sample into `dir/name`, with `env` set.
fn build_shard(dir: &Path, name: &str, shard: &str, env: &[(&str, &str)]) -> (PathBuf, String) {
    let book = dir.join(name);
    let out = scheduler_task(env)
        .args(["build", "--book", s(&book), "--shard", shard, s(&sample())])
        .output()
        .expect("run learnbook");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "build --shard {shard}: {stderr}");
    (book, stderr)
}

/// `learnbook` as a task of a job array: the scheduler's variables are
/// `env`'s only (the test may itself run under Slurm).
fn scheduler_task(env: &[(&str, &str)]) -> std::process::Command {
    let mut cmd = std::process::Command::new(common::bin());
    for name in [
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_MIN",
        "JOB_COMPLETION_INDEX",
    ] {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied());
    cmd
}

fn games_read(report: &str) -> u64 {
    common::number_after(report, "games read: ", ',')
}

#[test]
fn four_shards_merged_equal_one_build_and_each_game_is_in_one_shard() {
    let dir = TempDir::new().expect("tmp");
    let one = dir.path().join("one.sqlite");
    let whole = ok(&["build", "--book", s(&one), s(&sample())]);
    let all = games_read(&String::from_utf8_lossy(&whole.stderr));
    let mut shards = Vec::new();
    let mut read = 0;
    for i in 0..4 {
        let (book, report) =
            build_shard(dir.path(), &format!("s{i}.sqlite"), &format!("{i}/4"), &[]);
        read += games_read(&report);
        shards.push(book);
    }
    assert_eq!(read, all, "the shards read every game once between them");
    let merged = dir.path().join("merged.sqlite");
    let mut args = vec!["merge", "--book", s(&merged)];
    args.extend(shards.iter().map(|p| s(p)));
    let report = String::from_utf8_lossy(&ok(&args).stderr).into_owned();
    assert!(!report.contains("by depth"), "{report}");
    assert_same_book(&one, &merged);
    ok(&["check", "--book", s(&merged)]);
    // A budget the graph does not fit: the values depth by depth through
    // SQLite, the same book.
    let small = dir.path().join("small.sqlite");
    let mut args = vec!["merge", "--memory", "1M", "--book", s(&small)];
    args.extend(shards.iter().map(|p| s(p)));
    let report = String::from_utf8_lossy(&ok(&args).stderr).into_owned();
    assert!(report.contains("valued by depth"), "{report}");
    assert_same_book(&one, &small);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("merging"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn merge_refuses_a_missing_repeated_or_foreign_shard_and_writes_nothing() {
    let dir = TempDir::new().expect("tmp");
    let shards: Vec<PathBuf> = (0..3)
        .map(|i| build_shard(dir.path(), &format!("s{i}.sqlite"), &format!("{i}/3"), &[]).0)
        .collect();
    let copy = dir.path().join("copy.sqlite");
    std::fs::copy(&shards[1], &copy).expect("copy");
    let (foreign, _) = build_shard(dir.path(), "other.sqlite", "1/2", &[]);
    let merged = dir.path().join("merged.sqlite");
    let refused = |inputs: &[&PathBuf], why: &str| {
        let mut args = vec!["merge", "--book", s(&merged)];
        args.extend(inputs.iter().map(|p| s(p)));
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{inputs:?}: {stderr}");
        assert!(stderr.contains(why), "{inputs:?}: {stderr}");
        assert!(!merged.exists(), "nothing written");
    };
    refused(&[&shards[0], &shards[2]], "shard 1/3 is missing");
    refused(
        &[&shards[0], &shards[1], &shards[2], &copy],
        "shard 1/3 is given twice",
    );
    refused(
        &[&shards[0], &shards[1], &shards[2], &foreign],
        "shards of different jobs",
    );
}

#[test]
fn a_finished_shard_run_again_is_kept_and_auto_reads_the_task_number() {
    let dir = TempDir::new().expect("tmp");
    let slurm = [("SLURM_ARRAY_TASK_ID", "3"), ("SLURM_ARRAY_TASK_MIN", "1")];
    let (book, first) = build_shard(dir.path(), "s.sqlite", "auto/3", &slurm);
    assert!(first.contains("shard 2/3"), "{first}");
    let before = std::fs::read(&book).expect("read");
    let (_, again) = build_shard(dir.path(), "s.sqlite", "2/3", &[]);
    assert!(again.contains("already shard 2/3"), "{again}");
    assert_eq!(
        std::fs::read(&book).expect("read"),
        before,
        "left as it was"
    );
    // Another shard into the same file is an error, not an overwrite.
    let out = run(&["build", "--book", s(&book), "--shard", "1/3", s(&sample())]);
    assert_eq!(out.status.code(), Some(2));
    let (_, k8s) = build_shard(
        dir.path(),
        "k.sqlite",
        "auto/3",
        &[("JOB_COMPLETION_INDEX", "0")],
    );
    assert!(k8s.contains("shard 0/3"), "{k8s}");
    let unset = scheduler_task(&[])
        .args([
            "build",
            "--book",
            s(&dir.path().join("u.sqlite")),
            "--shard",
            "auto/3",
        ])
        .arg(sample())
        .output()
        .expect("run");
    assert_eq!(unset.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unset.stderr).contains("neither is set"));
}

/// `selfplay` with `args` and `extra`, into `out`.
fn selfplay(out: &Path, extra: &[&str]) {
    let openings = common::repo().join("data/openings-sample.epd");
    let mut args = vec![
        "selfplay",
        "--pgnout",
        s(out),
        "--games",
        "9",
        "--openings",
        s(&openings),
        "--nodes",
        "300",
        "--seed",
        "3",
    ];
    args.extend_from_slice(extra);
    ok(&args);
}

#[test]
fn selfplay_shards_merged_are_the_whole_runs_file_byte_for_byte() {
    let dir = TempDir::new().expect("tmp");
    let one = dir.path().join("one.pgn");
    selfplay(&one, &["--concurrency", "2"]);
    let shards: Vec<PathBuf> = (0..4)
        .map(|i| {
            let path = dir.path().join(format!("g{i}.pgn"));
            selfplay(&path, &["--shard", &format!("{i}/4"), "--concurrency", "1"]);
            path
        })
        .collect();
    let merged = dir.path().join("merged.pgn");
    // In any order: the games come out in game order.
    ok(&[
        "merge-games",
        "--pgnout",
        s(&merged),
        s(&shards[2]),
        s(&shards[0]),
        s(&shards[3]),
        s(&shards[1]),
    ]);
    let (a, b) = (
        std::fs::read_to_string(&one).expect("one"),
        std::fs::read_to_string(&merged).expect("merged"),
    );
    assert_eq!(a.matches("[Event ").count(), 9);
    // Byte for byte but the Date tags: a run may cross midnight.
    let undated = |t: &str| -> String {
        t.lines()
            .filter(|l| !l.starts_with("[Date "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        undated(&a),
        undated(&b),
        "the merged shards are the whole run's file"
    );

    let refused = |inputs: &[&PathBuf], why: &str| {
        let out = dir.path().join("refused.pgn");
        let mut args = vec!["merge-games", "--pgnout", s(&out)];
        args.extend(inputs.iter().map(|p| s(p)));
        let r = run(&args);
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(why), "{inputs:?}: {stderr}");
        assert!(!out.exists(), "nothing written");
    };
    refused(
        &[&shards[0], &shards[1], &shards[3]],
        "shard 2/4 is missing",
    );
    refused(
        &[&shards[0], &shards[1], &shards[2], &shards[3], &shards[1]],
        "given twice",
    );
    refused(&[&one], "not a selfplay shard's file");
    // A shard cut short (a killed task): its last game removed.
    let text = std::fs::read_to_string(&shards[3]).expect("read");
    let cut = text.rfind("[Event ").expect("games");
    let short = dir.path().join("short.pgn");
    std::fs::write(&short, &text[..cut]).expect("write");
    refused(
        &[&shards[0], &shards[1], &shards[2], &short],
        "run the shard to its end",
    );
    // The same shard run again finishes the cut file: then it merges.
    std::fs::write(&shards[3], &text[..cut]).expect("write");
    selfplay(&shards[3], &["--shard", "3/4", "--concurrency", "1"]);
    assert_eq!(std::fs::read_to_string(&shards[3]).expect("read"), text);
}

#[test]
fn analysis_shards_added_to_the_book_equal_one_analysis_of_it() {
    let dir = TempDir::new().expect("tmp");
    let one = dir.path().join("one.sqlite");
    ok(&["build", "--book", s(&one), s(&sample())]);
    let sharded = dir.path().join("sharded.sqlite");
    std::fs::copy(&one, &sharded).expect("copy");
    let search = ["--nodes", "1500", "--min-games", "30"];
    let mut args = vec!["analyze", "--book", s(&one), "--threads", "2"];
    args.extend_from_slice(&search);
    ok(&args);
    let before = std::fs::read(&sharded).expect("read");
    let files: Vec<PathBuf> = (0..3)
        .map(|i| {
            let file = dir.path().join(format!("analysis{i}.sqlite"));
            let shard = format!("{i}/3");
            let mut args = vec!["analyze", "--book", s(&sharded), "--threads", "1"];
            args.extend_from_slice(&search);
            args.extend_from_slice(&["--shard", &shard, "--out", s(&file)]);
            ok(&args);
            file
        })
        .collect();
    assert_eq!(
        std::fs::read(&sharded).expect("read"),
        before,
        "shards only read the book"
    );
    let merge = |inputs: &[&PathBuf]| {
        let mut args = vec!["merge", "--book", s(&sharded)];
        args.extend(inputs.iter().map(|p| s(p)));
        run(&args)
    };
    let missing = merge(&[&files[0], &files[2]]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("shard 1/3 is missing"));
    let mixed = merge(&[&files[0], &files[1], &files[2], &one]);
    assert_eq!(mixed.status.code(), Some(2), "a book among analysis files");
    ok(&[
        "merge",
        "--book",
        s(&sharded),
        s(&files[2]),
        s(&files[0]),
        s(&files[1]),
    ]);
    for table in ["analysis", "positions", "moves"] {
        assert_eq!(
            common::differences(&one, &sharded, table, "*"),
            (0, 0),
            "{table}: sharded analysis differs"
        );
    }
    assert!(common::count(&one, "SELECT count(*) FROM analysis") > 100);
    // Another book refuses them.
    let other = dir.path().join("other.sqlite");
    build_shard(dir.path(), "other.sqlite", "0/2", &[]);
    let out = run(&[
        "merge",
        "--book",
        s(&other),
        s(&files[0]),
        s(&files[1]),
        s(&files[2]),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not the book the shards analysed"));
}
