//! The commands that make a book from games: `build` (all at once, or one
//! shard), `merge` (shards into one book), `learn` (game by game).

use std::{path::PathBuf, process::ExitCode};

use anyhow::Result;
use clap::Args;
use learnbook::book::{
    self,
    build::{self, Learned},
    pgn::validate::Filter,
    Book, BookSettings,
};
use learnbook::shard::Shard;

use super::args::{BookArg, LearnAnalysisArgs, Memory, PoolThreads, ValueParamArgs};

/// Arguments of `learnbook build`.
#[derive(Args)]
pub struct BuildArgs {
    #[command(flatten)]
    book: BookArg,
    /// Store moves up to this ply (a new book only; an existing book keeps its own).
    #[arg(long, default_value_t = 40)]
    max_ply: u32,
    /// Use only games where both players have at least this Elo.
    #[arg(long)]
    min_elo: Option<u32>,
    #[command(flatten)]
    threads: PoolThreads,
    /// Count a game again if it is already in the book, as polyglot make-book does
    /// (default: a game with the same players, event, site, date, round, moves and result is skipped).
    #[arg(long)]
    allow_duplicates: bool,
    /// Drop the positions and moves fewer than N games reach, as polyglot make-book's
    /// -min-game does, for a small book (a new book only; such a book does not merge).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    min_games: u32,
    /// Store every position as a row: no single-game tails (the rest of a game no other
    /// game shares, kept as its moves). The book reads the same; the file is larger.
    #[arg(long)]
    no_tails: bool,
    #[command(flatten)]
    memory: Memory,
    /// Directory for the build's temporary files (default: the book's). They are removed
    /// when the build ends, and a killed build's by the next build of the same book.
    #[arg(long, value_name = "DIR")]
    temp_dir: Option<PathBuf>,
    #[command(flatten)]
    values: ValueParamArgs,
    /// Build shard I of N (0 <= I < N): the games numbered I, I+N, I+2N... over all the
    /// inputs, into a new book that `merge` takes with the other shards. auto/N takes I from
    /// SLURM_ARRAY_TASK_ID (less SLURM_ARRAY_TASK_MIN) or JOB_COMPLETION_INDEX.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// PGN files to read (.pgn, .pgn.gz, .pgn.zst), or - for standard input.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// Builds (or adds to) the book, or one shard of the games into a new book.
pub fn build(args: BuildArgs) -> Result<ExitCode> {
    let BuildArgs {
        book,
        max_ply,
        min_elo,
        threads,
        allow_duplicates,
        no_tails,
        memory,
        temp_dir,
        min_games,
        values,
        shard,
        files,
    } = args;
    threads.init()?;
    let settings = BookSettings {
        max_ply,
        params: values.params(),
        min_games,
        tails: !no_tails,
    };
    let summary = build::build_book(
        &book.book,
        settings,
        files,
        Filter {
            max_ply,
            min_elo,
            allow_duplicates,
            no_tails,
        },
        &build::Spill {
            memory: memory.bytes(),
            temp_dir,
        },
        shard.unwrap_or(Shard::WHOLE),
    )?;
    eprint!("{}", summary.report());
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook merge`.
#[derive(Args)]
pub struct MergeArgs {
    /// The merged book: created, or (if it exists) the books are added to it. It is
    /// written beside and renamed into place, so a killed merge leaves the old one unchanged.
    #[command(flatten)]
    book: BookArg,
    /// Count a game found in two books twice, as `build --allow-duplicates` would
    /// (default: once, matched by the same hash `build` uses).
    #[arg(long)]
    allow_duplicates: bool,
    /// Drop the positions and moves fewer than N games of all the books reach, as
    /// `build --min-games` does (a new book only).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    min_games: u32,
    #[command(flatten)]
    memory: Memory,
    /// Books to merge, built with the same settings (max-ply and value parameters).
    #[arg(required = true, value_name = "SHARD.sqlite")]
    shards: Vec<PathBuf>,
}

/// Merges the shards' books into --book.
pub fn merge(args: MergeArgs) -> Result<ExitCode> {
    let MergeArgs {
        book,
        allow_duplicates,
        min_games,
        memory,
        shards,
    } = args;
    let summary = book::merge_books::merge_books(
        &book.book,
        &shards,
        allow_duplicates,
        min_games,
        memory.bytes(),
    )?;
    eprint!("{}", summary.report());
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook learn`.
#[derive(Args)]
pub struct LearnArgs {
    #[command(flatten)]
    book: BookArg,
    /// Print only the summary, not a line per game.
    #[arg(long)]
    quiet: bool,
    /// After each game, analyse what it added or changed (as `analyze` would).
    #[arg(long)]
    analyze: bool,
    #[command(flatten)]
    analysis: LearnAnalysisArgs,
    /// PGN files whose games are added one by one (.pgn, .pgn.gz, .pgn.zst, or -).
    #[arg(
        required_unless_present = "follow",
        conflicts_with = "follow",
        value_name = "FILE"
    )]
    files: Vec<PathBuf>,
    /// A plain PGN file that a match runner or GUI appends each game to as
    /// it ends (cutechess-cli's and fastchess's -pgnout): every complete game
    /// is learned at once, until Ctrl-C. Restarted, it learns the games not
    /// yet in the book.
    #[arg(long, value_name = "FILE.pgn")]
    follow: Option<PathBuf>,
    /// How often --follow looks for new games, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 200, requires = "follow")]
    poll_ms: u64,
}

/// Adds the games one by one, a line each unless --quiet.
pub fn learn(args: LearnArgs) -> Result<ExitCode> {
    let LearnArgs {
        book,
        quiet,
        analyze,
        analysis,
        files,
        follow,
        poll_ms,
    } = args;
    let mut b = Book::open(&book.book)?;
    if let Some(path) = follow {
        learnbook::interrupt::stop_on_sigint();
        eprintln!("following {} (Ctrl-C to stop)", path.display());
        let done = book::build::follow::follow(
            &mut b,
            &path,
            std::time::Duration::from_millis(poll_ms),
            learnbook::interrupt::interrupted,
            |game, learned| {
                if quiet {
                    return;
                }
                match learned {
                    Some(l) => println!("{}", book::view::report::learned_line(l)),
                    None => println!("in the book already: {} - {}", game.white, game.black),
                }
            },
        )?;
        eprintln!(
            "games learned: {}, already in the book: {}, not learnable: {}",
            done.learned, done.known, done.skipped
        );
        return Ok(ExitCode::from(130));
    }
    let opts = analyze.then(|| analysis.options()).transpose()?;
    let summary = build::learn(&mut b, files, |b, game, l: &Learned| {
        if !quiet {
            println!("{}", book::view::report::learned_line(l));
        }
        if let Some(opts) = &opts {
            if let Some(boards) = game.boards() {
                let s = learnbook::analyze::run_on_game(b, &boards, opts)?;
                if !quiet && s.analysed > 0 {
                    print!("  {}", s.report());
                }
            }
        }
        Ok(())
    })?;
    eprint!("{}", summary.report());
    Ok(ExitCode::SUCCESS)
}
