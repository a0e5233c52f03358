//! learnbook's opening book as a library: PGN reading, the SQLite store,
//! the minimax values that learn from every game, the move choice, the
//! formats (Polyglot, Arena, BrainLearn experience, PGN trees, suites) and
//! the views (the explorer's answers, reports). It never runs a search: a
//! search score comes in as an input (`db::Analysis`). An engine written in
//! Rust can depend on this crate alone to probe a learnbook book and learn
//! into it.
//!
//! Open a book, add a game as an engine played it, and probe a position:
//!
//! ```
//! use learnbook_book::choose::{choose, Mode};
//! use learnbook_book::keys::polyglot_key;
//! use learnbook_book::pgn::{game::{Game, GameResult}, validate::Header};
//! use learnbook_book::{Book, BookSettings};
//! use shakmaty::{uci::UciMove, Chess, Position};
//!
//! # fn main() -> anyhow::Result<()> {
//! let dir = tempfile::tempdir()?;
//! let mut book = Book::open_or_create(&dir.path().join("b.sqlite"), BookSettings::default())?;
//!
//! // 1. e4 e5 2. Nf3, which White won.
//! let (mut pos, mut moves) = (Chess::default(), Vec::new());
//! for uci in ["e2e4", "e7e5", "g1f3"] {
//!     let mv = uci.parse::<UciMove>()?.to_move(&pos)?;
//!     pos.play_unchecked(mv);
//!     moves.push(mv);
//! }
//! let header = Header { white: "me", black: "them", identity: &[], fen: None, white_elo: None, black_elo: None };
//! let game = Game::from_moves(&header, Chess::default(), &moves, GameResult::WhiteWins, 40)
//!     .map_err(|why| anyhow::anyhow!("{why}"))?;
//!
//! // Added, and the positions it changed re-evaluated at once.
//! let changed = book.add_game(&game, "my games")?.expect("a new game");
//! assert!(changed.changed_values > 0);
//! // A game already in the book counts once.
//! assert!(book.add_game(&game, "my games")?.is_none());
//!
//! // The start position: its book move, valued for the side to move.
//! let start = Chess::default();
//! let moves = book.moves(polyglot_key(&start))?;
//! assert_eq!(moves[0].uci, "e2e4");
//! assert!(moves[0].q.is_some_and(|q| q > 0.0));
//! let mv = choose(&book, &start, Mode::Best, &mut rand::rng())?;
//! assert_eq!(mv.map(|m| m.to_string()), Some("e2-e4".to_string()));
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

pub mod build;
pub mod check;
pub mod choose;
pub mod db;
pub mod formats;
pub mod generate;
pub mod journal;
pub mod keys;
pub mod memory;
pub mod merge_books;
pub mod opening_book;
pub mod own_losses;
pub mod pgn;
pub mod sort;
pub mod values;
pub mod view;

pub use db::{Book, BookSettings};
