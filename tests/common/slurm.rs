//! The Slurm tests' harness: a one-node cluster (munged, slurmctld, slurmd)
//! of the test's own in a temporary directory, its jobs submitted and waited
//! for, and whether Slurm and root are there. Used by `slurm.rs` and
//! `slurm_tune.rs`.

use std::{
    collections::HashMap,
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use super::{have, repo, s};

pub const SLURMCTLD: &str = "/usr/sbin/slurmctld";
pub const SLURMD: &str = "/usr/sbin/slurmd";
pub const MUNGED: &str = "/usr/sbin/munged";
pub const SHARDS: usize = 4;
/// How long a pipeline may take before the test gives up (a hang guard:
/// a busy machine runs the jobs minutes later than a quiet one).
pub const PATIENCE: Duration = Duration::from_secs(1200);

/// One cluster at a time: the harness runs the tests in parallel, and every
/// cluster is this machine's one node.
pub static ONE_CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A one-node Slurm cluster of the test's own: daemons stopped (and jobs
/// cancelled) when dropped, even on a panic.
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub conf: PathBuf,
    pub node: String,
    /// munged, slurmctld, slurmd: stopped in the reverse order.
    pub daemons: Vec<(&'static str, Child)>,
}

/// A free TCP port on this machine (free when asked).
pub fn free_port() -> std::net::TcpListener {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port")
}

impl Cluster {
    pub fn start() -> Cluster {
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
        wait_until("munged's socket", Duration::from_secs(120), || {
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
        wait_until("the node idle", Duration::from_secs(300), || {
            let out = cluster.run("sinfo", &["-h", "-n", &node, "-o", "%T"]);
            let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (state == "idle").then_some(())
        })
        .unwrap_or_else(|| cluster.fail("the node never became idle"));
        cluster
    }

    pub fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// A Slurm command of this cluster, without the variables of any other
    /// (the test may itself run under Slurm).
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        for (name, _) in std::env::vars() {
            if name.starts_with("SLURM_") || name.starts_with("SBATCH_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("SLURM_CONF", &self.conf).stdin(Stdio::null());
        cmd
    }

    pub fn run(&self, program: &str, args: &[&str]) -> Output {
        self.command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run {program}: {e}"))
    }

    pub fn ok(&self, program: &str, args: &[&str]) -> String {
        let out = self.run(program, args);
        if !out.status.success() {
            self.fail(&format!("{program} {args:?}: {out:?}"));
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Submits a pipeline with its driver script `deploy/slurm/NAME.sh`:
    /// (array job, merge job).
    pub fn submit(&self, name: &str, env: &[(&str, &str)]) -> (String, String) {
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
    pub fn submit_text(&self, name: &str, env: &[(&str, &str)]) -> String {
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
    pub fn job(&self, id: &str) -> HashMap<String, String> {
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
    pub fn task_states(&self, id: &str) -> Vec<String> {
        self.ok("scontrol", &["show", "job", "-o", id])
            .lines()
            .filter_map(|l| l.split("JobState=").nth(1))
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect()
    }

    /// Waits for job `id` to reach state `want` (with `reason` if given);
    /// fails the test if it ends otherwise.
    pub fn wait_job(&self, id: &str, want: &str, reason: Option<&str>) {
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
    pub fn wait_array(&self, id: &str) {
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
    pub fn fail(&self, why: &str) -> ! {
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

pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Starts a daemon in the foreground, its output into `log`. It gets a
/// SIGTERM if the test's thread ends without stopping it (the test killed).
pub fn spawn_logged(cmd: &mut Command, log: &Path) -> Child {
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
pub fn wait_until<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
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

pub fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Whether Slurm and root are there (else the test is skipped, or fails
/// under LEARNBOOK_REQUIRE_EXTERNAL=1).
pub fn have_slurm() -> bool {
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
