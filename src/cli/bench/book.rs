//! `bench analyze`, `bench grow` and `bench learn`: work on copies of a book.

use std::{
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use learnbook::book::{
    pgn::{
        input::{open_input, GameStream},
        validate::{Filter, SkipReason},
    },
    Book,
};

use super::{median, tempfile_dir};

/// Analysis throughput on `analyze`'s path (the book opened as `analyze` opens it, the
/// same searches and stores): the same positions of a copy of BOOK analysed with 1 and
/// with 2 threads, positions per second and their ratio.
#[derive(Args, Debug)]
pub struct AnalyzeArgs {
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
}

impl AnalyzeArgs {
    pub(super) fn run(self) -> Result<()> {
        bench_analyze(
            &self.book,
            self.engine.as_ref(),
            self.nodes,
            self.positions,
            self.min_games,
        )
    }
}

/// Grow throughput: the same number of expansions on copies of BOOK with 1 and with 2
/// threads (the search core), expansions per second and their ratio, with what each
/// run added.
#[derive(Args, Debug)]
pub struct GrowArgs {
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
}

impl GrowArgs {
    pub(super) fn run(self) -> Result<()> {
        bench_grow(
            &self.book,
            self.nodes,
            self.expansions,
            self.alpha,
            self.width,
        )
    }
}

/// Adding one game with incremental re-evaluation on `learn`'s path (the book opened as
/// `learn` opens it, each game through the call `learn` makes), against a full
/// re-evaluation, on a copy of BOOK: the median per game beside the 1 ms target, then
/// the floor (each game's rows and counts alone).
#[derive(Args, Debug)]
pub struct LearnArgs {
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
}

impl LearnArgs {
    pub(super) fn run(self) -> Result<()> {
        bench_learn(&self.book, &self.games, self.skip, self.n, self.full_runs)
    }
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

fn bench_analyze(
    book: &Path,
    engine: Option<&learnbook::analyze::AnalystSpec>,
    nodes: u64,
    positions: usize,
    min_games: u32,
) -> Result<()> {
    use learnbook::analyze::{self, Budget, EngineChoice, Options};
    let engine = EngineChoice::open(engine)?;
    let label = "learnbook bench";
    let dir = tempfile_dir()?;
    let mut rates = Vec::new();
    for threads in [1usize, 2] {
        let copy = dir.join(format!("analyze-bench-{threads}.sqlite"));
        copy_book(book, &copy)?;
        // As `analyze` opens it, and searched and stored by its own calls.
        let mut b = Book::open(&copy)?;
        // Fresh scores for a fixed budget label, so nothing counts as done.
        let opts = Options {
            engine: engine.clone(),
            budget: Budget::Nodes(nodes),
            threads,
            min_games,
            batch: 256,
            progress: false,
        };
        // A label no stored analysis has, so nothing counts as done.
        let found = analyze::targets::find(&b, min_games, label, &opts.budget.to_string())?;
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
                engine: EngineChoice::builtin(None, &Default::default())?,
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

/// The latency `learn` aims at: a game added and its tree re-evaluated
/// within a millisecond (Hossa's point: learning at once).
const LEARN_TARGET_MS: f64 = 1.0;

/// `learn`'s path, timed: a copy of `book` opened as `learn` opens it
/// (`Book::open`), each game of `games` added by `Book::add_game`, the call
/// `learn` makes for each game (one transaction, the affected positions
/// re-evaluated at once), against a full re-evaluation of the same book;
/// then the floor, each game's rows and counts alone.
fn bench_learn(book: &Path, games: &Path, skip: usize, n: usize, full_runs: usize) -> Result<()> {
    let dir = tempfile_dir()?;
    let copy = dir.join("learn-bench.sqlite");
    copy_book(book, &copy)?;
    let mut b = Book::open(&copy)?;
    // The games as `learn` reads them (its filter: the book's max ply).
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
    'read: for raw in stream.by_ref() {
        let raw = raw.map_err(|e| anyhow!("reading {}: {e}", games.display()))?;
        seen += 1;
        if seen <= skip {
            continue;
        }
        // Skipped as `learn` skips it; an input that fails stops the bench.
        let game = match raw.validate(&filter) {
            Ok(g) => g,
            Err(SkipReason::Unreadable(e)) => bail!("reading {}: {e}", games.display()),
            Err(_) => continue,
        };
        let t = Instant::now();
        let re = b.add_game(&game, "bench")?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        // A game the book already has is not learned: not timed.
        if let Some(re) = re {
            times.push(ms);
            recomputed.push(re.recomputed as f64);
            added.push(game);
            if times.len() >= n {
                break 'read;
            }
        }
    }
    // Stopped early: an error the last batch read met is still reported.
    if let Some(e) = stream.error.take() {
        bail!("reading {}: {e}", games.display());
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
    drop(b);
    let k = times.len();
    let med = median(&mut times.clone());
    let p90 = {
        let mut t = times.clone();
        t.sort_by(f64::total_cmp);
        t[(k * 9 / 10).min(k - 1)]
    };
    let full_med = median(&mut full);
    println!("book: {} ({k} games added one by one)", book.display());
    println!(
        "add one game + incremental re-evaluation (learn's path: Book::open, Book::add_game): \
         median {med:.3} ms, p90 {p90:.3} ms, mean {:.3} ms; median positions recomputed {:.0}",
        times.iter().sum::<f64>() / k as f64,
        median(&mut recomputed)
    );
    println!(
        "target: under {LEARN_TARGET_MS} ms (the median): {}",
        if med < LEARN_TARGET_MS {
            "met"
        } else {
            "not met"
        }
    );
    println!("full re-evaluation (load, evaluate, write changes): median {full_med:.0} ms");
    println!(
        "ratio incremental/full = {:.6} (full is {:.0}x slower)",
        med / full_med,
        full_med / med
    );
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
