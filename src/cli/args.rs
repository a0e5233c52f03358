//! Argument groups several commands share (`#[command(flatten)]`), each
//! defined once with what it turns into.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use learnbook::book::{build, values::minimax::ValueParams};
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
/// `merge`, `check`, `export`, `import`, `reevaluate`, `analyze`, `improve`).
#[derive(Args)]
pub struct Memory {
    /// Memory it may hold (e.g. 512M, 2G; default: half of the machine's). SQLite maps an
    /// eighth of it and caches a sixteenth (16 MB at most). Past it, `build` journals the
    /// games in --temp-dir and a filter of shared positions replaces the counts, which are
    /// then taken in key ranges (the keys of the positions two games reach stay in memory,
    /// 8 bytes each); a book whose graph takes more than half of it (about 300 bytes a
    /// position) is valued depth by depth through SQLite (`merge`, `import`,
    /// `reevaluate`) and read a position at a time (`export`, `check`); `analyze` and
    /// `improve` sort the positions to search on disk past a sixteenth of it (in the system's
    /// temporary folder). Slower, the same book and files (docs/COMMANDS.md lists what it
    /// does not bound).
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

impl From<SideToMove> for learnbook::book::formats::suite::SideToMove {
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

impl From<Stratify> for learnbook::book::formats::suite::Stratify {
    fn from(s: Stratify) -> Self {
        match s {
            Stratify::Eco => Self::Eco,
            Stratify::FirstMoves => Self::FirstMoves,
        }
    }
}

/// `--book` of every command that reads or writes one book.
#[derive(Args)]
pub struct BookArg {
    /// The book file (SQLite).
    #[arg(long, value_name = "BOOK.sqlite")]
    pub book: std::path::PathBuf,
}

/// Who searches and how long: `analyze` and `grow`.
#[derive(Args)]
pub struct SearchArgs {
    /// Nodes per search.
    #[arg(long, conflicts_with = "movetime", default_value_t = learnbook::analyze::DEFAULT_NODES)]
    pub nodes: u64,
    /// Milliseconds per search, instead of --nodes.
    #[arg(long)]
    pub movetime: Option<u64>,
    /// Plies per search (UCI `go depth`), instead of --nodes.
    #[arg(long, conflicts_with_all = ["movetime", "nodes"])]
    pub depth: Option<u32>,
    /// Engines searching in parallel (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// The engine: builtin (the search core; builtin,weights=W.toml or a preset) or a UCI engine
    /// as the match runner takes it: "cmd=stockfish,option.Threads=1".
    #[arg(long)]
    pub engine: Option<learnbook::analyze::AnalystSpec>,
}

/// How `analyze` searches.
#[derive(Args)]
pub struct AnalysisArgs {
    #[command(flatten)]
    pub search: SearchArgs,
    /// Analyse positions with at least this many games, and their children.
    #[arg(long, default_value_t = learnbook::analyze::DEFAULT_MIN_GAMES)]
    pub min_games: u32,
}

/// How `learn --analyze` and `play --learn-analyze` search what a game added.
#[derive(Args)]
pub struct LearnAnalysisArgs {
    /// Nodes per search of the analysis after each game.
    #[arg(long, default_value_t = learnbook::analyze::DEFAULT_NODES)]
    analysis_nodes: u64,
    /// Analyse positions with at least this many games, and their children.
    #[arg(long, default_value_t = learnbook::analyze::DEFAULT_MIN_GAMES)]
    analysis_min_games: u32,
    /// The analysing engine (default: the search core); see `analyze --engine`.
    #[arg(long)]
    analysis_engine: Option<learnbook::analyze::AnalystSpec>,
}

impl AnalysisArgs {
    pub fn options(&self, progress: bool) -> Result<learnbook::analyze::Options> {
        use learnbook::analyze::{self, Budget};
        let search = &self.search;
        Ok(analyze::Options {
            engine: analyze::EngineChoice::open(search.engine.as_ref())?,
            budget: Budget::from_limits(search.nodes, search.movetime, search.depth)?,
            threads: search.threads.unwrap_or_else(all_cores),
            min_games: self.min_games,
            batch: 256,
            progress,
        })
    }
}

impl LearnAnalysisArgs {
    pub fn options(&self) -> Result<learnbook::analyze::Options> {
        AnalysisArgs {
            search: SearchArgs {
                nodes: self.analysis_nodes,
                movetime: None,
                depth: None,
                threads: None,
                engine: self.analysis_engine.clone(),
            },
            min_games: self.analysis_min_games,
        }
        .options(false)
    }
}

/// `90`, `90s`, `30m`, `2h` as a duration (`grow --time`, `improve --time`).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let (n, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (90s, 30m, 2h)"))?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("{s:?} is not a duration (90s, 30m, 2h)")),
    };
    Ok(std::time::Duration::from_secs(secs))
}
