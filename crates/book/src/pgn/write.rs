//! Writing PGN movetext: the one place that numbers moves (`1. e4 e5 2. Nf3`,
//! `3...` for a Black move that needs its number) and breaks lines, for
//! every PGN the crate writes (the book's tree and lines, the explorer's
//! games, the suites, generated games, played games).

use std::io::{self, Write};

use shakmaty::Position;

/// The longest line [`MovetextWriter::new`] writes (PGN's export format).
pub const WIDTH: usize = 80;

/// The length a cutechess-style line ends at ([`MovetextWriter::cutechess`]).
pub const CUTECHESS_WIDTH: usize = 70;

/// A move's place in the game: its full move number and whether White
/// plays it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MoveNumber {
    pub full: u32,
    pub white: bool,
}

impl MoveNumber {
    /// The move of the side to move in `pos` (its FEN's move number).
    pub fn of(pos: &impl Position) -> MoveNumber {
        MoveNumber {
            full: pos.fullmoves().get(),
            white: pos.turn().is_white(),
        }
    }

    /// The move `ply` half-moves after the standard start (White at even plies).
    pub fn at_ply(ply: u32) -> MoveNumber {
        MoveNumber {
            full: ply / 2 + 1,
            white: ply.is_multiple_of(2),
        }
    }

    /// The move after this one.
    pub fn next(self) -> MoveNumber {
        MoveNumber {
            full: if self.white { self.full } else { self.full + 1 },
            white: !self.white,
        }
    }
}

/// Where lines end.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Wrap {
    /// Before a word that would take the line past this many characters (a
    /// longer word gets a line of its own).
    Before(usize),
    /// Before a move (or the result) once the line has this many characters:
    /// a move, its number and its comment stay on one line.
    AfterMove(usize),
    Never,
}

/// Movetext written word by word to `out`: move numbers where PGN wants
/// them, lines broken as the output's style asks.
pub struct MovetextWriter<W: Write> {
    out: W,
    wrap: Wrap,
    /// Whether a comment makes the next Black move need its number (PGN's
    /// export format; cutechess numbers it only as a game's first move).
    number_after_comment: bool,
    /// Characters on the current line.
    len: usize,
    /// The next Black move needs its number (`3...`): at the start, after
    /// a comment or a parenthesis.
    number_due: bool,
    /// Text glued to the next word (a variation's `(`).
    prefix: &'static str,
}

impl<W: Write> MovetextWriter<W> {
    /// PGN's export format: lines of at most [`WIDTH`] characters, a Black
    /// move numbered after a comment or a parenthesis.
    pub fn new(out: W) -> MovetextWriter<W> {
        MovetextWriter::with(out, Wrap::Before(WIDTH), true)
    }

    /// Movetext on one line (a path quoted in a comment, generated games).
    pub fn one_line(out: W) -> MovetextWriter<W> {
        MovetextWriter::with(out, Wrap::Never, true)
    }

    /// As cutechess-cli writes games: a line ends after the move (with its
    /// comment) that brings it to [`CUTECHESS_WIDTH`] characters, and a
    /// Black move is numbered only as the game's first.
    pub fn cutechess(out: W) -> MovetextWriter<W> {
        MovetextWriter::with(out, Wrap::AfterMove(CUTECHESS_WIDTH), false)
    }

    fn with(out: W, wrap: Wrap, number_after_comment: bool) -> MovetextWriter<W> {
        MovetextWriter {
            out,
            wrap,
            number_after_comment,
            len: 0,
            number_due: true,
            prefix: "",
        }
    }

    /// `word` after a space or a line break; `starts_move`: a move (its
    /// number) or the result, where [`Wrap::AfterMove`] may break.
    fn put(&mut self, word: &str, starts_move: bool) -> io::Result<()> {
        let prefix = std::mem::take(&mut self.prefix);
        let width = prefix.len() + word.len();
        let break_line = self.len > 0
            && match self.wrap {
                Wrap::Before(max) => self.len + 1 + width > max,
                Wrap::AfterMove(max) => starts_move && self.len >= max,
                Wrap::Never => false,
            };
        if break_line {
            self.out.write_all(b"\n")?;
            self.len = 0;
        } else if self.len > 0 {
            self.out.write_all(b" ")?;
            self.len += 1;
        }
        self.out.write_all(prefix.as_bytes())?;
        self.out.write_all(word.as_bytes())?;
        self.len += width;
        Ok(())
    }

    /// One word, after a space or a line break.
    pub fn word(&mut self, word: &str) -> io::Result<()> {
        self.put(word, false)
    }

    /// A move in SAN, with its number where one is due: always before
    /// White's (`3.`), before Black's (`3...`) at the start and after a
    /// comment or a parenthesis.
    pub fn mv(&mut self, at: MoveNumber, san: &str) -> io::Result<()> {
        if at.white {
            self.put(&format!("{}.", at.full), true)?;
            self.put(san, false)?;
        } else if self.number_due {
            self.put(&format!("{}...", at.full), true)?;
            self.put(san, false)?;
        } else {
            self.put(san, true)?;
        }
        self.number_due = false;
        Ok(())
    }

    /// A NAG (`$2`) after a move.
    pub fn nag(&mut self, nag: u8) -> io::Result<()> {
        self.put(&format!("${nag}"), false)
    }

    /// Opens a variation: `(` before the next move's number.
    pub fn open_variation(&mut self) {
        self.prefix = "(";
        self.number_due = true;
    }

    /// Closes a variation: `)` right after the last word, or on a new line
    /// where the line is full.
    pub fn close_variation(&mut self) -> io::Result<()> {
        let full = match self.wrap {
            Wrap::Before(max) => self.len + 1 > max,
            Wrap::AfterMove(_) | Wrap::Never => false,
        };
        if self.len > 0 && full {
            self.out.write_all(b"\n")?;
            self.len = 0;
        }
        self.out.write_all(b")")?;
        self.len += 1;
        self.number_due = true;
        Ok(())
    }

    /// A `{comment}`, its words wrapped as the movetext's; braces in `text`
    /// (which would end it early) become parentheses.
    pub fn comment(&mut self, text: &str) -> io::Result<()> {
        let clean = text.replace('{', "(").replace('}', ")");
        let words: Vec<&str> = clean.split_whitespace().collect();
        let last = words.len().saturating_sub(1);
        if words.is_empty() {
            self.word("{}")?;
        }
        for (i, w) in words.iter().enumerate() {
            let open = if i == 0 { "{" } else { "" };
            let close = if i == last { "}" } else { "" };
            self.word(&format!("{open}{w}{close}"))?;
        }
        if self.number_after_comment {
            self.number_due = true;
        }
        Ok(())
    }

    /// The game's result (`1-0`, `*`) after the last move.
    pub fn result(&mut self, result: &str) -> io::Result<()> {
        self.put(result, true)
    }

    /// Ends the current line (the movetext's last) and writes `text` as is:
    /// a game's end and the tags of the next.
    pub fn raw(&mut self, text: &str) -> io::Result<()> {
        if self.len > 0 {
            self.out.write_all(b"\n")?;
            self.len = 0;
        }
        self.number_due = true;
        self.out.write_all(text.as_bytes())
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Movetext written to memory, as text.
impl MovetextWriter<Vec<u8>> {
    pub fn into_string(self) -> String {
        // Moves, numbers and the caller's words: UTF-8 in, UTF-8 out.
        String::from_utf8_lossy(&self.out).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::{MoveNumber, MovetextWriter};
    use shakmaty::{fen::Fen, CastlingMode, Chess};

    fn text(w: MovetextWriter<Vec<u8>>) -> String {
        w.into_string()
    }

    #[test]
    fn move_numbers_count_from_the_start_or_from_a_fen() {
        assert_eq!(
            MoveNumber::at_ply(0),
            MoveNumber {
                full: 1,
                white: true
            }
        );
        assert_eq!(
            MoveNumber::at_ply(5),
            MoveNumber {
                full: 3,
                white: false
            }
        );
        assert_eq!(MoveNumber::at_ply(5).next(), MoveNumber::at_ply(6));
        assert_eq!(MoveNumber::at_ply(6).next(), MoveNumber::at_ply(7));
        let fen: Fen = "4k3/8/8/8/8/8/4P3/4K3 b - - 0 30".parse().unwrap();
        let pos: Chess = fen.into_position(CastlingMode::Standard).unwrap();
        assert_eq!(
            MoveNumber::of(&pos),
            MoveNumber {
                full: 30,
                white: false
            }
        );
    }

    #[test]
    fn black_is_numbered_first_and_after_comments_and_parentheses() {
        let mut w = MovetextWriter::new(Vec::new());
        let at = MoveNumber {
            full: 3,
            white: false,
        };
        w.mv(at, "Nc6").unwrap();
        w.mv(at.next(), "Bb5").unwrap();
        w.mv(at.next().next(), "a6").unwrap();
        w.comment("main").unwrap();
        w.mv(at.next(), "Bc4").unwrap();
        w.mv(at.next().next(), "Bc5").unwrap();
        w.open_variation();
        w.mv(at.next().next(), "Nf6").unwrap();
        w.nag(6).unwrap();
        w.close_variation().unwrap();
        w.mv(at.next().next().next(), "c3").unwrap();
        w.result("*").unwrap();
        assert_eq!(
            text(w),
            "3... Nc6 4. Bb5 a6 {main} 4. Bc4 Bc5 (4... Nf6 $6) 5. c3 *"
        );
    }

    #[test]
    fn lines_stop_at_80_characters_between_words() {
        let mut w = MovetextWriter::new(Vec::new());
        let mut at = MoveNumber::at_ply(0);
        for _ in 0..20 {
            w.mv(at, "e4").unwrap();
            at = at.next();
            w.mv(at, "e5").unwrap();
            at = at.next();
        }
        w.result("*").unwrap();
        let text = text(w);
        assert!(text.lines().all(|l| l.len() <= 80), "{text}");
        assert!(text.lines().nth(1).is_some(), "{text}");
        assert!(text.starts_with("1. e4 e5 2. e4 e5"), "{text}");
        assert!(text.replace('\n', " ").ends_with("20. e4 e5 *"), "{text}");
    }

    #[test]
    fn one_line_never_breaks() {
        let mut w = MovetextWriter::one_line(Vec::new());
        for ply in 0..60 {
            w.mv(MoveNumber::at_ply(ply), "Nf3").unwrap();
        }
        let text = text(w);
        assert!(!text.contains('\n') && text.len() > 80, "{text}");
    }

    #[test]
    fn cutechess_lines_end_after_a_whole_move_past_70_characters() {
        let mut w = MovetextWriter::cutechess(Vec::new());
        for ply in 0..30 {
            w.mv(MoveNumber::at_ply(ply), "Nf3").unwrap();
            w.comment("+0.35/12").unwrap();
        }
        w.result("1-0").unwrap();
        let text = text(w);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() > 2, "{text}");
        for l in &lines[..lines.len() - 1] {
            assert!(l.len() >= 70 && l.ends_with("{+0.35/12}"), "{text}");
        }
        // No `N...` after a comment, as cutechess writes it.
        assert!(!text.contains("..."), "{text}");
        assert!(
            text.starts_with("1. Nf3 {+0.35/12} Nf3 {+0.35/12} 2. Nf3"),
            "{text}"
        );
        assert!(
            text.replace('\n', " ").ends_with("{+0.35/12} 1-0"),
            "{text}"
        );
    }

    #[test]
    fn comments_wrap_between_words_and_lose_their_braces() {
        let mut w = MovetextWriter::new(Vec::new());
        w.mv(MoveNumber::at_ply(0), "e4").unwrap();
        w.comment(&"a {b} c ".repeat(30)).unwrap();
        w.raw("*\n").unwrap();
        let text = text(w);
        assert!(text.lines().all(|l| l.len() <= 80), "{text}");
        assert_eq!(text.matches('{').count(), 1, "{text}");
        assert_eq!(text.matches('}').count(), 1, "{text}");
        assert!(text.starts_with("1. e4 {a (b) c"), "{text}");
        assert!(text.ends_with("c}\n*\n"), "{text}");
    }
}
