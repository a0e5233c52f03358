//! `bench build`: a full build against `polyglot make-book` on the same PGN.

use std::{
    io::{Read, Write},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{bail, Context, Result};
use clap::Args;
use learnbook::book::pgn::{input::open_input, validate::Filter};

use super::{median, tempfile_dir};

/// Full build (parse, SQLite, values) against `polyglot make-book` on the same decompressed PGN.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The PGN (any compression); it is decompressed once, for both tools.
    #[arg(value_name = "FILE.pgn")]
    pgn: PathBuf,
    /// Store moves up to this ply (both tools).
    #[arg(long, default_value_t = 40)]
    max_ply: u32,
    /// polyglot's -min-game.
    #[arg(long, default_value_t = 3)]
    min_game: u32,
    /// Runs of each tool; the median is reported.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// The polyglot binary (a bare name is looked up on PATH, then in /usr/games).
    #[arg(long, default_value = "polyglot")]
    polyglot: String,
    /// Work directory (default: a new temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
}

impl BuildArgs {
    pub(super) fn run(self) -> Result<()> {
        bench_build(
            &self.pgn,
            self.max_ply,
            self.min_game,
            self.runs,
            &self.polyglot,
            self.dir,
        )
    }
}

/// Wall time and peak resident memory of a child process.
pub(super) struct Measured {
    pub(super) seconds: f64,
    pub(super) max_rss_mb: f64,
}

pub(super) fn measure(cmd: &mut Command) -> Result<Measured> {
    let start = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    let pid = child.id();
    let mut stderr = child.stderr.context("no stderr")?;
    let mut err = String::new();
    // Drain stderr so the child never blocks on a full pipe.
    let _ = stderr.read_to_string(&mut err);
    let exited =
        learnbook::sys::wait_with_usage(pid).with_context(|| format!("cannot wait for {cmd:?}"))?;
    let seconds = start.elapsed().as_secs_f64();
    if exited.code != Some(0) {
        bail!("{cmd:?} failed: {}", err.trim());
    }
    Ok(Measured {
        seconds,
        max_rss_mb: exited.max_rss_kb as f64 / 1024.0,
    })
}

/// A bare program name as the shell would find it, falling back to
/// `/usr/games`, where Debian installs polyglot and the engines but which is
/// often not on root's or a service's PATH.
fn find_program(name: &str) -> PathBuf {
    if name.contains('/') {
        return PathBuf::from(name);
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()));
    let games = Path::new("/usr/games").join(name);
    if !on_path && games.is_file() {
        games
    } else {
        PathBuf::from(name)
    }
}

fn bench_build(
    pgn: &Path,
    max_ply: u32,
    min_game: u32,
    runs: usize,
    polyglot: &str,
    dir: Option<PathBuf>,
) -> Result<()> {
    let tmp;
    let dir = match dir {
        Some(d) => {
            std::fs::create_dir_all(&d)?;
            d
        }
        None => {
            tmp = tempfile_dir()?;
            tmp.clone()
        }
    };
    let plain = dir.join("input.pgn");
    {
        let mut input = open_input(pgn)?;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&plain)?);
        std::io::copy(&mut input, &mut out).context("decompressing")?;
        out.flush()?;
    }
    let size = std::fs::metadata(&plain)?.len();
    println!(
        "input: {} ({:.1} MB decompressed), max ply {max_ply}, 2-core machine: {} cores here",
        pgn.display(),
        size as f64 / 1e6,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let polyglot = find_program(polyglot);
    let exe = std::env::current_exe()?;
    let (mut ours, mut theirs, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    let mut rss = (0.0f64, 0.0f64);
    for run in 0..runs.max(1) {
        let bin = dir.join("polyglot.bin");
        let p = measure(Command::new(&polyglot).args([
            "make-book",
            "-pgn",
            plain.to_str().context("path")?,
            "-bin",
            bin.to_str().context("path")?,
            "-max-ply",
            &max_ply.to_string(),
            "-min-game",
            &min_game.to_string(),
        ]))?;
        let book = dir.join("book.sqlite");
        let _ = std::fs::remove_file(&book);
        let o = measure(Command::new(&exe).args([
            "build",
            "--book",
            book.to_str().context("path")?,
            "--max-ply",
            &max_ply.to_string(),
            plain.to_str().context("path")?,
        ]))?;
        let filter = Filter {
            max_ply,
            min_elo: None,
            allow_duplicates: true,
            no_tails: false,
        };
        let f = learnbook::book::build::validate_only(vec![plain.clone()], &filter)?;
        println!(
            "run {}: polyglot make-book {:.2} s ({:.0} MB peak), learnbook build {:.2} s ({:.0} MB peak), reading and validating alone {:.2} s",
            run + 1,
            p.seconds,
            p.max_rss_mb,
            o.seconds,
            o.max_rss_mb,
            f.seconds
        );
        theirs.push(p.seconds);
        ours.push(o.seconds);
        floor.push(f.seconds);
        rss = (rss.0.max(p.max_rss_mb), rss.1.max(o.max_rss_mb));
    }
    let (o, p, f) = (median(&mut ours), median(&mut theirs), median(&mut floor));
    println!(
        "median: learnbook {o:.2} s, polyglot {p:.2} s, ratio learnbook/polyglot = {:.3}",
        o / p
    );
    println!(
        "reading, parsing and validating every move (both cores, nothing counted or stored): {f:.2} s, ratio to polyglot = {:.3}",
        f / p
    );
    println!(
        "peak memory: learnbook {:.0} MB, polyglot {:.0} MB",
        rss.1, rss.0
    );
    Ok(())
}
