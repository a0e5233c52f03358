//! `learnbook serve`: a book over HTTP as the lichess opening explorer
//! serves its masters database (the same JSON API, so lichess's clients
//! read it), with the explorer page (`web/`) beside it.
//!
//! The stack is lichess's explorer's: axum on hyper and tokio. The book is
//! opened once with [`Book::open`] (which upgrades an older schema), then
//! through a pool of read-only connections, one per blocking worker
//! ([`pool`]); every `/masters` read is one snapshot ([`explore`](crate::book::view::explorer::explore)),
//! so `learnbook learn` can write the book while it is served. No SQLite
//! call runs on an async worker: reads run on the blocking pool, and
//! whether the book changed (a commit, or the file replaced by a rename,
//! then opened again) is checked on a thread of its own ([`watch`]).
//!
//! Limits a client cannot get past (each answered with a JSON error or a
//! closed connection, the server going on):
//! * at most `--max-connections` connections at once; one more is answered
//!   503 and closed ([`refuse`]);
//! * a request waits for a book connection at most `--pool-timeout`, then
//!   is answered 503;
//! * the answers kept are bounded in bytes and in number, and keyed on the
//!   query as parsed ([`cache`]): padding a query pins nothing;
//! * a request head must arrive within [`HEADER_READ_TIMEOUT`] (hyper's
//!   `header_read_timeout`); past it the connection is closed without an
//!   answer, as nginx's `client_header_timeout` does. The same limit ends
//!   a keep-alive connection left idle that long;
//! * a request target longer than hyper reads (64 KB) is a 414, a head
//!   larger than its buffer a 431, a head that is not HTTP a 400 ([`conn`]
//!   gives these hyper-made answers their JSON body); a query over
//!   [`query::MAX_QUERY_BYTES`] is a 414 from the router.
//!
//! SIGINT (Ctrl-C) and SIGTERM stop it gracefully: no new connection is
//! accepted, the requests under way are answered (for at most
//! [`DRAIN_TIMEOUT`]; a second Ctrl-C stops at once), then the process
//! exits with 130 (SIGINT) or 143 (SIGTERM), 128 + the signal's number as
//! shells report it.

pub mod assets;
pub mod cache;
pub mod conn;
pub mod http;
pub mod json;
pub mod pool;
pub mod query;
pub mod refuse;
pub mod watch;

use std::{
    io::Write,
    net::{SocketAddr, ToSocketAddrs},
    path::PathBuf,
    sync::Arc,
    time::Duration,
};

use anyhow::{anyhow, Context, Result};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use tokio::{
    signal::unix::{signal, SignalKind},
    sync::Semaphore,
};

use crate::book::{view::openings, Book};
use pool::Pool;

/// A client must send a whole request head within this time.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a graceful stop waits for the requests under way.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// `--bind`'s default: localhost, lichess's explorer's port.
pub const DEFAULT_BIND: &str = "127.0.0.1:9002";
/// `--max-connections`' default: well under the usual 1,024 descriptors.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// `--pool-timeout`'s default, in seconds.
pub const DEFAULT_POOL_TIMEOUT_SECS: f64 = 5.0;

/// What `learnbook serve` was given.
#[derive(Clone, Debug)]
pub struct Options {
    pub book: PathBuf,
    /// `host:port`; port 0 asks the system for a free one.
    pub bind: String,
    /// Send `Access-Control-Allow-Origin: *`, as lichess does.
    pub cors: bool,
    /// Blocking workers and book connections (default: the cores).
    pub threads: Option<usize>,
    /// `/masters` answers kept at most while the book does not change ([`cache`]).
    pub cache: usize,
    /// Bytes of answers kept at most ([`cache`]).
    pub cache_bytes: usize,
    /// Connections served at once; more are answered 503 ([`refuse`]).
    pub max_connections: usize,
    /// How long a request waits for a book connection before a 503.
    pub pool_timeout: Duration,
}

/// How the server stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// SIGINT (Ctrl-C).
    Interrupted,
    /// SIGTERM.
    Terminated,
}

impl Stopped {
    /// The process's exit code: 128 + the signal's number.
    pub fn exit_code(self) -> u8 {
        match self {
            Stopped::Interrupted => 130,
            Stopped::Terminated => 143,
        }
    }
}

/// Runs the server until SIGINT or SIGTERM. Prints one line on standard
/// output once it accepts connections: `listening on http://ADDR/`, with
/// the port the system chose for port 0.
pub fn run(opts: &Options) -> Result<Stopped> {
    let threads = opts
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    // Opened once for writing: an older book is upgraded here, before the
    // read-only connections (which cannot upgrade it) are opened.
    drop(Book::open(&opts.book)?);
    let pool = Arc::new(Pool::open(opts.book.clone(), threads)?);
    // The names table is built now, not by the first request.
    openings::count();
    let addr = resolve(&opts.bind)?;
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("cannot listen on {addr} (--bind {})", opts.bind))?;
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .max_blocking_threads(threads)
        .thread_name("learnbook-serve")
        .enable_all()
        .build()
        .context("cannot start the server's threads")?;
    let watch = Arc::new(watch::BookWatch::start(
        Arc::clone(&pool),
        runtime.handle().clone(),
    )?);
    let shared = http::Shared {
        pool,
        watch,
        cache: Arc::new(cache::AnswerCache::new(opts.cache, opts.cache_bytes)),
        pool_timeout: opts.pool_timeout,
    };
    let app = http::router(shared, opts.cors);
    let stopped = runtime.block_on(serve(listener, app, opts.cors, opts.max_connections.max(1)));
    // Reads still under way after the drain end with the process.
    runtime.shutdown_timeout(Duration::from_secs(1));
    stopped
}

fn resolve(bind: &str) -> Result<SocketAddr> {
    bind.to_socket_addrs()
        .with_context(|| format!("--bind {bind}: expected host:port, e.g. 127.0.0.1:9002"))?
        .next()
        .ok_or_else(|| anyhow!("--bind {bind}: the name has no address"))
}

async fn serve(
    listener: std::net::TcpListener,
    app: axum::Router,
    cors: bool,
    max_connections: usize,
) -> Result<Stopped> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let addr = listener.local_addr()?;
    // Signals are ours before the URL is printed: a client that reads the
    // line may stop the server at once and still see a graceful stop.
    let mut sigint = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let mut sigterm = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut out = std::io::stdout();
    writeln!(out, "listening on http://{addr}/")?;
    out.flush()?;

    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let graceful = GracefulShutdown::new();
    // A permit a connection, held until it closes.
    let slots = Arc::new(Semaphore::new(max_connections));
    let refusing = Arc::new(Semaphore::new(refuse::MAX_REFUSING));
    let refusal: Arc<[u8]> = refuse::answer(max_connections, cors).into();
    let stopped = loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    match Arc::clone(&slots).try_acquire_owned() {
                        Ok(slot) => {
                            let io = TokioIo::new(conn::JsonErrors::new(stream, cors));
                            let service = TowerToHyperService::new(app.clone());
                            let connection = graceful.watch(http1.serve_connection(io, service));
                            tokio::spawn(async move {
                                let _slot = slot;
                                // A client that vanishes mid-request is not the server's error.
                                let _ = connection.await;
                            });
                        }
                        Err(_) => refuse::refuse(stream, &refusing, Arc::clone(&refusal)),
                    }
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait, do not spin.
                    eprintln!("learnbook serve: cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = sigint.recv() => break Stopped::Interrupted,
            _ = sigterm.recv() => break Stopped::Terminated,
        }
    };
    drop(listener);
    eprintln!("learnbook serve: stopping; finishing the requests under way");
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(DRAIN_TIMEOUT) => {
            eprintln!("learnbook serve: requests still under way after {DRAIN_TIMEOUT:?}; stopping anyway");
        }
        _ = sigint.recv() => {
            eprintln!("learnbook serve: second interrupt; stopping now");
        }
    }
    Ok(stopped)
}

/// `--cache-bytes`: a number of bytes, or with a K, M or G suffix (powers
/// of 1,024).
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c.to_ascii_uppercase()),
        _ => (t, 'B'),
    };
    let shift = match unit {
        'B' => 0,
        'K' => 10,
        'M' => 20,
        'G' => 30,
        _ => {
            return Err(format!(
                "{text:?}: expected bytes, e.g. 67108864 or 64M (K, M or G)"
            ))
        }
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("{text:?}: expected bytes, e.g. 67108864 or 64M (K, M or G)"))?;
    n.checked_mul(1usize << shift)
        .ok_or_else(|| format!("{text:?}: too large"))
}

/// `--pool-timeout`: seconds, above 0 and at most a day.
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 86_400.0 => Ok(s),
        _ => Err(format!("{text:?}: expected seconds above 0, e.g. 5 or 0.5")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_seconds() {
        assert_eq!(parse_bytes("64M"), Ok(64 << 20));
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert_eq!(parse_bytes("2k"), Ok(2048));
        assert_eq!(parse_bytes("0"), Ok(0));
        for bad in ["", "M", "12X", "-1", "99999999999999999999G"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
        for bad in ["0", "-1", "nan", "inf", "x"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }
}
