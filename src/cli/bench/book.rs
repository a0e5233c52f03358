//! `bench analyze`, `bench grow` and `bench learn`: work on copies of a book.

use std::{path::Path, time::Instant};

use anyhow::{anyhow, bail, Context, Result};
use learnbook::book::{
    pgn::{
        input::{open_input, GameStream},
        validate::{Filter, SkipReason},
    },
    Book,
};

use super::{median, tempfile_dir};

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

pub(super) fn bench_analyze(
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

pub(super) fn bench_grow(
    book: &Path,
    nodes: u64,
    expansions: usize,
    alpha: f64,
    width: usize,
) -> Result<()> {
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

/// The latency `learn` aims at: a game added and its tree re-evaluated
/// within a millisecond (Hossa's point: learning at once).
const LEARN_TARGET_MS: f64 = 1.0;

/// `learn`'s path, timed: a copy of `book` opened as `learn` opens it
/// (`Book::open`), each game of `games` added by `Book::add_game`, the call
/// `learn` makes for each game (one transaction, the affected positions
/// re-evaluated at once), against a full re-evaluation of the same book;
/// then the floor, each game's rows and counts alone.
pub(super) fn bench_learn(
    book: &Path,
    games: &Path,
    skip: usize,
    n: usize,
    full_runs: usize,
) -> Result<()> {
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
