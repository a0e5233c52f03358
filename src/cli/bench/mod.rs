//! `learnbook bench ...`: measured side by side with the named peer, in one
//! run, reported as ratios. Each bench's arguments sit beside its run, in
//! its file; here only the list of benches and the dispatch.
//!
//! * `search`: wac, perft (and `bench` alone, the fixed-depth search).
//! * `games`: play, selfplay, tune, fit.
//! * `train`: train (the net trainer on one thread and on two).
//! * `build`: build (against `polyglot make-book`).
//! * `export`: export (against `jja`).
//! * `generate`: generate (games for the build benchmarks).
//! * `quality`: book-quality (a judge engine scores the books' moves).
//! * `book`: analyze, grow, learn (on copies of a book).
//! * `multipv`: multipv.
//! * `suite`: suite (opening suites by the resolution they give).
//! * `serve`: serve (the explorer under load).
//! * `adapter`: uci --engine against the bare engine (time a move, stop, learning a game).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

mod adapter;
mod book;
mod build;
mod export;
mod games;
mod generate;
mod multipv;
mod quality;
mod search;
mod serve;
mod suite;
mod train;

pub use search::search;

/// Arguments of `learnbook bench`.
#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: Option<BenchCommand>,
    /// Search depth of the fixed-position bench.
    #[arg(long, default_value_t = 12)]
    depth: i32,
    /// Transposition table, MB.
    #[arg(long, default_value_t = 64)]
    hash: usize,
    /// The evaluation: `default` (the net embedded in the binary), `none` (the
    /// hand-crafted evaluation) or a net file (`train`'s output).
    #[arg(long, value_name = "NET.nnue|default|none", default_value = "default")]
    net: learnbook::engine::default_net::NetChoice,
}

/// The named bench, or alone the engine's fixed-depth search.
pub fn bench(args: BenchArgs) -> Result<std::process::ExitCode> {
    let BenchArgs {
        what,
        depth,
        hash,
        net,
    } = args;
    match what {
        Some(what) => run(what)?,
        None => print!("{}", search(depth, hash, search::load_net(&net)?)?),
    };
    Ok(std::process::ExitCode::SUCCESS)
}

/// The benches, in the order `bench --help` lists them; each one's help is
/// its arguments' doc comment.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    Wac(search::WacArgs),
    Play(games::PlayArgs),
    Selfplay(games::SelfplayArgs),
    Tune(games::TuneArgs),
    Perft(search::PerftArgs),
    Build(build::BuildArgs),
    Export(export::ExportArgs),
    Generate(generate::GenerateArgs),
    Fit(games::FitArgs),
    Train(train::TrainArgs),
    BookQuality(quality::BookQualityArgs),
    Analyze(book::AnalyzeArgs),
    Multipv(multipv::MultipvArgs),
    Grow(book::GrowArgs),
    Suite(suite::SuiteArgs),
    Learn(book::LearnArgs),
    Serve(serve::ServeArgs),
    Adapter(adapter::AdapterArgs),
}

/// Runs one bench.
pub fn run(cmd: BenchCommand) -> Result<()> {
    use BenchCommand::*;
    match cmd {
        Wac(a) => a.run(),
        Play(a) => a.run(),
        Selfplay(a) => a.run(),
        Tune(a) => a.run(),
        Perft(a) => a.run(),
        Build(a) => a.run(),
        Export(a) => a.run(),
        Generate(a) => a.run(),
        Fit(a) => a.run(),
        Train(a) => a.run(),
        BookQuality(a) => a.run(),
        Analyze(a) => a.run(),
        Multipv(a) => a.run(),
        Grow(a) => a.run(),
        Suite(a) => a.run(),
        Learn(a) => a.run(),
        Serve(a) => a.run(),
        Adapter(a) => a.run(),
    }
}

/// The median of `v` (sorted in place): the figure of several runs.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A fresh work directory of this process.
fn tempfile_dir() -> Result<PathBuf> {
    let d = std::env::temp_dir().join(format!("learnbook-bench-{}", std::process::id()));
    std::fs::create_dir_all(&d)?;
    Ok(d)
}
