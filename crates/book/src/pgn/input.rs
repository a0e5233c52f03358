//! PGN inputs -> raw games: an input opened (a file, `.gz`, `.zst` or
//! standard input) and streamed game by game by a `pgn-reader` visitor that
//! collects each game's tags and SAN tokens and keeps its bytes (for the
//! token check in [`RawGame::validate`]). The reader is streaming and cheap
//! and runs on one thread; validation runs on every core.

use std::{
    io::{self, BufRead, BufReader, Read},
    ops::ControlFlow,
    path::Path,
    sync::{Arc, Mutex, PoisonError},
};

use anyhow::{Context, Result};
use pgn_reader::{Outcome, RawComment, RawTag, Reader, SanPlus, Skip, Visitor};

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

impl Iterator for GameStream {
    type Item = Result<RawGame, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(game) = self.pending.next() {
            return Some(Ok(game));
        }
        if self.ended {
            return None;
        }
        let batch = self.next_batch(ITER_BATCH);
        if batch.is_empty() {
            self.ended = true;
            return self.error.take().map(Err);
        }
        self.pending = batch.into_iter();
        self.pending.next().map(Ok)
    }
}

/// Streams raw games from one input; as an iterator, every game (each
/// unreadable one too, with its reason) and, last, the error that ended the
/// input if one fell between games. An I/O or decompression error ends the
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
    /// Games read but not yet handed out by the iterator.
    pending: std::vec::IntoIter<RawGame>,
    /// The iterator has handed out its last item.
    ended: bool,
}

/// Games the iterator reads at a time: memory stays bounded.
const ITER_BATCH: usize = 1024;

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
            pending: Vec::new().into_iter(),
            ended: false,
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
    fn offset(&self) -> u64 {
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
            let start = self.offset();
            match self.reader.read_game(&mut self.collector) {
                Ok(Some(mut game)) => {
                    let end = self.offset();
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
                    if self.offset() == start {
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

    /// Batches of up to `n` games, then the input's error if it had one
    /// (the form for callers that work on a batch at a time, e.g. in
    /// parallel); the games and their order are the iterator's.
    pub fn batches(&mut self, n: usize) -> impl Iterator<Item = Result<Vec<RawGame>, String>> + '_ {
        let mut ended = false;
        std::iter::from_fn(move || {
            if ended {
                return None;
            }
            let batch = self.next_batch(n);
            if !batch.is_empty() {
                return Some(Ok(batch));
            }
            ended = true;
            self.error.take().map(Err)
        })
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
            let before = self.offset();
            match self.reader.skip_game() {
                Ok(_) => return Ok(()),
                Err(_) if self.offset() > before => continue,
                Err(_) => return Err(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgn::validate::{Filter, SkipReason};

    fn filter() -> Filter {
        Filter {
            max_ply: 40,
            min_elo: None,
            allow_duplicates: false,
            no_tails: false,
        }
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
    fn the_iterator_gives_every_game_then_the_error_between_games() {
        let text = "1. e4 e5 1-0\n\n1. d4 d5 0-1\n\n";
        let input = Breaks(io::Cursor::new(text.as_bytes().to_vec()));
        let items: Vec<_> = GameStream::new(Box::new(input)).collect();
        assert_eq!(items.len(), 3);
        assert!(items[..2].iter().all(|g| g.is_ok()));
        assert_eq!(
            items[2].as_ref().err().map(String::as_str),
            Some("stream cut")
        );
        let input = Breaks(io::Cursor::new(text.as_bytes().to_vec()));
        let batches: Vec<_> = GameStream::new(Box::new(input)).batches(1).collect();
        assert_eq!(batches.len(), 3);
        assert_eq!(
            batches[2].as_ref().err().map(String::as_str),
            Some("stream cut")
        );
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
}
