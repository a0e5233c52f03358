//! The commands that read or revalue one book: `show` (a position), `stats`
//! (the counts), `check` (consistency), `choose` (the book move),
//! `reevaluate` (every value again).

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use learnbook::book::{self, choose::Mode, Book};

use super::args::{BookArg, Memory};

/// Arguments of `learnbook show`.
#[derive(Args)]
pub struct ShowArgs {
    #[command(flatten)]
    book: BookArg,
    /// The position as FEN (default: the start position).
    #[arg(long, conflicts_with = "moves")]
    fen: Option<String>,
    /// Moves from the start position, in UCI notation: "e2e4 e7e5".
    #[arg(long)]
    moves: Option<String>,
}

/// A position's book moves.
pub fn show(args: ShowArgs) -> Result<ExitCode> {
    let ShowArgs { book, fen, moves } = args;
    let b = Book::open(&book.book)?;
    let pos = book::view::report::position_from(fen.as_deref(), moves.as_deref())?;
    print!("{}", book::view::report::show(&b, &pos)?);
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook stats`.
#[derive(Args)]
pub struct StatsArgs {
    #[command(flatten)]
    book: BookArg,
}

/// The book's counts.
pub fn stats(args: StatsArgs) -> Result<ExitCode> {
    let StatsArgs { book } = args;
    let b = Book::open(&book.book)?;
    print!("{}", book::view::report::stats(&b)?);
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook check`.
#[derive(Args)]
pub struct CheckArgs {
    #[command(flatten)]
    book: BookArg,
    #[command(flatten)]
    memory: Memory,
}

/// The consistency check: 1 when the book is not consistent.
pub fn check(args: CheckArgs) -> Result<ExitCode> {
    let CheckArgs { book, memory } = args;
    let b = Book::open(&book.book)?;
    b.limit_memory(memory.bytes())?;
    let r = book::check::check(&b)?;
    print!("{}", r.report());
    if !r.ok() {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook choose`.
#[derive(Args)]
pub struct ChooseArgs {
    #[command(flatten)]
    book: BookArg,
    /// The position as FEN (default: the start position).
    #[arg(long)]
    fen: Option<String>,
    /// Moves from the start position, in UCI notation: "e2e4 e7e5".
    #[arg(long)]
    moves: Option<String>,
    /// best or weighted.
    #[arg(long, default_value = "best")]
    mode: Mode,
}

/// The book move: 1 when the book has none.
pub fn choose(args: ChooseArgs) -> Result<ExitCode> {
    let ChooseArgs {
        book,
        fen,
        moves,
        mode,
    } = args;
    let b = Book::open(&book.book)?;
    let pos = book::view::report::position_from(fen.as_deref(), moves.as_deref())?;
    match book::choose::choose(&b, &pos, mode, &mut rand::rng())? {
        Some(m) => println!("{}", m.to_uci(shakmaty::CastlingMode::Standard)),
        None => {
            println!("(none)");
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook reevaluate`.
#[derive(Args)]
pub struct ReevaluateArgs {
    #[command(flatten)]
    book: BookArg,
    /// Set the book's engine margin first (centipawns a deviation or an
    /// engine move must gain over the game moves to be chosen).
    #[arg(long, value_name = "CP", allow_hyphen_values = true)]
    engine_margin: Option<f64>,
    #[command(flatten)]
    memory: Memory,
}

/// Every value again (with a new engine margin).
pub fn reevaluate(args: ReevaluateArgs) -> Result<ExitCode> {
    let ReevaluateArgs {
        book,
        engine_margin,
        memory,
    } = args;
    let mut b = Book::open(&book.book)?;
    b.limit_memory(memory.bytes())?;
    let n = match engine_margin {
        Some(cp) => b.set_engine_margin(cp)?,
        None => b.reevaluate_all()?,
    };
    println!("{n} positions changed");
    Ok(ExitCode::SUCCESS)
}
