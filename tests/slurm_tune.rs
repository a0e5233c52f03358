//! The SPSA tune as rounds of job arrays on a real Slurm
//! (`deploy/slurm/tune.sh`, the one-node cluster of `tests/common/slurm.rs`):
//! it reaches the checkpoint of one `learnbook tune` of the same seed and
//! schedule, with a task killed mid-play and requeued too; and its
//! iterations per hour.

mod common;

use std::{
    fs,
    path::Path,
    time::{Duration, Instant},
};

use common::slurm::*;
use common::{bin, ok, repo, s};
use learnbook::tune::checkpoint::State;

/// The options of `learnbook tune` for a tune test's run (all but
/// --checkpoint, --out and --threads), as TUNE_ARGS takes them.
fn tune_options(
    openings: &Path,
    params: &Path,
    nodes: u32,
    pairs: u32,
    iterations: u32,
    match_every: Option<u32>,
) -> Vec<String> {
    let mut v: Vec<String> = [
        "--start",
        "default",
        "--params",
        s(params),
        "--nodes",
        &nodes.to_string(),
        "--pairs-per-iteration",
        &pairs.to_string(),
        "--iterations",
        &iterations.to_string(),
        "--openings",
        s(openings),
        "--seed",
        "5",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    if let Some(every) = match_every {
        v.extend(["--match-every".into(), every.to_string()]);
        v.extend(["--match-pairs".into(), "2".into()]);
    }
    v
}

/// The one-machine run: `learnbook tune` with `options` on `threads`
/// threads, into `dir/NAME.ckpt` and `NAME.toml`: its state and wall time.
fn tune_one(dir: &Path, name: &str, options: &[String], threads: u32) -> (State, Duration) {
    let ckpt = dir.join(format!("{name}.ckpt"));
    let out = dir.join(format!("{name}.toml"));
    let mut args: Vec<&str> = vec!["tune"];
    args.extend(options.iter().map(String::as_str));
    let threads = threads.to_string();
    args.extend([
        "--threads",
        &threads,
        "--checkpoint",
        s(&ckpt),
        "--out",
        s(&out),
    ]);
    let t = Instant::now();
    ok(&args);
    let took = t.elapsed();
    (
        State::load(&ckpt).expect("the one-machine checkpoint"),
        took,
    )
}

impl Cluster {
    /// Runs a whole tune as rounds through `deploy/slurm/tune.sh`
    /// (`SHARDS` tasks of `CPUS` 1): the driver's first array job id, once
    /// the chain of rounds has ended (no job left) with the run finished.
    fn tune_rounds(&self, work: &Path, options: &[String], learnbook: &str, shards: u32) -> String {
        let text = self.submit_text(
            "tune",
            &[
                ("TUNE_ARGS", &options.join(" ")),
                ("WORK", s(work)),
                ("LEARNBOOK", learnbook),
                ("SHARDS", &shards.to_string()),
            ],
        );
        let first = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix("shards="))
            .unwrap_or_else(|| panic!("no shards= in {text:?}"))
            .to_string();
        self.wait_tune(work);
        first
    }

    /// Waits until no job is left, and fails unless the run in `work` is finished.
    fn wait_tune(&self, work: &Path) {
        let ckpt = work.join("tune.ckpt");
        let over = wait_until("the tune's rounds over", 4 * PATIENCE, || {
            let queue = self.ok("squeue", &["-h", "-o", "%i %T %r"]);
            if queue.contains("DependencyNeverSatisfied") {
                return Some(Err(queue));
            }
            queue.trim().is_empty().then_some(Ok(()))
        });
        match over {
            Some(Ok(())) => {}
            Some(Err(q)) => self.fail(&format!("a round's step will never run: {q}")),
            None => self.fail("the tune's rounds never ended"),
        }
        let state = State::load(&ckpt).expect("the rounds' checkpoint");
        if learnbook::tune::shard::round_of(&state).is_some() {
            self.fail(&format!(
                "the chain of rounds stopped at iteration {}",
                state.iteration()
            ));
        }
    }
}

/// Issue 52: a 2-task array tune, round after round through tune.sh, ends
/// with the checkpoint of one `learnbook tune` of the same seed and
/// schedule: every iteration's results and theta, the progress matches
/// (one due mid-run, one after the last iteration), the values file.
#[test]
fn slurm_tune_rounds_reach_the_one_machine_checkpoint() {
    if !have_slurm() {
        return;
    }
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, openings, params) = common::tune_setup();
    let options = tune_options(&openings, &params, 600, 4, 4, Some(2));
    let (one, one_time) = tune_one(dir.path(), "one", &options, 2);
    assert_eq!((one.iteration(), one.matches.len()), (4, 2));
    let cluster = Cluster::start();
    let work = cluster.path("tune");
    let t = Instant::now();
    let first = cluster.tune_rounds(&work, &options, bin(), 2);
    let took = t.elapsed();
    let rounds = State::load(&work.join("tune.ckpt")).expect("checkpoint");
    assert_eq!(rounds.history, one.history, "iterations");
    assert_eq!(rounds.matches, one.matches, "progress matches");
    assert_eq!(rounds, one, "the whole state");
    assert_eq!(
        fs::read(work.join("tuned.toml")).expect("rounds' values"),
        fs::read(dir.path().join("one.toml")).expect("one's values"),
    );
    // Five rounds (four iterations, then the match after the last), two
    // tasks each, every one completed, and a step job each.
    let logs: Vec<String> = fs::read_dir(work.join("logs"))
        .expect("logs")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let steps = logs.iter().filter(|l| l.starts_with("tune-step-")).count();
    let tasks = logs.len() - steps;
    assert_eq!((tasks, steps), (10, 5), "{logs:?}");
    let parts = fs::read_dir(work.join("parts")).expect("parts").count();
    assert_eq!(parts, 10);
    assert_eq!(cluster.task_states(&first), vec!["COMPLETED"; 2]);
    println!(
        "tune (4 iterations of 4 pairs at --nodes 600, matches after 2 and 4): 5 rounds of 2 \
         Slurm tasks and a step job, {:.1} s from the driver to the end; one `tune --threads 2` \
         {:.1} s; the same checkpoint",
        took.as_secs_f64(),
        one_time.as_secs_f64()
    );
}

/// Issue 52: a task of a tune round stopped mid-play and requeued (killed
/// and run again, `Restarts=1`) changes nothing: the same checkpoint as one
/// `learnbook tune`.
#[test]
fn slurm_tune_task_killed_mid_play_and_requeued_changes_nothing() {
    if !have_slurm() {
        return;
    }
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, openings, params) = common::tune_setup();
    let options = tune_options(&openings, &params, 3000, 4, 2, None);
    let (one, _) = tune_one(dir.path(), "one", &options, 2);
    let cluster = Cluster::start();
    let work = cluster.path("tune-killed");
    // The first run of task 1 of the first round stops its tune-shard once
    // it has played for 0.1 s of CPU (past reading the checkpoint), and
    // waits to be killed.
    let wrapper = cluster.path("learnbook-tune-wrapper");
    fs::write(
        &wrapper,
        format!(
            r#"#!/bin/bash
set -u
if [ "$1" = tune-shard ] && [ "$((SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN))" = 1 ] &&
  mkdir "$WORK/stopped-once" 2>/dev/null; then
  "{bin}" "$@" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    read -ra st </proc/$pid/stat || break
    if [ $((st[13] + st[14])) -ge 10 ]; then break; fi
    sleep 0.01
  done
  kill -STOP "$pid" 2>/dev/null
  if [ -e "$WORK/parts/round-0.shard-1-of-2.part" ]; then what=finished; else what=mid-play; fi
  echo "$what" >"$WORK/stopped.tmp" && mv "$WORK/stopped.tmp" "$WORK/stopped"
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
    let text = cluster.submit_text(
        "tune",
        &[
            ("TUNE_ARGS", &options.join(" ")),
            ("WORK", s(&work)),
            ("LEARNBOOK", s(&wrapper)),
            ("SHARDS", "2"),
        ],
    );
    let array = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("shards="))
        .unwrap_or_else(|| panic!("no shards= in {text:?}"))
        .to_string();
    let stopped = work.join("stopped");
    wait_until("task 1 stopped", PATIENCE, || {
        stopped.exists().then_some(())
    })
    .unwrap_or_else(|| cluster.fail("task 1 never started"));
    assert_eq!(read(&stopped).trim(), "mid-play", "stopped before its part");
    cluster.ok("scontrol", &["requeue", &format!("{array}_1")]);
    cluster.wait_tune(&work);
    let task1 = cluster.job(&format!("{array}_1"));
    assert_eq!(task1["JobState"], "COMPLETED");
    assert_eq!(task1["Restarts"], "1", "{task1:?}");
    let log1 = read(&work.join(format!("logs/tune-{array}_1.out")));
    assert!(
        log1.contains("run 1") && log1.contains("DUE TO JOB REQUEUE") && log1.contains("run 2"),
        "{log1}"
    );
    let rounds = State::load(&work.join("tune.ckpt")).expect("checkpoint");
    assert_eq!(rounds.iteration(), 2);
    assert_eq!(rounds, one, "the same checkpoint as one run");
    println!(
        "tune: task 1 of round 0 stopped mid-play, requeued (Restarts=1) and run again: the \
         checkpoint after 2 rounds is one `tune`'s"
    );
}

/// Iterations per hour of the tune as rounds of 1 and of 2 one-core tasks,
/// beside one `tune` on 1 and 2 threads (docs/DISTRIBUTED.md). Not part of
/// the suite: `cargo test --release --test slurm -- --ignored --nocapture
/// slurm_tune_iterations_per_hour` (LEARNBOOK_TUNE_BENCH="NODES PAIRS
/// ITERATIONS", default "25000 8 4").
#[test]
#[ignore]
fn slurm_tune_iterations_per_hour() {
    if !have_slurm() {
        return;
    }
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let spec = std::env::var("LEARNBOOK_TUNE_BENCH").unwrap_or_else(|_| "25000 8 4".into());
    let n: Vec<u32> = spec
        .split_whitespace()
        .map(|x| {
            x.parse()
                .expect("LEARNBOOK_TUNE_BENCH: NODES PAIRS ITERATIONS")
        })
        .collect();
    let [nodes, pairs, iterations] = n[..] else {
        panic!("LEARNBOOK_TUNE_BENCH: NODES PAIRS ITERATIONS");
    };
    let (dir, _, params) = common::tune_setup();
    let openings = repo().join("data/openings-sample.epd");
    let options = tune_options(&openings, &params, nodes, pairs, iterations, None);
    let per_hour = |d: Duration| f64::from(iterations) * 3600.0 / d.as_secs_f64();
    let cluster = Cluster::start();
    let mut states = Vec::new();
    for tasks in [1, 2] {
        let work = cluster.path(&format!("tune-{tasks}"));
        let t = Instant::now();
        cluster.tune_rounds(&work, &options, bin(), tasks);
        let took = t.elapsed();
        println!(
            "{tasks} task(s): {iterations} iterations of {pairs} pairs at --nodes {nodes} in \
             {:.1} s: {:.0} iterations/hour",
            took.as_secs_f64(),
            per_hour(took)
        );
        states.push(State::load(&work.join("tune.ckpt")).expect("checkpoint"));
    }
    for threads in [1, 2] {
        let (state, took) = tune_one(dir.path(), &format!("one-{threads}"), &options, threads);
        println!(
            "one `tune --threads {threads}`: {:.1} s: {:.0} iterations/hour",
            took.as_secs_f64(),
            per_hour(took)
        );
        states.push(state);
    }
    assert!(states.windows(2).all(|w| w[0] == w[1]), "the same run");
}
