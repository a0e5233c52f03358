//! `bench book-quality`: an independent engine judges the moves books play
//! (the measurement is the library's `learnbook::analyze::quality`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

/// An independent engine (the judge) scores the move each book plays at the most-played
/// positions: centipawn loss of learnbook's best and weighted picks and of each Polyglot
/// book's top-weight and weighted picks, and the Spearman correlation of the book's values
/// with the judge's evaluations.
#[derive(Args, Debug)]
pub struct BookQualityArgs {
    /// The learnbook book.
    #[arg(long)]
    pub book: PathBuf,
    /// A Polyglot book to compare, as NAME=FILE.bin (repeatable).
    #[arg(long, value_name = "NAME=X.bin")]
    pub compare: Vec<String>,
    /// An engine whose own choice is judged beside the books', as NAME=SPEC
    /// (repeatable; SPEC as `analyze --engine` takes it: builtin or
    /// "cmd=glaurung"): what a book grown or analysed by it could reach.
    #[arg(long, value_name = "NAME=SPEC", value_parser = learnbook::analyze::analyst::parse_named)]
    pub engine_player: Vec<(String, learnbook::analyze::AnalystSpec)>,
    /// Nodes per search of the --engine-player engines (the default of
    /// `analyze` and `grow`).
    #[arg(long, default_value_t = learnbook::analyze::DEFAULT_NODES)]
    pub engine_nodes: u64,
    /// The judge, a UCI engine as the match runner takes it: "cmd=stockfish,option.Threads=1".
    #[arg(long)]
    pub judge: learnbook::analyze::AnalystSpec,
    /// Nodes per judge search.
    #[arg(long, default_value_t = 200_000)]
    pub nodes: u64,
    /// Plies per judge search instead of --nodes (Ethereal 12 stops `go nodes` after depth 1).
    #[arg(long)]
    pub judge_depth: Option<u32>,
    /// Positions to judge.
    #[arg(long, default_value_t = 200)]
    pub positions: usize,
    /// Skip this many of the most-played positions first (a band of thinner ones).
    #[arg(long, default_value_t = 0, conflicts_with = "games")]
    pub skip: usize,
    /// Instead of the most played: --positions drawn at random (--seed) from every
    /// position the book's games reach with this many games, 3..20 (where games run out).
    #[arg(long, value_name = "LO..HI")]
    pub games: Option<learnbook::book::formats::suite::Interval<u32>>,
    /// The draw of --games.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Positions at most this many plies from the start.
    #[arg(long, default_value_t = 12)]
    pub max_ply: u32,
    /// Judge engines running at once.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Moves of a weighted pick below this probability are not judged.
    #[arg(long, default_value_t = 0.01)]
    pub min_probability: f64,
    /// Write every position's verdict to this CSV file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

impl BookQualityArgs {
    /// `bench book-quality`: the report on stdout.
    pub(super) fn run(self) -> Result<()> {
        let report = learnbook::analyze::quality::run(&self.options())?;
        print!("{report}");
        Ok(())
    }

    fn options(self) -> learnbook::analyze::quality::Options {
        learnbook::analyze::quality::Options {
            book: self.book,
            compare: self.compare,
            engine_player: self.engine_player,
            engine_nodes: self.engine_nodes,
            judge: self.judge,
            nodes: self.nodes,
            judge_depth: self.judge_depth,
            positions: self.positions,
            skip: self.skip,
            games: self.games,
            seed: self.seed,
            max_ply: self.max_ply,
            threads: self.threads,
            min_probability: self.min_probability,
            csv: self.csv,
        }
    }
}
