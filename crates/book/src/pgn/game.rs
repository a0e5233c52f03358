//! A validated game: its result, its moves with the keys on both sides of
//! each, its hash (the same game is never counted twice) and the tags the
//! explorer shows, as `validate` makes it from PGN or from moves
//! already played. [`Counts`] are the game counts the whole book keeps
//! (white wins, draws, black wins).

use shakmaty::{Chess, Position};

use crate::keys::{polyglot_key, Key, MoveCode};

/// How a game ended, as far as the book is concerned. `*` counts as a draw,
/// as in `polyglot make-book`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum GameResult {
    WhiteWins,
    Draw,
    BlackWins,
    /// `*`: counted as a draw in the statistics, kept apart in the games table.
    Unknown,
}

impl GameResult {
    pub fn as_str(self) -> &'static str {
        match self {
            GameResult::WhiteWins => "1-0",
            GameResult::Draw => "1/2-1/2",
            GameResult::BlackWins => "0-1",
            GameResult::Unknown => "*",
        }
    }

    pub fn parse(s: &str) -> Option<GameResult> {
        match s.trim() {
            "1-0" => Some(GameResult::WhiteWins),
            "0-1" => Some(GameResult::BlackWins),
            "1/2-1/2" | "1/2" | "½-½" => Some(GameResult::Draw),
            "*" => Some(GameResult::Unknown),
            _ => None,
        }
    }

    /// (white wins, draws, black wins) contributed by one occurrence.
    pub fn counts(self) -> Counts {
        match self {
            GameResult::WhiteWins => Counts {
                white: 1,
                draws: 0,
                black: 0,
            },
            GameResult::BlackWins => Counts {
                white: 0,
                draws: 0,
                black: 1,
            },
            GameResult::Draw | GameResult::Unknown => Counts {
                white: 0,
                draws: 1,
                black: 0,
            },
        }
    }
}

/// Game counts from White's point of view: white wins, draws, black wins.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub white: u32,
    pub draws: u32,
    pub black: u32,
}

impl Counts {
    pub fn total(self) -> u32 {
        self.white + self.draws + self.black
    }
    pub fn add(&mut self, other: Counts) {
        self.white += other.white;
        self.draws += other.draws;
        self.black += other.black;
    }
}

/// One move of a validated game, with the keys on both sides of it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ply {
    pub parent: Key,
    pub mv: MoveCode,
    pub child: Key,
    pub castle: bool,
}

impl Ply {
    /// Standard UCI text of the move (castling as e1g1).
    pub fn uci(&self) -> String {
        self.mv.uci(self.castle)
    }
}

/// White's expected score in thousandths of a point for one game between
/// these ratings (500 where a rating is missing): `1 / (1 + 10^(-diff/400))`.
pub fn expected_milli(white_elo: Option<u32>, black_elo: Option<u32>) -> i64 {
    match (white_elo, black_elo) {
        (Some(w), Some(b)) if w > 0 && b > 0 => {
            let diff = f64::from(w) - f64::from(b);
            (1000.0 / (1.0 + 10f64.powf(-diff / 400.0))).round() as i64
        }
        _ => 500,
    }
}

/// A validated game, cut at the book's maximum ply.
#[derive(Clone, Debug)]
pub struct Game {
    pub white: String,
    pub black: String,
    pub result: GameResult,
    /// Hash of players, Event/Site/Date/Round, start position, all moves (not
    /// only the stored ones) and result: the same game is never counted twice.
    pub hash: u64,
    /// Key of the start position.
    pub start: Key,
    /// Ply number of the start position (0 for the standard start).
    pub start_ply: u32,
    /// The stored moves (at most max-ply of them).
    pub plies: Vec<Ply>,
    /// Number of moves in the whole game.
    pub total_plies: u32,
    /// Exact value of the last stored position, from its side to move:
    /// -1 if checkmated, 0 if stalemate. Only when the game ended there.
    pub terminal: Option<f64>,
    pub white_elo: Option<u32>,
    pub black_elo: Option<u32>,
    /// Event, Site, Date, Round and the start FEN, for the explorer.
    pub tags: GameTags,
    /// The moves after the stored ones (past max-ply), Polyglot codes: with
    /// `plies`, the whole game, which the explorer's PGN gives back.
    pub rest: Vec<u16>,
}

/// The tags of a game the explorer shows besides the players and ratings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GameTags {
    pub event: Option<String>,
    pub site: Option<String>,
    pub date: Option<String>,
    pub round: Option<String>,
    /// The FEN the game starts from, as written (`None`: the standard start).
    pub fen: Option<String>,
}

impl Game {
    /// The boards of the stored moves, start first, for a game from the
    /// standard start position (`None` for a game from a FEN).
    pub fn boards(&self) -> Option<Vec<Chess>> {
        let mut pos = Chess::default();
        if self.start != polyglot_key(&pos) || self.start_ply != 0 {
            return None;
        }
        let mut out = vec![pos.clone()];
        for p in &self.plies {
            let mv = p.mv.to_move(&pos)?;
            pos.play_unchecked(mv);
            out.push(pos.clone());
        }
        Some(out)
    }

    /// White's expected score from the ratings, in thousandths of a point
    /// (500 when a rating is missing).
    pub fn expected_milli(&self) -> i64 {
        expected_milli(self.white_elo, self.black_elo)
    }

    /// Keys of every stored position, start first.
    pub fn keys(&self) -> impl Iterator<Item = Key> + '_ {
        std::iter::once(self.start).chain(self.plies.iter().map(|p| p.child))
    }
}
