//! The commands that search a book with an engine: `analyze` (Buro's
//! analysis), `grow` (Lincke's expansion), `improve` (a night of both).

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context, Result};
use clap::Args;
use learnbook::book::Book;
use learnbook::shard::Shard;

use super::args::{
    all_cores, exit_code, parse_duration, AnalysisArgs, BookArg, Memory, SearchArgs,
};

/// Arguments of `learnbook analyze`.
#[derive(Args)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    book: BookArg,
    #[command(flatten)]
    analysis: AnalysisArgs,
    /// Analyse shard I of N (0 <= I < N): the positions whose key is I modulo N, into the
    /// file --out (the book is only read); `merge --book BOOK` with the N files adds them to
    /// the book. auto/N takes I from SLURM_ARRAY_TASK_ID (less SLURM_ARRAY_TASK_MIN) or
    /// JOB_COMPLETION_INDEX.
    #[arg(long, value_name = "I/N", requires = "out")]
    shard: Option<Shard>,
    /// The shard's analysis file (created, or resumed if it is this shard's).
    #[arg(long, value_name = "FILE.sqlite", requires = "shard")]
    out: Option<PathBuf>,
    #[command(flatten)]
    memory: Memory,
}

/// Analyses the book, or one shard of it into --out (130 when interrupted).
pub fn analyze(args: AnalyzeArgs) -> Result<ExitCode> {
    let AnalyzeArgs {
        book,
        analysis,
        shard,
        out,
        memory,
    } = args;
    let opts = analysis.options(true)?;
    learnbook::interrupt::stop_on_sigint();
    let summary = match (shard, out) {
        (Some(shard), Some(out)) => {
            let b = learnbook::analyze::open_for_shard(&book.book)?;
            b.limit_memory(memory.bytes())?;
            learnbook::analyze::run_shard(&b, &opts, shard, &out)?
        }
        _ => {
            let mut b = Book::open(&book.book)?;
            b.limit_memory(memory.bytes())?;
            learnbook::analyze::run(&mut b, &opts)?
        }
    };
    eprint!("{}", summary.report());
    Ok(exit_code(summary.interrupted))
}

/// Arguments of `learnbook grow`.
#[derive(Args)]
pub struct GrowArgs {
    #[command(flatten)]
    book: BookArg,
    #[command(flatten)]
    search: SearchArgs,
    /// Stop after this many expansions (default 100 when --time is not given).
    #[arg(long)]
    expansions: Option<usize>,
    /// Stop after this long: 90s, 30m, 2h.
    #[arg(long, value_parser = parse_duration)]
    time: Option<std::time::Duration>,
    /// Weight of the value a move gives up against one ply of depth: large goes deep
    /// along the book's choices, small goes broad.
    #[arg(long, default_value_t = learnbook::analyze::grow::DEFAULT_ALPHA)]
    alpha: f64,
    /// Engine moves added at each expanded position.
    #[arg(long, default_value_t = learnbook::analyze::grow::DEFAULT_WIDTH)]
    width: usize,
    /// Grow below the position after these moves (UCI, space separated): "e2e4 c7c5".
    #[arg(long, value_name = "MOVES")]
    from: Option<String>,
    /// Expand only positions at least this many games reach (0: any, the engine's own
    /// positions too, as Lincke's expansion; 3: the games' tree where it thins out).
    #[arg(long, default_value_t = 0)]
    min_games: u32,
}

/// Grows the book (130 when interrupted).
pub fn grow(args: GrowArgs) -> Result<ExitCode> {
    use learnbook::analyze::grow;
    let analysis = AnalysisArgs {
        search: args.search,
        min_games: learnbook::analyze::DEFAULT_MIN_GAMES,
    }
    .options(true)?;
    let opts = grow::Options {
        analysis,
        alpha: args.alpha,
        width: args.width,
        expansions: match (args.expansions, args.time) {
            (None, None) => Some(100),
            (e, _) => e,
        },
        time: args.time,
        from: args
            .from
            .as_deref()
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default(),
        min_games: args.min_games,
    };
    learnbook::interrupt::stop_on_sigint();
    let summary = grow::run(&mut Book::open(&args.book.book)?, &opts)?;
    eprint!("{}", summary.report());
    Ok(exit_code(summary.interrupted))
}

/// Arguments of `learnbook improve`.
#[derive(Args)]
pub struct ImproveArgs {
    #[command(flatten)]
    book: BookArg,
    /// The analysing UCI engine, as the match runner takes it:
    /// "cmd=stockfish,option.Threads=1,option.Hash=16" (builtin: the search core).
    #[arg(long)]
    engine: learnbook::analyze::AnalystSpec,
    /// Passes, `;` separated, each `games=G[,ply=P],nodes=N` (or depth=D, movetime=MS):
    /// the positions with at least G games to ply P and their children, at that budget;
    /// last, `grow,games=G,nodes=N[,alpha=A,width=W]` grows the book with the time left.
    #[arg(long, default_value = learnbook::analyze::improve::DEFAULT_PLAN)]
    plan: String,
    /// Stop after this long: 90s, 30m, 8h (what was searched is kept).
    #[arg(long, value_parser = parse_duration)]
    time: Option<std::time::Duration>,
    /// Engines searching in parallel (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// A folder of the results as part files: read back at the start, appended to as the
    /// run goes (see docs/COMMANDS.md).
    #[arg(long, value_name = "DIR")]
    journal: Option<PathBuf>,
    /// Results stored (journal, then book) at a time, or every two minutes: a kill loses
    /// at most these.
    #[arg(long, value_name = "N", default_value_t = learnbook::analyze::improve::DEFAULT_STORE_EVERY)]
    store_every: usize,
    /// Search shard I of N (or auto/N under Slurm) into the journal; the book is only read.
    #[arg(long, value_name = "I/N", requires = "journal")]
    shard: Option<Shard>,
    /// Search each leaf child alone, not from its parent's MultiPV search (the default
    /// where the engine offers MultiPV: one search scores a position's book moves).
    #[arg(long)]
    one_search_a_child: bool,
    #[command(flatten)]
    memory: Memory,
}

/// Improves the book until --time, or searches one shard into the journal (130 when
/// interrupted).
pub fn improve(args: ImproveArgs) -> Result<ExitCode> {
    use learnbook::analyze::{self, improve};
    let opts = improve::ImproveOptions {
        engine: analyze::EngineChoice::open(Some(&args.engine))?,
        threads: args.threads.unwrap_or_else(all_cores),
        plan: improve::parse_plan(&args.plan).context("bad --plan")?,
        deadline: args.time.map(|t| std::time::Instant::now() + t),
        journal: args.journal,
        store_every: args.store_every.max(1),
        shard: args.shard,
        multipv: !args.one_search_a_child,
        progress: true,
    };
    let mut b = if opts.shard.is_some() {
        analyze::open_for_shard(&args.book.book)?
    } else {
        Book::open(&args.book.book)?
    };
    b.limit_memory(args.memory.bytes())?;
    learnbook::interrupt::stop_on_sigint();
    let summary = improve::run(&mut b, &opts)?;
    eprint!("{}", summary.report());
    Ok(exit_code(learnbook::interrupt::interrupted()))
}
