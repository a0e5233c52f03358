//! `learnbook bench ...`: measured side by side with the named peer, in one
//! run, reported as ratios.

use std::{
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

mod book;
mod build;
mod export;
mod games;
mod multipv;
mod search;
mod serve;
mod suite;

use book::{bench_analyze, bench_grow, bench_learn};
use build::bench_build;
use games::{bench_fit, bench_play, bench_selfplay, bench_tune};

pub use search::search;

/// Arguments of `learnbook bench`.
#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: Option<BenchCommand>,
    /// Search depth of the fixed-position bench.
    #[arg(long, default_value_t = 12)]
    depth: i32,
    /// Transposition table, MB.
    #[arg(long, default_value_t = 64)]
    hash: usize,
}

/// The named bench, or alone the engine's fixed-depth search.
pub fn bench(args: BenchArgs) -> Result<std::process::ExitCode> {
    let BenchArgs { what, depth, hash } = args;
    match what {
        Some(what) => run(what)?,
        None => print!("{}", search(depth, hash)?),
    };
    Ok(std::process::ExitCode::SUCCESS)
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// An EPD test suite (bm/am), a fixed time per position: solved/total and the misses.
    Wac {
        /// The EPD suite (bm/am operations).
        #[arg(value_name = "FILE.epd")]
        file: PathBuf,
        /// Milliseconds per position.
        #[arg(long, default_value_t = 1000)]
        movetime: u64,
        /// Nodes per position instead of time (the result does not depend on the machine).
        #[arg(long)]
        nodes: Option<u64>,
        /// Positions searched at once (one search thread each).
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Transposition table per search, MB.
        #[arg(long, default_value_t = 64)]
        hash: usize,
        /// The engine's weights: a TOML file or a preset (default, search-hand, hand, kaissa, kotok).
        #[arg(long, default_value = "default")]
        weights: String,
    },
    /// Games per second of the built-in engine at --concurrency 1 and 2, in one run.
    Play {
        /// Nodes a move.
        #[arg(long, default_value_t = 2000)]
        nodes: u64,
        /// Games per measurement.
        #[arg(long, default_value_t = 40)]
        games: usize,
        /// Openings (EPD or PGN).
        #[arg(long, value_name = "FILE")]
        openings: PathBuf,
    },
    /// `selfplay` throughput: the same games with --concurrency 1 and 2 (checked to be the
    /// same games), games/s and ratio.
    Selfplay {
        /// Nodes a move.
        #[arg(long, default_value_t = 5000)]
        nodes: u64,
        /// Games per measurement.
        #[arg(long, default_value_t = 40)]
        games: usize,
        /// Openings (EPD or PGN).
        #[arg(long, value_name = "FILE")]
        openings: PathBuf,
    },
    /// Tuner throughput: the same SPSA iterations with --threads 1 and 2, games/s and ratio.
    Tune {
        /// Nodes a move.
        #[arg(long, default_value_t = 2000)]
        nodes: u64,
        /// Game pairs per iteration.
        #[arg(long, default_value_t = 16)]
        pairs_per_iteration: usize,
        /// Iterations per measurement.
        #[arg(long, default_value_t = 10)]
        iterations: u64,
        /// Openings (EPD or PGN).
        #[arg(long, value_name = "FILE")]
        openings: PathBuf,
    },
    /// Perft of a perft EPD suite through the engine's position handling, timed against shakmaty's perft.
    Perft {
        /// The perft EPD suite.
        #[arg(value_name = "FILE.epd")]
        file: PathBuf,
        /// Perft depth.
        #[arg(long, default_value_t = 4)]
        depth: u32,
    },
    /// Full build (parse, SQLite, values) against `polyglot make-book` on the same decompressed PGN.
    Build {
        /// The PGN (any compression); it is decompressed once, for both tools.
        #[arg(value_name = "FILE.pgn")]
        pgn: PathBuf,
        /// Store moves up to this ply (both tools).
        #[arg(long, default_value_t = 40)]
        max_ply: u32,
        /// polyglot's -min-game.
        #[arg(long, default_value_t = 3)]
        min_game: u32,
        /// Runs of each tool; the median is reported.
        #[arg(long, default_value_t = 1)]
        runs: usize,
        /// The polyglot binary (a bare name is looked up on PATH, then in /usr/games).
        #[arg(long, default_value = "polyglot")]
        polyglot: String,
        /// Work directory (default: a new temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// `export` to a GUI's format (--format abk) against jja writing the same format, best of
    /// --runs, as a ratio, with the files' sizes.
    Export(export::ExportBenchArgs),
    /// Realistic games at any scale for `build`/`merge` benchmarks: the first plies follow a
    /// book (moves drawn by their games) while it knows the position, then random legal moves
    /// up to --max-ply; results in the proportions of the book's start. Seeded: the same
    /// command writes the same file, at any thread count.
    Generate {
        /// The book to follow (e.g. built from the master games).
        #[arg(long, value_name = "BOOK.sqlite")]
        book: PathBuf,
        /// Games to write.
        #[arg(long)]
        games: u64,
        /// The output PGN (.pgn, .pgn.gz or .pgn.zst); written beside and renamed into place.
        #[arg(long, value_name = "FILE.pgn")]
        out: PathBuf,
        /// Seed of every random choice.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Plies per game.
        #[arg(long, default_value_t = 40)]
        max_ply: u32,
        /// A position the book reached with fewer games is left for random moves.
        #[arg(long, default_value_t = 20)]
        min_book_games: u32,
    },
    /// `fit` throughput on 1 and 2 threads: positions read and traced per second, and
    /// positions per second through the loss and its gradient (one epoch), with the ratios.
    Fit {
        /// PGN games to read positions from (.pgn, .gz, .zst).
        #[arg(value_name = "FILE.pgn")]
        pgn: PathBuf,
        /// Use at most this many positions.
        #[arg(long, default_value_t = 500_000)]
        max_positions: usize,
        /// Epochs per measurement.
        #[arg(long, default_value_t = 10)]
        epochs: u32,
    },
    /// An independent engine (the judge) scores the move each book plays at the most-played
    /// positions: centipawn loss of learnbook's best and weighted picks and of each Polyglot
    /// book's top-weight and weighted picks, and the Spearman correlation of the book's values
    /// with the judge's evaluations.
    BookQuality(BookQualityArgs),
    /// Analysis throughput on `analyze`'s path (the book opened as `analyze` opens it, the
    /// same searches and stores): the same positions of a copy of BOOK analysed with 1 and
    /// with 2 threads, positions per second and their ratio.
    Analyze {
        /// The book to copy (it is not changed).
        #[arg(long)]
        book: PathBuf,
        /// The analysing engine, as `analyze --engine` takes it (default: the search core).
        #[arg(long)]
        engine: Option<learnbook::analyze::AnalystSpec>,
        /// Nodes per search.
        #[arg(long, default_value_t = learnbook::analyze::DEFAULT_NODES)]
        nodes: u64,
        /// Positions analysed per measurement (the first of the breadth-first order).
        #[arg(long, default_value_t = 400)]
        positions: usize,
        /// Analyse positions with at least this many games, and their children.
        #[arg(long, default_value_t = learnbook::analyze::DEFAULT_MIN_GAMES)]
        min_games: u32,
    },
    /// A position's book moves scored by one MultiPV search against one search a child (same
    /// engine, budget and positions): positions per second, and each method's distance from
    /// a reference (one search a child at --reference-nodes, the same engine: it shares the
    /// analyst's evaluation).
    Multipv {
        /// The book whose positions are scored (only read).
        #[arg(long)]
        book: PathBuf,
        /// A UCI engine with MultiPV, as `analyze --engine` takes it.
        #[arg(long)]
        engine: learnbook::analyze::AnalystSpec,
        /// Nodes per search of both methods.
        #[arg(long, default_value_t = 50_000)]
        nodes: u64,
        /// Nodes per MultiPV search, one or more (default --nodes): equal quality may need more.
        #[arg(long, value_delimiter = ',')]
        multipv_nodes: Vec<u64>,
        /// Nodes per search of the reference (default 20 x --nodes).
        #[arg(long)]
        reference_nodes: Option<u64>,
        /// Positions: interior, with two book moves or more, in improve's order.
        #[arg(long, default_value_t = 100)]
        positions: usize,
        /// Positions with at least this many games.
        #[arg(long, default_value_t = 50)]
        min_games: u32,
    },
    /// Grow throughput: the same number of expansions on copies of BOOK with 1 and with 2
    /// threads (the search core), expansions per second and their ratio, with what each
    /// run added.
    Grow {
        /// The book to copy (it is not changed).
        #[arg(long)]
        book: PathBuf,
        /// Nodes per search.
        #[arg(long, default_value_t = learnbook::analyze::DEFAULT_NODES)]
        nodes: u64,
        /// Expansions per measurement.
        #[arg(long, default_value_t = 400)]
        expansions: usize,
        /// As `grow --alpha`.
        #[arg(long, default_value_t = learnbook::analyze::grow::DEFAULT_ALPHA)]
        alpha: f64,
        /// As `grow --width`.
        #[arg(long, default_value_t = learnbook::analyze::grow::DEFAULT_WIDTH)]
        width: usize,
    },
    /// Opening suites compared by the resolution they give a match: nElo and expected SPRT length.
    ///
    /// The same two engines play --pairs game pairs over each --suite: each opening twice,
    /// colours swapped, the openings in an order shuffled with --seed (the same engines,
    /// limits and number of pairs for every suite; a suite with fewer openings than pairs
    /// has them taken again, and the output says so). A suite whose pairs vary less tells
    /// the engines apart in fewer games: the SPRT's cost goes as 1/nElo^2.
    ///
    /// Prints, per suite: pairs, games, wins/draws/losses from the first engine's side and
    /// the draw rate; the pentanomial counts [LL, LD, DD+WL, WD, WW], the share of pairs
    /// scoring 1-1 and of pairs with both games drawn; the score and the Elo with its 95%
    /// interval (pentanomial); the variance per pair and nElo with its 95% interval
    /// (fishtest's definitions); the GSPRT's expected length in games for --elo0/--elo1
    /// (logistic Elo, --alpha, --beta) by Wald's approximation with the suite's measured
    /// variance, if the true Elo is elo1 and at the measured score. Then one table row per
    /// suite: draw rate, nElo [95%], nElo over the first suite's, expected SPRT games.
    ///
    /// Runs are long (hours for the thousands of pairs a useful comparison needs): give
    /// --pgnout-dir. Each suite's games are appended to DIR/<suite name>.pgn as they end,
    /// and the same command run again counts the games already there and plays only the
    /// rest, so a killed bench resumes where it stopped. --journal keeps only each game's
    /// result, a character a game, in a file small enough to keep with the project: the
    /// same command resumes from it on another machine.
    Suite {
        /// An opening suite: EPD (one position a line) or PGN (.gz, .zst). Once per suite;
        /// the first is the one the others are compared with.
        #[arg(long = "suite", value_name = "FILE", required = true)]
        suites: Vec<PathBuf>,
        /// name=N,cmd=CMD[,proto=uci|xboard][,option.X=V][,dir=D][,tc=|nodes=|depth=];
        /// cmd=builtin[,weights=W]. Twice, with different names; results are the first's.
        #[arg(long = "engine", required = true, num_args = 1)]
        engines: Vec<String>,
        /// Game pairs per suite (2 games each).
        #[arg(long)]
        pairs: usize,
        /// Games played at once (each worker owns its engine processes).
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        #[command(flatten)]
        limit: crate::cli::args::LimitArgs,
        /// Seed of each suite's opening order.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The SPRT's H0, logistic Elo (for the expected length).
        #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
        elo0: f64,
        /// The SPRT's H1, logistic Elo.
        #[arg(long, default_value_t = 5.0, allow_negative_numbers = true)]
        elo1: f64,
        /// The SPRT's type I error.
        #[arg(long, default_value_t = 0.05)]
        alpha: f64,
        /// The SPRT's type II error.
        #[arg(long, default_value_t = 0.05)]
        beta: f64,
        #[command(flatten)]
        adjudication: crate::cli::args::MatchAdjudication,
        /// Append each suite's games to DIR/<suite name>.pgn; games already there from an
        /// earlier run of the same command are counted, not played again.
        #[arg(long, value_name = "DIR")]
        pgnout_dir: Option<PathBuf>,
        /// A results journal: each game's result is written there as it ends, and games
        /// already there from an earlier run of the same command are counted, not played
        /// again (with --pgnout-dir too, a game in both counts once).
        #[arg(long, value_name = "FILE")]
        journal: Option<PathBuf>,
        /// Also write the results as JSON to this file.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Adding one game with incremental re-evaluation on `learn`'s path (the book opened as
    /// `learn` opens it, each game through the call `learn` makes), against a full
    /// re-evaluation, on a copy of BOOK: the median per game beside the 1 ms target, then
    /// the floor (each game's rows and counts alone).
    Learn {
        /// The book to copy (it is not changed).
        #[arg(long)]
        book: PathBuf,
        /// Games to add one by one (they should not be in the book).
        #[arg(long)]
        games: PathBuf,
        /// Skip this many games of --games first.
        #[arg(long, default_value_t = 0)]
        skip: usize,
        /// Number of games to add.
        #[arg(long, default_value_t = 1000)]
        n: usize,
        /// Full re-evaluations to time.
        #[arg(long, default_value_t = 3)]
        full_runs: usize,
    },
    /// The explorer under load: `/masters` requests/s and p50/p99 latency at 1, 8 and 64
    /// connections on loopback, beside the constant endpoint (HTTP's own cost) and the same
    /// lookups in process; then 64 connections while `learn` adds games to the book (a copy).
    Serve {
        /// The book (copied; the copy is served and learned into).
        #[arg(long)]
        book: PathBuf,
        /// Seconds of load per measurement.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Games `learn` adds during the last load (generated from the book, new to it).
        #[arg(long, default_value_t = 1000)]
        learn_games: u64,
        /// Distinct positions queried, drawn from the book by popularity.
        #[arg(long, default_value_t = 2000)]
        queries: usize,
        /// The server's threads (default: the cores).
        #[arg(long)]
        threads: Option<usize>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

pub fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Wac {
            file,
            movetime,
            nodes,
            threads,
            hash,
            weights,
        } => {
            use learnbook::engine::search::Limits;
            let weights = learnbook::engine::presets::load(&weights).context("--weights")?;
            let limits = match nodes {
                Some(n) => Limits {
                    nodes: Some(n),
                    ..Limits::default()
                },
                None => Limits {
                    movetime: Some(movetime),
                    ..Limits::default()
                },
            };
            let (_, report) = search::wac(&file, &limits, threads, hash, &weights)?;
            print!("{report}");
            Ok(())
        }
        BenchCommand::Play {
            nodes,
            games,
            openings,
        } => bench_play(nodes, games, &openings),
        BenchCommand::Selfplay {
            nodes,
            games,
            openings,
        } => bench_selfplay(nodes, games, &openings),
        BenchCommand::Analyze {
            book,
            engine,
            nodes,
            positions,
            min_games,
        } => bench_analyze(&book, engine.as_ref(), nodes, positions, min_games),
        BenchCommand::Multipv {
            book,
            engine,
            nodes,
            multipv_nodes,
            reference_nodes,
            positions,
            min_games,
        } => multipv::bench_multipv(
            &book,
            &engine,
            nodes,
            if multipv_nodes.is_empty() {
                vec![nodes]
            } else {
                multipv_nodes
            },
            reference_nodes.unwrap_or(nodes.saturating_mul(20)),
            positions,
            min_games,
        ),
        BenchCommand::Grow {
            book,
            nodes,
            expansions,
            alpha,
            width,
        } => bench_grow(&book, nodes, expansions, alpha, width),
        BenchCommand::Fit {
            pgn,
            max_positions,
            epochs,
        } => bench_fit(&pgn, max_positions, epochs),
        BenchCommand::Generate {
            book,
            games,
            out,
            seed,
            max_ply,
            min_book_games,
        } => {
            let start = Instant::now();
            let opts = learnbook::book::pgn::generate::Options {
                book,
                out,
                games,
                seed,
                max_ply,
                min_book_games,
            };
            let bytes = learnbook::book::pgn::generate::generate(&opts)?;
            let secs = start.elapsed().as_secs_f64();
            println!(
                "{}: {games} games, {:.1} MB of PGN ({:.0} bytes a game) in {secs:.1} s, {:.0} games/s",
                opts.out.display(),
                bytes as f64 / 1e6,
                bytes as f64 / games.max(1) as f64,
                games as f64 / secs.max(1e-9)
            );
            Ok(())
        }
        BenchCommand::BookQuality(opts) => {
            let report = learnbook::analyze::quality::run(&opts.options())?;
            print!("{report}");
            Ok(())
        }
        BenchCommand::Tune {
            nodes,
            pairs_per_iteration,
            iterations,
            openings,
        } => bench_tune(nodes, pairs_per_iteration, iterations, &openings),
        BenchCommand::Perft { file, depth } => {
            let (ok, report) = search::perft_suite(&file, depth)?;
            print!("{report}");
            if !ok {
                bail!("perft counts differ from {}", file.display());
            }
            Ok(())
        }
        BenchCommand::Build {
            pgn,
            max_ply,
            min_game,
            runs,
            polyglot,
            dir,
        } => bench_build(&pgn, max_ply, min_game, runs, &polyglot, dir),
        BenchCommand::Export(args) => export::bench_export(args),
        BenchCommand::Learn {
            book,
            games,
            skip,
            n,
            full_runs,
        } => bench_learn(&book, &games, skip, n, full_runs),
        BenchCommand::Suite {
            suites,
            engines,
            pairs,
            concurrency,
            limit,
            seed,
            elo0,
            elo1,
            alpha,
            beta,
            adjudication,
            pgnout_dir,
            journal,
            json,
        } => {
            use learnbook::play::spec;
            // What decides the games, as given (the journal's match identity).
            let identity = format!(
                "engines={engines:?} tc={:?} nodes={:?} depth={:?} draw={:?} resign={:?} maxmoves={:?}",
                limit.tc,
                limit.nodes,
                limit.depth,
                adjudication.draw,
                adjudication.resign,
                adjudication.maxmoves
            );
            let cfg = suite::SuiteBench {
                suites,
                engines: suite::engines(&engines, &limit.limit())?,
                pairs,
                concurrency,
                seed,
                // parse_sprt checks the bounds as `play --sprt` does.
                sprt: spec::parse_sprt(&format!(
                    "elo0={elo0},elo1={elo1},alpha={alpha},beta={beta}"
                ))?,
                adjudication: adjudication.adjudication()?,
                pgnout_dir,
                journal,
                identity,
            };
            bench_suite(&cfg, json.as_deref())
        }
        BenchCommand::Serve {
            book,
            seconds,
            learn_games,
            queries,
            threads,
            seed,
        } => {
            let report = serve::run(&serve::Options {
                book,
                seconds,
                learn_games,
                queries,
                threads,
                seed,
            })?;
            print!("{report}");
            Ok(())
        }
    }
}

/// `bench suite`: the report on stdout and, with `json`, in that file.
fn bench_suite(cfg: &suite::SuiteBench, json: Option<&Path>) -> Result<()> {
    let report = suite::bench_suites(cfg)?;
    print!("{report}");
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report).context("--json")?;
        learnbook::atomic_file::write(path, text.as_bytes())
            .with_context(|| format!("--json: cannot write {}", path.display()))?;
    }
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn tempfile_dir() -> Result<PathBuf> {
    let d = std::env::temp_dir().join(format!("learnbook-bench-{}", std::process::id()));
    std::fs::create_dir_all(&d)?;
    Ok(d)
}

/// `bench book-quality`'s arguments.
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
