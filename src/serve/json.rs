//! The `/masters` response: lichess's masters explorer shape
//! (`OpeningExplorerMasters` in lichess's OpenAPI schema) built from
//! [`Explored`], with learnbook's own fields beside lichess's (clients
//! ignore fields they do not know):
//!
//! * top level: `fen` (the position explored, after `play`; its en
//!   passant square written wherever a pseudo-legal capture exists, as the
//!   book's Polyglot keys hash it, so asking it again finds the same
//!   position), `inBook`,
//!   `games` (`{white, draws, black}` of every game through the position,
//!   those that end there included), `value` (the book's value, side to
//!   move, -1..1, or null), `choice` (the book's move as UCI, or null),
//!   `leaveWeight` (probability that the weighted choice leaves the book),
//!   `leaveScore` (the score leaving the book is ranked by, or null),
//!   `analysis` (`{score, depth, engine, budget}`: centipawns for the side
//!   to move, the depth reached, the engine's name and version and its
//!   budget, or null) and `deviation` (`{uci, san, score, depth, engine,
//!   budget}`: the best move outside the book, or null);
//! * per move: `value` (for the mover, or null), `score` (what the book's
//!   choice ranks it by: the value less the evidence penalty plus the
//!   popularity prior; the choice is the highest, so a move valued higher
//!   can lose to one with more evidence; null: no option), `weighted` (probability
//!   0..1), `choice` (bool), `analysis` (as above, for the mover, or null)
//!   and `engine` (bool: an engine move of `grow`, no games).

use serde::Serialize;
use shakmaty::{fen::Fen, san::SanPlus, uci::UciMove, Chess, Color, EnPassantMode};

use super::query::MastersQuery;
use crate::book::{
    keys::polyglot_key,
    pgn::game::Counts,
    view::{
        explorer::{Explored, ExploredMove, GameSummary, Score},
        openings::{self, Opening},
    },
};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Masters {
    // lichess's fields
    pub opening: Option<OpeningJson>,
    pub white: u64,
    pub draws: u64,
    pub black: u64,
    pub moves: Vec<MoveJson>,
    pub top_games: Vec<TopGameJson>,
    // learnbook's
    pub fen: String,
    pub in_book: bool,
    pub games: CountsJson,
    pub value: Option<f64>,
    pub choice: Option<String>,
    pub leave_weight: f64,
    pub leave_score: Option<f64>,
    pub analysis: Option<ScoreJson>,
    pub deviation: Option<DeviationJson>,
}

#[derive(Serialize)]
pub struct OpeningJson {
    pub eco: String,
    pub name: String,
}

#[derive(Serialize)]
pub struct CountsJson {
    pub white: u64,
    pub draws: u64,
    pub black: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MoveJson {
    pub uci: String,
    pub san: String,
    pub average_rating: u32,
    pub white: u64,
    pub draws: u64,
    pub black: u64,
    pub game: Option<GameJson>,
    pub opening: Option<OpeningJson>,
    // learnbook's
    pub value: Option<f64>,
    pub score: Option<f64>,
    pub weighted: f64,
    pub choice: bool,
    pub analysis: Option<ScoreJson>,
    pub engine: bool,
}

/// `OpeningExplorerMastersGame`.
#[derive(Serialize)]
pub struct GameJson {
    pub id: String,
    pub winner: Option<&'static str>,
    pub white: PlayerJson,
    pub black: PlayerJson,
    /// 0 when the game's date has no year.
    pub year: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub month: Option<String>,
}

#[derive(Serialize)]
pub struct TopGameJson {
    pub uci: String,
    #[serde(flatten)]
    pub game: GameJson,
}

#[derive(Serialize)]
pub struct PlayerJson {
    pub name: String,
    /// 0 when unknown, as lichess writes it.
    pub rating: u32,
}

#[derive(Serialize)]
pub struct ScoreJson {
    pub score: i32,
    pub depth: u32,
    /// Who searched: the engine's name and version (UCI `id name`), and
    /// its budget (`nodes=N`, `depth=D`, `movetime=MS`).
    pub engine: String,
    pub budget: String,
}

#[derive(Serialize)]
pub struct DeviationJson {
    pub uci: String,
    pub san: String,
    pub score: i32,
    pub depth: u32,
    pub engine: String,
    pub budget: String,
}

fn counts(c: Counts) -> CountsJson {
    CountsJson {
        white: u64::from(c.white),
        draws: u64::from(c.draws),
        black: u64::from(c.black),
    }
}

fn opening(o: Option<&Opening>) -> Option<OpeningJson> {
    o.map(|o| OpeningJson {
        eco: o.eco.clone(),
        name: o.name.clone(),
    })
}

fn score(s: Score) -> ScoreJson {
    ScoreJson {
        score: s.cp,
        depth: s.depth,
        engine: s.engine,
        budget: s.budget,
    }
}

pub fn game(g: &GameSummary) -> GameJson {
    GameJson {
        id: g.id_text(),
        winner: g.winner().map(|c| match c {
            Color::White => "white",
            Color::Black => "black",
        }),
        white: PlayerJson {
            name: g.white.clone(),
            rating: g.white_elo.unwrap_or(0),
        },
        black: PlayerJson {
            name: g.black.clone(),
            rating: g.black_elo.unwrap_or(0),
        },
        year: g.year().unwrap_or(0),
        month: g.month(),
    }
}

/// A move's SAN and name. SAN with its check suffix (`Qa5+`), as lichess
/// writes it; the name of the position the move reaches, exact match only
/// (lichess names a move only when it reaches a named position).
fn move_json(pos: &Chess, m: &ExploredMove) -> MoveJson {
    let legal = UciMove::from_ascii(m.uci.as_bytes())
        .ok()
        .and_then(|u| u.to_move(pos).ok());
    let (san, opening_after) = match legal {
        Some(mv) => {
            let mut after = pos.clone();
            let san = SanPlus::from_move_and_play_unchecked(&mut after, mv).to_string();
            (san, opening(openings::lookup(polyglot_key(&after))))
        }
        // Not legal here (cannot happen for a book move): the book's SAN.
        None => (m.san.clone(), None),
    };
    let c = counts(m.counts);
    MoveJson {
        uci: m.uci.clone(),
        san,
        average_rating: m.average_rating.unwrap_or(0),
        white: c.white,
        draws: c.draws,
        black: c.black,
        game: m.game.as_ref().map(game),
        opening: opening_after,
        value: m.value,
        score: m.score,
        weighted: m.weighted,
        choice: m.choice,
        analysis: m.analysis.clone().map(score),
        engine: m.engine,
    }
}

/// SAN with its check suffix of the move `uci` in `pos`, else `fallback`.
fn san_plus(pos: &Chess, uci: &str, fallback: &str) -> String {
    UciMove::from_ascii(uci.as_bytes())
        .ok()
        .and_then(|u| u.to_move(pos).ok())
        .map_or_else(
            || fallback.to_string(),
            |mv| SanPlus::from_move(pos.clone(), mv).to_string(),
        )
}

/// The response to `q`, from the book's view of its position.
pub fn masters(q: &MastersQuery, e: &Explored) -> Masters {
    let total = counts(e.moves_total);
    Masters {
        opening: opening(openings::last_named(&q.line)),
        white: total.white,
        draws: total.draws,
        black: total.black,
        moves: e
            .moves
            .iter()
            .take(q.moves)
            .map(|m| move_json(&q.pos, m))
            .collect(),
        top_games: e
            .top_games
            .iter()
            .take(q.top_games)
            .map(|(uci, g)| TopGameJson {
                uci: uci.clone(),
                game: game(g),
            })
            .collect(),
        // The en passant square wherever a pseudo-legal capture exists: the
        // book's keys hash it so, and this FEN asked again is this position.
        fen: Fen::from_position(&q.pos, EnPassantMode::PseudoLegal).to_string(),
        in_book: e.in_book,
        games: counts(e.counts),
        value: e.value,
        choice: e.choice.clone(),
        leave_weight: e.leave_weight,
        leave_score: e.leave_score,
        analysis: e.analysis.clone().map(score),
        deviation: e.deviation.as_ref().map(|d| DeviationJson {
            uci: d.uci.clone(),
            san: san_plus(&q.pos, &d.uci, &d.san),
            score: d.score.cp,
            depth: d.score.depth,
            engine: d.score.engine.clone(),
            budget: d.score.budget.clone(),
        }),
    }
}
