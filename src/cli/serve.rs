//! `learnbook serve`: the explorer over HTTP.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::args::BookArg;

/// Arguments of `learnbook serve`.
#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    book: BookArg,
    /// Address to listen on, host:port (port 0: one the system picks; the URL printed says which).
    #[arg(long, default_value = learnbook::serve::DEFAULT_BIND)]
    bind: String,
    /// Send Access-Control-Allow-Origin: * (as lichess does), for pages served from elsewhere.
    #[arg(long)]
    cors: bool,
    /// Book connections and the threads that read them (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    threads: Option<u32>,
    /// /masters answers kept at most while the book does not change (0: none kept, every request reads the book).
    #[arg(long, default_value_t = learnbook::serve::cache::DEFAULT_ENTRIES)]
    cache: usize,
    /// Bytes of /masters answers kept at most (a number, or with K, M or G: 64M).
    #[arg(long, default_value = "64M", value_parser = learnbook::serve::parse_bytes)]
    cache_bytes: usize,
    /// Connections served at once; one more is answered 503 and closed.
    #[arg(long, default_value_t = learnbook::serve::DEFAULT_MAX_CONNECTIONS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// Seconds a request waits for a book connection before it is answered 503.
    #[arg(long, default_value_t = learnbook::serve::DEFAULT_POOL_TIMEOUT_SECS, value_parser = learnbook::serve::parse_seconds)]
    pool_timeout: f64,
}

/// Serves until Ctrl-C (130) or SIGTERM (143).
pub fn serve(args: ServeArgs) -> Result<ExitCode> {
    let stopped = learnbook::serve::run(&learnbook::serve::Options {
        book: args.book.book,
        bind: args.bind,
        cors: args.cors,
        threads: args.threads.map(|n| n as usize),
        cache: args.cache,
        cache_bytes: args.cache_bytes,
        max_connections: args.max_connections as usize,
        pool_timeout: std::time::Duration::from_secs_f64(args.pool_timeout),
    })?;
    Ok(ExitCode::from(stopped.exit_code()))
}
