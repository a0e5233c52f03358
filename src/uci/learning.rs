//! Learning where the engine plays: the game as a UCI engine sees it, and
//! what is learned from it when it ends.
//!
//! A UCI engine is never told a game's result, and never sees the move that
//! mates it. What it sees is every `position ... moves` of the game and its
//! own searches. A game ([`SeenGame`]) is the line of the `position`
//! commands that continue one another; it ends at `ucinewgame`, at a
//! `position` that does not continue it, or at `quit` (end of input). Its
//! moves are those the engine saw, with its own reply to the last position.
//!
//! The result ([`result_of`]), best signal first:
//! 1. the rules, where the last position shows the end: checkmate,
//!    stalemate, insufficient material, the fifty-move rule, a threefold
//!    repetition;
//! 2. the engine's own scores, as match runners adjudicate: its last
//!    [`DECISIVE_SEARCHES`] searches all at least [`DECISIVE_CP`] for one
//!    side (a win for that side), or, from ply [`DRAW_FROM_PLY`] on, its
//!    last [`DRAWN_SEARCHES`] within [`DRAWN_CP`] (a draw).
//!
//! A game without a result by either signal is not learned (an `info
//! string` says so). A learned game goes in as `learn` adds one, in one
//! short transaction, so several engines may learn into one book at once.
//! The two engines of a match see views of one game that differ by the
//! last ply (the side that moved last saw one ply more). A game is one row
//! each time it was played: the view of a side that has not learned the
//! game yet is the other side's view, counted once; the view of a side that
//! has learned it is the same game played again, counted again (the book's
//! [`Book::add_view`], one transaction, so learners writing at once agree).

use shakmaty::{fen::Fen, Chess, Color, EnPassantMode, Move, Position};

use crate::book::{
    db::{View, ViewAdded, UNKNOWN_PLAYER},
    pgn::{
        game::{Game, GameResult},
        validate::Header,
    },
    Book,
};

/// Searches in a row at or past [`DECISIVE_CP`] that decide a game.
pub const DECISIVE_SEARCHES: usize = 3;
/// A score (centipawns, the engine's side) that, held, decides a game.
pub const DECISIVE_CP: i32 = 600;
/// Searches in a row within [`DRAWN_CP`] that make a game a draw.
pub const DRAWN_SEARCHES: usize = 8;
/// A score within which the position is taken as drawn.
pub const DRAWN_CP: i32 = 10;
/// The first ply at which scores can make a game a draw.
pub const DRAW_FROM_PLY: usize = 80;

/// The source name of the games learned through UCI.
pub const SOURCE: &str = "learnbook uci";

/// One of the engine's searches of the game.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OwnSearch {
    /// Plies from the game's start to the searched position.
    pub ply: usize,
    /// Centipawns for the side to move (the engine); mate as +-(30000 - plies).
    pub score: i32,
}

/// A game as the engine saw it.
#[derive(Clone, Debug, Default)]
pub struct SeenGame {
    /// The FEN of its start (`None`: the standard start).
    pub fen: Option<String>,
    pub start: Chess,
    /// The moves of the last `position` command.
    pub moves: Vec<Move>,
    /// The engine's reply to the last position, if it gave one.
    pub reply: Option<Move>,
    pub searches: Vec<OwnSearch>,
    /// The last move is the opponent's predicted one (`go ponder`), not
    /// yet confirmed by `ponderhit`.
    pub pondered: bool,
}

impl SeenGame {
    /// Whether `position` with this start and these moves continues the
    /// game: the same start, and the game's moves a prefix of them.
    pub fn continued_by(&self, fen: Option<&str>, moves: &[Move]) -> bool {
        self.fen.as_deref() == fen
            && moves.len() >= self.moves.len()
            && moves[..self.moves.len()] == self.moves[..]
    }

    /// Whether `position` continues the game without its last move (a
    /// pondered move that was not played, replaced by the one that was).
    pub fn continued_without_last(&self, fen: Option<&str>, moves: &[Move]) -> bool {
        let Some(kept) = self.moves.len().checked_sub(1) else {
            return false;
        };
        self.fen.as_deref() == fen && moves.len() > kept && moves[..kept] == self.moves[..kept]
    }

    /// The moves the engine saw, with its reply to the last position.
    pub fn line(&self) -> Vec<Move> {
        let mut line = self.moves.clone();
        line.extend(self.reply);
        line
    }

    /// The side the engine played: the side to move in the last position
    /// it was given.
    pub fn engine_side(&self) -> Color {
        if self.moves.len().is_multiple_of(2) {
            self.start.turn()
        } else {
            !self.start.turn()
        }
    }
}

/// The result of a game as the engine saw it (see the module's rules), or
/// `None`.
pub fn result_of(game: &SeenGame) -> Option<GameResult> {
    let line = game.line();
    let mut pos = game.start.clone();
    let mut seen = vec![repetition_key(&pos)];
    for m in &line {
        if !pos.is_legal(*m) {
            return None;
        }
        pos.play_unchecked(*m);
        seen.push(repetition_key(&pos));
    }
    let side_won = |white: bool| {
        if white {
            GameResult::WhiteWins
        } else {
            GameResult::BlackWins
        }
    };
    if pos.is_checkmate() {
        return Some(side_won(pos.turn().is_black()));
    }
    let last = seen.last().cloned();
    let repeated = seen.iter().filter(|k| Some(*k) == last.as_ref()).count() >= 3;
    if pos.is_stalemate() || pos.is_insufficient_material() || pos.halfmoves() >= 100 || repeated {
        return Some(GameResult::Draw);
    }
    // The engine's side at each search: the side to move at that ply.
    let white_to_move_at = |ply: usize| game.start.turn().is_white() == ply.is_multiple_of(2);
    let tail = |n: usize| {
        game.searches
            .len()
            .checked_sub(n)
            .map(|i| &game.searches[i..])
    };
    if let Some(last) = tail(DECISIVE_SEARCHES) {
        // Scores for White, to tell who a run of big scores favours.
        let for_white: Vec<i32> = last
            .iter()
            .map(|s| {
                if white_to_move_at(s.ply) {
                    s.score
                } else {
                    -s.score
                }
            })
            .collect();
        if for_white.iter().all(|&s| s >= DECISIVE_CP) {
            return Some(GameResult::WhiteWins);
        }
        if for_white.iter().all(|&s| s <= -DECISIVE_CP) {
            return Some(GameResult::BlackWins);
        }
    }
    if let Some(last) = tail(DRAWN_SEARCHES) {
        if line.len() >= DRAW_FROM_PLY && last.iter().all(|s| s.score.abs() <= DRAWN_CP) {
            return Some(GameResult::Draw);
        }
    }
    None
}

/// A position as the repetition rule compares them (pieces, side to move,
/// castling rights, en passant square).
fn repetition_key(pos: &Chess) -> String {
    let fen = Fen::from_position(pos, EnPassantMode::Legal).to_string();
    // Without the two move counters.
    fen.rsplitn(3, ' ').nth(2).unwrap_or(&fen).to_string()
}

/// The game of `line` from `game`'s start with `result`, as the book stores
/// it (whole, not cut at the book's ply limit: the moves that decided it
/// are usually late, and only a stored move can be avoided), as its
/// `replay`-th playing (0: the first; a later one hashes with a `Replay`
/// tag). The players are unknown: the hash is the same for both views.
fn as_game(game: &SeenGame, line: &[Move], result: GameResult, replay: u32) -> Option<Game> {
    let identity: Vec<String> = (replay > 0)
        .then(|| format!("Replay={replay}"))
        .into_iter()
        .collect();
    let header = Header {
        white: UNKNOWN_PLAYER,
        black: UNKNOWN_PLAYER,
        identity: &identity,
        fen: game.fen.as_deref(),
        white_elo: None,
        black_elo: None,
    };
    Game::from_moves(&header, game.start.clone(), line, result, u32::MAX).ok()
}

/// The hashes of the other views of the `replay`-th playing of the game of
/// `line`: one ply shorter, or one ply longer (each legal move at its end),
/// with any result, and the same line with another result.
fn other_views(game: &SeenGame, line: &[Move], result: GameResult, replay: u32) -> Vec<u64> {
    let results = [
        GameResult::WhiteWins,
        GameResult::Draw,
        GameResult::BlackWins,
    ];
    let mut views: Vec<Vec<Move>> = Vec::new();
    if line.len() > 1 {
        views.push(line[..line.len() - 1].to_vec());
    }
    let mut end = game.start.clone();
    for m in line {
        end.play_unchecked(*m);
    }
    for m in end.legal_moves() {
        let mut longer = line.to_vec();
        longer.push(m);
        views.push(longer);
    }
    let mut hashes = Vec::new();
    for r in results {
        if r != result {
            hashes.extend(as_game(game, line, r, replay).map(|g| g.hash));
        }
        for v in &views {
            hashes.extend(as_game(game, v, r, replay).map(|g| g.hash));
        }
    }
    hashes
}

/// What learning a game did, for the engine's `info string`.
#[derive(Debug, PartialEq)]
pub enum Learned {
    /// Added (its `replay`-th playing: 0 the first), and this many values
    /// changed.
    Added {
        plies: usize,
        changed_values: usize,
        result: GameResult,
        replay: u32,
    },
    /// The other side's view of a game the book has.
    OtherSide,
    /// Not learned, and why.
    Skipped(String),
}

impl std::fmt::Display for Learned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Learned::Added {
                plies,
                changed_values,
                result,
                replay,
            } => {
                write!(f, "learned the game ({plies} plies, {})", result.as_str())?;
                if *replay > 0 {
                    write!(f, " again (played {} times)", replay + 1)?;
                }
                write!(f, ": {changed_values} values changed")
            }
            Learned::OtherSide => write!(
                f,
                "the other side's view of a game in the book (counted once)"
            ),
            Learned::Skipped(why) => write!(f, "game not learned: {why}"),
        }
    }
}

/// Learns `game` into `book` (see the module's rules).
pub fn learn(book: &mut Book, game: &SeenGame) -> Learned {
    let line = game.line();
    if line.is_empty() {
        return Learned::Skipped("no moves".into());
    }
    let Some(result) = result_of(game) else {
        return Learned::Skipped(format!(
            "no result seen after {} plies (not ended by the rules, scores not decisive)",
            line.len()
        ));
    };
    let not_replayed = || Learned::Skipped("its moves do not replay from its start".into());
    if as_game(game, &line, result, 0).is_none() {
        return not_replayed();
    }
    let side = game.engine_side();
    let view = |replay| {
        let mut stored = as_game(game, &line, result, replay)?;
        match side {
            Color::White => stored.white = SOURCE.into(),
            Color::Black => stored.black = SOURCE.into(),
        }
        let known = other_views(game, &line, result, replay);
        Some(View {
            game: stored,
            known,
        })
    };
    match book.add_view(side, SOURCE, view) {
        Ok(Some(ViewAdded::Added {
            replay,
            reevaluation,
        })) => Learned::Added {
            plies: line.len(),
            changed_values: reevaluation.changed_values,
            result,
            replay,
        },
        Ok(Some(ViewAdded::OtherSide { .. })) => Learned::OtherSide,
        Ok(None) => not_replayed(),
        Err(err) => Learned::Skipped(format!("the book could not be written: {err:#}")),
    }
}

/// The FEN of a `position fen ...` start as the game keeps it.
pub fn start_fen(pos: &Chess) -> String {
    Fen::from_position(pos, EnPassantMode::Legal).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::uci::UciMove;

    fn game(ucis: &[&str]) -> SeenGame {
        let mut pos = Chess::default();
        let mut moves = Vec::new();
        for u in ucis {
            let m = u
                .parse::<UciMove>()
                .expect("uci")
                .to_move(&pos)
                .expect("legal");
            pos.play_unchecked(m);
            moves.push(m);
        }
        SeenGame {
            moves,
            ..SeenGame::default()
        }
    }

    fn searches(plies_scores: &[(usize, i32)]) -> Vec<OwnSearch> {
        plies_scores
            .iter()
            .map(|&(ply, score)| OwnSearch { ply, score })
            .collect()
    }

    #[test]
    fn the_engines_own_mating_reply_ends_the_game_by_the_rules() {
        let mut g = game(&["f2f3", "e7e5", "g2g4"]);
        assert_eq!(result_of(&g), None);
        let pos = g.moves.iter().fold(Chess::default(), |mut p, m| {
            p.play_unchecked(*m);
            p
        });
        g.reply = "d8h4".parse::<UciMove>().expect("uci").to_move(&pos).ok();
        assert_eq!(result_of(&g), Some(GameResult::BlackWins));
    }

    #[test]
    fn a_threefold_repetition_is_a_draw() {
        let g = game(&[
            "g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8",
        ]);
        assert_eq!(result_of(&g), Some(GameResult::Draw));
    }

    #[test]
    fn held_decisive_scores_decide_for_the_side_they_favour() {
        // The engine plays Black (odd plies): +700 for it is a Black win.
        let mut g = game(&["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6"]);
        g.searches = searches(&[(1, 700), (3, 650), (5, 900)]);
        assert_eq!(result_of(&g), Some(GameResult::BlackWins));
        // Playing White (even plies), the same scores are a White win.
        g.searches = searches(&[(0, 700), (2, 650), (4, 900)]);
        assert_eq!(result_of(&g), Some(GameResult::WhiteWins));
        // Not held to the end: no result.
        g.searches = searches(&[(0, 700), (2, 650), (4, 100)]);
        assert_eq!(result_of(&g), None);
        // Level scores before ply 80 are no draw.
        g.searches = searches(&[(0, 0); DRAWN_SEARCHES]);
        assert_eq!(result_of(&g), None);
    }

    /// Scholar's mate as each side saw it: White, who mated, the whole
    /// game; Black one ply less, lost by its own held scores.
    fn scholars_mate_views() -> (SeenGame, SeenGame) {
        let moves = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"];
        let as_view = |n: usize| {
            let mut g = game(&moves[..n - 1]);
            let pos = g.moves.iter().fold(Chess::default(), |mut p, m| {
                p.play_unchecked(*m);
                p
            });
            g.reply = moves[n - 1]
                .parse::<UciMove>()
                .expect("uci")
                .to_move(&pos)
                .ok();
            g
        };
        let white = as_view(7);
        let mut black = as_view(6);
        black.searches = searches(&[(1, -700), (3, -800), (5, -900)]);
        (white, black)
    }

    #[test]
    fn a_game_is_one_row_each_time_it_is_played_whichever_sides_learned_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("b.sqlite");
        let mut book =
            Book::open_or_create(&path, crate::book::BookSettings::default()).expect("book");
        let (white, black) = scholars_mate_views();
        assert_eq!(white.engine_side(), Color::White);
        assert_eq!(black.engine_side(), Color::Black);
        assert_eq!(result_of(&black), Some(GameResult::WhiteWins));
        let replay_of = |l: Learned| match l {
            Learned::Added { replay, .. } => Some(replay),
            Learned::OtherSide => None,
            Learned::Skipped(why) => panic!("skipped: {why}"),
        };
        // Played twice by two learners, then once more with only Black
        // learning: three games, each counted once.
        assert_eq!(replay_of(learn(&mut book, &white)), Some(0));
        assert_eq!(replay_of(learn(&mut book, &black)), None);
        assert_eq!(replay_of(learn(&mut book, &black)), Some(1));
        assert_eq!(replay_of(learn(&mut book, &white)), None);
        assert_eq!(replay_of(learn(&mut book, &black)), Some(2));
        let totals = book.totals().expect("totals");
        assert_eq!(totals.games, 3);
        assert_eq!(totals.white_wins, 3);
        // White's view of the third game: the other side's, counted once.
        assert_eq!(replay_of(learn(&mut book, &white)), None);
        assert_eq!(book.totals().expect("totals").games, 3);
    }

    #[test]
    fn the_other_sides_view_one_ply_shorter_is_among_the_known_views() {
        let full = game(&["f2f3", "e7e5", "g2g4", "d8h4"]);
        let shorter = game(&["f2f3", "e7e5", "g2g4"]);
        let r = GameResult::BlackWins;
        let full_hash = as_game(&full, &full.line(), r, 0).expect("game").hash;
        let short_hash = as_game(&shorter, &shorter.line(), r, 0).expect("game").hash;
        assert!(other_views(&full, &full.line(), r, 0).contains(&short_hash));
        assert!(other_views(&shorter, &shorter.line(), r, 0).contains(&full_hash));
        // A different game of the same length is not, nor a replay.
        let other = game(&["f2f4", "e7e5", "g2g4", "d8h4"]);
        let other_hash = as_game(&other, &other.line(), r, 0).expect("game").hash;
        assert!(!other_views(&full, &full.line(), r, 0).contains(&other_hash));
        assert!(!other_views(&full, &full.line(), r, 1).contains(&short_hash));
    }
}
