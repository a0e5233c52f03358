//! `bench play`, `bench selfplay`, `bench tune` and `bench fit`: games and
//! fits on one thread and on two.

use std::{
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::{bail, Context, Result};
use clap::Args;

use super::tempfile_dir;

/// Games per second of the built-in engine at --concurrency 1 and 2, in one run.
#[derive(Args, Debug)]
pub struct PlayArgs {
    /// Nodes a move.
    #[arg(long, default_value_t = 2000)]
    nodes: u64,
    /// Games per measurement.
    #[arg(long, default_value_t = 40)]
    games: usize,
    /// Openings (EPD or PGN).
    #[arg(long, value_name = "FILE")]
    openings: PathBuf,
}

impl PlayArgs {
    pub(super) fn run(self) -> Result<()> {
        bench_play(self.nodes, self.games, &self.openings)
    }
}

/// `selfplay` throughput: the same games with --concurrency 1 and 2 (checked to be the
/// same games), games/s and ratio.
#[derive(Args, Debug)]
pub struct SelfplayArgs {
    /// Nodes a move.
    #[arg(long, default_value_t = 5000)]
    nodes: u64,
    /// Games per measurement.
    #[arg(long, default_value_t = 40)]
    games: usize,
    /// Openings (EPD or PGN).
    #[arg(long, value_name = "FILE")]
    openings: PathBuf,
}

impl SelfplayArgs {
    pub(super) fn run(self) -> Result<()> {
        bench_selfplay(self.nodes, self.games, &self.openings)
    }
}

/// Tuner throughput: the same SPSA iterations with --threads 1 and 2, games/s and ratio.
#[derive(Args, Debug)]
pub struct TuneArgs {
    /// Nodes a move.
    #[arg(long, default_value_t = 2000)]
    nodes: u64,
    /// Game pairs per iteration.
    #[arg(long, default_value_t = 16)]
    pairs_per_iteration: usize,
    /// Iterations per measurement.
    #[arg(long, default_value_t = 10)]
    iterations: u64,
    /// Openings (EPD or PGN).
    #[arg(long, value_name = "FILE")]
    openings: PathBuf,
}

impl TuneArgs {
    pub(super) fn run(self) -> Result<()> {
        bench_tune(
            self.nodes,
            self.pairs_per_iteration,
            self.iterations,
            &self.openings,
        )
    }
}

/// `fit` throughput on 1 and 2 threads: positions read and traced per second, and
/// positions per second through the loss and its gradient (one epoch), with the ratios.
#[derive(Args, Debug)]
pub struct FitArgs {
    /// PGN games to read positions from (.pgn, .gz, .zst).
    #[arg(value_name = "FILE.pgn")]
    pgn: PathBuf,
    /// Use at most this many positions.
    #[arg(long, default_value_t = 500_000)]
    max_positions: usize,
    /// Epochs per measurement.
    #[arg(long, default_value_t = 10)]
    epochs: u32,
}

impl FitArgs {
    pub(super) fn run(self) -> Result<()> {
        bench_fit(&self.pgn, self.max_positions, self.epochs)
    }
}

/// Builtin self-play at a fixed node count, one worker and then two.
fn bench_play(nodes: u64, games: usize, openings: &Path) -> Result<()> {
    use learnbook::play::{
        game::{Adjudication, Limit},
        runner::{read_openings, run_match, MatchConfig, PlayerSpec},
    };
    let openings = read_openings(openings)?;
    let builtin = |name: &str| PlayerSpec::Builtin {
        name: name.into(),
        weights: None,
        net: learnbook::engine::default_net::NetChoice::HandCrafted,
        book: None,
        book_mode: learnbook::book::choose::Mode::Best,
    };
    let mut rates = Vec::new();
    for concurrency in [1, 2] {
        let cfg = MatchConfig {
            node_jitter: 0.0,
            players: [builtin("a"), builtin("b")],
            limit: Limit::Nodes(nodes),
            limits: [None, None],
            games,
            concurrency,
            openings: openings.clone(),
            random_seed: Some(1),
            repeat: true,
            noswap: false,
            pgn_out: None,
            sprt: None,
            sprt_play_on: false,
            adjudication: Adjudication::default(),
            learn: None,
            after_learn: None,
            event: "bench".into(),
        };
        let t = Instant::now();
        let mut plies = 0usize;
        run_match(&cfg, |_, g, _| plies += g.moves.len())?;
        let secs = t.elapsed().as_secs_f64();
        let rate = games as f64 / secs;
        println!("concurrency {concurrency}: {games} games ({plies} plies) in {secs:.2} s, {rate:.2} games/s");
        rates.push(rate);
    }
    println!(
        "ratio concurrency 2 / concurrency 1 = {:.2}",
        rates[1] / rates[0]
    );
    Ok(())
}

/// `selfplay` with its defaults (adjudication, table size) into a new file,
/// once with one thread and once with two; both files must hold the same games.
fn bench_selfplay(nodes: u64, games: usize, openings: &Path) -> Result<()> {
    use learnbook::play::{game::Adjudication, runner::read_openings, selfplay};
    let suite = read_openings(openings)?;
    let dir = tempfile_dir()?;
    let mut rates = Vec::new();
    let mut texts = Vec::new();
    for threads in [1, 2] {
        let out = dir.join(format!("selfplay-{threads}.pgn"));
        let _ = std::fs::remove_file(&out);
        let cfg = selfplay::Config {
            pgn_out: out.clone(),
            games,
            nodes,
            openings: suite.clone(),
            concurrency: threads,
            weights: learnbook::engine::params::Weights::default(),
            net: None,
            name: selfplay::player_name("default"),
            seed: 1,
            adjudication: Adjudication {
                draw: Some((34, 8, 20)),
                resign: Some((3, 400)),
                max_moves: Some(200),
            },
            hash_mb: 16,
            shard: learnbook::shard::Shard::WHOLE,
        };
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let s = selfplay::run(&cfg, selfplay::Existing::default(), |_| {})?;
        let secs = t.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu;
        let rate = s.progress.played as f64 / secs;
        println!(
            "threads {threads}: {} games ({} engine moves) in {secs:.2} s, {rate:.2} games/s; \
             CPU {cpu:.2} s, {:.2} cores busy on average",
            s.progress.played,
            s.progress.plies,
            cpu / secs
        );
        rates.push(rate);
        let text = std::fs::read_to_string(&out)
            .with_context(|| format!("cannot read {}", out.display()))?;
        // The Date tag is the day each game was written.
        texts.push(
            text.lines()
                .filter(|l| !l.starts_with("[Date "))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    if texts[0] != texts[1] {
        bail!("one and two threads played different games");
    }
    println!("same games on 1 and 2 threads");
    println!("ratio threads 2 / threads 1 = {:.2}", rates[1] / rates[0]);
    Ok(())
}

/// User and system CPU time of this process so far, in seconds: with the
/// wall time it shows whether the machine gave the threads their cores.
fn cpu_seconds() -> f64 {
    learnbook::sys::cpu_seconds()
}

/// The tuner's loop (games, steps, checkpoints) from `default` over every
/// parameter, once on one thread and once on two. Node-limited games make
/// both runs play the very same games, which is checked.
fn bench_tune(nodes: u64, pairs: usize, iterations: u64, openings: &Path) -> Result<()> {
    use learnbook::{
        engine::params::Weights,
        tune::{
            run::{run, Plan},
            settings::{AdjudicationSpec, LimitSpec},
            spsa::all_params,
        },
    };
    let dir = tempfile_dir()?;
    let mut rates = Vec::new();
    let mut histories = Vec::new();
    for threads in [1, 2] {
        let ckpt = dir.join(format!("bench-{threads}.ckpt"));
        let _ = std::fs::remove_file(&ckpt);
        let start = Weights::default();
        let (mut state, openings) = Plan {
            params: all_params(&start),
            start,
            limit: LimitSpec::Nodes(nodes),
            pairs_per_iteration: pairs,
            iterations,
            openings: openings.to_path_buf(),
            seed: 1,
            adjudication: AdjudicationSpec {
                draw: Some((34, 8, 20)),
                resign: Some((3, 400)),
                max_moves: Some(200),
            },
            engine: None,
            progress_match: None,
            net: None,
        }
        .begin(&ckpt)?;
        let t = Instant::now();
        run(
            &mut state,
            &openings,
            threads,
            &ckpt,
            &dir.join("bench.toml"),
            |_, _| {},
        )?;
        let secs = t.elapsed().as_secs_f64();
        let rate = state.games() as f64 / secs;
        println!(
            "threads {threads}: {iterations} iterations, {} games in {secs:.2} s, {rate:.2} games/s",
            state.games()
        );
        rates.push(rate);
        histories.push(state.history);
    }
    if histories[0] != histories[1] {
        bail!("one and two threads played different games");
    }
    println!("same games and theta on 1 and 2 threads");
    println!("ratio threads 2 / threads 1 = {:.2}", rates[1] / rates[0]);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Positions/s of reading and of the gradient, at 1 and 2 threads.
fn bench_fit(pgn: &Path, max_positions: usize, epochs: u32) -> Result<()> {
    use learnbook::tune::fit::{self, model::Model, samples};
    let sel = samples::Selection {
        skip_plies: 16,
        lambda: 1.0,
        max_positions,
        holdout: 0,
    };
    let w = learnbook::engine::params::Weights::default();
    let model = Model::new()?;
    let x: Vec<f64> = w.values().iter().map(|&v| f64::from(v)).collect();
    let mut read_rate = Vec::new();
    let mut epoch_rate = Vec::new();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .context("cannot start the thread pool")?;
        let (data, read_s, epoch_s) = pool.install(|| -> Result<_> {
            let t = Instant::now();
            let data = samples::read(&[pgn], &sel, &w)?;
            let read_s = t.elapsed().as_secs_f64();
            let t = Instant::now();
            for _ in 0..epochs {
                fit::loss(&model, &data, &x, 1.0, true);
            }
            Ok((data, read_s, t.elapsed().as_secs_f64()))
        })?;
        let n = data.rows.len() as f64;
        read_rate.push(n / read_s);
        epoch_rate.push(n * f64::from(epochs) / epoch_s);
        println!(
            "{threads} thread(s): {} positions read and traced in {read_s:.2} s ({:.0}/s); {epochs} epochs in {epoch_s:.2} s ({:.0} positions/s)",
            data.rows.len(),
            read_rate[threads - 1],
            epoch_rate[threads - 1]
        );
    }
    println!(
        "ratio 2/1 threads: reading {:.2}, epochs {:.2}",
        read_rate[1] / read_rate[0],
        epoch_rate[1] / epoch_rate[0]
    );
    Ok(())
}
