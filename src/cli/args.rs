//! Argument groups several commands share (`#[command(flatten)]`), each
//! defined once with what it turns into.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use learnbook::book::{build, minimax::ValueParams};
use learnbook::play::{game::Adjudication, spec};

/// The exit code of a run stopped by Ctrl-C after storing what it did.
pub const INTERRUPTED: u8 = 130;

/// 130 when the run was interrupted, else success.
pub fn exit_code(interrupted: bool) -> ExitCode {
    if interrupted {
        ExitCode::from(INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    }
}

/// Every core: the default of every thread count.
pub fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `--threads` of a command that runs on the rayon pool (`build`, `fit`).
#[derive(Args)]
pub struct PoolThreads {
    /// Threads (default: all cores); the result does not depend on it.
    #[arg(long)]
    threads: Option<usize>,
}

impl PoolThreads {
    /// Sizes the rayon pool (left at every core without --threads).
    pub fn init(&self) -> Result<()> {
        if let Some(n) = self.threads {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build_global()
                .context("cannot set --threads")?;
        }
        Ok(())
    }
}

/// `--memory` of every command that reads or writes a whole book (`build`,
/// `merge`, `check`, `export`, `import`, `reevaluate`).
#[derive(Args)]
pub struct Memory {
    /// Memory it may hold (e.g. 512M, 2G; default: half of the machine's). SQLite maps an
    /// eighth of it and caches a sixteenth (16 MB at most). Past it, `build` journals the
    /// games in --temp-dir and a filter of shared positions replaces the counts, which are
    /// then taken in key ranges (the keys of the positions two games reach stay in memory,
    /// 8 bytes each); a book whose graph takes more than half of it (about 300 bytes a
    /// position) is valued depth by depth through SQLite (`merge`, `import`,
    /// `reevaluate`) and read a position at a time (`export`, `check`). Slower, the same
    /// book and files (docs/COMMANDS.md lists what it does not bound).
    #[arg(long, value_name = "SIZE", value_parser = build::parse_size)]
    memory: Option<u64>,
}

impl Memory {
    pub fn bytes(&self) -> u64 {
        self.memory.unwrap_or_else(build::default_memory)
    }
}

/// The value parameters of a new book.
#[derive(Args)]
pub struct ValueParamArgs {
    /// Virtual draws added to every position's statistics (new book only).
    #[arg(long, default_value_t = ValueParams::default().prior_games)]
    prior_games: f64,
    /// Value of leaving the book, the floor of every interior node (new book only).
    #[arg(long, default_value_t = ValueParams::default().deviation, allow_hyphen_values = true)]
    deviation: f64,
    /// Evidence penalty Z of the `best` choice (new book only).
    #[arg(long, default_value_t = ValueParams::default().evidence_penalty)]
    evidence_penalty: f64,
    /// Weight B of the popularity prior ln(share of the games) in the choice (new book only).
    #[arg(long, default_value_t = ValueParams::default().popularity)]
    popularity: f64,
    /// Games a search score counts as in an analysed position's statistics (new book only).
    #[arg(long, default_value_t = ValueParams::default().search_games)]
    search_games: f64,
    /// Centipawns a searched move outside the games (a deviation, an engine
    /// move) must gain over the game moves to be chosen (new book only;
    /// `reevaluate --engine-margin` changes it).
    #[arg(long, default_value_t = ValueParams::default().engine_margin)]
    engine_margin: f64,
}

impl ValueParamArgs {
    pub fn params(&self) -> ValueParams {
        ValueParams {
            prior_games: self.prior_games,
            deviation: self.deviation,
            evidence_penalty: self.evidence_penalty,
            popularity: self.popularity,
            search_games: self.search_games,
            engine_margin: self.engine_margin,
        }
    }
}

/// A match's limit for both engines (`play`, `bench suite`): at most one.
#[derive(Args, Clone, Debug, Default)]
pub struct LimitArgs {
    /// Time control moves/seconds+increment (10+0.1, 40/60).
    #[arg(long, conflicts_with_all = ["nodes", "depth"])]
    pub tc: Option<String>,
    /// Fixed nodes per move (UCI and builtin engines).
    #[arg(long, conflicts_with = "depth")]
    pub nodes: Option<u64>,
    /// Fixed depth per move.
    #[arg(long)]
    pub depth: Option<u32>,
}

impl LimitArgs {
    pub fn limit(&self) -> spec::CommonLimit {
        spec::CommonLimit {
            tc: self.tc.clone(),
            nodes: self.nodes,
            depth: self.depth,
        }
    }
}

/// A match's adjudication (`play`, `bench suite`): none by default.
#[derive(Args, Clone, Debug, Default)]
pub struct MatchAdjudication {
    /// movenumber=N,movecount=N,score=CP: adjudicate draws.
    #[arg(long)]
    pub draw: Option<String>,
    /// movecount=N,score=CP: adjudicate losses.
    #[arg(long)]
    pub resign: Option<String>,
    /// A draw after this many moves.
    #[arg(long)]
    pub maxmoves: Option<u32>,
}

impl MatchAdjudication {
    pub fn adjudication(&self) -> Result<Adjudication> {
        Ok(Adjudication {
            draw: self.draw.as_deref().map(spec::parse_draw).transpose()?,
            resign: self.resign.as_deref().map(spec::parse_resign).transpose()?,
            max_moves: self.maxmoves,
        })
    }
}

/// The adjudication of the search core's own games (`selfplay`, `tune`):
/// on by default, `none` turns a rule off.
#[derive(Args)]
pub struct SelfAdjudication {
    /// movenumber=N,movecount=N,score=CP, or none.
    #[arg(long, default_value = "movenumber=34,movecount=8,score=20")]
    draw: String,
    /// movecount=N,score=CP, or none.
    #[arg(long, default_value = "movecount=3,score=400")]
    resign: String,
    /// A draw after this many moves.
    #[arg(long, default_value_t = 200)]
    maxmoves: u32,
}

impl SelfAdjudication {
    pub fn adjudication(&self) -> Result<Adjudication> {
        fn given(s: &str) -> Option<&str> {
            (s != "none").then_some(s)
        }
        Ok(Adjudication {
            draw: given(&self.draw)
                .map(spec::parse_draw)
                .transpose()
                .context("--draw")?,
            resign: given(&self.resign)
                .map(spec::parse_resign)
                .transpose()
                .context("--resign")?,
            max_moves: Some(self.maxmoves),
        })
    }
}

/// `suite --side`: the side to move at the exits.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum SideToMove {
    Both,
    White,
    Black,
}

impl From<SideToMove> for learnbook::book::suite::SideToMove {
    fn from(side: SideToMove) -> Self {
        match side {
            SideToMove::Both => Self::Both,
            SideToMove::White => Self::White,
            SideToMove::Black => Self::Black,
        }
    }
}

/// `suite --stratify`: how the exits are grouped.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Stratify {
    /// ECO families: the letter and first digit of the deepest named opening (B2 = B20-B29).
    Eco,
    /// The first two moves of the line.
    FirstMoves,
}

impl From<Stratify> for learnbook::book::suite::Stratify {
    fn from(s: Stratify) -> Self {
        match s {
            Stratify::Eco => Self::Eco,
            Stratify::FirstMoves => Self::FirstMoves,
        }
    }
}
