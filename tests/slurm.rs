//! Issue 24 on a real Slurm: a one-node cluster (munged, slurmctld, slurmd)
//! started in a temporary directory (`tests/common/slurm.rs`) runs the
//! job-array scripts of `deploy/slurm` as they are. The sharded build merged
//! by its dependent job equals one `build`; a shard killed mid-build and
//! requeued, and a shard that failed and was run again, change nothing. The
//! sharded analysis and self-play give what one run gives. The SPSA tune as
//! rounds: `slurm_tune.rs`.

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
    time::Instant,
};

use common::slurm::*;
use common::{assert_same_book, bin, differences, ok, repo, s, sample};

/// The build pipeline: the scripts' book against one `build`, then a shard
/// killed mid-build and requeued plus a shard that failed, recovered.
fn build_pipeline(cluster: &Cluster) -> PathBuf {
    let sample = sample();
    let one = cluster.path("one.sqlite");
    let t = Instant::now();
    ok(&["build", "--book", s(&one), s(&sample)]);
    let unsharded = t.elapsed();

    let work = cluster.path("build");
    let book = cluster.path("book.sqlite");
    let t = Instant::now();
    let (array, merge) = cluster.submit(
        "build",
        &[
            ("INPUTS", s(&sample)),
            ("BOOK", s(&book)),
            ("WORK", s(&work)),
            ("LEARNBOOK", bin()),
            ("SHARDS", &SHARDS.to_string()),
        ],
    );
    cluster.wait_job(&merge, "COMPLETED", None);
    let sharded = t.elapsed();
    assert_eq!(cluster.task_states(&array), vec!["COMPLETED"; SHARDS]);
    assert_same_book(&one, &book);
    ok(&["check", "--book", s(&book)]);
    let merge_log = read(&work.join(format!("logs/build-merge-{merge}.out")));
    assert!(merge_log.contains("merged 4 books"), "{merge_log}");
    println!(
        "build of the {} sample games: {SHARDS} shards as a Slurm array on {} + the merge job: \
         {:.1} s from sbatch to the merged book; one unsharded build: {:.1} s",
        1458,
        cluster.node,
        sharded.as_secs_f64(),
        unsharded.as_secs_f64()
    );

    // Through a wrapper of learnbook: the first run of shard 1 fails, the
    // first run of shard 2 stops itself mid-build and waits to be killed.
    let work = cluster.path("build-again");
    fs::create_dir_all(&work).expect("mkdir");
    let wrapper = cluster.path("learnbook-wrapper");
    fs::write(
        &wrapper,
        format!(
            r#"#!/bin/bash
set -u
i=merge
if [ "$1" = build ]; then i=$((SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN)); fi
if [ "$i" = 1 ] && mkdir "$WORK/failed-once" 2>/dev/null; then
  echo "wrapper: shard 1 fails this once" >&2
  exit 3
fi
if [ "$i" = 2 ] && mkdir "$WORK/stopped-once" 2>/dev/null; then
  "{bin}" "$@" &
  pid=$!
  while [ ! -e "$WORK/shard-2.sqlite.building" ] && kill -0 "$pid" 2>/dev/null; do :; done
  kill -STOP "$pid" 2>/dev/null
  touch "$WORK/stopped"
  sleep 600 # the requeue kills the task first; this bounds an orphan's life
  kill -KILL "$pid"
  exit 1
fi
exec "{bin}" "$@"
"#,
            bin = bin()
        ),
    )
    .expect("write the wrapper");
    set_mode(&wrapper, 0o755);
    let book = cluster.path("book-again.sqlite");
    let env = [
        ("INPUTS", s(&sample)),
        ("BOOK", s(&book)),
        ("WORK", s(&work)),
        ("LEARNBOOK", s(&wrapper)),
        ("SHARDS", "4"),
    ];
    let (array, merge) = cluster.submit("build", &env);
    let stopped = work.join("stopped");
    wait_until("shard 2 stopped", PATIENCE, || {
        stopped.exists().then_some(())
    })
    .unwrap_or_else(|| cluster.fail("shard 2 never started"));
    let mid_build =
        work.join("shard-2.sqlite.building").exists() && !work.join("shard-2.sqlite").exists();
    cluster.ok("scontrol", &["requeue", &format!("{array}_2")]);
    cluster.wait_array(&array);
    // The killed task ran again and finished; the failed one did not.
    let task2 = cluster.job(&format!("{array}_2"));
    assert_eq!(task2["JobState"], "COMPLETED");
    assert_eq!(task2["Restarts"], "1", "{task2:?}");
    let log2 = read(&work.join(format!("logs/build-{array}_2.out")));
    assert!(
        log2.contains("run 1") && log2.contains("DUE TO JOB REQUEUE") && log2.contains("run 2"),
        "{log2}"
    );
    assert!(work.join("shard-2.sqlite").exists());
    assert!(!work.join("shard-2.sqlite.building").exists());
    assert_eq!(cluster.job(&format!("{array}_1"))["JobState"], "FAILED");
    // The merge waits for good: a task failed.
    cluster.wait_job(&merge, "PENDING", Some("DependencyNeverSatisfied"));
    assert!(!book.exists());
    // The guide's remedy: cancel the merge, submit the pipeline again. The
    // finished shards are left as they are; the failed one is built.
    cluster.ok("scancel", &[&merge]);
    let (array, merge) = cluster.submit("build", &env);
    cluster.wait_job(&merge, "COMPLETED", None);
    let mut untouched = 0;
    for i in 0..SHARDS {
        let log = read(&work.join(format!("logs/build-{array}_{i}.out")));
        untouched += usize::from(log.contains("nothing to do"));
    }
    assert_eq!(
        untouched,
        SHARDS - 1,
        "all shards but the failed one were done"
    );
    assert_same_book(&one, &book);
    println!(
        "requeue: shard 2 killed {} and requeued (Restarts=1), shard 1 failed and was run again \
         with the pipeline: the merged book is the same",
        if mid_build {
            "mid-build (its .building file on disk)"
        } else {
            "after its build had ended"
        }
    );
    one
}

/// The analysis pipeline: 4 shards merged into a copy of the book equal
/// one unsharded analysis of another copy.
fn analyze_pipeline(cluster: &Cluster, built: &Path) {
    let (a, b) = (
        cluster.path("analyzed-one.sqlite"),
        cluster.path("analyzed-shards.sqlite"),
    );
    fs::copy(built, &a).expect("copy");
    fs::copy(built, &b).expect("copy");
    let t = Instant::now();
    ok(&[
        "analyze",
        "--book",
        s(&a),
        "--nodes",
        "2000",
        "--threads",
        "1",
    ]);
    let unsharded = t.elapsed();
    let work = cluster.path("analyze");
    let t = Instant::now();
    let (array, merge) = cluster.submit(
        "analyze",
        &[
            ("BOOK", s(&b)),
            ("WORK", s(&work)),
            ("LEARNBOOK", bin()),
            ("SHARDS", "4"),
            ("NODES", "2000"),
        ],
    );
    cluster.wait_job(&merge, "COMPLETED", None);
    let sharded = t.elapsed();
    assert_eq!(cluster.task_states(&array), vec!["COMPLETED"; SHARDS]);
    let analysed = common::count(&a, "SELECT count(*) FROM analysis");
    assert!(analysed > 0, "the unsharded run analysed nothing");
    assert_eq!(
        differences(&a, &b, "analysis", "*"),
        (0, 0),
        "analysis rows"
    );
    assert_eq!(
        differences(&a, &b, "positions", "*"),
        (0, 0),
        "position rows"
    );
    println!(
        "analyze ({analysed} rows, --nodes 2000): {SHARDS} shards through Slurm + merge {:.1} s; \
         one unsharded run (--threads 1) {:.1} s",
        sharded.as_secs_f64(),
        unsharded.as_secs_f64()
    );
}

/// The overnight recipe (`improve`): 2 shards into one journal through a
/// job array, stored in a copy of the book by the merge job, equal one
/// unsharded run on another copy.
fn improve_pipeline(cluster: &Cluster, built: &Path) {
    const PLAN: &str = "games=20,nodes=1500;games=80,ply=4,nodes=3000";
    let (a, b) = (
        cluster.path("improved-one.sqlite"),
        cluster.path("improved-shards.sqlite"),
    );
    fs::copy(built, &a).expect("copy");
    fs::copy(built, &b).expect("copy");
    let t = Instant::now();
    ok(&[
        "improve",
        "--book",
        s(&a),
        "--engine",
        "builtin",
        "--plan",
        PLAN,
        "--threads",
        "1",
    ]);
    let unsharded = t.elapsed();
    let work = cluster.path("improve");
    let t = Instant::now();
    let (array, merge) = cluster.submit(
        "improve",
        &[
            ("BOOK", s(&b)),
            ("ENGINE", "builtin"),
            ("WORK", s(&work)),
            ("LEARNBOOK", bin()),
            ("SHARDS", "2"),
            ("PLAN", PLAN),
        ],
    );
    cluster.wait_job(&merge, "COMPLETED", None);
    let sharded = t.elapsed();
    assert_eq!(cluster.task_states(&array), vec!["COMPLETED"; 2]);
    let analysed = common::count(&a, "SELECT count(*) FROM analysis");
    assert!(analysed > 0, "the unsharded run analysed nothing");
    for table in ["analysis", "positions"] {
        assert_eq!(differences(&a, &b, table, "*"), (0, 0), "{table} rows");
    }
    println!(
        "improve ({analysed} rows, plan {PLAN}): 2 shards through Slurm + merge {:.1} s; \
         one unsharded run (--threads 1) {:.1} s",
        sharded.as_secs_f64(),
        unsharded.as_secs_f64()
    );
}

/// The self-play pipeline: 8 games in 4 shards, merged, are the bytes one
/// run writes.
fn selfplay_pipeline(cluster: &Cluster) {
    let suite = repo().join("data/openings-sample.epd");
    let one = cluster.path("one.pgn");
    let t = Instant::now();
    ok(&[
        "selfplay",
        "--pgnout",
        s(&one),
        "--games",
        "8",
        "--openings",
        s(&suite),
        "--nodes",
        "500",
        "--concurrency",
        "1",
        "--seed",
        "1",
    ]);
    let unsharded = t.elapsed();
    let work = cluster.path("selfplay");
    let pgn = cluster.path("games.pgn");
    let t = Instant::now();
    let (array, merge) = cluster.submit(
        "selfplay",
        &[
            ("GAMES", "8"),
            ("OPENINGS", s(&suite)),
            ("PGN", s(&pgn)),
            ("WORK", s(&work)),
            ("LEARNBOOK", bin()),
            ("SHARDS", "4"),
            ("NODES", "500"),
            ("SEED", "1"),
        ],
    );
    cluster.wait_job(&merge, "COMPLETED", None);
    let sharded = t.elapsed();
    assert_eq!(cluster.task_states(&array), vec!["COMPLETED"; SHARDS]);
    let (whole, merged) = (fs::read(&one).expect("read"), fs::read(&pgn).expect("read"));
    assert!(!whole.is_empty());
    assert!(whole == merged, "the merged games differ from one run's");
    println!(
        "selfplay (8 games, --nodes 500): {SHARDS} shards through Slurm + merge-games {:.1} s; \
         one unsharded run {:.1} s; the same bytes",
        sharded.as_secs_f64(),
        unsharded.as_secs_f64()
    );
}

/// One test for the book pipelines, as they share a cluster and a book.
#[test]
fn slurm_job_arrays_merge_to_what_one_run_gives() {
    if !have_slurm() {
        return;
    }
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let t = Instant::now();
    let cluster = Cluster::start();
    println!(
        "a one-node Slurm cluster ({}) up in {:.1} s",
        cluster.node,
        t.elapsed().as_secs_f64()
    );
    let built = build_pipeline(&cluster);
    analyze_pipeline(&cluster, &built);
    improve_pipeline(&cluster, &built);
    selfplay_pipeline(&cluster);
}
