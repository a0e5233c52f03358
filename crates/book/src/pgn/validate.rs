//! Raw games -> validated games. [`RawGame::validate`] replays a PGN
//! game's moves with shakmaty and hashes every position; it runs on every
//! core (the reader in [`super::input`] only collects tags and SAN tokens,
//! on one thread). [`Game::from_moves`] makes the same game of moves
//! already played. A game that fails is never fatal: it becomes a
//! [`SkipReason`] and the games around it are still used.

use std::fmt;

use pgn_reader::{KnownOutcome, Outcome};
use shakmaty::{
    fen::Fen, san::SanError, zobrist::Zobrist64, CastlingMode, Chess, Color, EnPassantMode,
    Position,
};

use super::game::{Game, GameResult, GameTags, Ply};
use super::input::RawGame;
use super::movetext::first_bad_token;
use crate::keys::{polyglot_key, Key, MoveCode};
use learnbook_base::fnv::Fnv64;

/// Why a game was not used. The summary counts games per reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkipReason {
    IllegalMove {
        ply: u32,
        san: String,
        why: String,
    },
    BadFen(String),
    UnknownVariant(String),
    Chess960,
    MissingResult,
    /// A Result tag but no termination marker: the movetext was cut off.
    Truncated,
    /// The Result tag and the termination marker disagree.
    ConflictingResult {
        tag: String,
        marker: String,
    },
    NoMoves,
    /// Bytes in the main line that are no PGN token (pgn-reader drops them
    /// silently; the game's moves would be cut at them).
    UnreadableToken {
        ply: u32,
        token: String,
    },
    /// A main-line token meant as a move that is no SAN (`Kx`).
    UnparseableSan {
        ply: u32,
        token: String,
    },
    BelowMinElo,
    Duplicate,
    /// The reader gave up on the input (I/O or decompression error).
    Unreadable(String),
}

impl SkipReason {
    /// A short stable name, used as the key in the summary.
    pub fn kind(&self) -> &'static str {
        match self {
            SkipReason::IllegalMove { .. } => "illegal move",
            SkipReason::BadFen(_) => "bad FEN",
            SkipReason::UnknownVariant(_) => "unsupported variant",
            SkipReason::Chess960 => "Chess960",
            SkipReason::MissingResult => "missing result",
            SkipReason::Truncated => "truncated game",
            SkipReason::ConflictingResult { .. } => "conflicting result",
            SkipReason::NoMoves => "no moves",
            SkipReason::UnreadableToken { .. } => "unreadable token",
            SkipReason::UnparseableSan { .. } => "unparseable SAN",
            SkipReason::BelowMinElo => "below --min-elo",
            SkipReason::Duplicate => "duplicate game",
            SkipReason::Unreadable(_) => "unreadable input",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::IllegalMove { ply, san, why } => {
                write!(f, "illegal move {san:?} at ply {ply} ({why})")
            }
            SkipReason::BadFen(e) => write!(f, "bad FEN: {e}"),
            SkipReason::UnknownVariant(v) => write!(f, "unsupported variant {v:?}"),
            SkipReason::Chess960 => write!(f, "Chess960 game"),
            SkipReason::MissingResult => write!(
                f,
                "no result (neither a Result tag nor a termination marker)"
            ),
            SkipReason::Truncated => write!(
                f,
                "no termination marker after the moves (the game is cut off)"
            ),
            SkipReason::ConflictingResult { tag, marker } => {
                write!(
                    f,
                    "the Result tag says {tag} but the movetext ends with {marker}"
                )
            }
            SkipReason::NoMoves => write!(f, "game has no moves"),
            SkipReason::UnreadableToken { ply, token } => {
                write!(f, "unreadable token {token} in the moves at ply {ply}")
            }
            SkipReason::UnparseableSan { ply, token } => {
                write!(f, "unparseable SAN {token} at ply {ply}")
            }
            SkipReason::BelowMinElo => write!(f, "a player is below --min-elo or has no Elo"),
            SkipReason::Duplicate => write!(f, "the same game is already in the book"),
            SkipReason::Unreadable(e) => write!(f, "unreadable input: {e}"),
        }
    }
}

/// Filters applied while validating.
#[derive(Clone, Debug)]
pub struct Filter {
    pub max_ply: u32,
    pub min_elo: Option<u32>,
    /// Count a game again when it is already in the book (`build` only; as
    /// `polyglot make-book` does). Copies are recorded in `games.copies`.
    pub allow_duplicates: bool,
    /// `build`: store every position as a row, without single-game tails
    /// (`--no-tails`; the book reads the same, the file is larger).
    pub no_tails: bool,
}

impl RawGame {
    /// Replays the game with shakmaty. Never panics on any input.
    pub fn validate(&self, filter: &Filter) -> Result<Game, SkipReason> {
        if let Some(why) = &self.unreadable {
            return Err(SkipReason::Unreadable(why.clone()));
        }
        if let Some(v) = &self.variant {
            let v = v.trim().to_ascii_lowercase();
            match v.as_str() {
                "" | "standard" | "chess" | "normal" | "from position" | "fromposition" => {}
                "chess960" | "chess 960" | "fischerandom" | "fischer random" | "fischerrandom"
                | "freestyle" => return Err(SkipReason::Chess960),
                _ => return Err(SkipReason::UnknownVariant(v)),
            }
        }
        if let Some(min) = filter.min_elo {
            match (self.white_elo, self.black_elo) {
                (Some(w), Some(b)) if w >= min && b >= min => {}
                _ => return Err(SkipReason::BelowMinElo),
            }
        }
        let tag_result = self.result_tag.as_deref().and_then(GameResult::parse);
        let text_result = self.outcome.map(|o| match o {
            Outcome::Known(KnownOutcome::Decisive {
                winner: Color::White,
            }) => GameResult::WhiteWins,
            Outcome::Known(KnownOutcome::Decisive {
                winner: Color::Black,
            }) => GameResult::BlackWins,
            Outcome::Known(KnownOutcome::Draw) => GameResult::Draw,
            Outcome::Unknown => GameResult::Unknown,
        });
        // PGN requires the termination marker; without it the game was cut
        // off (a truncated file) and its moves are not the whole game.
        let result = match (tag_result, text_result) {
            (None, None) => return Err(SkipReason::MissingResult),
            (Some(_), None) => return Err(SkipReason::Truncated),
            (None, Some(r)) => r,
            (Some(t), Some(m)) if t == m => t,
            (Some(t), Some(m)) => {
                return Err(SkipReason::ConflictingResult {
                    tag: t.as_str().into(),
                    marker: m.as_str().into(),
                })
            }
        };
        if let Some(bad) = first_bad_token(&self.text) {
            let (ply, token) = (bad.moves_before + 1, bad.shown());
            return Err(if bad.san_like {
                SkipReason::UnparseableSan { ply, token }
            } else {
                SkipReason::UnreadableToken { ply, token }
            });
        }
        if self.sans.is_empty() {
            return Err(SkipReason::NoMoves);
        }

        let pos = match &self.fen {
            None => Chess::default(),
            Some(fen) => {
                let parsed: Fen = fen
                    .trim()
                    .parse()
                    .map_err(|e| SkipReason::BadFen(format!("{e}")))?;
                let has_castling = parsed.as_setup().castling_rights.any();
                // Castling rights on non-standard rook files mean Chess960.
                match parsed
                    .clone()
                    .into_position::<Chess>(CastlingMode::Standard)
                {
                    Ok(p) => p,
                    Err(e) => {
                        if parsed
                            .into_position::<Chess>(CastlingMode::Chess960)
                            .is_ok()
                            && has_castling
                        {
                            return Err(SkipReason::Chess960);
                        }
                        return Err(SkipReason::BadFen(format!("{e}")));
                    }
                }
            }
        };
        let header = Header {
            white: &self.white,
            black: &self.black,
            identity: &self.identity,
            fen: self.fen.as_deref(),
            white_elo: self.white_elo,
            black_elo: self.black_elo,
        };
        replay(
            &header,
            pos,
            self.sans.len(),
            result,
            filter.max_ply,
            |i, pos| {
                let san_plus = &self.sans[i];
                super::san::to_move(&san_plus.san, pos).map_err(|e: SanError| {
                    SkipReason::IllegalMove {
                        ply: i as u32 + 1,
                        san: san_plus.to_string(),
                        why: e.to_string(),
                    }
                })
            },
        )
    }
}

impl GameTags {
    /// The tags from a header's identity (`Event=...` and so on) and FEN.
    fn from_header(header: &Header) -> GameTags {
        let mut tags = GameTags {
            fen: header.fen.map(|f| f.trim().to_string()),
            ..GameTags::default()
        };
        for item in header.identity {
            let Some((name, value)) = item.split_once('=') else {
                continue;
            };
            let slot = match name {
                "Event" => &mut tags.event,
                "Site" => &mut tags.site,
                "Date" => &mut tags.date,
                "Round" => &mut tags.round,
                _ => continue,
            };
            *slot = Some(value.to_string());
        }
        tags
    }
}

/// What identifies a game besides its moves and result (the game hash), and
/// the ratings its expected score comes from.
pub struct Header<'a> {
    pub white: &'a str,
    pub black: &'a str,
    /// Event, Site, Date, Round (any order; sorted for the hash).
    pub identity: &'a [String],
    /// The FEN the game starts from, as written (`None`: the standard start).
    pub fen: Option<&'a str>,
    pub white_elo: Option<u32>,
    pub black_elo: Option<u32>,
}

impl Game {
    /// A game given as moves from `start` (a learner's own games, already
    /// played): the same [`Game`] that [`RawGame::validate`] makes of its
    /// PGN, without writing and re-reading SAN. `start` must be the position
    /// of `header.fen`. Fails on an illegal move.
    pub fn from_moves(
        header: &Header,
        start: Chess,
        moves: &[shakmaty::Move],
        result: GameResult,
        max_ply: u32,
    ) -> Result<Game, SkipReason> {
        if moves.is_empty() {
            return Err(SkipReason::NoMoves);
        }
        replay(header, start, moves.len(), result, max_ply, |i, pos| {
            let mv = moves[i];
            if pos.is_legal(mv) {
                Ok(mv)
            } else {
                Err(SkipReason::IllegalMove {
                    ply: i as u32 + 1,
                    san: mv.to_uci(CastlingMode::Standard).to_string(),
                    why: "illegal in the position".into(),
                })
            }
        })
    }
}

/// Plays `n` moves from `pos` (`move_at(i, pos)` gives the i-th), keeping
/// the first `max_ply` with their keys, and hashes the game.
fn replay(
    header: &Header,
    mut pos: Chess,
    n: usize,
    result: GameResult,
    max_ply: u32,
    mut move_at: impl FnMut(usize, &Chess) -> Result<shakmaty::Move, SkipReason>,
) -> Result<Game, SkipReason> {
    // Capped so that start_ply + max_ply never overflows on a silly FEN.
    let start_ply = (pos.fullmoves().get().saturating_sub(1).min(1 << 20)) * 2
        + u32::from(pos.turn() == Color::Black);
    let start = polyglot_key(&pos);
    let mut hasher = Fnv64::new();
    hasher.write_field(header.white.as_bytes());
    hasher.write_field(header.black.as_bytes());
    let mut identity = header.identity.to_vec();
    identity.sort();
    for tag in &identity {
        hasher.write_field(tag.as_bytes());
    }
    hasher.write_field(header.fen.unwrap_or("startpos").trim().as_bytes());

    let mut plies = Vec::with_capacity(max_ply.min(n as u32) as usize);
    let mut rest = Vec::new();
    let mut parent = start;
    for i in 0..n {
        let mv = move_at(i, &pos)?;
        let code = MoveCode::from_move(&mv);
        let castle = mv.is_castle();
        hasher.write_field(&code.0.to_le_bytes());
        if (i as u32) < max_ply {
            let child = next_key(&mut pos, parent, mv);
            plies.push(Ply {
                parent,
                mv: code,
                child,
                castle,
            });
            parent = child;
        } else {
            rest.push(code.0);
            pos.play_unchecked(mv);
        }
    }
    let total_plies = n as u32;
    // Statistics follow the recorded result (as every book tool does, and
    // a stalemate recorded as 1-0 is usually a loss on time); the exact
    // value of a final checkmate or stalemate follows the rules.
    let mut terminal = None;
    if total_plies <= max_ply {
        if pos.is_checkmate() {
            terminal = Some(-1.0);
        } else if pos.is_stalemate() {
            terminal = Some(0.0);
        }
    }
    hasher.write_field(result.as_str().as_bytes());
    Ok(Game {
        white: header.white.to_string(),
        black: header.black.to_string(),
        result,
        hash: hasher.finish(),
        start,
        start_ply,
        plies,
        total_plies,
        terminal,
        white_elo: header.white_elo,
        black_elo: header.black_elo,
        tags: GameTags::from_header(header),
        rest,
    })
}

/// Plays `mv` and returns the new Polyglot key, updated incrementally from
/// `key` where shakmaty can (a full hash costs a pass over the board).
pub(crate) fn next_key(pos: &mut Chess, key: Key, mv: shakmaty::Move) -> Key {
    let next = pos.update_zobrist_hash(Zobrist64(key.0), mv, EnPassantMode::PseudoLegal);
    pos.play_unchecked(mv);
    match next {
        Some(z) => Key(z.0),
        None => polyglot_key(pos),
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;
    use crate::pgn::input::GameStream;

    fn read_all(pgn: &str) -> Vec<RawGame> {
        let mut s = GameStream::new(Box::new(io::Cursor::new(pgn.as_bytes().to_vec())));
        s.next_batch(1000)
    }

    fn filter() -> Filter {
        Filter {
            max_ply: 40,
            min_elo: None,
            allow_duplicates: false,
            no_tails: false,
        }
    }

    #[test]
    fn scholar_mate_is_terminal() {
        let games = read_all("[Result \"1-0\"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n");
        let g = games[0].validate(&filter()).expect("valid");
        assert_eq!(g.result, GameResult::WhiteWins);
        assert_eq!(g.terminal, Some(-1.0));
        assert_eq!(g.plies.len(), 7);
        assert_eq!(g.start, Key(0x463b96181691fc9c));
    }

    #[test]
    fn incremental_keys_equal_full_hashes() {
        // Castling both ways, en passant, promotion, captures of rooks.
        let pgn = "1. e4 d5 2. e5 f5 3. exf6 Nc6 4. fxg7 e5 5. gxh8=Q Qe7 6. Nf3 Bd7 7. Bc4 O-O-O \
                   8. O-O Nf6 9. d4 Bh6 10. Nc3 Kb8 *";
        let game = read_all(pgn)[0].validate(&filter()).expect("valid");
        let mut pos = Chess::default();
        for (ply, san) in read_all(pgn)[0].sans.iter().enumerate() {
            let m = san.san.to_move(&pos).expect("legal");
            pos.play_unchecked(m);
            assert_eq!(game.plies[ply].child, polyglot_key(&pos), "ply {}", ply + 1);
        }
    }

    #[test]
    fn illegal_move_names_ply() {
        let games = read_all("1. e4 e5 2. Ke3 *\n");
        assert_eq!(
            games[0].validate(&filter()).unwrap_err(),
            SkipReason::IllegalMove {
                ply: 3,
                san: "Ke3".into(),
                why: "illegal san".into()
            }
        );
    }

    #[test]
    fn junk_in_the_moves_skips_that_game_and_keeps_its_neighbours() {
        let games = read_all(
            "1. d4 d5 1-0\n\n1. e4 \u{0}\u{1}\u{fe} e5 2. Nf3 *\n\n\
             1. e4 e5 2. Qh5 Kx 1-0\n\n1. c4 c5 0-1\n",
        );
        assert_eq!(games.len(), 4);
        let results: Vec<_> = games.iter().map(|g| g.validate(&filter())).collect();
        assert!(results[0].is_ok() && results[3].is_ok(), "{results:?}");
        assert_eq!(
            results[1].as_ref().unwrap_err(),
            &SkipReason::UnreadableToken {
                ply: 2,
                token: "\"\\0\\u{1}\u{fe}\"".into()
            }
        );
        // pgn-reader 0.29 gives its visitor no error for Kx: the token is
        // simply missing from the moves it reports.
        assert_eq!(games[2].sans.len(), 3);
        assert_eq!(
            results[2].as_ref().unwrap_err(),
            &SkipReason::UnparseableSan {
                ply: 4,
                token: "\"Kx\"".into()
            }
        );
        assert_eq!(results[2].as_ref().unwrap_err().kind(), "unparseable SAN");
        assert_eq!(results[1].as_ref().unwrap_err().kind(), "unreadable token");
    }

    #[test]
    fn hash_differs_by_result_and_moves() {
        let a = read_all("1. e4 e5 1-0\n")[0]
            .validate(&filter())
            .expect("valid");
        let b = read_all("1. e4 e5 0-1\n")[0]
            .validate(&filter())
            .expect("valid");
        let c = read_all("1. e4 c5 1-0\n")[0]
            .validate(&filter())
            .expect("valid");
        assert_ne!(a.hash, b.hash);
        assert_ne!(a.hash, c.hash);
        assert_eq!(
            a.hash,
            read_all("1.e4 e5 1-0")[0]
                .validate(&filter())
                .expect("valid")
                .hash
        );
    }
}
