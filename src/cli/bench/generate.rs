//! `bench generate`: realistic games at any scale, the input of the `build`
//! and `merge` benchmarks (the walk is the library's
//! `learnbook::book::generate`).

use std::{path::PathBuf, time::Instant};

use anyhow::Result;
use clap::Args;

/// Realistic games at any scale for `build`/`merge` benchmarks: the first plies follow a
/// book (moves drawn by their games) while it knows the position, then random legal moves
/// up to --max-ply; results in the proportions of the book's start. Seeded: the same
/// command writes the same file, at any thread count.
#[derive(Args, Debug)]
pub struct GenerateArgs {
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
}

impl GenerateArgs {
    /// Writes the games; their size and rate on stdout.
    pub(super) fn run(self) -> Result<()> {
        let start = Instant::now();
        let games = self.games;
        let opts = learnbook::book::generate::Options {
            book: self.book,
            out: self.out,
            games,
            seed: self.seed,
            max_ply: self.max_ply,
            min_book_games: self.min_book_games,
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
}
