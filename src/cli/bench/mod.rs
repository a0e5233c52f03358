//! `learnbook bench ...`: measured side by side with the named peer, in one
//! run, reported as ratios.

use std::{
    io::{Read, Write},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{bail, Context, Result};
use clap::Subcommand;

mod search;
mod serve;
mod suite;

pub use search::search;

use learnbook::book::{
    ingest::{open_input, Filter, Game, GameStream},
    Book,
};

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
        /// The engine's weights: a TOML file or a preset (default, hand, kaissa, kotok).
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
    BookQuality(learnbook::analyze::quality::Options),
    /// Analysis throughput: the same positions of a copy of BOOK analysed with 1 and with 2
    /// threads (the search core), positions per second and their ratio.
    Analyze {
        /// The book to copy (it is not changed).
        #[arg(long)]
        book: PathBuf,
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
    /// Adding one game and re-evaluating, against a full re-evaluation, on a copy of BOOK.
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
            nodes,
            positions,
            min_games,
        } => bench_analyze(&book, nodes, positions, min_games),
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
            let opts = learnbook::book::generate::Options {
                book,
                out,
                games,
                seed,
                max_ply,
                min_book_games,
            };
            let bytes = learnbook::book::generate::generate(&opts)?;
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
            let report = learnbook::analyze::quality::run(&opts)?;
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

/// Wall time and peak resident memory of a child process.
struct Measured {
    seconds: f64,
    max_rss_mb: f64,
}

fn measure(cmd: &mut Command) -> Result<Measured> {
    let start = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.context("no stderr")?;
    let mut err = String::new();
    // Drain stderr so the child never blocks on a full pipe.
    let _ = stderr.read_to_string(&mut err);
    let mut status = 0;
    // SAFETY: plain wait4 on our own child; rusage is a POD out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let seconds = start.elapsed().as_secs_f64();
    if r < 0 {
        bail!("wait4 failed for {cmd:?}");
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        bail!("{cmd:?} failed: {}", err.trim());
    }
    Ok(Measured {
        seconds,
        max_rss_mb: usage.ru_maxrss as f64 / 1024.0,
    })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A bare program name as the shell would find it, falling back to
/// `/usr/games`, where Debian installs polyglot and the engines but which is
/// often not on root's or a service's PATH.
fn find_program(name: &str) -> PathBuf {
    if name.contains('/') {
        return PathBuf::from(name);
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()));
    let games = Path::new("/usr/games").join(name);
    if !on_path && games.is_file() {
        games
    } else {
        PathBuf::from(name)
    }
}

fn bench_build(
    pgn: &Path,
    max_ply: u32,
    min_game: u32,
    runs: usize,
    polyglot: &str,
    dir: Option<PathBuf>,
) -> Result<()> {
    let tmp;
    let dir = match dir {
        Some(d) => {
            std::fs::create_dir_all(&d)?;
            d
        }
        None => {
            tmp = tempfile_dir()?;
            tmp.clone()
        }
    };
    let plain = dir.join("input.pgn");
    {
        let mut input = open_input(pgn)?;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&plain)?);
        std::io::copy(&mut input, &mut out).context("decompressing")?;
        out.flush()?;
    }
    let size = std::fs::metadata(&plain)?.len();
    println!(
        "input: {} ({:.1} MB decompressed), max ply {max_ply}, 2-core machine: {} cores here",
        pgn.display(),
        size as f64 / 1e6,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let polyglot = find_program(polyglot);
    let exe = std::env::current_exe()?;
    let (mut ours, mut theirs, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    let mut rss = (0.0f64, 0.0f64);
    for run in 0..runs.max(1) {
        let bin = dir.join("polyglot.bin");
        let p = measure(Command::new(&polyglot).args([
            "make-book",
            "-pgn",
            plain.to_str().context("path")?,
            "-bin",
            bin.to_str().context("path")?,
            "-max-ply",
            &max_ply.to_string(),
            "-min-game",
            &min_game.to_string(),
        ]))?;
        let book = dir.join("book.sqlite");
        let _ = std::fs::remove_file(&book);
        let o = measure(Command::new(&exe).args([
            "build",
            "--book",
            book.to_str().context("path")?,
            "--max-ply",
            &max_ply.to_string(),
            plain.to_str().context("path")?,
        ]))?;
        let filter = Filter {
            max_ply,
            min_elo: None,
            allow_duplicates: true,
            no_tails: false,
        };
        let f = learnbook::book::build::validate_only(vec![plain.clone()], &filter)?;
        println!(
            "run {}: polyglot make-book {:.2} s ({:.0} MB peak), learnbook build {:.2} s ({:.0} MB peak), reading and validating alone {:.2} s",
            run + 1,
            p.seconds,
            p.max_rss_mb,
            o.seconds,
            o.max_rss_mb,
            f.seconds
        );
        theirs.push(p.seconds);
        ours.push(o.seconds);
        floor.push(f.seconds);
        rss = (rss.0.max(p.max_rss_mb), rss.1.max(o.max_rss_mb));
    }
    let (o, p, f) = (median(&mut ours), median(&mut theirs), median(&mut floor));
    println!(
        "median: learnbook {o:.2} s, polyglot {p:.2} s, ratio learnbook/polyglot = {:.3}",
        o / p
    );
    println!(
        "reading, parsing and validating every move (both cores, nothing counted or stored): {f:.2} s, ratio to polyglot = {:.3}",
        f / p
    );
    println!(
        "peak memory: learnbook {:.0} MB, polyglot {:.0} MB",
        rss.1, rss.0
    );
    Ok(())
}

fn tempfile_dir() -> Result<PathBuf> {
    let d = std::env::temp_dir().join(format!("learnbook-bench-{}", std::process::id()));
    std::fs::create_dir_all(&d)?;
    Ok(d)
}

/// Copies `book` page for page (as `build` left it) into `dir`.
fn copy_book(book: &Path, copy: &Path) -> Result<()> {
    let _ = std::fs::remove_file(copy);
    // A page-for-page copy of the book as `build` left it (VACUUM INTO
    // would pack every page full, so that nearly every insert splits one).
    let src = Book::open(book)?;
    src.checkpoint()?;
    std::fs::copy(book, copy)
        .with_context(|| format!("copying {} to {}", book.display(), copy.display()))?;
    // Written back now, not by the kernel while work is timed.
    std::fs::File::open(copy)?.sync_all()?;
    Ok(())
}

fn bench_analyze(book: &Path, nodes: u64, positions: usize, min_games: u32) -> Result<()> {
    use learnbook::analyze::{self, Budget, EngineChoice, Options};
    let dir = tempfile_dir()?;
    let mut rates = Vec::new();
    for threads in [1usize, 2] {
        let copy = dir.join(format!("analyze-bench-{threads}.sqlite"));
        copy_book(book, &copy)?;
        let mut b = Book::open(&copy)?;
        // Fresh scores for a fixed budget label, so nothing counts as done.
        let opts = Options {
            engine: EngineChoice::Builtin {
                weights: Box::default(),
                label: "learnbook bench".into(),
            },
            budget: Budget::Nodes(nodes),
            threads,
            min_games,
            batch: 256,
            progress: false,
        };
        let found =
            analyze::targets::find(&b, min_games, "learnbook bench", &opts.budget.to_string())?;
        let todo: Vec<_> = found.todo.into_iter().take(positions).collect();
        let n = todo.len();
        let s = analyze::run_targets(&mut b, todo, &opts)?;
        drop(b);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", copy.display()));
        }
        let rate = s.analysed as f64 / s.seconds;
        println!(
            "threads {threads}: {n} positions ({} interior) in {:.2} s: {rate:.1} positions/s",
            s.interior, s.seconds
        );
        rates.push(rate);
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("ratio 2/1 threads: {:.2}", rates[1] / rates[0]);
    Ok(())
}

fn bench_grow(book: &Path, nodes: u64, expansions: usize, alpha: f64, width: usize) -> Result<()> {
    use learnbook::analyze::{grow, Budget, EngineChoice, Options};
    let dir = tempfile_dir()?;
    let mut rates = Vec::new();
    for threads in [1usize, 2] {
        let copy = dir.join(format!("grow-bench-{threads}.sqlite"));
        copy_book(book, &copy)?;
        let mut b = Book::open(&copy)?;
        let opts = grow::Options {
            analysis: Options {
                engine: EngineChoice::Builtin {
                    weights: Box::default(),
                    label: "learnbook".into(),
                },
                budget: Budget::Nodes(nodes),
                threads,
                min_games: learnbook::analyze::DEFAULT_MIN_GAMES,
                batch: 256,
                progress: false,
            },
            alpha,
            width,
            expansions: Some(expansions),
            time: None,
            from: Vec::new(),
            min_games: 0,
        };
        let s = grow::run(&mut b, &opts)?;
        drop(b);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", copy.display()));
        }
        let rate = s.expansions as f64 / s.seconds;
        print!("threads {threads}: {}", s.report());
        rates.push(rate);
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("ratio 2/1 threads: {:.2}", rates[1] / rates[0]);
    Ok(())
}

/// Games `bench learn` adds to one copy before the other copy's turn.
const LEARN_BLOCK: usize = 64;

/// Adds `games` to `book` one at a time: each one's milliseconds and
/// positions recomputed, `None` for a game the book already had.
fn time_games(book: &mut Book, games: &[Game]) -> Result<Vec<Option<(f64, usize)>>> {
    games
        .iter()
        .map(|g| {
            let t = Instant::now();
            let re = book.add_game(g, "bench")?;
            Ok(re.map(|r| (t.elapsed().as_secs_f64() * 1e3, r.recomputed)))
        })
        .collect()
}

fn bench_learn(book: &Path, games: &Path, skip: usize, n: usize, full_runs: usize) -> Result<()> {
    let dir = tempfile_dir()?;
    let copy = dir.join("learn-bench.sqlite");
    copy_book(book, &copy)?;
    let mut b = Book::open(&copy)?;
    // Beside it, the same games into a copy whose WAL frames SQLite writes
    // as two system calls each (its own VFS): the two take blocks of games in
    // turns, each block first to one then to the other, so that the
    // machine's drift falls on both alike.
    let plain_copy = dir.join("learn-bench-plain.sqlite");
    copy_book(book, &plain_copy)?;
    let mut plain = Book::open_plain_wal(&plain_copy)?;
    let mut plain_times = Vec::with_capacity(n);
    let filter = Filter {
        max_ply: b.settings.max_ply,
        min_elo: None,
        allow_duplicates: false,
        no_tails: false,
    };
    let mut stream = GameStream::new(open_input(games)?);
    let mut times = Vec::with_capacity(n);
    let mut recomputed = Vec::with_capacity(n);
    let mut added = Vec::with_capacity(n);
    let mut seen = 0usize;
    let mut block = Vec::new();
    let mut blocks = 0usize;
    while times.len() < n {
        let batch = stream.next_batch(1024);
        let end = batch.is_empty();
        for raw in batch {
            seen += 1;
            if seen > skip {
                if let Ok(game) = raw.validate(&filter) {
                    block.push(game);
                }
            }
        }
        while !block.is_empty() && times.len() < n {
            let take = block.len().min(LEARN_BLOCK).min(n - times.len());
            let part: Vec<Game> = block.drain(..take).collect();
            let (ours, theirs) = if blocks.is_multiple_of(2) {
                let ours = time_games(&mut b, &part)?;
                (ours, time_games(&mut plain, &part)?)
            } else {
                let theirs = time_games(&mut plain, &part)?;
                (time_games(&mut b, &part)?, theirs)
            };
            blocks += 1;
            for ((game, ours), theirs) in part.into_iter().zip(ours).zip(theirs) {
                if let (Some((ms, re)), Some((plain_ms, _))) = (ours, theirs) {
                    times.push(ms);
                    plain_times.push(plain_ms);
                    recomputed.push(re as f64);
                    added.push(game);
                }
            }
        }
        if end {
            break;
        }
    }
    if times.is_empty() {
        bail!("no new games to add from {}", games.display());
    }
    let mut full = Vec::new();
    for _ in 0..full_runs.max(1) {
        let t = Instant::now();
        b.reevaluate_all()?;
        full.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let k = times.len();
    let med = median(&mut times.clone());
    let p90 = {
        let mut t = times.clone();
        t.sort_by(f64::total_cmp);
        t[(k * 9 / 10).min(k - 1)]
    };
    let full_med = median(&mut full);
    println!("book: {} ({} games added one by one)", book.display(), k);
    println!(
        "add one game + incremental re-evaluation: median {med:.3} ms, p90 {p90:.3} ms, mean {:.3} ms; median positions recomputed {:.0}",
        times.iter().sum::<f64>() / k as f64,
        median(&mut recomputed)
    );
    drop(plain);
    let plain_med = median(&mut plain_times);
    println!(
        "the same games through SQLite's own VFS (a WAL frame in two system calls), in blocks of {LEARN_BLOCK} taken in turns: median {plain_med:.3} ms; \
         a commit's frames gathered / SQLite's own = {:.3}",
        med / plain_med
    );
    println!("full re-evaluation (load, evaluate, write changes): median {full_med:.0} ms");
    println!(
        "ratio incremental/full = {:.6} (full is {:.0}x slower)",
        med / full_med,
        full_med / med
    );
    drop(b);
    // The floor on this machine: the same games into another copy, each
    // written as its row and its counts alone, one transaction a game.
    let floor_copy = dir.join("learn-floor.sqlite");
    copy_book(book, &floor_copy)?;
    let mut f = Book::open(&floor_copy)?;
    let mut floor = Vec::with_capacity(added.len());
    for game in &added {
        let t = Instant::now();
        f.add_counts_only(game, "bench")?;
        floor.push(t.elapsed().as_secs_f64() * 1e3);
    }
    drop(f);
    let floor_med = median(&mut floor);
    println!(
        "floor (the same games, each its row and its counts only, one transaction): median {floor_med:.3} ms; learn/floor = {:.2}",
        med / floor_med
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Builtin self-play at a fixed node count, one worker and then two.
fn bench_play(nodes: u64, games: usize, openings: &Path) -> Result<()> {
    use learnbook::play::{
        game::{Adjudication, Limit},
        runner::{read_openings, run_match, MatchConfig, PlayerSpec},
    };
    let openings = read_openings(openings)?;
    let builtin = |name: &str| PlayerSpec::Builtin {
        name: name.into(),
        weights: None,
        book: None,
        book_mode: learnbook::book::select::Mode::Best,
    };
    let mut rates = Vec::new();
    for concurrency in [1, 2] {
        let cfg = MatchConfig {
            players: [builtin("a"), builtin("b")],
            limit: Limit::Nodes(nodes),
            limits: [None, None],
            games,
            concurrency,
            openings: openings.clone(),
            random_seed: Some(1),
            repeat: true,
            noswap: false,
            pgn_out: None,
            sprt: None,
            adjudication: Adjudication::default(),
            learn: None,
            after_learn: None,
            event: "bench".into(),
        };
        let t = Instant::now();
        let mut plies = 0usize;
        run_match(&cfg, |_, g, _| plies += g.moves.len())?;
        let secs = t.elapsed().as_secs_f64();
        let rate = games as f64 / secs;
        println!("concurrency {concurrency}: {games} games ({plies} plies) in {secs:.2} s, {rate:.2} games/s");
        rates.push(rate);
    }
    println!(
        "ratio concurrency 2 / concurrency 1 = {:.2}",
        rates[1] / rates[0]
    );
    Ok(())
}

/// `selfplay` with its defaults (adjudication, table size) into a new file,
/// once with one thread and once with two; both files must hold the same games.
fn bench_selfplay(nodes: u64, games: usize, openings: &Path) -> Result<()> {
    use learnbook::play::{game::Adjudication, runner::read_openings, selfplay};
    let suite = read_openings(openings)?;
    let dir = tempfile_dir()?;
    let mut rates = Vec::new();
    let mut texts = Vec::new();
    for threads in [1, 2] {
        let out = dir.join(format!("selfplay-{threads}.pgn"));
        let _ = std::fs::remove_file(&out);
        let cfg = selfplay::Config {
            pgn_out: out.clone(),
            games,
            nodes,
            openings: suite.clone(),
            concurrency: threads,
            weights: learnbook::engine::params::Weights::default(),
            name: selfplay::player_name("default"),
            seed: 1,
            adjudication: Adjudication {
                draw: Some((34, 8, 20)),
                resign: Some((3, 400)),
                max_moves: Some(200),
            },
            hash_mb: 16,
            shard: learnbook::shard::Shard::WHOLE,
        };
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let s = selfplay::run(&cfg, selfplay::Existing::default(), |_| {})?;
        let secs = t.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu;
        let rate = s.progress.played as f64 / secs;
        println!(
            "threads {threads}: {} games ({} engine moves) in {secs:.2} s, {rate:.2} games/s; \
             CPU {cpu:.2} s, {:.2} cores busy on average",
            s.progress.played,
            s.progress.plies,
            cpu / secs
        );
        rates.push(rate);
        let text = std::fs::read_to_string(&out)
            .with_context(|| format!("cannot read {}", out.display()))?;
        // The Date tag is the day each game was written.
        texts.push(
            text.lines()
                .filter(|l| !l.starts_with("[Date "))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    if texts[0] != texts[1] {
        bail!("one and two threads played different games");
    }
    println!("same games on 1 and 2 threads");
    println!("ratio threads 2 / threads 1 = {:.2}", rates[1] / rates[0]);
    Ok(())
}

/// User and system CPU time of this process so far, in seconds: with the
/// wall time it shows whether the machine gave the threads their cores.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills a plain struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

/// The tuner's loop (games, steps, checkpoints) from `default` over every
/// parameter, once on one thread and once on two. Node-limited games make
/// both runs play the very same games, which is checked.
fn bench_tune(nodes: u64, pairs: usize, iterations: u64, openings: &Path) -> Result<()> {
    use learnbook::{
        engine::params::Weights,
        tune::{
            checkpoint::{AdjudicationSpec, LimitSpec},
            run::{run, Plan},
            spsa::all_params,
        },
    };
    let dir = tempfile_dir()?;
    let mut rates = Vec::new();
    let mut histories = Vec::new();
    for threads in [1, 2] {
        let ckpt = dir.join(format!("bench-{threads}.ckpt"));
        let _ = std::fs::remove_file(&ckpt);
        let start = Weights::default();
        let (mut state, openings) = Plan {
            params: all_params(&start),
            start,
            limit: LimitSpec::Nodes(nodes),
            pairs_per_iteration: pairs,
            iterations,
            openings: openings.to_path_buf(),
            seed: 1,
            adjudication: AdjudicationSpec {
                draw: Some((34, 8, 20)),
                resign: Some((3, 400)),
                max_moves: Some(200),
            },
            engine: None,
        }
        .begin(&ckpt)?;
        let t = Instant::now();
        run(
            &mut state,
            &openings,
            threads,
            &ckpt,
            &dir.join("bench.toml"),
            |_, _| {},
        )?;
        let secs = t.elapsed().as_secs_f64();
        let rate = state.games() as f64 / secs;
        println!(
            "threads {threads}: {iterations} iterations, {} games in {secs:.2} s, {rate:.2} games/s",
            state.games()
        );
        rates.push(rate);
        histories.push(state.history);
    }
    if histories[0] != histories[1] {
        bail!("one and two threads played different games");
    }
    println!("same games and theta on 1 and 2 threads");
    println!("ratio threads 2 / threads 1 = {:.2}", rates[1] / rates[0]);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Positions/s of reading and of the gradient, at 1 and 2 threads.
fn bench_fit(pgn: &Path, max_positions: usize, epochs: u32) -> Result<()> {
    use learnbook::tune::fit::{self, model::Model, samples};
    let sel = samples::Selection {
        skip_plies: 16,
        lambda: 1.0,
        max_positions,
        holdout: 0,
    };
    let w = learnbook::engine::params::Weights::default();
    let model = Model::new()?;
    let x: Vec<f64> = w.values().iter().map(|&v| f64::from(v)).collect();
    let mut read_rate = Vec::new();
    let mut epoch_rate = Vec::new();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .context("cannot start the thread pool")?;
        let (data, read_s, epoch_s) = pool.install(|| -> Result<_> {
            let t = Instant::now();
            let data = samples::read(&[pgn], &sel, &w)?;
            let read_s = t.elapsed().as_secs_f64();
            let t = Instant::now();
            for _ in 0..epochs {
                fit::loss(&model, &data, &x, 1.0, true);
            }
            Ok((data, read_s, t.elapsed().as_secs_f64()))
        })?;
        let n = data.rows.len() as f64;
        read_rate.push(n / read_s);
        epoch_rate.push(n * f64::from(epochs) / epoch_s);
        println!(
            "{threads} thread(s): {} positions read and traced in {read_s:.2} s ({:.0}/s); {epochs} epochs in {epoch_s:.2} s ({:.0} positions/s)",
            data.rows.len(),
            read_rate[threads - 1],
            epoch_rate[threads - 1]
        );
    }
    println!(
        "ratio 2/1 threads: reading {:.2}, epochs {:.2}",
        read_rate[1] / read_rate[0],
        epoch_rate[1] / epoch_rate[0]
    );
    Ok(())
}
