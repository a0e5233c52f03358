//! Games for the tests of the spill modules.

use crate::keys::{Key, MoveCode};
use crate::pgn::game::{Game, GameResult, GameTags, Ply};

/// A game through the positions `keys` (the first its start).
pub fn game_through(hash: u64, keys: &[Key]) -> Game {
    Game {
        white: String::new(),
        black: String::new(),
        result: GameResult::Draw,
        hash,
        start: keys[0],
        start_ply: 0,
        plies: keys
            .windows(2)
            .map(|w| Ply {
                parent: w[0],
                mv: MoveCode(1),
                child: w[1],
                castle: false,
            })
            .collect(),
        total_plies: keys.len() as u32 - 1,
        terminal: None,
        white_elo: None,
        black_elo: None,
        tags: GameTags::default(),
        rest: Vec::new(),
    }
}
