//! `bench export`: `learnbook export` to a GUI's book format against `jja`
//! writing the same format, in one run, as a ratio, with the files' sizes.
//!
//! `jja` 0.9 writes an ABK book only from an ABK or CTG book (`jja edit
//! X.bin -o Y.abk` is "unsupported"), so the peer task for ABK is `jja`
//! rewriting our ABK export (`jja edit ours.abk -o jja.abk`: it reads the
//! whole tree, merges it by position and lays it out again), the same moves
//! in the same format. `jja edit` on an ABK book edits the start position's
//! moves as CSV, read from standard input when that is not a terminal: it
//! is given those moves unchanged. The Polyglot reference book's size is printed beside
//! them. A format is an arm of [`peer`]: its peer command and what it does.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, Context, Result};
use clap::Args;
use learnbook::book::formats::BookFormat;

use super::build::measure;
use super::tempfile_dir;

/// `export` to a GUI's format (--format abk) against jja writing the same format, best of
/// --runs, as a ratio, with the files' sizes.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The learnbook book to export.
    #[arg(long)]
    pub book: PathBuf,
    /// The format: abk (jja 0.9.1 writes no .exp from a book, so exp has no peer here).
    #[arg(long, default_value = "abk")]
    pub format: BookFormat,
    /// --weights of the export.
    #[arg(long, default_value = "games")]
    pub weights: String,
    /// --min-games of the export.
    #[arg(long, default_value_t = 3)]
    pub min_games: u32,
    /// Runs of each tool; the best is reported.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// The Polyglot reference book, whose size is printed beside the others.
    #[arg(
        long,
        value_name = "X.bin",
        default_value = "../shared/data/polyglot/master-games-maxply40-mingame3.bin"
    )]
    pub reference: PathBuf,
    /// The jja binary (a bare name is looked up on PATH, then in ~/.cargo/bin).
    #[arg(long, default_value = "jja")]
    pub jja: String,
    /// Work directory (default: a new temporary directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// Builds the peer's command from our export and the peer's output.
type PeerCommand = Box<dyn Fn(&Path, &Path) -> Result<Command>>;

/// The peer's side of one format: what it does, and the command that does
/// it given our export `ours` and its output `out`.
struct Peer {
    what: &'static str,
    extension: &'static str,
    command: PeerCommand,
}

/// The peer task of each format.
fn peer(format: BookFormat, jja: PathBuf) -> Result<Peer> {
    Ok(match format {
        BookFormat::Abk => Peer {
            what: "jja edit ours.abk -o jja.abk (jja 0.9 writes ABK only from ABK or CTG)",
            extension: "abk",
            command: Box::new(move |ours, out| {
                let csv = out.with_extension("start.csv");
                std::fs::write(&csv, start_moves_csv(ours)?)?;
                let mut c = Command::new(&jja);
                c.arg("edit").arg(ours).arg("-o").arg(out);
                c.stdin(std::fs::File::open(&csv)?);
                Ok(c)
            }),
        },
        BookFormat::Exp => bail!("bench export --format exp: jja 0.9.1 cannot write an experience file from a book (only from its own dump or from evaluations), so there is no peer to time against"),
        BookFormat::Bin | BookFormat::Pgn => {
            bail!("bench export compares abk with jja")
        }
    })
}

/// The start position's moves of an ABK book as `jja edit` lists them
/// (`*,uci,priority,ngames,nwon,nlost`).
fn start_moves_csv(abk: &Path) -> Result<String> {
    let book = learnbook::book::formats::abk::read_file(abk)?;
    let mut csv = String::from("*,uci,priority,ngames,nwon,nlost\n");
    for (i, m) in book.moves.iter().filter(|m| m.depth == 0).enumerate() {
        // White moves first: won and lost are White's.
        let c = m.counts;
        csv.push_str(&format!(
            "{},{},{},{},{},{}\n",
            i + 1,
            m.uci,
            m.priority,
            c.total(),
            c.white,
            c.black
        ));
    }
    Ok(csv)
}

/// `jja` as named: a path, or a name on PATH, else in cargo's bin
/// directory (where `cargo install` puts it).
fn find_jja(name: &str) -> PathBuf {
    if name.contains('/') {
        return PathBuf::from(name);
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()));
    let cargo = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cargo/bin").join(name))
        .filter(|p| p.is_file());
    match cargo {
        Some(p) if !on_path => p,
        _ => PathBuf::from(name),
    }
}

fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn size_mb(path: &Path) -> Result<f64> {
    Ok(std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len() as f64
        / 1e6)
}

impl ExportArgs {
    pub(super) fn run(self) -> Result<()> {
        bench_export(self)
    }
}

fn bench_export(args: ExportArgs) -> Result<()> {
    let tmp;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            tmp = tempfile_dir()?;
            tmp.clone()
        }
    };
    let peer = peer(args.format, find_jja(&args.jja))?;
    let exe = std::env::current_exe()?;
    let ours = dir.join(format!("ours.{}", peer.extension));
    let theirs = dir.join(format!("jja.{}", peer.extension));
    let bin = dir.join("ours.bin");
    let export = |out: &Path| -> Command {
        let mut c = Command::new(&exe);
        c.arg("export")
            .arg("--book")
            .arg(&args.book)
            .arg("--out")
            .arg(out)
            .args(["--weights", &args.weights])
            .args(["--min-games", &args.min_games.to_string()]);
        c
    };
    println!(
        "book: {}, export --weights {} --min-games {}, best of {} runs, {} cores here",
        args.book.display(),
        args.weights,
        args.min_games,
        args.runs.max(1),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let (mut o, mut t, mut b) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..args.runs.max(1) {
        let ours_run = measure(&mut export(&ours))?;
        let _ = std::fs::remove_file(&theirs);
        let theirs_run = measure(&mut (peer.command)(&ours, &theirs)?)?;
        let bin_run = measure(&mut export(&bin))?;
        println!(
            "run {}: learnbook export {:.2} s ({:.0} MB peak), {} {:.2} s ({:.0} MB peak), learnbook export to .bin {:.2} s",
            run + 1,
            ours_run.seconds,
            ours_run.max_rss_mb,
            peer.what,
            theirs_run.seconds,
            theirs_run.max_rss_mb,
            bin_run.seconds
        );
        o.push(ours_run.seconds);
        t.push(theirs_run.seconds);
        b.push(bin_run.seconds);
    }
    let (o, t, b) = (best(&o), best(&t), best(&b));
    println!(
        "best: learnbook {o:.2} s, jja {t:.2} s, ratio learnbook/jja = {:.3}; learnbook to .bin {b:.2} s",
        o / t
    );
    let reference = if args.reference.is_file() {
        format!(
            ", Polyglot reference {} {:.2} MB",
            args.reference.display(),
            size_mb(&args.reference)?
        )
    } else {
        String::new()
    };
    println!(
        "sizes: ours {:.2} MB, jja's {:.2} MB, our .bin of the same selection {:.2} MB{reference}",
        size_mb(&ours)?,
        size_mb(&theirs)?,
        size_mb(&bin)?
    );
    Ok(())
}
