//! A learner's memory of the moves it lost with: "never lose the same game
//! twice" (Hossa), by a searched deviation where the engine left the book
//! (Buro).
//!
//! The book's values weigh an engine's own game like any other, so a line
//! that many built games hold up sinks only after several losses; out of
//! the book, a deterministic engine would play the very move it lost with.
//! So a learner remembers, from its own games in the book (one source),
//! every move played in a position and whether every own game with it
//! there was lost by the side that played it. Such a move is *refuted*:
//! where the engine searches, it is left out of the search
//! ([`crate::opening_book::OpeningBook::decide_learning`]), and a deviation is
//! searched instead. Inside the book the values decide as for any game:
//! refuting the book's moves too would turn one loss into a new first
//! move.

use anyhow::Result;
use shakmaty::{fen::Fen, CastlingMode, Chess, Position};

use crate::db::{source_games::SourceGame, Book};
use crate::keys::{polyglot_key, Key, KeyMap, MoveCode};
use crate::pgn::game::GameResult;

/// Own games through a move in a position: how many, how many lost by the
/// side that played it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Record {
    games: u32,
    lost: u32,
}

/// The moves a learner's own games lost with (see the module).
#[derive(Clone, Debug)]
pub struct OwnLosses {
    source: String,
    /// The last game read.
    last_id: i64,
    moves: KeyMap<(Key, MoveCode), Record>,
}

impl OwnLosses {
    /// An empty memory of `source`'s games; [`OwnLosses::refresh`] reads them.
    pub fn new(source: &str) -> OwnLosses {
        OwnLosses {
            source: source.to_string(),
            last_id: 0,
            moves: KeyMap::default(),
        }
    }

    /// Reads the source's games added since the last refresh (by this
    /// process or another learning into the same book).
    pub fn refresh(&mut self, book: &Book) -> Result<()> {
        for game in book.games_of_source(&self.source, self.last_id)? {
            self.last_id = game.id;
            self.add(&game);
        }
        Ok(())
    }

    /// Remembers one game's moves (as far as they replay from its start).
    fn add(&mut self, game: &SourceGame) {
        let winner = match game.result {
            GameResult::WhiteWins => Some(shakmaty::Color::White),
            GameResult::BlackWins => Some(shakmaty::Color::Black),
            GameResult::Draw => None,
            GameResult::Unknown => return,
        };
        let start = match &game.fen {
            None => Some(Chess::default()),
            Some(fen) => fen
                .parse::<Fen>()
                .ok()
                .and_then(|f| f.into_position(CastlingMode::Standard).ok()),
        };
        let Some(mut pos) = start else {
            return;
        };
        for &code in &game.moves {
            let Some(m) = code.to_move(&pos) else {
                return;
            };
            let r = self.moves.entry((polyglot_key(&pos), code)).or_default();
            r.games += 1;
            if winner.is_some_and(|w| w != pos.turn()) {
                r.lost += 1;
            }
            pos.play_unchecked(m);
        }
    }

    /// Whether every own game with `mv` in `pos` was lost by its mover.
    pub fn refuted(&self, pos: &Chess, mv: MoveCode) -> bool {
        self.moves
            .get(&(polyglot_key(pos), mv))
            .is_some_and(|r| r.games > 0 && r.lost == r.games)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgn::{game::Game, validate::Header};
    use crate::BookSettings;
    use shakmaty::uci::UciMove;

    fn line(ucis: &[&str]) -> Vec<shakmaty::Move> {
        let mut pos = Chess::default();
        ucis.iter()
            .map(|u| {
                let m = u
                    .parse::<UciMove>()
                    .expect("uci")
                    .to_move(&pos)
                    .expect("legal");
                pos.play_unchecked(m);
                m
            })
            .collect()
    }

    fn game(ucis: &[&str], result: GameResult) -> Game {
        let header = Header {
            white: "a",
            black: "b",
            identity: &[],
            fen: None,
            white_elo: None,
            black_elo: None,
        };
        Game::from_moves(&header, Chess::default(), &line(ucis), result, u32::MAX).expect("a game")
    }

    fn after(ucis: &[&str]) -> Chess {
        let mut pos = Chess::default();
        for m in line(ucis) {
            pos.play_unchecked(m);
        }
        pos
    }

    #[test]
    fn a_move_is_refuted_while_every_own_game_with_it_was_lost_by_its_mover() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut book = Book::open_or_create(&dir.path().join("b.sqlite"), BookSettings::default())
            .expect("book");
        // A built game is not the learner's: it refutes nothing.
        book.add_game(
            &game(&["f2f3", "e7e6", "g2g4", "d8h4"], GameResult::BlackWins),
            "built",
        )
        .expect("add");
        let mut own = OwnLosses::new("me");
        own.refresh(&book).expect("refresh");
        let g4 = MoveCode::from_move(&line(&["f2f3", "e7e5", "g2g4"])[2]);
        assert!(!own.refuted(&after(&["f2f3", "e7e6"]), g4));

        book.add_game(
            &game(&["f2f3", "e7e5", "g2g4", "d8h4"], GameResult::BlackWins),
            "me",
        )
        .expect("add");
        own.refresh(&book).expect("refresh");
        // White lost with every move it played; Black's moves won.
        assert!(own.refuted(&after(&["f2f3", "e7e5"]), g4));
        let e5 = MoveCode::from_move(&line(&["f2f3", "e7e5"])[1]);
        assert!(!own.refuted(&after(&["f2f3"]), e5));

        // A draw with the same move there: no longer lost in every own game.
        book.add_game(
            &game(&["f2f3", "e7e5", "g2g4", "e5e4"], GameResult::Draw),
            "me",
        )
        .expect("add");
        own.refresh(&book).expect("refresh");
        assert!(!own.refuted(&after(&["f2f3", "e7e5"]), g4));
    }
}
