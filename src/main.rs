//! The `learnbook` command line: parses arguments and calls the library.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use learnbook::shard::Shard;

mod cli;

use cli::args::{all_cores, exit_code, PoolThreads, SelfAdjudication};

#[derive(Parser)]
#[command(
    name = "learnbook",
    version,
    about = "Opening books that learn: PGN -> SQLite minimax book -> Polyglot",
    after_help = "Exit codes: 0 success; 1 a negative answer (check: the book is not consistent; choose: no book move); 2 an error (bad input, unreadable file, engine failure: the message says which); 130 interrupted by Ctrl-C after storing what was done (analyze, tune, selfplay; serve stops gracefully: 130 on Ctrl-C, 143 on SIGTERM); 141 when the reader of the output went away (| head)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build (or add to) a book from PGN files: .pgn, .pgn.gz, .pgn.zst, or - for stdin.
    Build(cli::build::BuildArgs),
    /// Merge books built separately (shards of the games) into one: counts add, a game
    /// in two books counts once, values are recomputed. The same book as one build of all
    /// the games.
    Merge(cli::build::MergeArgs),
    /// Add games one by one, re-evaluating the affected positions after each.
    Learn(cli::build::LearnArgs),
    /// Show a position's book moves with counts, values and the book's choice.
    Show(cli::book::ShowArgs),
    /// Counts of positions, moves and games.
    Stats(cli::book::StatsArgs),
    /// Verify the book; exit 0 only if it is consistent.
    Check(cli::book::CheckArgs),
    /// Search the book's positions (Buro's analysis): every position with at least
    /// --min-games games gets a search score and the score of its best move outside
    /// the book; their other children get a search score. Resumable: positions
    /// already analysed with this engine and budget are skipped.
    Analyze(cli::analyze::AnalyzeArgs),
    /// Grow the book without games (Lincke's drop-out expansion): repeatedly expand the
    /// position whose engine answer is most likely to change the choice at the root,
    /// adding its best moves outside the book as engine moves, searched, and
    /// re-evaluating at once. Resumable: an expanded position is not expanded again.
    Grow(cli::analyze::GrowArgs),
    /// Improve a book overnight with a strong UCI engine: passes of analysis in the order
    /// that pays most (--plan), each position by priority (the chance its answer changes
    /// what is played), until --time. Resumable with --journal (results kept in part files
    /// a rerun, or another machine with the same games, reads back); --shard I/N searches
    /// one shard into the journal, the book only read, and a run without --shard then
    /// stores every part: a Slurm array does in a night what one machine does in N.
    Improve(cli::analyze::ImproveArgs),
    /// Recompute every value from scratch (`--engine-margin`: with a new margin).
    Reevaluate(cli::book::ReevaluateArgs),
    /// Write a Polyglot .bin book.
    Export(cli::formats::ExportArgs),
    /// Read a Polyglot .bin book into a book (moves and weights, no results).
    Import(cli::formats::ImportArgs),
    /// Write an opening suite for engine tests (EPD or PGN) from the book's lines.
    ///
    /// Lines of book moves from the start end at --plies; an exit qualifies by its games,
    /// the analysed score for White (--window, pawns), the draw rate a model fitted on the
    /// book predicts from that score (--draw-rate), and the side to move. Each end position
    /// once; exits the book calls lost for the side to move are left out. --count samples
    /// with --seed (the same command writes the same file), --stratify spreads the suite
    /// over the openings in proportion to their games. EPD: one FEN a line (what fastchess,
    /// cutechess and `play --openings` read); PGN: the moves with the seven tag roster.
    Suite(cli::formats::SuiteArgs),
    /// Print the book move for a position (exit 1 when the book has none there).
    Choose(cli::book::ChooseArgs),
    /// Benchmarks. Alone: the engine's fixed-depth search (nodes, nps, signature);
    /// `bench wac`, `bench perft`, `bench play`, `bench selfplay`, `bench tune`, `bench build` (against polyglot
    /// make-book), `bench learn`, `bench analyze`, `bench book-quality`.
    Bench(cli::bench::BenchArgs),
    /// Run as a UCI engine (for GUIs and match runners).
    Uci(cli::play::UciArgs),
    /// Play a match between two engines (UCI, xboard, or the built-in search core).
    Play(cli::play::PlayArgs),
    /// Two books in play: one engine plays both, each side from its own book until the
    /// book has no move, then at --nodes with --jitter.
    ///
    /// Starts are the first --start-plies of the games in --starts (distinct positions,
    /// drawn with --seed), each played twice with colours swapped. Prints the first book's
    /// Elo with its 95% interval from the pairs (pentanomial), the book plies of each side,
    /// its distinct exits, and the engine's evaluation where both books had ended. The games
    /// go to --pgnout; the same command run again continues the duel and reports every game
    /// in the file.
    Duel(cli::play::DuelArgs),
    /// Games of the search core against itself for data, with the search scores in the PGN.
    ///
    /// One weight set on both sides, fixed nodes per move, openings from a suite, every
    /// core; after every engine move its score as cutechess writes it ({+0.35/12}: pawns
    /// from the mover's view, then the depth). The same command gives the same games at
    /// any --concurrency. Games are appended one by one in order; rerunning the command
    /// continues a killed or interrupted run. Ctrl-C finishes the games under way.
    Selfplay(cli::play::SelfplayArgs),
    /// Put the files of a selfplay run's shards (selfplay --shard) together, in game order:
    /// the file one unsharded run writes. Refuses a missing, repeated, unfinished or
    /// foreign shard, and then writes nothing.
    MergeGames(cli::play::MergeGamesArgs),
    /// A player's learning curve from a PGN of games in order: score per window, repeated losses.
    Report(cli::play::ReportArgs),
    /// Tune evaluation weights by self-play (SPSA, game pairs in parallel), checkpointed.
    ///
    /// Every iteration plays --pairs-per-iteration game pairs (one opening,
    /// colours swapped) between theta+c and theta-c, steps theta, and
    /// writes --checkpoint and --out. Ctrl-C stops after the current
    /// iteration; --resume continues exactly where it stopped.
    Tune(TuneArgs),
    /// Play one task's share of the round a tune checkpoint is at: the pairs p of its
    /// iteration with p % N == I (and of a progress match then due), into a part file.
    ///
    /// The checkpoint is only read (`tune --prepare` writes a new one); `tune-step` adds
    /// the N parts up. A task run again finds its part and does nothing. As a Slurm job
    /// array: deploy/slurm/tune.sh (docs/DISTRIBUTED.md).
    TuneShard(TuneShardArgs),
    /// Step a tune checkpoint from the N parts of its round (tune-shard), as `tune` steps
    /// after an iteration, and write --out.
    ///
    /// Refuses a missing, doubled or foreign part (exit 2) and then changes nothing. The
    /// last line printed is `next round: ...` or `finished: ...`.
    TuneStep(TuneStepArgs),
    /// Fit the evaluation's weights to game results (Texel tuning): quiet positions of PGN
    /// games, their results as labels, the logistic loss minimised by Adam on the exact gradient.
    ///
    /// Writes --out at the end (and on Ctrl-C); with --checkpoint the fit can be resumed
    /// (--resume) and ends with the same weights as an uninterrupted one.
    Fit(FitArgs),
    /// A tuning run's trajectory: summary, CSV, PNG plot.
    TuneReport(TuneReportArgs),
    /// Print an evaluation parameter set as TOML.
    Weights(WeightsArgs),
    /// Serve a book over HTTP as the lichess opening explorer serves its masters database
    /// (GET /masters, /masters/pgn/ID: the same JSON, learnbook's values beside it), with
    /// the explorer page at /. Prints the URL it listens on; Ctrl-C or SIGTERM stops it
    /// gracefully (exit 130 or 143). `learnbook learn` may write the book meanwhile.
    Serve(cli::serve::ServeArgs),
}

/// Arguments of `learnbook tune`.
#[derive(Args)]
struct TuneArgs {
    /// Start weights: a TOML file (`learnbook weights`) or a preset (default, hand, kaissa, kotok);
    /// with --engine, a TOML file of option values (`Name = value`; default: the engine's own).
    #[arg(long, value_name = "W.toml", required_unless_present_any = ["resume", "engine"])]
    start: Option<String>,
    /// Which parameters to tune (TOML: `name = { c_end = .., r_end = .., min = .., max = .. }`;
    /// default all); with --engine, spin options of the engine (required).
    #[arg(long, value_name = "P.toml")]
    params: Option<PathBuf>,
    /// Tune the spin options of this UCI engine (`cmd=path args,option.X=V,...`) instead of
    /// the in-process weights; with --resume it must be the checkpoint's.
    #[arg(long, value_name = "SPEC")]
    engine: Option<String>,
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
}

/// Arguments of `learnbook tune-shard`.
#[derive(Args)]
struct TuneShardArgs {
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

/// Arguments of `learnbook tune-step`.
#[derive(Args)]
struct TuneStepArgs {
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

/// Arguments of `learnbook fit`.
#[derive(Args)]
struct FitArgs {
    /// PGN files of games (.pgn, .gz, .zst): self-play games with `{+0.35/12}` scores, or any database.
    #[arg(long = "positions", required = true, num_args = 1.., value_name = "FILE.pgn")]
    files: Vec<PathBuf>,
    /// Start weights: a TOML file (`learnbook weights`) or a preset (default, hand, kaissa, kotok).
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

/// Arguments of `learnbook tune-report`.
#[derive(Args)]
struct TuneReportArgs {
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

/// Arguments of `learnbook weights`.
#[derive(Args)]
struct WeightsArgs {
    /// default (fitted to self-play games by `learnbook fit`), hand (the hand-set values before), kaissa or kotok.
    #[arg(long, default_value = "default")]
    preset: String,
}

fn main() -> ExitCode {
    learnbook::interrupt::quiet_on_closed_stdout();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("learnbook: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Build(args) => cli::build::build(args),
        Command::Analyze(args) => cli::analyze::analyze(args),
        Command::Grow(args) => cli::analyze::grow(args),
        Command::Improve(args) => cli::analyze::improve(args),
        Command::Merge(args) => cli::build::merge(args),
        Command::Learn(args) => cli::build::learn(args),
        Command::Show(args) => cli::book::show(args),
        Command::Stats(args) => cli::book::stats(args),
        Command::Check(args) => cli::book::check(args),
        Command::Reevaluate(args) => cli::book::reevaluate(args),
        Command::Export(args) => cli::formats::export(args),
        Command::Import(args) => cli::formats::import(args),
        Command::Choose(args) => cli::book::choose(args),
        Command::Suite(args) => cli::formats::suite(args),
        Command::Bench(args) => cli::bench::bench(args),
        Command::Uci(args) => cli::play::uci(args),
        Command::Play(args) => cli::play::play(args),
        Command::Duel(args) => cli::play::duel(args),
        Command::Selfplay(args) => cli::play::selfplay(args),
        Command::MergeGames(args) => cli::play::merge_games(args),
        Command::Report(args) => cli::play::report(args),
        Command::Tune(args) => args.run(),
        Command::TuneShard(args) => args.run(),
        Command::TuneStep(args) => args.run(),
        Command::Fit(args) => args.run(),
        Command::TuneReport(args) => args.run(),
        Command::Weights(args) => args.run(),
        Command::Serve(args) => cli::serve::serve(args),
    }
}

impl TuneArgs {
    fn run(self) -> Result<ExitCode> {
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
        } = self;
        use learnbook::{
            engine::params::Weights,
            tune::{checkpoint::*, external, run},
        };
        if match_every.is_some() && match_pairs == 0 {
            bail!("--match-pairs must be at least 1");
        }
        let progress_match = match_every.filter(|&n| n > 0).map(|every| MatchPlan {
            every,
            pairs: match_pairs,
        });
        let (mut state, openings) = if resume {
            let (mut state, openings) = run::resume(&checkpoint, engine.as_deref())?;
            if match_every.is_some() {
                state.settings.progress_match = progress_match;
            }
            (state, openings)
        } else {
            let (start, params, engine) = match &engine {
                None => {
                    if params_format.is_some_and(|f| !f.is_toml()) {
                        bail!("--params-format other than toml needs --engine");
                    }
                    let start = run::load_start(start.as_deref().unwrap_or("default"))?;
                    let params = run::load_params(params.as_deref(), &start)?;
                    (start, params, None)
                }
                Some(spec) => {
                    let params = params
                        .as_deref()
                        .context("--engine needs --params: which spin options to tune")?;
                    let (target, params) = external::prepare(
                        spec,
                        params,
                        start.as_deref().map(Path::new),
                        params_format,
                    )?;
                    (Weights::default(), params, Some(target))
                }
            };
            let adjudication = adjudication.adjudication()?;
            run::Plan {
                params,
                start,
                engine,
                limit: match (nodes, tc) {
                    (_, Some(tc)) => LimitSpec::Clock(tc),
                    (n, None) => LimitSpec::Nodes(n.unwrap_or(2000)),
                },
                pairs_per_iteration,
                iterations,
                openings: openings.context("--openings is required (a new run)")?,
                seed,
                adjudication: AdjudicationSpec {
                    draw: adjudication.draw,
                    resign: adjudication.resign,
                    max_moves: adjudication.max_moves,
                },
                progress_match,
            }
            .begin(&checkpoint)?
        };
        if prepare {
            run::write_weights(&state, &out)?;
            println!(
                "{} prepared: {} parameters, {} iterations of {} pairs; `learnbook tune-shard` \
                 and `tune-step` play its rounds",
                checkpoint.display(),
                state.settings.params.len(),
                state.settings.schedule.iterations,
                state.settings.pairs_per_iteration
            );
            return Ok(ExitCode::SUCCESS);
        }
        let threads = threads.unwrap_or_else(all_cores);
        run::stop_on_sigint();
        let outcome = run::run_with_progress(&mut state, &openings, threads, &checkpoint, &out)?;
        run::write_weights(&state, &out)?;
        print!("{}", run::summary(&state));
        if outcome == run::Outcome::Interrupted {
            println!(
            "interrupted after iteration {}; `learnbook tune --resume --checkpoint {} --out {}` continues",
            state.iteration(),
            checkpoint.display(),
            out.display()
        );
            return Ok(exit_code(true));
        }
        match &state.settings.engine {
            None => println!("tuned weights written to {}", out.display()),
            Some(target) => println!(
                "tuned options written to {}; as an engine:\n{}",
                out.display(),
                external::spec_line(&target.spec, &external::values_at(&state, target))
            ),
        }
        Ok(ExitCode::SUCCESS)
    }
}

impl TuneShardArgs {
    fn run(self) -> Result<ExitCode> {
        use learnbook::tune::shard::{self, ShardOutcome};
        let TuneShardArgs {
            checkpoint,
            shard,
            part,
            threads,
        } = self;
        let started = std::time::Instant::now();
        let threads = threads.unwrap_or_else(all_cores);
        match shard::play_shard(&checkpoint, shard, &part, threads)? {
            ShardOutcome::Played { round, games } => println!(
                "{round}: shard {shard} played {games} games in {:.1} s, written to {}",
                started.elapsed().as_secs_f64(),
                shard::part_path(&part, round.k, shard).display()
            ),
            ShardOutcome::AlreadyPlayed(round) => println!(
                "{round}: {} is already shard {shard}'s part: nothing to do",
                shard::part_path(&part, round.k, shard).display()
            ),
            ShardOutcome::Finished => {
                println!("{} is finished: nothing to play", checkpoint.display())
            }
            ShardOutcome::Interrupted => {
                println!("interrupted: no part written");
                return Ok(exit_code(true));
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

impl TuneStepArgs {
    fn run(self) -> Result<ExitCode> {
        use learnbook::tune::{
            checkpoint::State,
            run,
            shard::{self, StepOutcome},
        };
        let TuneStepArgs {
            checkpoint,
            part,
            out,
        } = self;
        let outcome = shard::step(&checkpoint, &part, &out)?;
        let state = State::load(&checkpoint)?;
        let total = state.settings.schedule.iterations;
        if let StepOutcome::Stepped {
            round,
            parts,
            iteration,
            progress_match,
            next,
        } = &outcome
        {
            println!("{round}: {parts} parts");
            if progress_match.is_some() {
                if let Some(m) = state.matches.last() {
                    println!("{}", run::match_line(m));
                }
            }
            if let Some(wdl) = iteration {
                println!(
                    "iteration {} of {total}: +{} ={} -{}, theta stepped; {} and {} written",
                    round.k + 1,
                    wdl.wins,
                    wdl.draws,
                    wdl.losses,
                    checkpoint.display(),
                    out.display()
                );
            }
            if let Some(next) = next {
                println!("next round: {next}");
                return Ok(ExitCode::SUCCESS);
            }
            print!("{}", run::summary(&state));
        }
        println!(
            "finished: {} iterations of {total}, {} games",
            state.iteration(),
            state.games()
        );
        Ok(ExitCode::SUCCESS)
    }
}

impl TuneReportArgs {
    fn run(self) -> Result<ExitCode> {
        let TuneReportArgs {
            checkpoint,
            plot,
            csv,
            compare,
        } = self;
        use learnbook::tune::{checkpoint::State, report, run};
        let state = State::load(&checkpoint)?;
        print!("{}", run::summary(&state));
        let other = compare
            .as_deref()
            .map(|p| State::load(p).map(|st| (p, st)))
            .transpose()?;
        let name = |p: &Path| {
            p.file_name()
                .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
        };
        if let Some((path, b)) = &other {
            let labels = [name(&checkpoint), name(path)];
            print!("{}", report::compare(&state, b, [&labels[0], &labels[1]])?);
        }
        if let Some(p) = csv {
            report::write_csv(&state, &p)?;
            println!("trajectory written to {}", p.display());
        }
        if let Some(p) = plot {
            match &other {
                None => report::plot(&state, &p)?,
                Some((path, b)) => {
                    let labels = [name(&checkpoint), name(path)];
                    report::plot_compare(&state, b, [&labels[0], &labels[1]], &p)?
                }
            }
            println!("plot written to {}", p.display());
        }
        Ok(ExitCode::SUCCESS)
    }
}

impl WeightsArgs {
    fn run(self) -> Result<ExitCode> {
        let WeightsArgs { preset } = self;
        let (w, notes) = learnbook::engine::presets::preset(&preset)?;
        print!("{notes}{}", w.to_toml(&preset));
        Ok(ExitCode::SUCCESS)
    }
}

impl FitArgs {
    fn run(self) -> Result<ExitCode> {
        use learnbook::tune::fit;
        if !(self.lambda >= 0.0 && self.lambda <= 1.0) {
            anyhow::bail!("--lambda must be between 0 and 1");
        }
        if !(self.l2 >= 0.0 && self.l2.is_finite()) {
            anyhow::bail!("--l2 must be a number >= 0");
        }
        self.threads.init()?;
        let opts = fit::Options {
            files: self.files,
            start: self.start,
            params: self.params,
            out: self.out.clone(),
            epochs: self.epochs,
            learning_rate: self.learning_rate,
            l2: self.l2,
            selection: fit::samples::Selection {
                skip_plies: self.skip_plies,
                lambda: self.lambda,
                max_positions: self.max_positions,
                holdout: self.holdout,
            },
            checkpoint: self.checkpoint.clone(),
            checkpoint_every: self.checkpoint_every,
            resume: self.resume,
            plot: self.plot,
            report_every: 10,
        };
        learnbook::interrupt::stop_on_sigint();
        let (state, outcome) = fit::run(&opts)?;
        print!("{}", fit::summary(&state));
        if outcome == fit::Outcome::Interrupted {
            match &self.checkpoint {
                Some(c) => println!(
                    "interrupted at epoch {}; `learnbook fit --resume --checkpoint {} --positions ... --out {}` continues",
                    state.epoch,
                    c.display(),
                    self.out.display()
                ),
                None => println!("interrupted at epoch {} (no --checkpoint: it cannot be resumed)", state.epoch),
            }
            return Ok(exit_code(true));
        }
        println!("fitted weights written to {}", self.out.display());
        Ok(ExitCode::SUCCESS)
    }
}
