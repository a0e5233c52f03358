//! `bench generate`: realistic games at any scale, for benchmarks of
//! `build` and `merge` beyond the databases at hand.
//!
//! A game follows a real book while the book knows the position well
//! (moves drawn in proportion to their games), then leaves it and goes on
//! with random legal moves up to `max_ply`, as real games leave every other
//! game sooner or later. Results are drawn in the proportions of the book's
//! start position. Everything comes from one seed: game `i` uses a generator
//! seeded by `(seed, i)`, so the output is the same at any thread count.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
};

use anyhow::{bail, Context, Result};
use rand::{rngs::StdRng, Rng, SeedableRng};
use rayon::prelude::*;
use shakmaty::{san::SanPlus, Chess, Position};

use crate::db::Book;
use crate::keys::{polyglot_key, Key, KeyMap, MoveCode};
use crate::pgn::game::Counts;
use crate::pgn::write::{MoveNumber, MovetextWriter};
use learnbook_base::atomic_file;

/// What to generate.
#[derive(Clone, Debug)]
pub struct Options {
    pub book: PathBuf,
    pub out: PathBuf,
    pub games: u64,
    pub seed: u64,
    pub max_ply: u32,
    /// A position the book reached with fewer games is left (random moves from there).
    pub min_book_games: u32,
}

/// The part of a book a walk follows: for each well-known position, its
/// moves and how many games played each.
struct Head {
    moves: KeyMap<Key, Vec<(MoveCode, u32)>>,
    /// White wins, draws, black wins at the start position.
    results: Counts,
}

impl Head {
    fn load(book: &Book, min_games: u32) -> Result<Head> {
        let root = polyglot_key(&Chess::default());
        let mut all: KeyMap<Key, Vec<(MoveCode, u32)>> = KeyMap::default();
        let mut results = Counts::default();
        book.for_each_move(|m| {
            let n = m.counts.total();
            if n > 0 {
                all.entry(m.parent).or_default().push((m.mv, n));
            }
            if m.parent == root {
                results.add(m.counts);
            }
        })?;
        if results.total() == 0 {
            bail!(
                "{} has no games from the start position to follow",
                book.path.display()
            );
        }
        // Only positions that many games reached: beyond them, games leave.
        all.retain(|_, moves| moves.iter().map(|m| m.1).sum::<u32>() >= min_games);
        for moves in all.values_mut() {
            moves.sort_unstable_by_key(|m| m.0 .0);
        }
        Ok(Head {
            moves: all,
            results,
        })
    }

    /// One game's movetext ending in its result, and the result, from its
    /// own generator.
    fn game(&self, rng: &mut StdRng, max_ply: u32) -> (String, &'static str) {
        let mut pos = Chess::default();
        let mut in_book = true;
        let mut text = MovetextWriter::one_line(Vec::with_capacity(8 * max_ply as usize));
        for ply in 0..max_ply {
            let legal = pos.legal_moves();
            if legal.is_empty() {
                break;
            }
            let mut choice = None;
            if in_book {
                match self.moves.get(&polyglot_key(&pos)) {
                    Some(moves) => {
                        let total: u32 = moves.iter().map(|m| m.1).sum();
                        let mut r = rng.random_range(0..total);
                        for &(mv, n) in moves {
                            if r < n {
                                choice = mv.to_move(&pos);
                                break;
                            }
                            r -= n;
                        }
                    }
                    None => in_book = false,
                }
            }
            let m = match choice {
                Some(m) => m,
                None => {
                    in_book = false;
                    legal[rng.random_range(0..legal.len())]
                }
            };
            let san = SanPlus::from_move_and_play_unchecked(&mut pos, m);
            // Writing to memory cannot fail.
            let _ = text.mv(MoveNumber::at_ply(ply), &san.to_string());
        }
        let c = self.results;
        let r = rng.random_range(0..c.total());
        let result = if r < c.white {
            "1-0"
        } else if r < c.white + c.draws {
            "1/2-1/2"
        } else {
            "0-1"
        };
        let _ = text.result(result);
        (text.into_string(), result)
    }
}

/// Games generated per parallel chunk (written in order).
const CHUNK: u64 = 4096;

/// Writes `opts.games` games as PGN (`.gz` and `.zst` compressed by the
/// name), through a temporary file renamed into place. Returns the bytes
/// written (uncompressed).
pub fn generate(opts: &Options) -> Result<u64> {
    let book = Book::open(&opts.book)?;
    let head = Head::load(&book, opts.min_book_games.max(1))?;
    drop(book);
    let pending = atomic_file::Pending::new(&opts.out, ".part");
    let file = std::fs::File::create(pending.path())
        .with_context(|| format!("cannot create {}", pending.path().display()))?;
    let mut out = Output::new(file, extension(&opts.out))?;
    let mut bytes = 0u64;
    let mut first = 0u64;
    while first < opts.games {
        let last = (first + CHUNK * 16).min(opts.games);
        let chunks: Vec<String> = (first..last)
            .step_by(CHUNK as usize)
            .collect::<Vec<u64>>()
            .into_par_iter()
            .map(|start| {
                let end = (start + CHUNK).min(last);
                let mut s = String::with_capacity((end - start) as usize * 400);
                for i in start..end {
                    let mut rng = game_rng(opts.seed, i);
                    let (moves, result) = head.game(&mut rng, opts.max_ply);
                    s.push_str(&format!(
                        "[Event \"learnbook generate\"]\n[Site \"seed {}\"]\n[Date \"????.??.??\"]\n[Round \"{}\"]\n[White \"gen-{}-w\"]\n[Black \"gen-{}-b\"]\n[Result \"{result}\"]\n\n{moves}\n\n",
                        opts.seed,
                        i + 1,
                        i + 1,
                        i + 1
                    ));
                }
                s
            })
            .collect();
        for c in chunks {
            out.write_all(c.as_bytes())
                .with_context(|| format!("writing {}", pending.path().display()))?;
            bytes += c.len() as u64;
        }
        first = last;
    }
    out.finish()
        .with_context(|| format!("writing {}", pending.path().display()))?;
    pending.commit()?;
    Ok(bytes)
}

/// The output file, compressed by its name; finished explicitly so that a
/// failed final write is an error, not lost in a drop.
enum Output {
    Plain(BufWriter<File>),
    Gz(flate2::write::GzEncoder<BufWriter<File>>),
    Zst(zstd::Encoder<'static, BufWriter<File>>),
}

impl Output {
    fn new(file: File, extension: &str) -> Result<Output> {
        let w = BufWriter::new(file);
        Ok(match extension {
            "gz" => Output::Gz(flate2::write::GzEncoder::new(
                w,
                flate2::Compression::fast(),
            )),
            "zst" => Output::Zst(zstd::Encoder::new(w, 3).context("zstd")?),
            _ => Output::Plain(w),
        })
    }

    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Output::Plain(w) => w.write_all(b),
            Output::Gz(w) => w.write_all(b),
            Output::Zst(w) => w.write_all(b),
        }
    }

    fn finish(self) -> std::io::Result<()> {
        let mut w = match self {
            Output::Plain(w) => w,
            Output::Gz(w) => w.finish()?,
            Output::Zst(w) => w.finish()?,
        };
        w.flush()?;
        w.get_ref().sync_all()
    }
}

/// The generator of game `i`: the same game whatever the thread count.
fn game_rng(seed: u64, i: u64) -> StdRng {
    StdRng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i)
}

fn extension(p: &Path) -> &str {
    p.extension().and_then(|e| e.to_str()).unwrap_or("")
}
