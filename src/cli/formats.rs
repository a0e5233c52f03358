//! The commands that write or read other files than books of games:
//! `export` and `import` (Polyglot, Arena, BrainLearn experience, PGN) and
//! `suite` (opening suites for engine tests).

use std::{path::PathBuf, process::ExitCode};

use anyhow::{bail, Result};
use clap::Args;
use learnbook::book::{
    self,
    formats::{
        polyglot::{ExportOptions, WeightMode},
        BookFormat,
    },
    Book,
};

use super::args::{exit_code, AnalysisArgs, BookArg, Memory, SearchArgs, SideToMove, Stratify};

/// Arguments of `learnbook export`.
#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    book: BookArg,
    /// The book to write: OUT.bin (Polyglot), OUT.abk (Arena), OUT.exp (BrainLearn
    /// experience) or OUT.pgn (the book's lines), the format from the extension.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "polyglot",
        conflicts_with = "polyglot"
    )]
    out: Option<PathBuf>,
    /// The format of --out: bin, abk, exp or pgn (default: from its extension).
    #[arg(long, requires = "out")]
    format: Option<book::formats::BookFormat>,
    /// The Polyglot book to write (as --out OUT.bin).
    #[arg(long, value_name = "OUT.bin")]
    polyglot: Option<PathBuf>,
    /// value, games, polyglot (as polyglot make-book) or imported.
    #[arg(long, default_value = "value")]
    weights: WeightMode,
    /// Keep moves played in at least N games.
    #[arg(long, default_value_t = 1)]
    min_games: u32,
    /// Keep moves of positions before this ply (PGN: 12 unless given).
    #[arg(long)]
    max_ply: Option<u32>,
    /// Leave out the engine moves `grow` added (kept by --weights value, by their value).
    #[arg(long)]
    no_engine_moves: bool,
    /// Keep only the moves of positions where this side is to move.
    #[arg(long, value_enum, default_value = "both")]
    side: SideToMove,
    /// PGN: one game a line instead of one game with variations.
    #[arg(long)]
    pgn_lines: bool,
    #[command(flatten)]
    memory: Memory,
}

/// Writes the book's selection in --out's format.
pub fn export(args: ExportArgs) -> Result<ExitCode> {
    let ExportArgs {
        book,
        out,
        format,
        polyglot,
        weights,
        min_games,
        max_ply,
        no_engine_moves,
        side,
        pgn_lines,
        memory,
    } = args;
    let (out, format) = match (out, polyglot) {
        (Some(out), _) => {
            let format = BookFormat::resolve(format, &out)?;
            (out, format)
        }
        (None, Some(p)) => (p, BookFormat::Bin),
        (None, None) => bail!("give --out FILE (or --polyglot OUT.bin)"),
    };
    if pgn_lines && format != BookFormat::Pgn {
        bail!("--pgn-lines is for PGN: give --format pgn or an OUT.pgn");
    }
    // A tree of one side's moves ends at the other side's first move.
    if format == BookFormat::Pgn && !matches!(side, SideToMove::Both) {
        bail!("--side is for bin, abk and exp: a PGN tree needs both sides' moves");
    }
    let layout = if pgn_lines {
        book::formats::pgn_tree::Layout::Lines
    } else {
        book::formats::pgn_tree::Layout::Tree
    };
    let b = Book::open(&book.book)?;
    b.limit_memory(memory.bytes())?;
    let opts = ExportOptions {
        weights,
        min_games,
        max_ply,
        engine_moves: !no_engine_moves,
        side: side.into(),
    };
    let exported = book::formats::export(&b, &out, format, &opts, layout)?;
    print!("{}", exported.report(&out));
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook import`.
#[derive(Args)]
pub struct ImportArgs {
    #[command(flatten)]
    book: BookArg,
    /// The book to read: IN.bin (Polyglot), IN.abk (Arena) or IN.exp (BrainLearn
    /// experience), the format from the extension.
    #[arg(
        long = "in",
        value_name = "FILE",
        required_unless_present = "polyglot",
        conflicts_with = "polyglot"
    )]
    input: Option<PathBuf>,
    /// The format of --in: bin, abk or exp (default: from its extension).
    #[arg(long, requires = "input")]
    format: Option<book::formats::BookFormat>,
    /// The Polyglot book to read (as --in IN.bin).
    #[arg(long, value_name = "IN.bin")]
    polyglot: Option<PathBuf>,
    #[command(flatten)]
    memory: Memory,
}

/// Reads --in into the book (created if missing).
pub fn import(args: ImportArgs) -> Result<ExitCode> {
    let ImportArgs {
        book,
        input,
        format,
        polyglot,
        memory,
    } = args;
    let (input, format) = match (input, polyglot) {
        (Some(i), _) => {
            let format = BookFormat::resolve(format, &i)?;
            (i, format)
        }
        (None, Some(p)) => (p, BookFormat::Bin),
        (None, None) => bail!("give --in FILE (or --polyglot IN.bin)"),
    };
    let imported = book::formats::import(&book.book, &input, format, memory.bytes())?;
    print!("{}", imported.report(&input));
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `learnbook suite`.
#[derive(Args)]
pub struct SuiteArgs {
    #[command(flatten)]
    book: BookArg,
    /// The suite to write: .epd or .pgn.
    #[arg(long, value_name = "S.epd|S.pgn")]
    out: PathBuf,
    /// Plies at which lines end: 16 (after 8 moves) or a range, 12..16.
    #[arg(long, default_value = "16")]
    plies: book::formats::suite::Interval<u32>,
    /// Games through every position of a line, its exit included.
    #[arg(long, default_value_t = 20)]
    min_games: u32,
    /// Keep exits whose analysed score for White is in this range, pawns: 0.80..1.09
    /// (UHO), -0.20..0.20 (balanced). Needs the exits analysed (`learnbook analyze`).
    #[arg(long, value_name = "LO..HI", allow_hyphen_values = true)]
    window: Option<book::formats::suite::Interval<f64>>,
    /// Keep exits whose predicted draw rate is in this range: 0.48..0.52. The model
    /// (win/loss logistic in the score) is fitted on the book's analysed positions.
    #[arg(long, value_name = "LO..HI")]
    draw_rate: Option<book::formats::suite::Interval<f64>>,
    /// The side to move at the exits.
    #[arg(long, value_enum, default_value = "both")]
    side: SideToMove,
    /// Exits to keep (default all that qualify), sampled with --seed.
    #[arg(long)]
    count: Option<usize>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Spread the exits over openings in proportion to their games.
    #[arg(long, value_enum)]
    stratify: Option<Stratify>,
    /// Keep exits whose book value calls the side to move lost.
    #[arg(long)]
    keep_lost: bool,
    /// First search the exits not yet analysed by --engine at this budget (stored in the
    /// book as `analyze` stores its leaves; resumable: Ctrl-C keeps what is done).
    #[arg(long)]
    analyze: bool,
    /// With --analyze: builtin (the search core) or a UCI engine: "cmd=stockfish,option.Threads=1".
    #[arg(long, requires = "analyze")]
    engine: Option<learnbook::analyze::AnalystSpec>,
    /// With --analyze: nodes per search.
    #[arg(long, requires = "analyze", default_value_t = learnbook::analyze::DEFAULT_NODES)]
    nodes: u64,
    /// With --analyze: milliseconds per search, instead of --nodes.
    #[arg(long, requires = "analyze")]
    movetime: Option<u64>,
    /// With --analyze: engines searching in parallel (default: all cores).
    #[arg(long, requires = "analyze")]
    threads: Option<usize>,
}

/// Writes the suite (after analysing its exits with --analyze; 130 when that is
/// interrupted).
pub fn suite(args: SuiteArgs) -> Result<ExitCode> {
    if args.analyze {
        let opts = AnalysisArgs {
            search: SearchArgs {
                nodes: args.nodes,
                movetime: args.movetime,
                depth: None,
                threads: args.threads,
                engine: args.engine.clone(),
            },
            min_games: args.min_games,
        }
        .options(true)?;
        let mut b = Book::open(&args.book.book)?;
        let exits = book::formats::suite::exits(&b, args.plies, args.min_games)?;
        let positions: Vec<_> = exits.into_iter().map(|e| (e.key, e.pos)).collect();
        learnbook::interrupt::stop_on_sigint();
        let summary = learnbook::analyze::run_on_positions(&mut b, &positions, &opts)?;
        eprint!("exits: {}", summary.report());
        if summary.interrupted {
            return Ok(exit_code(true));
        }
    }
    let b = Book::open_read_only(&args.book.book)?;
    let opts = book::formats::suite::SuiteOptions {
        plies: args.plies,
        min_games: args.min_games,
        window: args.window,
        draw_rate: args.draw_rate,
        side: args.side.into(),
        count: args.count,
        seed: args.seed,
        stratify: args.stratify.map(Into::into),
        keep_lost: args.keep_lost,
    };
    let (exits, summary) = book::formats::suite::select(&b, &opts)?;
    let event = format!(
        "learnbook suite {}",
        args.book
            .book
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    );
    book::formats::suite::write(&args.out, &exits, &event)?;
    println!("{}", summary.text());
    println!("wrote {} positions to {}", exits.len(), args.out.display());
    Ok(ExitCode::SUCCESS)
}
