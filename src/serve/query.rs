//! The `/masters` query string, parsed by one pure function so that it can
//! be fuzzed (`tests/fuzz.rs`, target `serve-query`): any bytes give either
//! a query whose position is legal, or an error of one line that names the
//! problem and the HTTP status to answer it with. Nothing here panics.
//!
//! Parameters as lichess's explorer takes them: `fen` (X-FEN, spaces as
//! `+`, `%20` or `_`; default the start position), `play` (comma-separated
//! UCI moves from `fen`), `moves` (default 12), `topGames` (default 15, at
//! most 15). Numbers above a limit are clamped, as lichess clamps;
//! negative or non-numeric ones are refused. Unknown parameters are
//! ignored (lichess's clients send `variant` and the like); a known one
//! given twice is refused, as lichess's query deserializer refuses it.
//!
//! `since` and `until` (lichess filters its masters games by year with
//! them) are refused with a 400 that says so: a book counts a position's
//! games over all years (its games keep their dates, but no count is kept
//! per year), so it cannot answer them, and answering as if they were not
//! there would give counts the client did not ask for.

use std::fmt;

use shakmaty::{fen::Fen, uci::UciMove, CastlingMode, Chess, Position};

use crate::book::keys::{polyglot_key, Key};

/// A longer query is refused with 414 before it is read (a `play` line of
/// 2,000 plies fits in it).
pub const MAX_QUERY_BYTES: usize = 16 * 1024;
/// `moves` when the query does not say.
pub const DEFAULT_MOVES: usize = 12;
/// `topGames` when the query does not say, and its maximum.
pub const MAX_TOP_GAMES: usize = crate::book::view::explorer::MAX_TOP_GAMES;
/// Quoted input in an error message is cut to this many characters.
const QUOTE_CHARS: usize = 40;

/// A parsed `/masters` query.
#[derive(Clone, Debug)]
pub struct MastersQuery {
    /// The position after `play`: the one explored.
    pub pos: Chess,
    /// The keys of the positions from `fen` to `pos`, `play` move by move
    /// (the root first): where the opening name is looked for.
    pub line: Vec<Key>,
    /// Moves to list (clamped).
    pub moves: usize,
    /// Top games to list (clamped to [`MAX_TOP_GAMES`]).
    pub top_games: usize,
}

/// Why a query is refused: the HTTP status, and one line naming the problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryError {
    pub status: u16,
    pub message: String,
}

impl QueryError {
    fn bad(message: String) -> QueryError {
        QueryError {
            status: 400,
            message,
        }
    }
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for QueryError {}

/// Input for an error message: at most [`QUOTE_CHARS`] characters, quoted
/// with every control character escaped, so the message stays one line.
pub fn quote(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let cut: String = text.chars().take(QUOTE_CHARS).collect();
    if cut.len() < text.len() {
        format!("{cut:?}...")
    } else {
        format!("{cut:?}")
    }
}

/// Decodes one `application/x-www-form-urlencoded` component strictly: `+`
/// is a space, `%` must be followed by two hex digits, and the result must
/// be UTF-8.
pub fn decode_component(raw: &[u8], what: &str) -> Result<String, QueryError> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = |b: u8| (b as char).to_digit(16);
                let digits = raw
                    .get(i + 1)
                    .copied()
                    .and_then(hex)
                    .zip(raw.get(i + 2).copied().and_then(hex));
                let Some((hi, lo)) = digits else {
                    let end = (i + 3).min(raw.len());
                    return Err(QueryError::bad(format!(
                        "bad percent-encoding in {what}: {} is not % and two hex digits",
                        quote(&raw[i..end])
                    )));
                };
                out.push((hi * 16 + lo) as u8);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|e| {
        QueryError::bad(format!(
            "{what} is not UTF-8 once percent-decoded (invalid at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Parses a raw query string (the bytes after `?`, none for no query).
pub fn parse(raw: &[u8]) -> Result<MastersQuery, QueryError> {
    if raw.len() > MAX_QUERY_BYTES {
        return Err(QueryError {
            status: 414,
            message: format!(
                "query too long: {} bytes, at most {MAX_QUERY_BYTES}",
                raw.len()
            ),
        });
    }
    let mut fen: Option<String> = None;
    let mut play: Option<String> = None;
    let mut moves: Option<String> = None;
    let mut top_games: Option<String> = None;
    for pair in raw.split(|&b| b == b'&') {
        if pair.is_empty() {
            continue;
        }
        let (k, v) = match pair.iter().position(|&b| b == b'=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, &pair[pair.len()..]),
        };
        let key = decode_component(k, "a parameter name")?;
        let slot = match key.as_str() {
            "fen" => &mut fen,
            "play" => &mut play,
            "moves" => &mut moves,
            "topGames" => &mut top_games,
            "since" | "until" => {
                return Err(QueryError::bad(format!(
                    "{key} is not supported: this book counts a position's games over all years, \
                     not by year, so it cannot filter them by {key}; leave since and until out"
                )))
            }
            // lichess's other parameters (variant, speeds...) and anything else.
            _ => continue,
        };
        if slot.is_some() {
            return Err(QueryError::bad(format!("parameter {key} given twice")));
        }
        *slot = Some(decode_component(v, &key)?);
    }
    let root = match &fen {
        None => Chess::default(),
        Some(f) => parse_fen(f)?,
    };
    let (pos, line) = replay(root, play.as_deref().unwrap_or(""))?;
    Ok(MastersQuery {
        pos,
        line,
        moves: count(moves.as_deref(), "moves", DEFAULT_MOVES, usize::MAX)?,
        top_games: count(
            top_games.as_deref(),
            "topGames",
            MAX_TOP_GAMES,
            MAX_TOP_GAMES,
        )?,
    })
}

/// An X-FEN (underscores for spaces, as lichess accepts) as a legal position.
fn parse_fen(text: &str) -> Result<Chess, QueryError> {
    let text = text.replace('_', " ");
    let text = text.trim();
    if text.is_empty() {
        return Err(QueryError::bad("invalid fen: it is empty".to_string()));
    }
    let fen = Fen::from_ascii(text.as_bytes())
        .map_err(|e| QueryError::bad(format!("invalid fen {}: {e}", quote(text.as_bytes()))))?;
    fen.into_position(CastlingMode::Standard).map_err(|e| {
        QueryError::bad(format!(
            "invalid fen {}: not a legal position ({e})",
            quote(text.as_bytes())
        ))
    })
}

/// Plays `play` (comma-separated UCI moves) from `pos`; the keys on the way.
fn replay(mut pos: Chess, play: &str) -> Result<(Chess, Vec<Key>), QueryError> {
    let mut line = vec![polyglot_key(&pos)];
    if play.is_empty() {
        return Ok((pos, line));
    }
    for (i, text) in play.split(',').enumerate() {
        let uci = UciMove::from_ascii(text.as_bytes()).map_err(|_| {
            QueryError::bad(format!(
                "invalid move in play: {} (move {}) is not a UCI move such as e2e4",
                quote(text.as_bytes()),
                i + 1
            ))
        })?;
        let mv = uci.to_move(&pos).map_err(|_| {
            QueryError::bad(format!(
                "illegal move in play: {:?} (move {}) is not legal in {:?}",
                uci.to_string(),
                i + 1,
                Fen::from_position(&pos, shakmaty::EnPassantMode::PseudoLegal).to_string()
            ))
        })?;
        pos.play_unchecked(mv);
        line.push(polyglot_key(&pos));
    }
    Ok((pos, line))
}

/// A count parameter: digits only; `None` gives `default`; above `max` (or
/// any size of number) is clamped to `max`.
fn count(text: Option<&str>, name: &str, default: usize, max: usize) -> Result<usize, QueryError> {
    let Some(t) = text else {
        return Ok(default);
    };
    if t.starts_with('-') && t.len() > 1 && t[1..].bytes().all(|b| b.is_ascii_digit()) {
        return Err(QueryError::bad(format!(
            "{name} must not be negative: {}",
            quote(t.as_bytes())
        )));
    }
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(QueryError::bad(format!(
            "{name} must be a non-negative integer, not {}",
            quote(t.as_bytes())
        )));
    }
    let n = t.bytes().fold(0usize, |n, b| {
        n.saturating_mul(10).saturating_add(usize::from(b - b'0'))
    });
    Ok(n.min(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(q: &str) -> QueryError {
        parse(q.as_bytes()).expect_err(q)
    }

    #[test]
    fn defaults_are_lichess_defaults() {
        let q = parse(b"").expect("empty query");
        assert_eq!(q.pos, Chess::default());
        assert_eq!((q.moves, q.top_games), (12, 15));
        assert_eq!(q.line, vec![polyglot_key(&Chess::default())]);
    }

    #[test]
    fn play_from_a_fen_with_every_spelling_of_spaces() {
        for fen in [
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR+w+KQkq+-+0+1",
            "rnbqkbnr%2Fpppppppp%2F8%2F8%2F8%2F8%2FPPPPPPPP%2FRNBQKBNR%20w%20KQkq%20-%200%201",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR_w_KQkq_-_0_1",
        ] {
            let q = parse(format!("fen={fen}&play=e2e4,c7c5&moves=3&topGames=4").as_bytes())
                .expect(fen);
            assert_eq!(q.line.len(), 3);
            assert_eq!((q.moves, q.top_games), (3, 4));
            assert_eq!(polyglot_key(&q.pos), q.line[2]);
        }
    }

    #[test]
    fn numbers_clamp_above_and_refuse_below() {
        let q = parse(b"moves=1000000000000000000000000000000&topGames=99").expect("clamped");
        assert_eq!((q.moves, q.top_games), (usize::MAX, 15));
        assert!(err("moves=-1").message.contains("negative"));
        assert!(err("topGames=abc").message.contains("topGames"));
        assert!(err("moves=").message.contains("moves"));
    }

    #[test]
    fn every_refusal_is_one_line_naming_its_parameter() {
        for (q, word) in [
            ("fen=xyz", "fen"),
            ("fen=", "fen"),
            ("fen=8/8/8/8/8/8/8/8+w+-+-+0+1", "fen"),
            ("play=e2e5", "illegal move"),
            ("play=e2e4,,e7e5", "invalid move"),
            ("play=hello", "invalid move"),
            ("play=e2e4%0Ae7e5", "invalid move"),
            ("fen=%zz", "percent"),
            ("fen=%FF", "UTF-8"),
            ("play=e2e4&play=d2d4", "twice"),
            ("since=1952", "since is not supported"),
            ("play=e2e4&until=2020", "until is not supported"),
            ("since=19x", "since is not supported"),
        ] {
            let e = err(q);
            assert_eq!(e.status, 400, "{q}");
            assert!(e.message.contains(word), "{q}: {}", e.message);
            assert!(!e.message.contains('\n'), "{q}: {}", e.message);
        }
        let long = format!("play={}", "e2e4,".repeat(5000));
        assert_eq!(err(&long).status, 414);
    }

    #[test]
    fn unknown_parameters_are_ignored() {
        let q = parse(b"variant=standard&speeds=blitz&x&play=d2d4").expect("ignored");
        assert_eq!(q.line.len(), 2);
    }
}
