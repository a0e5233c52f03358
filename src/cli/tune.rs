//! The commands that tune the search core or an engine: `tune` (SPSA by
//! self-play), `tune-shard` and `tune-step` (its rounds as a job array),
//! `fit` (Texel tuning), `tune-report` (a run's trajectory), `weights` (a
//! parameter set as TOML).

use std::{path::PathBuf, process::ExitCode};

use anyhow::Result;
use clap::Args;
use learnbook::shard::Shard;

use super::args::{all_cores, exit_code, PoolThreads, SelfAdjudication};

/// Arguments of `learnbook tune`.
#[derive(Args)]
pub struct TuneArgs {
    /// Start weights: a TOML file (`learnbook weights`) or a preset (default, search-hand, hand, kaissa, kotok);
    /// with --engine, a TOML file of option values (`Name = value`; default: the engine's own).
    #[arg(long, value_name = "W.toml", required_unless_present_any = ["resume", "engine"])]
    start: Option<String>,
    /// Which parameters to tune (TOML: `name = { c_end = .., r_end = .., min = .., max = .. }`;
    /// default all); with --engine, spin options of the engine (required), as TOML or as
    /// OpenBench's, fishtest's or Weather Factory's file (--params-format).
    #[arg(long, value_name = "P.toml")]
    params: Option<PathBuf>,
    /// Tune the spin options of this UCI engine (`cmd=path args,option.X=V,...`) instead of
    /// the in-process weights; with --resume it must be the checkpoint's.
    #[arg(long, value_name = "SPEC")]
    engine: Option<learnbook::tune::settings::TunedEngine>,
    /// The tuned weights (TOML; with --engine the option values), rewritten after every iteration.
    #[arg(long, value_name = "tuned.toml")]
    out: PathBuf,
    /// Fixed nodes per move (results independent of machine load).
    #[arg(long, conflicts_with = "tc")]
    nodes: Option<u64>,
    /// Time control moves/seconds+increment instead of --nodes.
    #[arg(long)]
    tc: Option<String>,
    /// Game pairs (colours swapped) per SPSA iteration.
    #[arg(long, default_value_t = 16)]
    pairs_per_iteration: usize,
    /// SPSA iterations in all (the gain schedules depend on it).
    #[arg(long, default_value_t = 2000)]
    iterations: u64,
    /// Openings (EPD or PGN, .gz/.zst); each pair takes one at random.
    #[arg(long, value_name = "FILE", required_unless_present = "resume")]
    openings: Option<PathBuf>,
    /// Games played at once (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// Seed of the perturbations and the openings: the same seed gives the same run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    adjudication: SelfAdjudication,
    /// The tuner's state, written atomically after every iteration.
    #[arg(long, value_name = "tune.ckpt")]
    checkpoint: PathBuf,
    /// Every N iterations, a match of the current values against the start (the run's
    /// gain so far, in the log and in tune-report); 0 turns it off. With --resume it
    /// replaces the checkpoint's.
    #[arg(long, value_name = "N")]
    match_every: Option<u64>,
    /// Game pairs of each --match-every match.
    #[arg(long, value_name = "PAIRS", default_value_t = 16)]
    match_pairs: usize,
    /// Continue the run in --checkpoint (its settings; only --out, --threads and
    /// --match-every may be given).
    #[arg(long, conflicts_with_all = ["start", "params", "nodes", "tc", "pairs_per_iteration", "iterations", "openings", "seed", "draw", "resign", "maxmoves"])]
    resume: bool,
    /// Write the new run's checkpoint and --out, and stop before the first game: its
    /// rounds are then played by tune-shard and tune-step (deploy/slurm/tune.sh).
    #[arg(long, conflicts_with = "resume")]
    prepare: bool,
    /// The format of --params with --engine: toml, openbench (`name, int, start, min, max,
    /// c_end, r_end` lines), fishtest (`name,start,min,max,c_end,r_end`) or weather-factory
    /// (JSON); default: told from its extension or first line.
    #[arg(
        long,
        value_name = "FORMAT",
        requires = "params",
        conflicts_with = "resume"
    )]
    params_format: Option<learnbook::tune::paramfile::Format>,
    /// The evaluation both in-process sides search with: the embedded net (`default`), a
    /// net file, or `none` for the weights' hand-crafted evaluation (whose numbers the
    /// evaluation parameters are). Tune the search's numbers with a net to fit them to
    /// its scale. Recorded in the checkpoint with a fingerprint of the net.
    #[arg(long, value_name = "NET.nnue|default|none", default_value = "none", conflicts_with_all = ["resume", "engine"])]
    net: learnbook::engine::default_net::NetChoice,
}

/// A new run (or --resume) played to its end or Ctrl-C (130), or with --prepare only
/// its checkpoint written.
pub fn tune(args: TuneArgs) -> Result<ExitCode> {
    use learnbook::tune::{
        request::{self, Request},
        run,
        settings::AdjudicationSpec,
    };
    let TuneArgs {
        start,
        params,
        out,
        nodes,
        tc,
        pairs_per_iteration,
        iterations,
        openings,
        threads,
        seed,
        adjudication,
        checkpoint,
        resume,
        engine,
        match_every,
        match_pairs,
        prepare,
        params_format,
        net,
    } = args;
    let (mut state, openings) = Request {
        start,
        params,
        params_format,
        engine,
        nodes,
        tc,
        pairs_per_iteration,
        iterations,
        openings,
        seed,
        checkpoint: checkpoint.clone(),
        resume,
        match_every,
        match_pairs,
        net,
    }
    .open(|| {
        let a = adjudication.adjudication()?;
        Ok(AdjudicationSpec {
            draw: a.draw,
            resign: a.resign,
            max_moves: a.max_moves,
        })
    })?;
    if prepare {
        run::write_weights(&state, &out)?;
        print!("{}", request::prepared_line(&state, &checkpoint));
        return Ok(ExitCode::SUCCESS);
    }
    let threads = threads.unwrap_or_else(all_cores);
    run::stop_on_sigint();
    let outcome = run::run_with_progress(&mut state, &openings, threads, &checkpoint, &out)?;
    run::write_weights(&state, &out)?;
    print!("{}", run::summary(&state));
    if outcome == run::Outcome::Interrupted {
        print!("{}", request::interrupted_line(&state, &checkpoint, &out));
        return Ok(exit_code(true));
    }
    print!("{}", request::finished_lines(&state, &out));
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook tune-shard`.
#[derive(Args)]
pub struct TuneShardArgs {
    /// The run's checkpoint (`tune --prepare`, then `tune-step`); only read.
    #[arg(long, value_name = "tune.ckpt")]
    checkpoint: PathBuf,
    /// Which task: I/N (0 <= I < N), or auto/N (I from SLURM_ARRAY_TASK_ID less
    /// SLURM_ARRAY_TASK_MIN, or JOB_COMPLETION_INDEX).
    #[arg(long, value_name = "I/N")]
    shard: Shard,
    /// The folder of the parts (created if missing): round-K.shard-I-of-N.part.
    #[arg(long, value_name = "DIR")]
    part: PathBuf,
    /// Games played at once (default: every core).
    #[arg(long)]
    threads: Option<usize>,
}

/// One task's share of the checkpoint's round, into its part file (130 when
/// interrupted).
pub fn tune_shard(args: TuneShardArgs) -> Result<ExitCode> {
    use learnbook::tune::shard::{self, ShardOutcome};
    let TuneShardArgs {
        checkpoint,
        shard,
        part,
        threads,
    } = args;
    let started = std::time::Instant::now();
    let threads = threads.unwrap_or_else(all_cores);
    let outcome = shard::play_shard(&checkpoint, shard, &part, threads)?;
    print!(
        "{}",
        outcome.line(shard, &part, &checkpoint, started.elapsed().as_secs_f64())
    );
    Ok(exit_code(outcome == ShardOutcome::Interrupted))
}

/// Arguments of `learnbook tune-step`.
#[derive(Args)]
pub struct TuneStepArgs {
    /// The run's checkpoint, rewritten atomically with the round.
    #[arg(long, value_name = "tune.ckpt")]
    checkpoint: PathBuf,
    /// The folder tune-shard wrote the round's parts into.
    #[arg(long, value_name = "DIR")]
    part: PathBuf,
    /// The current values (as `tune --out`), rewritten after the step.
    #[arg(long, value_name = "tuned.toml")]
    out: PathBuf,
}

/// The checkpoint stepped from its round's parts.
pub fn tune_step(args: TuneStepArgs) -> Result<ExitCode> {
    use learnbook::tune::{checkpoint::State, shard};
    let TuneStepArgs {
        checkpoint,
        part,
        out,
    } = args;
    let outcome = shard::step(&checkpoint, &part, &out)?;
    let state = State::load(&checkpoint)?;
    print!(
        "{}",
        shard::step_report(&outcome, &state, &checkpoint, &out)
    );
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook fit`.
#[derive(Args)]
pub struct FitArgs {
    /// PGN files of games (.pgn, .gz, .zst): self-play games with `{+0.35/12}` scores, or any database.
    #[arg(long = "positions", required = true, num_args = 1.., value_name = "FILE.pgn")]
    files: Vec<PathBuf>,
    /// Start weights: a TOML file (`learnbook weights`) or a preset (default, search-hand, hand, kaissa, kotok).
    #[arg(long, value_name = "W.toml", default_value = "default")]
    start: String,
    /// Which weights to fit: a parameter file as `tune --params` takes (its names; default all).
    #[arg(long, value_name = "P.toml")]
    params: Option<PathBuf>,
    /// The fitted weights (TOML, loadable by `uci --weights`, `play`, `tune --start`).
    #[arg(long, value_name = "fitted.toml")]
    out: PathBuf,
    /// Passes over all positions (one Adam step each).
    #[arg(long, default_value_t = 500)]
    epochs: u32,
    /// Adam's step size, in centipawns.
    #[arg(long, default_value_t = 1.0)]
    learning_rate: f64,
    /// Penalty holding each weight near its start: L2 * sum(((w - start) / 100)^2) is added to the
    /// loss, so a weight few positions use does not drift on their noise (0: none).
    #[arg(long, default_value_t = 0.0)]
    l2: f64,
    /// Skip positions before this ply (the opening).
    #[arg(long, default_value_t = 16)]
    skip_plies: u32,
    /// Weight of the game's result in a position's label; the rest is the expectation of the
    /// search score stored in the move's comment (1: the result alone).
    #[arg(long, default_value_t = 1.0)]
    lambda: f64,
    /// Use at most this many positions (0: all).
    #[arg(long, default_value_t = 0)]
    max_positions: usize,
    /// Keep every N-th game apart: its positions are not fitted, and their loss (the validation
    /// loss) is reported beside the fitted one, to show whether the fit generalises (0: none).
    #[arg(long, default_value_t = 0, value_name = "N")]
    holdout: u64,
    #[command(flatten)]
    threads: PoolThreads,
    /// The fit's state, written atomically every --checkpoint-every epochs.
    #[arg(long, value_name = "fit.ckpt")]
    checkpoint: Option<PathBuf>,
    /// Epochs between checkpoints.
    #[arg(long, default_value_t = 10)]
    checkpoint_every: u32,
    /// Continue the fit in --checkpoint (its settings; give the same --positions).
    #[arg(long, requires = "checkpoint", conflicts_with_all = ["start", "params", "epochs", "learning_rate", "l2", "skip_plies", "lambda", "max_positions", "holdout"])]
    resume: bool,
    /// Draw the loss per epoch into this PNG.
    #[arg(long, value_name = "loss.png")]
    plot: Option<PathBuf>,
}

/// The fit to its last epoch or Ctrl-C (130).
pub fn fit(args: FitArgs) -> Result<ExitCode> {
    use learnbook::tune::fit;
    if !(args.lambda >= 0.0 && args.lambda <= 1.0) {
        anyhow::bail!("--lambda must be between 0 and 1");
    }
    if !(args.l2 >= 0.0 && args.l2.is_finite()) {
        anyhow::bail!("--l2 must be a number >= 0");
    }
    args.threads.init()?;
    let opts = fit::Options {
        files: args.files,
        start: args.start,
        params: args.params,
        out: args.out.clone(),
        epochs: args.epochs,
        learning_rate: args.learning_rate,
        l2: args.l2,
        selection: fit::samples::Selection {
            skip_plies: args.skip_plies,
            lambda: args.lambda,
            max_positions: args.max_positions,
            holdout: args.holdout,
        },
        checkpoint: args.checkpoint.clone(),
        checkpoint_every: args.checkpoint_every,
        resume: args.resume,
        plot: args.plot,
        report_every: 10,
    };
    learnbook::interrupt::stop_on_sigint();
    let (state, outcome) = fit::run(&opts)?;
    print!("{}", fit::summary(&state));
    if outcome == fit::Outcome::Interrupted {
        print!(
            "{}",
            fit::interrupted_line(&state, args.checkpoint.as_deref(), &args.out)
        );
        return Ok(exit_code(true));
    }
    println!("fitted weights written to {}", args.out.display());
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook tune-report`.
#[derive(Args)]
pub struct TuneReportArgs {
    /// The tuner's checkpoint.
    #[arg(long, value_name = "tune.ckpt")]
    checkpoint: PathBuf,
    /// Write the trajectory of every parameter as a PNG plot.
    #[arg(long, value_name = "trajectory.png")]
    plot: Option<PathBuf>,
    /// Write the trajectory as CSV (iteration, theta of each parameter).
    #[arg(long, value_name = "trajectory.csv")]
    csv: Option<PathBuf>,
    /// Another run's checkpoint: compare the parameters both tuned (same side of the
    /// start?), and --plot draws both trajectories, a panel per parameter.
    #[arg(long, value_name = "other.ckpt")]
    compare: Option<PathBuf>,
}

/// A run's summary, and its trajectory as CSV and plot.
pub fn tune_report(args: TuneReportArgs) -> Result<ExitCode> {
    let TuneReportArgs {
        checkpoint,
        plot,
        csv,
        compare,
    } = args;
    learnbook::tune::report::report(
        &checkpoint,
        compare.as_deref(),
        csv.as_deref(),
        plot.as_deref(),
        &mut std::io::stdout().lock(),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook weights`.
#[derive(Args)]
pub struct WeightsArgs {
    /// default (fitted to self-play games by `learnbook fit`), hand (the hand-set values before), kaissa or kotok.
    #[arg(long, default_value = "default")]
    preset: String,
}

/// A preset as TOML.
pub fn weights(args: WeightsArgs) -> Result<ExitCode> {
    let WeightsArgs { preset } = args;
    let (w, notes) = learnbook::engine::presets::preset(&preset)?;
    print!("{notes}{}", w.to_toml(&preset));
    Ok(ExitCode::SUCCESS)
}
