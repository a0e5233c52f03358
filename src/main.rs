//! The `learnbook` command line: the `Cli`, its commands and the dispatch.
//! Each command's arguments and run are in `cli/<area>.rs` (`cli/mod.rs`
//! lists the areas); what they compute is in the library.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

mod cli;

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
    /// Write the book for engines and GUIs: Polyglot .bin, Arena .abk, BrainLearn experience .exp or PGN.
    Export(cli::formats::ExportArgs),
    /// Read a Polyglot .bin, Arena .abk or BrainLearn .exp book into a book (moves and weights or scores, no results).
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
    /// Training positions for the net from self-play games (selfplay's PGN, the search's
    /// scores in its comments): bullet's ChessBoard layout, 32 bytes a position, filtered
    /// (opening plies, checks, captures and promotions played, mates), validation games
    /// apart. See `docs/NET.md`.
    NetData(cli::net::NetDataArgs),
    /// Train the net (768 -> N) x 2 -> 1 on CPU (rayon): AdamW, a cosine learning rate,
    /// validation loss on held-out games, checkpoints and --resume; writes the quantised
    /// net the engine reads (--net, UCI EvalFile). See `docs/NET.md`.
    Train(cli::net::TrainArgs),
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
    Tune(cli::tune::TuneArgs),
    /// Play one task's share of the round a tune checkpoint is at: the pairs p of its
    /// iteration with p % N == I (and of a progress match then due), into a part file.
    ///
    /// The checkpoint is only read (`tune --prepare` writes a new one); `tune-step` adds
    /// the N parts up. A task run again finds its part and does nothing. As a Slurm job
    /// array: deploy/slurm/tune.sh (docs/DISTRIBUTED.md).
    TuneShard(cli::tune::TuneShardArgs),
    /// Step a tune checkpoint from the N parts of its round (tune-shard), as `tune` steps
    /// after an iteration, and write --out.
    ///
    /// Refuses a missing, doubled or foreign part (exit 2) and then changes nothing. The
    /// last line printed is `next round: ...` or `finished: ...`.
    TuneStep(cli::tune::TuneStepArgs),
    /// Fit the evaluation's weights to game results (Texel tuning): quiet positions of PGN
    /// games, their results as labels, the logistic loss minimised by Adam on the exact gradient.
    ///
    /// Writes --out at the end (and on Ctrl-C); with --checkpoint the fit can be resumed
    /// (--resume) and ends with the same weights as an uninterrupted one.
    Fit(cli::tune::FitArgs),
    /// A tuning run's trajectory: summary, CSV, PNG plot.
    TuneReport(cli::tune::TuneReportArgs),
    /// Print an evaluation parameter set as TOML.
    Weights(cli::tune::WeightsArgs),
    /// Serve a book over HTTP as the lichess opening explorer serves its masters database
    /// (GET /masters, /masters/pgn/ID: the same JSON, learnbook's values beside it), with
    /// the explorer page at /. Prints the URL it listens on; Ctrl-C or SIGTERM stops it
    /// gracefully (exit 130 or 143). `learnbook learn` may write the book meanwhile.
    Serve(cli::serve::ServeArgs),
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
        Command::Merge(args) => cli::build::merge(args),
        Command::Learn(args) => cli::build::learn(args),
        Command::Show(args) => cli::book::show(args),
        Command::Stats(args) => cli::book::stats(args),
        Command::Check(args) => cli::book::check(args),
        Command::Analyze(args) => cli::analyze::analyze(args),
        Command::Grow(args) => cli::analyze::grow(args),
        Command::Improve(args) => cli::analyze::improve(args),
        Command::Reevaluate(args) => cli::book::reevaluate(args),
        Command::Export(args) => cli::formats::export(args),
        Command::Import(args) => cli::formats::import(args),
        Command::Suite(args) => cli::formats::suite(args),
        Command::Choose(args) => cli::book::choose(args),
        Command::Bench(args) => cli::bench::bench(args),
        Command::Uci(args) => cli::play::uci(args),
        Command::Play(args) => cli::play::play(args),
        Command::Duel(args) => cli::play::duel(args),
        Command::Selfplay(args) => cli::play::selfplay(args),
        Command::NetData(args) => cli::net::net_data(args),
        Command::Train(args) => cli::net::train(args),
        Command::MergeGames(args) => cli::play::merge_games(args),
        Command::Report(args) => cli::play::report(args),
        Command::Tune(args) => cli::tune::tune(args),
        Command::TuneShard(args) => cli::tune::tune_shard(args),
        Command::TuneStep(args) => cli::tune::tune_step(args),
        Command::Fit(args) => cli::tune::fit(args),
        Command::TuneReport(args) => cli::tune::tune_report(args),
        Command::Weights(args) => cli::tune::weights(args),
        Command::Serve(args) => cli::serve::serve(args),
    }
}
