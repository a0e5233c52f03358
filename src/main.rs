//! The `learnbook` command line: parses arguments and calls the library.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use learnbook::book::{
    self,
    build::{self, Learned},
    ingest::Filter,
    minimax::ValueParams,
    polyglot::{ExportOptions, WeightMode},
    select::Mode,
    Book, BookSettings,
};

#[derive(Parser)]
#[command(
    name = "learnbook",
    version,
    about = "Opening books that learn: PGN -> SQLite minimax book -> Polyglot"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct BookArg {
    /// The book file (SQLite).
    #[arg(long, value_name = "BOOK.sqlite")]
    book: PathBuf,
}

#[derive(Subcommand)]
enum Command {
    /// Build (or add to) a book from PGN files: .pgn, .pgn.gz, .pgn.zst, or - for stdin.
    Build {
        #[command(flatten)]
        book: BookArg,
        /// Store moves up to this ply (a new book only; an existing book keeps its own).
        #[arg(long, default_value_t = 40)]
        max_ply: u32,
        /// Use only games where both players have at least this Elo.
        #[arg(long)]
        min_elo: Option<u32>,
        /// Threads for parsing (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Count a game again if it is already in the book, as polyglot make-book does
        /// (default: a game with the same players, event, site, date, round, moves and result is skipped).
        #[arg(long)]
        allow_duplicates: bool,
        /// Virtual draws added to every position's statistics (new book only).
        #[arg(long, default_value_t = ValueParams::default().prior_games)]
        prior_games: f64,
        /// Value of leaving the book, the floor of every interior node (new book only).
        #[arg(long, default_value_t = ValueParams::default().deviation, allow_hyphen_values = true)]
        deviation: f64,
        /// Evidence penalty Z of the `best` choice (new book only).
        #[arg(long, default_value_t = ValueParams::default().evidence_penalty)]
        evidence_penalty: f64,
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Add games one by one, re-evaluating the affected positions after each.
    Learn {
        #[command(flatten)]
        book: BookArg,
        /// Print only the summary, not a line per game.
        #[arg(long)]
        quiet: bool,
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Show a position's book moves with counts, values and the book's choice.
    Show {
        #[command(flatten)]
        book: BookArg,
        /// The position as FEN (default: the start position).
        #[arg(long, conflicts_with = "moves")]
        fen: Option<String>,
        /// Moves from the start position, in UCI notation: "e2e4 e7e5".
        #[arg(long)]
        moves: Option<String>,
    },
    /// Counts of positions, moves and games.
    Stats {
        #[command(flatten)]
        book: BookArg,
    },
    /// Verify the book; exit 0 only if it is consistent.
    Check {
        #[command(flatten)]
        book: BookArg,
    },
    /// Recompute every value from scratch.
    Reevaluate {
        #[command(flatten)]
        book: BookArg,
    },
    /// Write a Polyglot .bin book.
    Export {
        #[command(flatten)]
        book: BookArg,
        #[arg(long, value_name = "OUT.bin")]
        polyglot: PathBuf,
        /// value, games, polyglot (as polyglot make-book) or imported.
        #[arg(long, default_value = "value")]
        weights: WeightMode,
        /// Keep moves played in at least N games.
        #[arg(long, default_value_t = 1)]
        min_games: u32,
        /// Keep moves of positions before this ply.
        #[arg(long)]
        max_ply: Option<u32>,
    },
    /// Read a Polyglot .bin book into a book (moves and weights, no results).
    Import {
        #[command(flatten)]
        book: BookArg,
        #[arg(long, value_name = "IN.bin")]
        polyglot: PathBuf,
    },
    /// Print the book move for a position (exit 1 when the book has none there).
    Choose {
        #[command(flatten)]
        book: BookArg,
        #[arg(long)]
        fen: Option<String>,
        #[arg(long)]
        moves: Option<String>,
        /// best or weighted.
        #[arg(long, default_value = "best")]
        mode: Mode,
    },
    /// Benchmarks. Alone: the engine's fixed-depth search (nodes, nps, signature);
    /// `bench wac`, `bench perft`, `bench build` (against polyglot make-book), `bench learn`.
    Bench {
        #[command(subcommand)]
        what: Option<learnbook::bench::BenchCommand>,
        /// Search depth of the fixed-position bench.
        #[arg(long, default_value_t = 12)]
        depth: i32,
        /// Transposition table, MB.
        #[arg(long, default_value_t = 64)]
        hash: usize,
    },
    /// Run as a UCI engine (for GUIs and match runners).
    Uci {
        /// A learnbook book to play from (UCI options OwnBook, BookFile, BookMode).
        #[arg(long, value_name = "BOOK.sqlite")]
        book: Option<PathBuf>,
        /// Evaluation weights (TOML, as `learnbook weights` writes).
        #[arg(long, value_name = "W.toml")]
        weights: Option<PathBuf>,
    },
    /// Print an evaluation parameter set as TOML.
    Weights {
        /// default, kaissa or kotok.
        #[arg(long, default_value = "default")]
        preset: String,
    },
}

fn main() -> ExitCode {
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
        Command::Build {
            book,
            max_ply,
            min_elo,
            threads,
            allow_duplicates,
            prior_games,
            deviation,
            evidence_penalty,
            files,
        } => {
            if let Some(n) = threads {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build_global()
                    .context("cannot set --threads")?;
            }
            let settings = BookSettings {
                max_ply,
                params: ValueParams {
                    prior_games,
                    deviation,
                    evidence_penalty,
                },
            };
            let summary = build::build_book(
                &book.book,
                settings,
                files,
                Filter {
                    max_ply,
                    min_elo,
                    allow_duplicates,
                },
            )?;
            eprint!("{}", summary.report());
        }
        Command::Learn { book, quiet, files } => {
            let mut b = Book::open(&book.book)?;
            let summary = build::learn(&mut b, files, |l: &Learned| {
                if !quiet {
                    println!("{}", book::report::learned_line(l));
                }
            })?;
            eprint!("{}", summary.report());
        }
        Command::Show { book, fen, moves } => {
            let b = Book::open(&book.book)?;
            let pos = book::report::position_from(fen.as_deref(), moves.as_deref())?;
            print!("{}", book::report::show(&b, &pos)?);
        }
        Command::Stats { book } => {
            let b = Book::open(&book.book)?;
            print!("{}", book::report::stats(&b)?);
        }
        Command::Check { book } => {
            let b = Book::open(&book.book)?;
            let r = book::check::check(&b)?;
            println!("positions: {}, moves: {}", r.positions, r.moves);
            for p in &r.problems {
                println!("problem: {p}");
            }
            if r.more_problems > 0 {
                println!("... and {} more problems", r.more_problems);
            }
            if !r.ok() {
                println!("book is NOT consistent");
                return Ok(ExitCode::from(1));
            }
            println!("book is consistent");
        }
        Command::Reevaluate { book } => {
            let mut b = Book::open(&book.book)?;
            let n = b.reevaluate_all()?;
            println!("{n} positions changed");
        }
        Command::Export {
            book,
            polyglot,
            weights,
            min_games,
            max_ply,
        } => {
            let b = Book::open(&book.book)?;
            let n = book::polyglot::export(
                &b,
                &polyglot,
                &ExportOptions {
                    weights,
                    min_games,
                    max_ply,
                },
            )?;
            println!("wrote {n} entries to {}", polyglot.display());
        }
        Command::Import { book, polyglot } => {
            let mut b = Book::open_or_create(&book.book, BookSettings::default())?;
            let s = book::polyglot::import(&mut b, &polyglot)?;
            println!(
                "imported {} entries ({} reached from the start position, {} illegal there)",
                s.entries, s.reached, s.illegal
            );
        }
        Command::Choose {
            book,
            fen,
            moves,
            mode,
        } => {
            let b = Book::open(&book.book)?;
            let pos = book::report::position_from(fen.as_deref(), moves.as_deref())?;
            match book::select::choose(&b, &pos, mode, &mut rand::rng())? {
                Some(m) => println!("{}", book::keys::uci_of(&m)),
                None => {
                    println!("(none)");
                    return Ok(ExitCode::from(1));
                }
            }
        }
        Command::Bench { what, depth, hash } => match what {
            Some(what) => learnbook::bench::run(what)?,
            None => print!("{}", learnbook::engine::bench::search(depth, hash)?),
        },
        Command::Uci { book, weights } => {
            let stdin = std::io::stdin();
            learnbook::engine::uci::run(
                stdin.lock(),
                learnbook::engine::uci::Config { book, weights },
            )?;
        }
        Command::Weights { preset } => {
            let (w, notes) = learnbook::engine::presets::preset(&preset)?;
            print!("{notes}{}", w.to_toml(&preset));
        }
    }
    Ok(ExitCode::SUCCESS)
}
