//! The explorer's view of a position: what the lichess opening explorer
//! shows (moves with games, results and average ratings, the top games)
//! beside what only this book knows (values, the book's choice and its
//! probabilities, the analysis). The server turns it into JSON; this
//! module reads it through [`Book`] in one snapshot, so that a position's
//! counts and its moves' always agree while `learn` writes.

use anyhow::Result;
use shakmaty::{san::San, Chess, Color};

use crate::choose::{best_of, choice_of};
use crate::db::{Book, BookMove};
use crate::keys::{polyglot_key, Key, MoveCode};
use crate::pgn::game::{Counts, GameResult};
use crate::values::minimax::{deviation_score, option_weights};

/// At most this many top games per position, as lichess keeps.
pub use crate::db::top_games::TOP_GAMES as MAX_TOP_GAMES;

/// A game as a row of the explorer: who played it, when, and who won.
pub use crate::db::explore::GameHeader as GameSummary;

impl GameSummary {
    pub fn id_text(&self) -> String {
        game_id_text(self.id)
    }

    pub fn winner(&self) -> Option<Color> {
        match self.result {
            GameResult::WhiteWins => Some(Color::White),
            GameResult::BlackWins => Some(Color::Black),
            _ => None,
        }
    }

    /// The year of `date`, when it has one.
    pub fn year(&self) -> Option<u32> {
        let d = self.date.as_deref()?;
        d.get(..4)?.parse().ok()
    }

    /// `YYYY-MM` from `date`, when it has a month.
    pub fn month(&self) -> Option<String> {
        let d = self.date.as_deref()?;
        let year = self.year()?;
        let month: u32 = d.get(5..7)?.parse().ok()?;
        (1..=12)
            .contains(&month)
            .then(|| format!("{year:04}-{month:02}"))
    }
}

/// A game id as text: the hash in 16 lowercase hex digits.
pub fn game_id_text(id: u64) -> String {
    format!("{id:016x}")
}

/// A game id from its text (16 hex digits), or `None`.
pub fn parse_game_id(text: &str) -> Option<u64> {
    if text.len() != 16 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(text, 16).ok()
}

/// A search score with its depth, from one side's point of view, and who
/// searched it: the engine's name and version, and the budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Score {
    /// Centipawns (mate: +-(30000 - plies)).
    pub cp: i32,
    pub depth: u32,
    pub engine: String,
    pub budget: String,
}

/// One book move of an explored position.
#[derive(Clone, Debug)]
pub struct ExploredMove {
    pub uci: String,
    pub san: String,
    /// Games with this move, White's point of view.
    pub counts: Counts,
    /// The mover's average rating over the games where it is known.
    pub average_rating: Option<u32>,
    /// The game, when the move has exactly one.
    pub game: Option<GameSummary>,
    pub child: Option<Key>,
    /// The move's value for the side to move (the book's scale, -1..1).
    pub value: Option<f64>,
    /// What the book's choice ranks the move by: its value less the
    /// evidence penalty, plus the popularity prior (FORMULA.md); `None` for
    /// a move that is no option (lost in every game, or no value).
    pub score: Option<f64>,
    /// Probability that the book's `weighted` mode plays it.
    pub weighted: f64,
    /// The book's `best` choice.
    pub choice: bool,
    /// The analysis of the position after the move, for the mover.
    pub analysis: Option<Score>,
    /// An engine move added by `grow` that no game has played.
    pub engine: bool,
}

/// The best move outside the book, as the analysis found it.
#[derive(Clone, Debug)]
pub struct Deviation {
    pub uci: String,
    pub san: String,
    pub score: Score,
}

/// An explored position.
#[derive(Clone, Debug)]
pub struct Explored {
    pub key: Key,
    /// The position is in the book (a row or a tail position).
    pub in_book: bool,
    /// Games through the position (those that end here included).
    pub counts: Counts,
    /// The moves' games summed (lichess's top-level counts).
    pub moves_total: Counts,
    /// The position's value, side to move.
    pub value: Option<f64>,
    /// The book's `best` choice; `None` with moves: leave the book.
    pub choice: Option<String>,
    /// Probability that `weighted` leaves the book here.
    pub leave_weight: f64,
    /// The score leaving the book is ranked by (the best move outside it
    /// less the engine margin, plus the prior of a move no game chose).
    pub leave_score: Option<f64>,
    /// The position's own analysis, side to move.
    pub analysis: Option<Score>,
    pub deviation: Option<Deviation>,
    /// Every book move with games, most played first (ties by UCI).
    pub moves: Vec<ExploredMove>,
    /// The highest rated games that played a move here (ratings summed),
    /// with that move's UCI; at most [`MAX_TOP_GAMES`].
    pub top_games: Vec<(String, GameSummary)>,
}

impl Explored {
    /// A position the book does not have: no games, no moves.
    pub fn not_in_book(key: Key) -> Explored {
        Explored {
            key,
            in_book: false,
            counts: Counts::default(),
            moves_total: Counts::default(),
            value: None,
            choice: None,
            leave_weight: 0.0,
            leave_score: None,
            analysis: None,
            deviation: None,
            moves: Vec::new(),
            top_games: Vec::new(),
        }
    }
}

/// The explorer's view of `pos` in `book`, read in one snapshot.
pub fn explore(book: &Book, pos: &Chess) -> Result<Explored> {
    book.read_snapshot(|book| explore_in(book, pos, true))
}

/// [`explore`] without the games (no top games, no move's single game):
/// the moves with their counts, values and analysis, what the PGN export
/// writes for every position of a tree, without reading the games'
/// headers there.
pub fn explore_moves(book: &Book, pos: &Chess) -> Result<Explored> {
    book.read_snapshot(|book| explore_in(book, pos, false))
}

fn explore_in(book: &Book, pos: &Chess, with_games: bool) -> Result<Explored> {
    let key = polyglot_key(pos);
    let node = book.position(key)?;
    let Some(node) = node else {
        return Ok(Explored::not_in_book(key));
    };
    let params = book.settings.params;
    let moves: Vec<BookMove> = book.moves(key)?;
    let best = best_of(&node, &moves, &params);
    let choices: Vec<_> = moves.iter().filter_map(choice_of).collect();
    let weights = option_weights(&node, &choices, &params);
    let weight_of = |mv: Option<MoveCode>| weights.iter().find(|w| w.0 == mv).map_or(0.0, |w| w.1);
    let points = node.points();
    let score_of = |m: &BookMove| choice_of(m).and_then(|c| c.ranking_score(points, &params));
    let details = book.explorer_moves(key)?;
    let top = if with_games {
        book.top_entries(key)?
    } else {
        Vec::new()
    };
    let mut hashes: Vec<u64> = top.iter().map(|t| t.game).collect();
    hashes.sort_unstable();
    hashes.dedup();
    let infos = book.game_headers(&hashes)?;
    let info_of = |h: u64| infos.iter().find(|g| g.id == h).cloned();
    let child_scores = book.child_analyses(key)?;

    let san_of = |mv: MoveCode, uci: &str| {
        mv.to_move(pos)
            .map(|m| San::from_move(pos, m).to_string())
            .unwrap_or_else(|| uci.to_string())
    };
    let mut moves_total = Counts::default();
    let mut out_moves = Vec::new();
    for m in &moves {
        if m.counts.total() == 0 {
            // An imported move without games: not an explorer row.
            continue;
        }
        moves_total.add(m.counts);
        let d = details.iter().find(|d| d.mv == m.mv);
        let average_rating = d
            .filter(|d| d.rated > 0)
            .map(|d| (d.rating_sum / u64::from(d.rated)) as u32);
        let game = if m.counts.total() == 1 {
            top.iter()
                .find(|t| t.mv == m.mv)
                .and_then(|t| info_of(t.game))
        } else {
            None
        };
        let analysis = m.child.and_then(|c| {
            child_scores.iter().find(|a| a.key == c).map(|a| Score {
                cp: -a.score,
                depth: a.depth,
                engine: a.engine.clone(),
                budget: a.budget.clone(),
            })
        });
        out_moves.push(ExploredMove {
            san: san_of(m.mv, &m.uci),
            uci: m.uci.clone(),
            counts: m.counts,
            average_rating,
            game,
            child: m.child,
            value: m.q,
            score: score_of(m),
            weighted: weight_of(Some(m.mv)),
            choice: best == Some(m.mv),
            analysis,
            engine: m.engine,
        });
    }
    out_moves.sort_by(|a, b| {
        b.counts
            .total()
            .cmp(&a.counts.total())
            .then_with(|| a.uci.cmp(&b.uci))
    });
    let mut top_games: Vec<(String, GameSummary)> = Vec::new();
    for t in top.iter().take(MAX_TOP_GAMES) {
        // A game that came back here is listed under its first move.
        if top_games.iter().any(|(_, g)| g.id == t.game) {
            continue;
        }
        let Some(g) = info_of(t.game) else { continue };
        let Some(m) = moves.iter().find(|m| m.mv == t.mv) else {
            continue;
        };
        top_games.push((m.uci.clone(), g));
    }
    let a = book.analysis(key)?;
    let deviation = a.as_ref().and_then(|a| {
        let mv = a.dev_move?.to_move(pos)?;
        Some(Deviation {
            uci: mv.to_uci(shakmaty::CastlingMode::Standard).to_string(),
            san: San::from_move(pos, mv).to_string(),
            score: Score {
                cp: a.deviation?,
                depth: a.dev_depth.unwrap_or(0),
                engine: a.engine.clone(),
                budget: a.budget.clone(),
            },
        })
    });
    let has_games = moves.iter().any(|m| m.child_games > 0 || m.child_engine);
    Ok(Explored {
        key,
        in_book: true,
        counts: node.counts,
        moves_total,
        value: has_games.then_some(node.value),
        choice: best.and_then(|b| moves.iter().find(|m| m.mv == b).map(|m| m.uci.clone())),
        leave_weight: weight_of(None),
        leave_score: match node.deviation {
            Some(Some(d)) if has_games => Some(deviation_score(d, points, &params)),
            _ => None,
        },
        analysis: a.as_ref().map(|a| Score {
            cp: a.score,
            depth: a.depth,
            engine: a.engine.clone(),
            budget: a.budget.clone(),
        }),
        deviation,
        moves: out_moves,
        top_games,
    })
}

/// A game of the book as PGN, as lichess's `/masters/pgn/{id}` gives it:
/// the seven tag roster, the ratings, and every move of the game.
pub fn game_pgn(book: &Book, id: u64) -> Result<Option<String>> {
    let Some(g) = book.game_info(id)? else {
        return Ok(None);
    };
    Ok(Some(g.pgn()?))
}
