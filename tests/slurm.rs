//! Issue 24 on a real Slurm: a one-node cluster (munged, slurmctld, slurmd)
//! started in a temporary directory runs the job-array scripts of
//! `deploy/slurm` as they are. The sharded build merged by its dependent
//! job equals one `build`; a shard killed mid-build and requeued, and a
//! shard that failed and was run again, change nothing. The sharded
//! analysis and self-play give what one run gives. The SPSA tune as
//! rounds of job arrays (`deploy/slurm/tune.sh`) reaches the checkpoint of
//! one `learnbook tune` of the same seed and schedule, with a task killed
//! mid-play and requeued too.

mod common;

use std::{
    collections::HashMap,
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use common::{assert_same_book, bin, differences, have, ok, repo, s, sample};
use learnbook::tune::checkpoint::State;

const SLURMCTLD: &str = "/usr/sbin/slurmctld";
const SLURMD: &str = "/usr/sbin/slurmd";
const MUNGED: &str = "/usr/sbin/munged";
const SHARDS: usize = 4;
/// How long a pipeline may take before the test gives up.
const PATIENCE: Duration = Duration::from_secs(300);

/// One cluster at a time: the harness runs the tests in parallel, and every
/// cluster is this machine's one node.
static ONE_CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A one-node Slurm cluster of the test's own: daemons stopped (and jobs
/// cancelled) when dropped, even on a panic.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    node: String,
    /// munged, slurmctld, slurmd: stopped in the reverse order.
    daemons: Vec<(&'static str, Child)>,
}

/// A free TCP port on this machine (free when asked).
fn free_port() -> std::net::TcpListener {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port")
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        // munged wants its socket's directory (and those above) open to all.
        set_mode(&root, 0o755);
        for sub in ["munge", "state", "spool", "log"] {
            fs::create_dir(root.join(sub)).expect("mkdir");
            set_mode(&root.join(sub), 0o755);
        }
        let key = root.join("munge/munge.key");
        let made = Command::new("/usr/sbin/mungekey")
            .args(["--create", "--keyfile", s(&key)])
            .output()
            .expect("run mungekey");
        assert!(made.status.success(), "mungekey: {made:?}");
        let socket = root.join("munge/socket");
        let mut cluster = Cluster {
            conf: root.join("slurm.conf"),
            dir,
            node: String::new(),
            daemons: Vec::new(),
        };
        cluster.daemons.push((
            "munged",
            spawn_logged(
                Command::new(MUNGED).args([
                    "--foreground",
                    "--force",
                    &format!("--key-file={}", s(&key)),
                    &format!("--socket={}", s(&socket)),
                    &format!("--pid-file={}", s(&root.join("munge/pid"))),
                    &format!("--log-file={}", s(&root.join("munge/log"))),
                    &format!("--seed-file={}", s(&root.join("munge/seed"))),
                ]),
                &root.join("log/munged.out"),
            ),
        ));
        wait_until("munged's socket", Duration::from_secs(20), || {
            socket.exists().then_some(())
        })
        .unwrap_or_else(|| cluster.fail("munged did not start"));
        // The node as slurmd sees this machine: its name, CPUs and memory.
        let hw = Command::new(SLURMD).arg("-C").output().expect("slurmd -C");
        let node_line = String::from_utf8_lossy(&hw.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        cluster.node = node_line
            .strip_prefix("NodeName=")
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or_else(|| panic!("slurmd -C: {hw:?}"))
            .to_string();
        let node = &cluster.node;
        let (ctld_port, d_port) = {
            let (a, b) = (free_port(), free_port());
            (
                a.local_addr().expect("port").port(),
                b.local_addr().expect("port").port(),
            )
        };
        let path = |p: &str| root.join(p).to_str().expect("utf-8").to_string();
        fs::write(
            &cluster.conf,
            format!(
                "ClusterName=learnbook-test\n\
                 SlurmctldHost={node}(127.0.0.1)\n\
                 SlurmctldPort={ctld_port}\n\
                 SlurmdPort={d_port}\n\
                 SlurmUser=root\n\
                 SlurmdUser=root\n\
                 AuthType=auth/munge\n\
                 CredType=cred/munge\n\
                 AuthInfo=socket={socket},cred_expire=5\n\
                 StateSaveLocation={state}\n\
                 SlurmdSpoolDir={spool}\n\
                 SlurmctldPidFile={ctld_pid}\n\
                 SlurmdPidFile={d_pid}\n\
                 SlurmctldLogFile={ctld_log}\n\
                 SlurmdLogFile={d_log}\n\
                 ProctrackType=proctrack/linuxproc\n\
                 TaskPlugin=task/none\n\
                 SelectType=select/cons_tres\n\
                 SelectTypeParameters=CR_Core\n\
                 SchedulerType=sched/backfill\n\
                 SchedulerParameters=sched_interval=1,bf_interval=1\n\
                 MpiDefault=none\n\
                 ReturnToService=2\n\
                 JobRequeue=1\n\
                 KillWait=2\n\
                 MinJobAge=3600\n\
                 MailProg=/bin/true\n\
                 JobAcctGatherType=jobacct_gather/none\n\
                 AccountingStorageType=accounting_storage/none\n\
                 JobCompType=jobcomp/none\n\
                 {node_line} NodeAddr=127.0.0.1 State=UNKNOWN\n\
                 PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP\n",
                socket = s(&socket),
                state = path("state"),
                spool = path("spool"),
                ctld_pid = path("slurmctld.pid"),
                d_pid = path("slurmd.pid"),
                ctld_log = path("log/slurmctld.log"),
                d_log = path("log/slurmd.log"),
            ),
        )
        .expect("write slurm.conf");
        let conf = s(&cluster.conf).to_string();
        let ctld = spawn_logged(
            Command::new(SLURMCTLD).args(["-D", "-f", &conf]),
            &root.join("log/slurmctld.out"),
        );
        cluster.daemons.push(("slurmctld", ctld));
        let d = spawn_logged(
            Command::new(SLURMD).args(["-D", "-N", &cluster.node, "-f", &conf]),
            &root.join("log/slurmd.out"),
        );
        cluster.daemons.push(("slurmd", d));
        let node = cluster.node.clone();
        wait_until("the node idle", Duration::from_secs(60), || {
            let out = cluster.run("sinfo", &["-h", "-n", &node, "-o", "%T"]);
            let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (state == "idle").then_some(())
        })
        .unwrap_or_else(|| cluster.fail("the node never became idle"));
        cluster
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// A Slurm command of this cluster, without the variables of any other
    /// (the test may itself run under Slurm).
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        for (name, _) in std::env::vars() {
            if name.starts_with("SLURM_") || name.starts_with("SBATCH_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("SLURM_CONF", &self.conf).stdin(Stdio::null());
        cmd
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        self.command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run {program}: {e}"))
    }

    fn ok(&self, program: &str, args: &[&str]) -> String {
        let out = self.run(program, args);
        if !out.status.success() {
            self.fail(&format!("{program} {args:?}: {out:?}"));
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Submits a pipeline with its driver script `deploy/slurm/NAME.sh`:
    /// (array job, merge job).
    fn submit(&self, name: &str, env: &[(&str, &str)]) -> (String, String) {
        let text = self.submit_text(name, env);
        let id = |key: &str| {
            text.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .unwrap_or_else(|| panic!("no {key} in {text:?}"))
                .to_string()
        };
        (id("shards="), id("merge="))
    }

    /// Runs the driver `deploy/slurm/NAME.sh`: what it printed.
    fn submit_text(&self, name: &str, env: &[(&str, &str)]) -> String {
        let script = repo().join(format!("deploy/slurm/{name}.sh"));
        let out = self
            .command("bash")
            .arg(&script)
            .envs(env.iter().copied())
            .current_dir(self.dir.path())
            .output()
            .expect("run the driver");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            self.fail(&format!("{name}.sh: {out:?}"));
        }
        text
    }

    /// The fields of `scontrol show job ID` (the first job of an array).
    fn job(&self, id: &str) -> HashMap<String, String> {
        let text = self.ok("scontrol", &["show", "job", "-o", id]);
        text.lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The state of every task of an array job.
    fn task_states(&self, id: &str) -> Vec<String> {
        self.ok("scontrol", &["show", "job", "-o", id])
            .lines()
            .filter_map(|l| l.split("JobState=").nth(1))
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect()
    }

    /// Waits for job `id` to reach state `want` (with `reason` if given);
    /// fails the test if it ends otherwise.
    fn wait_job(&self, id: &str, want: &str, reason: Option<&str>) {
        let what = format!("job {id} {want} {}", reason.unwrap_or(""));
        let found = wait_until(&what, PATIENCE, || {
            let job = self.job(id);
            let state = job.get("JobState").map(String::as_str).unwrap_or("");
            let why = job.get("Reason").map(String::as_str);
            if state == want && reason.is_none_or(|r| why == Some(r)) {
                return Some(Ok(()));
            }
            let over = !matches!(state, "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING")
                || why == Some("DependencyNeverSatisfied");
            over.then(|| Err(format!("{state} ({why:?})")))
        });
        match found {
            Some(Ok(())) => {}
            Some(Err(state)) => self.fail(&format!("waiting for {what}: it is {state}")),
            None => self.fail(&format!("gave up waiting for {what}")),
        }
    }

    /// Waits until no task of the array `id` is pending or running.
    fn wait_array(&self, id: &str) {
        wait_until(&format!("array {id} over"), PATIENCE, || {
            let states = self.task_states(id);
            let busy = states.iter().any(|s| {
                matches!(
                    s.as_str(),
                    "PENDING" | "RUNNING" | "COMPLETING" | "REQUEUED"
                )
            });
            (!busy).then_some(())
        })
        .unwrap_or_else(|| self.fail(&format!("array {id} never ended")));
    }

    /// Fails the test with `why` and what the daemons and jobs wrote.
    fn fail(&self, why: &str) -> ! {
        let mut report = String::new();
        for name in ["log/slurmctld.log", "log/slurmd.log", "log/munged.out"] {
            let text = fs::read_to_string(self.path(name)).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(25).collect();
            report += &format!("--- {name} (end)\n");
            for l in tail.iter().rev() {
                report += &format!("{l}\n");
            }
        }
        // The jobs' own output (the pipelines' logs directories).
        for work in fs::read_dir(self.dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            for log in fs::read_dir(work.path().join("logs"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let text = fs::read_to_string(log.path()).unwrap_or_default();
                report += &format!("--- {}\n{text}", log.path().display());
            }
        }
        report += &format!("--- squeue\n{:?}\n", self.run("squeue", &["-a"]));
        panic!("{why}\n{report}");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first (their processes are slurmd's children's children),
        // then the daemons, munged last.
        let _ = self.command("scancel").arg("--user=root").output();
        let _ = wait_until("the jobs gone", Duration::from_secs(10), || {
            let out = self.command("squeue").args(["-h"]).output().ok()?;
            (out.status.success() && out.stdout.is_empty()).then_some(())
        });
        while let Some((_, mut child)) = self.daemons.pop() {
            // SAFETY: kill(2) on the pid of a child this test started.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Starts a daemon in the foreground, its output into `log`. It gets a
/// SIGTERM if the test's thread ends without stopping it (the test killed).
fn spawn_logged(cmd: &mut Command, log: &Path) -> Child {
    use std::os::unix::process::CommandExt;
    let file = fs::File::create(log).expect("log file");
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    cmd.stdin(Stdio::null())
        .stdout(file.try_clone().expect("dup"))
        .stderr(file)
        .spawn()
        .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"))
}

/// Polls `f` every 100 ms until it gives something, or `limit` passes.
fn wait_until<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > deadline {
            eprintln!("timed out waiting for {what}");
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

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

/// Whether Slurm and root are there (else the test is skipped, or fails
/// under LEARNBOOK_REQUIRE_EXTERNAL=1).
fn have_slurm() -> bool {
    let present = [
        SLURMCTLD,
        SLURMD,
        MUNGED,
        "/usr/sbin/mungekey",
        "/usr/bin/sbatch",
    ]
    .iter()
    .all(|p| Path::new(p).is_file());
    if !have("slurmctld (Debian's slurm-wlm)", present) {
        return false;
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    have("root (slurmd runs each job as its user)", root)
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
