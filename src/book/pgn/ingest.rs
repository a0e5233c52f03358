//! PGN -> validated games.
//!
//! Reading is split in two stages so that the expensive part runs on every
//! core: a `pgn-reader` visitor collects each game's tags and SAN tokens on
//! one thread (the reader is streaming and cheap), then [`RawGame::validate`]
//! replays the moves with shakmaty and hashes every position, in parallel.
//! A game that fails is never fatal: it becomes a [`SkipReason`] and the
//! games around it are still used.

use std::{
    fmt,
    io::{self, BufRead, BufReader, Read},
    ops::ControlFlow,
    path::Path,
    sync::{Arc, Mutex, PoisonError},
};

use anyhow::{Context, Result};
use pgn_reader::{KnownOutcome, Outcome, RawComment, RawTag, Reader, SanPlus, Skip, Visitor};
use shakmaty::{
    fen::Fen, san::SanError, uci::UciMove, zobrist::Zobrist64, CastlingMode, Chess, Color,
    EnPassantMode, Position,
};

use super::movetext::first_bad_token;
use crate::book::keys::{polyglot_key, Key, MoveCode};
use crate::fnv::Fnv64;

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

/// A game as the reader saw it: tags and SAN tokens, not yet validated.
#[derive(Clone, Debug, Default)]
pub struct RawGame {
    /// Index of the game in its input, from 1, for error messages.
    pub number: u64,
    pub white: String,
    pub black: String,
    pub white_elo: Option<u32>,
    pub black_elo: Option<u32>,
    pub result_tag: Option<String>,
    /// Event, Site, Date and Round: with the players they tell two games
    /// with the same moves apart (quick draws repeat in master databases).
    pub identity: Vec<String>,
    pub fen: Option<String>,
    pub variant: Option<String>,
    pub sans: Vec<SanPlus>,
    pub outcome: Option<Outcome>,
    /// Mainline comments with the number of moves before each, only when
    /// read by [`GameStream::with_comments`].
    pub comments: Vec<(usize, String)>,
    /// The game's bytes as the reader read them (tags and movetext), empty
    /// for a game that was not read from PGN. [`RawGame::validate`] looks
    /// in them for main-line tokens the reader dropped
    /// ([`super::movetext`]); such a game is skipped.
    pub text: Vec<u8>,
    /// Why the game could not be read, when it could not: a tag line longer
    /// than [`MAX_TAG_LINE`], a comment left open at the end of the input, a
    /// game longer than [`MAX_GAME_BYTES`]. It is skipped as unreadable.
    pub unreadable: Option<String>,
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

/// Collects tags and mainline SAN tokens; variations are skipped.
struct Collector {
    number: u64,
    keep_comments: bool,
}

impl Visitor for Collector {
    type Tags = RawGame;
    type Movetext = RawGame;
    type Output = RawGame;

    fn begin_tags(&mut self) -> ControlFlow<RawGame, RawGame> {
        self.number += 1;
        ControlFlow::Continue(RawGame {
            number: self.number,
            ..RawGame::default()
        })
    }

    fn tag(&mut self, game: &mut RawGame, name: &[u8], value: RawTag<'_>) -> ControlFlow<RawGame> {
        // Names may be in any encoding: decode lossily rather than reject.
        let text = || String::from_utf8_lossy(&value.decode()).into_owned();
        match name {
            b"White" => game.white = text(),
            b"Black" => game.black = text(),
            b"WhiteElo" => game.white_elo = text().trim().parse().ok(),
            b"BlackElo" => game.black_elo = text().trim().parse().ok(),
            b"Result" => game.result_tag = Some(text()),
            b"FEN" => game.fen = Some(text()),
            b"Variant" => game.variant = Some(text()),
            b"Event" | b"Site" | b"Date" | b"Round" => {
                game.identity
                    .push(format!("{}={}", String::from_utf8_lossy(name), text()))
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: RawGame) -> ControlFlow<RawGame, RawGame> {
        ControlFlow::Continue(tags)
    }

    fn san(&mut self, game: &mut RawGame, san_plus: SanPlus) -> ControlFlow<RawGame> {
        game.sans.push(san_plus);
        ControlFlow::Continue(())
    }

    fn comment(&mut self, game: &mut RawGame, c: RawComment<'_>) -> ControlFlow<RawGame> {
        if self.keep_comments {
            let text = String::from_utf8_lossy(c.as_bytes()).trim().to_string();
            game.comments.push((game.sans.len(), text));
        }
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, _game: &mut RawGame) -> ControlFlow<RawGame, Skip> {
        ControlFlow::Continue(Skip(true))
    }

    fn outcome(&mut self, game: &mut RawGame, outcome: Outcome) -> ControlFlow<RawGame> {
        game.outcome = Some(outcome);
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, game: RawGame) -> RawGame {
        game
    }
}

/// Opens a PGN input: a path ending in `.gz` or `.zst`, a plain file, or `-`
/// for standard input (compression detected from the magic bytes there).
pub fn open_input(path: &Path) -> Result<Box<dyn Read + Send>> {
    let raw: Box<dyn Read + Send> = if path.as_os_str() == "-" {
        Box::new(io::stdin())
    } else {
        Box::new(
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?,
        )
    };
    let mut buffered = BufReader::with_capacity(1 << 20, raw);
    let magic = buffered
        .fill_buf()
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(if magic.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::MultiGzDecoder::new(buffered))
    } else if magic.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(
            zstd::stream::read::Decoder::with_buffer(buffered)
                .context("cannot start zstd decoder")?,
        )
    } else {
        Box::new(buffered)
    })
}

/// The input bytes the reader has been given and the stream has not yet
/// released: the current game's bytes are always in it, so that
/// [`first_bad_token`] can look at them after the reader is done.
#[derive(Default)]
struct Window {
    bytes: Vec<u8>,
    /// Stream offset of `bytes[0]`.
    base: u64,
    /// The input failed (I/O or decompression), as opposed to the parser:
    /// the reader was shown the end of the input there instead.
    failed: Option<String>,
}

/// A game longer than this is not kept whole for the token check; it is
/// skipped as unreadable (the 3.6 MB comment of the tests is far below it).
pub const MAX_GAME_BYTES: usize = 64 << 20;
/// The longest tag line read (pgn-reader's default is 255 bytes: a longer
/// one that happened not to be buffered whole was an error).
pub const MAX_TAG_LINE: usize = 64 << 10;
/// The reader buffers at most 16 KiB ahead; kept when a game overflows.
const READER_LOOKAHEAD: usize = 64 << 10;

impl Window {
    /// Offset just past the last byte handed to the reader.
    fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// Forgets the bytes before `offset` (in large steps, so that the copy
    /// costs nothing per game).
    fn release(&mut self, offset: u64) {
        let n = offset
            .saturating_sub(self.base)
            .min(self.bytes.len() as u64) as usize;
        if n >= (1 << 20) && n * 2 >= self.bytes.len() {
            self.bytes.drain(..n);
            self.base += n as u64;
        }
    }
}

/// Hands the input to the reader and keeps a copy in the [`Window`].
struct Tee {
    inner: Box<dyn Read + Send>,
    window: Arc<Mutex<Window>>,
}

impl Read for Tee {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut w = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        if w.failed.is_some() {
            return Ok(0);
        }
        // An error is shown to the reader as the end of the input, so that
        // it still hands over every game it has buffered (it reads up to a
        // tag line ahead, and would otherwise fail before them).
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Err(e),
            Err(e) => {
                w.failed = Some(e.to_string());
                return Ok(0);
            }
        };
        w.bytes.extend_from_slice(&buf[..n]);
        if w.bytes.len() > MAX_GAME_BYTES {
            // One game is this long: drop its start (it will be reported),
            // keep what the reader may not have consumed yet.
            let drop = w.bytes.len() - READER_LOOKAHEAD;
            w.bytes.drain(..drop);
            w.base += drop as u64;
        }
        Ok(n)
    }
}

/// Streams raw games from one input. An I/O or decompression error ends the
/// stream; the games read before it are kept and the error is reported once:
/// as the reason the game it cut is unreadable, or in `error` when it fell
/// between games.
pub struct GameStream {
    reader: Reader<Tee>,
    collector: Collector,
    window: Arc<Mutex<Window>>,
    pub error: Option<String>,
    /// The input's failure was reported with a game.
    failure_reported: bool,
}

impl GameStream {
    pub fn new(input: Box<dyn Read + Send>) -> GameStream {
        let window = Arc::new(Mutex::new(Window::default()));
        // Long comments are read in chunks, so a huge comment costs nothing.
        let reader = Reader::build(Tee {
            inner: input,
            window: Arc::clone(&window),
        })
        .set_supported_tag_line_length(MAX_TAG_LINE)
        .finish();
        GameStream {
            reader,
            collector: Collector {
                number: 0,
                keep_comments: false,
            },
            window,
            error: None,
            failure_reported: false,
        }
    }

    /// A stream that also keeps each game's mainline comments
    /// ([`RawGame::comments`]; a very long comment may come in pieces).
    pub fn with_comments(input: Box<dyn Read + Send>) -> GameStream {
        let mut s = GameStream::new(input);
        s.collector.keep_comments = true;
        s
    }

    /// A stream over bytes in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> GameStream {
        GameStream::new(Box::new(io::Cursor::new(bytes)))
    }

    /// Stream offset of the next byte the reader will look at.
    fn position(&self) -> u64 {
        let w = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        w.end() - self.reader.buffer().len() as u64
    }

    /// Up to `n` games; an empty vector means the input is exhausted.
    pub fn next_batch(&mut self, n: usize) -> Vec<RawGame> {
        let mut batch = Vec::with_capacity(n);
        if self.error.is_some() {
            return batch;
        }
        while batch.len() < n {
            let start = self.position();
            match self.reader.read_game(&mut self.collector) {
                Ok(Some(mut game)) => {
                    let end = self.position();
                    let mut w = self.window.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Some(why) = w.failed.as_ref().filter(|_| end == w.end()) {
                        // The game the failure cut off.
                        game.unreadable = Some(format!("the input breaks off in it: {why}"));
                        self.failure_reported = true;
                    } else if start < w.base {
                        game.unreadable = Some(format!("over {} MB of text", MAX_GAME_BYTES >> 20));
                    } else {
                        // Checked in `validate`, on every core.
                        let from = (start - w.base) as usize;
                        let to = ((end - w.base) as usize).clamp(from, w.bytes.len());
                        game.text = w.bytes[from..to].to_vec();
                    }
                    w.release(end);
                    batch.push(game);
                }
                Ok(None) => {
                    let failed = self.failed();
                    if let Some(why) = failed.filter(|_| !self.failure_reported) {
                        self.error = Some(why);
                    }
                    break;
                }
                Err(e) => {
                    let number = self.collector.number;
                    let unreadable = |why: String| RawGame {
                        number,
                        unreadable: Some(why),
                        ..RawGame::default()
                    };
                    if let Some(io) = self.failed() {
                        // The failure cut this game (in a comment or a tag).
                        self.failure_reported = true;
                        batch.push(unreadable(format!("the input breaks off in it: {io}")));
                        break;
                    }
                    if self.position() == start {
                        self.error = Some(e.to_string());
                        break;
                    }
                    // A parser error ends this game only: the reader has
                    // moved past the bad line, the rest of the game is
                    // skipped and the game reported.
                    batch.push(unreadable(e.to_string()));
                    if self.skip_rest_of_game().is_err() {
                        self.error = Some(e.to_string());
                        break;
                    }
                }
            }
        }
        batch
    }

    /// Why the input failed, if it did.
    fn failed(&self) -> Option<String> {
        self.window
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .failed
            .clone()
    }

    /// Skips what is left of a game after a parser error (its tags may go
    /// on failing, each time a line further on).
    fn skip_rest_of_game(&mut self) -> Result<(), ()> {
        loop {
            let before = self.position();
            match self.reader.skip_game() {
                Ok(_) => return Ok(()),
                Err(_) if self.position() > before => continue,
                Err(_) => return Err(()),
            }
        }
    }
}

/// Parse a UCI move string against a position (for `show --moves`).
pub fn parse_uci(pos: &Chess, text: &str) -> Result<shakmaty::Move> {
    let uci: UciMove = text
        .parse()
        .with_context(|| format!("{text:?} is not a UCI move"))?;
    uci.to_move(pos).with_context(|| {
        format!(
            "{text} is not legal in {}",
            Fen::from_position(pos, EnPassantMode::Legal)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_game_too_long_to_check_is_skipped_and_the_next_is_used() {
        let mut text = b"1. e4 {".to_vec();
        text.resize(MAX_GAME_BYTES + (1 << 20), b'x');
        text.extend_from_slice(b"} e5 *\n\n1. d4 d5 1-0\n");
        let mut s = GameStream::from_bytes(text);
        let games = s.next_batch(10);
        assert_eq!(games.len(), 2);
        assert!(matches!(
            games[0].validate(&filter()),
            Err(SkipReason::Unreadable(e)) if e.contains("over 64 MB")
        ));
        assert!(games[1].validate(&filter()).is_ok());
    }

    #[test]
    fn a_tag_line_too_long_skips_its_game_and_the_next_is_used() {
        // Longer than the reader's whole buffer (twice the tag line it is built for).
        let long = "x".repeat(MAX_TAG_LINE * 4);
        let text = format!(
            "[Event \"a\"]\n[White \"one\"]\n\n1. e4 e5 1-0\n\n\
             [Event \"b\"]\n[Annotator \"{long}\"]\n[White \"two\"]\n\n1. d4 d5 1-0\n\n\
             [Event \"c\"]\n[Annotator \"{}\"]\n[White \"three\"]\n\n1. c4 c5 1-0\n",
            &long[..5000]
        );
        let mut s = GameStream::from_bytes(text.into_bytes());
        let games = s.next_batch(10);
        assert_eq!(s.error, None);
        let used: Vec<_> = games
            .iter()
            .filter(|g| g.validate(&filter()).is_ok())
            .map(|g| g.white.as_str())
            .collect();
        assert_eq!(used, ["one", "three"]);
        let reasons: Vec<_> = games.iter().map(|g| g.validate(&filter()).err()).collect();
        assert!(
            reasons.iter().any(|r| matches!(
                r,
                Some(SkipReason::Unreadable(e)) if e.contains("unterminated tag")
            )),
            "{reasons:?}"
        );
    }

    /// Bytes, then an error (a truncated .gz reads like this).
    struct Breaks(io::Cursor<Vec<u8>>);

    impl Read for Breaks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(7);
            match self.0.read(&mut buf[..n])? {
                0 => Err(io::Error::new(io::ErrorKind::InvalidData, "stream cut")),
                n => Ok(n),
            }
        }
    }

    #[test]
    fn a_read_error_keeps_every_game_before_it_and_names_the_one_it_cuts() {
        for (text, cut) in [
            (
                "1. e4 e5 1-0\n\n1. d4 d5 0-1\n\n[White \"x\"]\n\n1. c4",
                true,
            ),
            (
                "1. e4 e5 1-0\n\n1. d4 d5 0-1\n\n[White \"x\"]\n\n1. c4 {a comm",
                true,
            ),
            ("1. e4 e5 1-0\n\n1. d4 d5 0-1\n\n", false),
        ] {
            let input = Breaks(io::Cursor::new(text.as_bytes().to_vec()));
            let mut s = GameStream::new(Box::new(input));
            let games = s.next_batch(10);
            assert!(s.next_batch(10).is_empty());
            let ok = games
                .iter()
                .filter(|g| g.validate(&filter()).is_ok())
                .count();
            assert_eq!(ok, 2, "{text:?}");
            if cut {
                assert_eq!(games.len(), 3, "{text:?}");
                assert_eq!(
                    games[2].validate(&filter()).unwrap_err(),
                    SkipReason::Unreadable("the input breaks off in it: stream cut".into())
                );
                assert_eq!(s.error, None);
            } else {
                assert_eq!(games.len(), 2);
                assert_eq!(s.error.as_deref(), Some("stream cut"));
            }
        }
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
