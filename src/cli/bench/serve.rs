//! `learnbook bench serve`: the explorer under load, beside its two floors,
//! in one run.
//!
//! The server is the real binary (`learnbook serve`) on loopback, over a
//! copy of the book. The client keeps `c` connections busy (keep-alive,
//! one request at a time each) for a fixed time at `c` = 1, 8 and 64, and
//! records every latency. The queries are positions drawn from the book by
//! popularity (random walks from the start that follow each move in
//! proportion to its games, stopping at a random depth), so the hot set is
//! realistic; lichess's defaults (12 moves, 15 top games). The server
//! keeps answers while the book does not change (`serve --cache`); the same
//! load against a server without that cache is measured too. Beside it:
//!
//! * the constant endpoint (`/bench/constant`, the book untouched) with the
//!   same client: what HTTP costs on these cores, client included;
//! * the same lookups in process (`view::explorer::explore` and the JSON), on as many
//!   threads as the server has.
//!
//! Then the 64-connection load again while `learnbook learn` adds games to
//! the same book (generated from the book by `bench generate`'s walk, so
//! new to it), every move listed: every answer must be a 200 and
//! consistent (the games through
//! the position at least those of its moves, summed; the moves summing to
//! the top-level counts; no count of a position going down over time).

use std::{
    collections::HashMap,
    io::{BufRead, BufReader},
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use anyhow::{anyhow, bail, Context, Result};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rand::{rngs::StdRng, Rng, SeedableRng};
use shakmaty::{CastlingMode, Chess, Position};

use learnbook::book::{generate, keys::polyglot_key, view::explorer::explore, Book};

/// The explorer under load: `/masters` requests/s and p50/p99 latency at 1, 8 and 64
/// connections on loopback, beside the constant endpoint (HTTP's own cost) and the same
/// lookups in process; then 64 connections while `learn` adds games to the book (a copy).
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
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
}

impl ServeArgs {
    /// `bench serve`: the report on stdout.
    pub(super) fn run(self) -> Result<()> {
        let report = run(&Options {
            book: self.book,
            seconds: self.seconds,
            learn_games: self.learn_games,
            queries: self.queries,
            threads: self.threads,
            seed: self.seed,
        })?;
        print!("{report}");
        Ok(())
    }
}

/// What `bench serve` was given.
#[derive(Clone, Debug)]
pub struct Options {
    pub book: PathBuf,
    /// Seconds of load per measurement.
    pub seconds: f64,
    /// Games `learn` adds during the last load.
    pub learn_games: u64,
    /// Distinct queries drawn from the book.
    pub queries: usize,
    /// The server's threads (`serve --threads`; default: the cores).
    pub threads: Option<usize>,
    pub seed: u64,
}

/// One load measurement.
#[derive(Clone, Debug, Default)]
pub struct Load {
    pub requests: u64,
    pub failed: u64,
    pub inconsistent: u64,
    pub seconds: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The first few failures, as text.
    pub problems: Vec<String>,
}

impl Load {
    pub fn rate(&self) -> f64 {
        self.requests as f64 / self.seconds.max(1e-9)
    }
}

/// Runs the benchmark and returns its report.
pub fn run(opts: &Options) -> Result<String> {
    let threads = opts
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let dir = tempfile_dir()?;
    let book_path = dir.join("book.sqlite");
    {
        let book = Book::open(&opts.book)?;
        book.vacuum_into(&book_path)
            .context("copying the book for the benchmark")?;
    }
    let games = dir.join("learn.pgn");
    generate::generate(&generate::Options {
        book: book_path.clone(),
        out: games.clone(),
        games: opts.learn_games,
        seed: opts.seed ^ 0x5eed,
        max_ply: Book::open(&book_path)?.settings.max_ply,
        min_book_games: 5,
    })?;
    let queries = draw_queries(&book_path, opts.queries, opts.seed)?;
    let mut report = String::new();
    let positions = queries.len();
    report.push_str(&format!(
        "book: {} ({} distinct queries drawn by popularity), {threads} server threads, {} s a measurement, {} cores\n",
        opts.book.display(),
        positions,
        opts.seconds,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    ));

    let in_process = in_process_rate(&book_path, &queries, threads, opts.seconds)?;

    // The server without its answer cache first: every request reads the book.
    let mut uncached_server = Server::start(&book_path, threads, Some(0))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()?;
    let uncached =
        runtime.block_on(load(uncached_server.addr, &queries, 64, opts.seconds, None))?;
    uncached_server.stop();
    let mut server = Server::start(&book_path, threads, None)?;
    let constant = ["/bench/constant".to_string()];
    let mut rows = Vec::new();
    for c in [1usize, 8, 64] {
        let masters = runtime.block_on(load(server.addr, &queries, c, opts.seconds, None))?;
        let floor = runtime.block_on(load(server.addr, &constant, c, opts.seconds, None))?;
        rows.push((c, masters, floor));
    }
    // The last load with `learn` writing the same book.
    let mut learn = Command::new(std::env::current_exe()?)
        .arg("learn")
        .arg("--book")
        .arg(&book_path)
        .arg(&games)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start learnbook learn")?;
    let learning = Arc::new(AtomicBool::new(true));
    let watch = Arc::clone(&learning);
    let started = Instant::now();
    let waiter = std::thread::spawn(move || -> Result<(std::process::ExitStatus, String, f64)> {
        let mut err = String::new();
        if let Some(mut e) = learn.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        let status = learn.wait()?;
        watch.store(false, Ordering::SeqCst);
        Ok((status, err, started.elapsed().as_secs_f64()))
    });
    // Every move listed, so that the answers can be checked.
    let checked: Vec<String> = queries.iter().map(|q| format!("{q}&moves=500")).collect();
    let during = runtime.block_on(load(
        server.addr,
        &checked,
        64,
        opts.seconds,
        Some(Arc::clone(&learning)),
    ))?;
    let (status, learn_err, learn_seconds) = waiter
        .join()
        .map_err(|_| anyhow!("the learn watcher panicked"))??;
    let learned = Book::open(&book_path)?.totals()?.games;
    server.stop();

    report.push_str(&format!(
        "in process (explore + JSON, {threads} threads): {:.0} lookups/s\n",
        in_process
    ));
    report.push_str(
        "conc  /masters req/s   p50 ms   p99 ms  failed | constant req/s   p50 ms   p99 ms | masters/constant  masters/in-process\n",
    );
    for (c, m, f) in &rows {
        report.push_str(&format!(
            "{c:>4}  {:>13.0} {:>8.3} {:>8.3} {:>7} | {:>14.0} {:>8.3} {:>8.3} | {:>16.3} {:>19.3}\n",
            m.rate(),
            m.p50_ms,
            m.p99_ms,
            m.failed + m.inconsistent,
            f.rate(),
            f.p50_ms,
            f.p99_ms,
            m.rate() / f.rate().max(1e-9),
            m.rate() / in_process.max(1e-9),
        ));
    }
    report.push_str(&format!(
        "  64 with --cache 0 (every request reads the book): {:.0} req/s, p50 {:.3} ms, p99 {:.3} ms, failed {}; {:.3} of the in-process rate\n",
        uncached.rate(),
        uncached.p50_ms,
        uncached.p99_ms,
        uncached.failed + uncached.inconsistent,
        uncached.rate() / in_process.max(1e-9)
    ));
    report.push_str(&format!(
        "64 while learn adds {} games ({}; {:.2} s): {} requests, {:.0} req/s, p50 {:.3} ms, p99 {:.3} ms, failed {}, inconsistent {}\n",
        opts.learn_games,
        if status.success() { "exit 0".to_string() } else { format!("FAILED: {}", learn_err.trim()) },
        learn_seconds,
        during.requests,
        during.rate(),
        during.p50_ms,
        during.p99_ms,
        during.failed,
        during.inconsistent
    ));
    report.push_str(&format!("games in the book after: {learned}\n"));
    for p in rows
        .iter()
        .flat_map(|(_, m, f)| m.problems.iter().chain(&f.problems))
        .chain(&during.problems)
        .take(10)
    {
        report.push_str(&format!("  problem: {p}\n"));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let bad = rows
        .iter()
        .any(|(_, m, f)| m.failed + m.inconsistent + f.failed > 0)
        || uncached.failed + uncached.inconsistent > 0
        || during.failed + during.inconsistent > 0
        || !status.success();
    if bad {
        bail!("{report}bench serve: failed or inconsistent answers (see above)");
    }
    Ok(report)
}

/// A fresh directory for the book's copy and the games.
fn tempfile_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("learnbook-bench-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// `/masters` paths for `n` positions: random walks from the start that
/// follow each book move in proportion to its games, to a depth drawn
/// from 0..=24 (a walk stops early where the book has no move).
fn draw_queries(book: &Path, n: usize, seed: u64) -> Result<Vec<String>> {
    let book = Book::open(book)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let depth = rng.random_range(0..=24);
        let mut pos = Chess::default();
        let mut line: Vec<String> = Vec::new();
        for _ in 0..depth {
            let moves = book.moves(polyglot_key(&pos))?;
            let total: u64 = moves.iter().map(|m| u64::from(m.counts.total())).sum();
            if total == 0 {
                break;
            }
            let mut pick = rng.random_range(0..total);
            let Some(m) = moves.iter().find(|m| {
                let c = u64::from(m.counts.total());
                if pick < c {
                    true
                } else {
                    pick -= c;
                    false
                }
            }) else {
                break;
            };
            let Some(mv) = m.mv.to_move(&pos) else { break };
            line.push(mv.to_uci(CastlingMode::Standard).to_string());
            pos.play_unchecked(mv);
        }
        // lichess's defaults (12 moves, 15 top games).
        out.push(format!("/masters?play={}", line.join(",")));
    }
    Ok(out)
}

/// Lookups a second in process: each thread its own read-only connection,
/// the same queries (parsed as the server parses them) and the JSON.
fn in_process_rate(book: &Path, queries: &[String], threads: usize, seconds: f64) -> Result<f64> {
    let parsed: Vec<learnbook::serve::query::MastersQuery> = queries
        .iter()
        .map(|q| {
            let raw = q.split_once('?').map_or("", |x| x.1);
            learnbook::serve::query::parse(raw.as_bytes()).map_err(|e| anyhow!("query {q}: {e}"))
        })
        .collect::<Result<_>>()?;
    let done = AtomicU64::new(0);
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let start = Instant::now();
    std::thread::scope(|scope| -> Result<()> {
        let mut handles = Vec::new();
        for t in 0..threads {
            let (parsed, done) = (&parsed, &done);
            handles.push(scope.spawn(move || -> Result<()> {
                let book = Book::open_read_only(book)?;
                let mut i = t * 7919;
                while Instant::now() < deadline {
                    let q = &parsed[i % parsed.len()];
                    let e = explore(&book, &q.pos)?;
                    let body = serde_json::to_vec(&learnbook::serve::json::masters(q, &e))?;
                    std::hint::black_box(body);
                    done.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
                Ok(())
            }));
        }
        for h in handles {
            h.join()
                .map_err(|_| anyhow!("a lookup thread panicked"))??;
        }
        Ok(())
    })?;
    Ok(done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64())
}

/// The server process, stopped (SIGINT) when dropped.
struct Server {
    child: Option<Child>,
    addr: SocketAddr,
}

impl Server {
    /// `cache`: `serve --cache` (None: its default).
    fn start(book: &Path, threads: usize, cache: Option<usize>) -> Result<Server> {
        let mut cmd = Command::new(std::env::current_exe()?);
        cmd.arg("serve");
        if let Some(c) = cache {
            cmd.arg("--cache").arg(c.to_string());
        }
        let mut child = cmd
            .arg("--book")
            .arg(book)
            .arg("--bind")
            .arg("127.0.0.1:0")
            .arg("--threads")
            .arg(threads.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start learnbook serve")?;
        let out = child
            .stdout
            .take()
            .ok_or_else(|| anyhow!("no output from learnbook serve"))?;
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line)?;
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|a| a.trim_end_matches('/').parse().ok())
            .ok_or_else(|| anyhow!("learnbook serve said {line:?}, not where it listens"))?;
        Ok(Server {
            child: Some(child),
            addr,
        })
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SIGINT: the server's graceful stop.
            learnbook::sys::interrupt(c.id());
            let _ = c.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What one connection's loop saw.
#[derive(Default)]
struct Seen {
    latencies: Vec<f64>,
    failed: u64,
    inconsistent: u64,
    problems: Vec<String>,
}

/// `c` connections, each sending `paths` round-robin (from its own offset)
/// for `seconds`. With `until`, the load lasts at least until it is false
/// (the learn process ended) as well.
async fn load(
    addr: SocketAddr,
    paths: &[String],
    c: usize,
    seconds: f64,
    until: Option<Arc<AtomicBool>>,
) -> Result<Load> {
    let paths: Arc<Vec<String>> = Arc::new(paths.to_vec());
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    // The largest total seen per query: a count may never go down.
    let high: Arc<Mutex<HashMap<usize, u64>>> = Arc::default();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for k in 0..c {
        let (paths, until, high) = (Arc::clone(&paths), until.clone(), Arc::clone(&high));
        tasks.push(tokio::spawn(async move {
            connection_loop(addr, &paths, k * 131, deadline, until, &high).await
        }));
    }
    let mut all = Seen::default();
    for t in tasks {
        let seen = t
            .await
            .map_err(|e| anyhow!("a client task failed: {e}"))??;
        all.latencies.extend(seen.latencies);
        all.failed += seen.failed;
        all.inconsistent += seen.inconsistent;
        all.problems.extend(seen.problems);
    }
    let elapsed = start.elapsed().as_secs_f64();
    all.latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| -> f64 {
        if all.latencies.is_empty() {
            return 0.0;
        }
        let i = ((all.latencies.len() as f64 * p).ceil() as usize).clamp(1, all.latencies.len());
        all.latencies[i - 1] * 1000.0
    };
    Ok(Load {
        requests: all.latencies.len() as u64,
        failed: all.failed,
        inconsistent: all.inconsistent,
        seconds: elapsed,
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
        problems: all.problems.into_iter().take(5).collect(),
    })
}

async fn connection_loop(
    addr: SocketAddr,
    paths: &[String],
    offset: usize,
    deadline: Instant,
    until: Option<Arc<AtomicBool>>,
    high: &Mutex<HashMap<usize, u64>>,
) -> Result<Seen> {
    let mut seen = Seen::default();
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let mut i = offset;
    loop {
        let more = until.as_ref().is_some_and(|u| u.load(Ordering::SeqCst));
        if Instant::now() >= deadline && !more {
            break;
        }
        let q = i % paths.len();
        i += 1;
        let req = hyper::Request::get(paths[q].as_str())
            .header(hyper::header::HOST, addr.to_string())
            .body(Empty::<Bytes>::new())?;
        let t = Instant::now();
        let answer = async {
            let res = sender.send_request(req).await?;
            let status = res.status();
            let body = res.into_body().collect().await?.to_bytes();
            Ok::<_, anyhow::Error>((status, body))
        }
        .await;
        let dt = t.elapsed().as_secs_f64();
        seen.latencies.push(dt);
        match answer {
            Err(e) => {
                seen.failed += 1;
                seen.problems.push(format!("{}: {e}", paths[q]));
                break;
            }
            Ok((status, body)) if status != hyper::StatusCode::OK => {
                seen.failed += 1;
                seen.problems.push(format!(
                    "{}: {status} {}",
                    paths[q],
                    String::from_utf8_lossy(&body)
                ));
            }
            Ok((_, body)) => {
                // Only the answers asked with every move listed are checked
                // (the check parses them: client work the rates leave out).
                if paths[q].contains("&moves=500") {
                    if let Err(why) = consistent(&body, q, high) {
                        seen.inconsistent += 1;
                        seen.problems.push(format!("{}: {why}", paths[q]));
                    }
                }
            }
        }
    }
    Ok(seen)
}

/// An answer agrees with itself and with the answers before it: games
/// through the position >= its moves' games (per result), the listed moves
/// sum to the top-level counts, and no position's total went down.
fn consistent(body: &[u8], q: usize, high: &Mutex<HashMap<usize, u64>>) -> Result<(), String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let n = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
    let top = [n(&v, "white"), n(&v, "draws"), n(&v, "black")];
    let games = &v["games"];
    let through = [n(games, "white"), n(games, "draws"), n(games, "black")];
    if top.iter().zip(&through).any(|(m, g)| m > g) {
        return Err(format!(
            "moves {top:?} exceed the games through the position {through:?}"
        ));
    }
    let mut sum = [0u64; 3];
    for m in v["moves"].as_array().map_or(&[][..], |a| a.as_slice()) {
        sum[0] += n(m, "white");
        sum[1] += n(m, "draws");
        sum[2] += n(m, "black");
    }
    if sum != top {
        return Err(format!(
            "the moves sum to {sum:?}, the top level says {top:?}"
        ));
    }
    let total: u64 = through.iter().sum();
    let mut high = high.lock().unwrap_or_else(|e| e.into_inner());
    let best = high.entry(q).or_insert(0);
    if total < *best {
        return Err(format!(
            "{total} games through the position after {} before",
            *best
        ));
    }
    *best = total;
    Ok(())
}
