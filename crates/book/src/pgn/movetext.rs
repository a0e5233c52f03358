//! A second look at each game's bytes: the main-line tokens pgn-reader drops.
//!
//! pgn-reader 0.29 skips, without a visitor callback, every movetext token it
//! cannot read: bytes that are no PGN token (`\x00\xfe`, a stray `}`, `1/2`)
//! and text that is no SAN (`Kx`, `Nf3Nc6`). The game then reaches the
//! visitor with moves missing and, if the rest happens to be legal, would be
//! used as a different game. [`first_bad_token`] walks one game's bytes the
//! way the reader does (tags, then the movetext with its comments,
//! variations, escapes, NAGs, move numbers and results) and returns the
//! first main-line token the reader would have dropped. Variations are
//! skipped as the reader skips them: what they hold never reaches the book.
//!
//! The walk mirrors `Reader::read_game` of pgn-reader 0.29.0 (the version is
//! pinned in `Cargo.toml`); it runs on bytes already in memory and parses
//! each main-line SAN a second time, which costs a few percent of reading.

use shakmaty::san::SanPlus;

/// A main-line token the reader could not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadToken {
    /// Main-line moves before it.
    pub moves_before: u32,
    /// The token, at most [`MAX_SHOWN`] bytes of it.
    pub text: Vec<u8>,
    /// Printable ASCII starting with a letter: meant as a move, but no SAN
    /// (`Kx`, `Qxx9`, `e9`). Anything else is an unreadable token.
    pub san_like: bool,
}

/// Bytes of a bad token kept for the message.
pub const MAX_SHOWN: usize = 24;

impl BadToken {
    /// The token as text for a message: lossy UTF-8, control bytes escaped.
    pub fn shown(&self) -> String {
        format!("{:?}", String::from_utf8_lossy(&self.text))
    }
}

/// The reader's token delimiters (`is_token_end` in pgn-reader), as a table.
const TOKEN_END: [bool; 256] = {
    let mut t = [false; 256];
    let ends = b" \t\n\r{}()!?$;.*";
    let mut i = 0;
    while i < ends.len() {
        t[ends[i] as usize] = true;
        i += 1;
    }
    t
};

#[inline]
fn is_token_end(byte: u8) -> bool {
    TOKEN_END[byte as usize]
}

/// The commonest shapes of SAN (`e4`, `Nf3`, `exd5`, `Nxe5`, `Nbd7`,
/// `R1xa3`, with `+` or `#`), recognised without the full parser. Only
/// ever true for what `SanPlus::from_ascii` accepts (tested exhaustively).
#[inline]
fn simple_san(t: &[u8]) -> bool {
    let t = match t {
        [rest @ .., b'+' | b'#'] => rest,
        _ => t,
    };
    let file = |c: &u8| (b'a'..=b'h').contains(c);
    let rank = |c: &u8| (b'1'..=b'8').contains(c);
    let piece = |c: &u8| matches!(c, b'N' | b'B' | b'R' | b'Q' | b'K');
    let pawn_rank = |c: &u8| (b'2'..=b'7').contains(c);
    match t {
        [f, r] => file(f) && pawn_rank(r),
        [p, f, r] => piece(p) && file(f) && rank(r),
        [f, b'x', f2, r] if file(f) => file(f2) && pawn_rank(r),
        [p, x, f, r] => piece(p) && (*x == b'x' || file(x) || rank(x)) && file(f) && rank(r),
        [p, d, b'x', f, r] => piece(p) && (file(d) || rank(d)) && file(f) && rank(r),
        _ => false,
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn rest(&self) -> &[u8] {
        self.b.get(self.i..).unwrap_or_default()
    }

    #[inline]
    fn eat(&mut self, s: &[u8]) -> bool {
        if self.rest().starts_with(s) {
            self.i += s.len();
            true
        } else {
            false
        }
    }

    fn eat_dash(&mut self) -> bool {
        self.eat(b"-") || self.eat("\u{2013}".as_bytes()) || self.eat("\u{2014}".as_bytes())
    }

    /// Moves to the next `needle` (or the end), not past it.
    fn skip_until(&mut self, needle: u8) {
        self.i = match memchr::memchr(needle, self.rest()) {
            Some(p) => self.i + p,
            None => self.b.len(),
        };
    }

    /// Moves past the next `needle` (or to the end).
    fn skip_until_after(&mut self, needle: u8) {
        self.skip_until(needle);
        self.i = (self.i + 1).min(self.b.len());
    }

    fn skip_whitespace(&mut self, mut new_line: bool) {
        while let Some(ch) = self.peek() {
            match ch {
                b' ' | b'\t' | b'\r' => self.i += 1,
                b'\n' => {
                    new_line = true;
                    self.i += 1;
                }
                b'%' if new_line => {
                    self.i += 1;
                    self.skip_until_after(b'\n');
                }
                _ => return,
            }
        }
    }

    fn skip_ket(&mut self) {
        while let Some(ch) = self.peek() {
            match ch {
                b' ' | b'\t' | b'\r' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return self.skip_whitespace(false);
                }
                b'\n' => {
                    self.i += 1;
                    return self.skip_whitespace(true);
                }
                _ => return,
            }
        }
    }

    /// The tag section, as `Reader::read_tags` reads it.
    fn skip_tags(&mut self) {
        while self.peek() == Some(b'[') {
            self.i += 1;
            let rest = self.rest();
            match memchr::memchr3(b'"', b'\n', b']', rest) {
                Some(q) if rest[q] == b'"' => {
                    let mut r = q + 1;
                    let consumed = loop {
                        match memchr::memchr3(b'\\', b'"', b'\n', &rest[r..]) {
                            Some(d) if rest[r + d] == b'"' => break r + d + 1,
                            Some(d) if rest[r + d] == b'\n' => break r + d,
                            Some(d) => r = (r + d + 2).min(rest.len()),
                            None => break rest.len(),
                        }
                    };
                    self.i += consumed;
                }
                Some(eol) => self.i += eol + 1,
                None => self.i = self.b.len(),
            }
            self.skip_ket();
        }
    }

    /// A variation after its `(`, as `Reader::skip_variation` skips it: up
    /// to (not past) the `)` that closes it, or the end of the game.
    fn skip_variation(&mut self) {
        let mut depth = 0usize;
        while let Some(ch) = self.peek() {
            match ch {
                b'(' => {
                    self.i += 1;
                    depth += 1;
                }
                b')' => match depth.checked_sub(1) {
                    Some(d) => {
                        self.i += 1;
                        depth = d;
                    }
                    None => return,
                },
                b'{' => {
                    self.i += 1;
                    self.skip_until_after(b'}');
                }
                b';' => {
                    self.i += 1;
                    self.skip_until(b'\n');
                }
                b'\n' => match self.b.get(self.i + 1).copied() {
                    Some(b'%') => {
                        self.i += 2;
                        self.skip_until(b'\n');
                    }
                    Some(b'[' | b'\n') => return,
                    Some(b'\r') if self.b.get(self.i + 2).copied() == Some(b'\n') => return,
                    _ => self.i += 1,
                },
                _ => self.i += 1,
            }
        }
    }

    /// End of the token that starts at `start` (its first byte belongs to it
    /// even when it is a delimiter, as with a stray `}`).
    fn token_end(&self, start: usize) -> usize {
        self.b
            .get(start + 1..)
            .and_then(|r| r.iter().position(|&c| is_token_end(c)))
            .map_or(self.b.len(), |p| start + 1 + p)
    }

    fn bad(&self, start: usize, moves_before: u32) -> BadToken {
        let end = self.token_end(start).max(self.i).min(self.b.len());
        let text = &self.b[start..end];
        let san_like = text.first().is_some_and(u8::is_ascii_alphabetic)
            && text.iter().all(u8::is_ascii_graphic);
        BadToken {
            moves_before,
            text: text[..text.len().min(MAX_SHOWN)].to_vec(),
            san_like,
        }
    }
}

/// The first main-line token of one game (its bytes as pgn-reader read them,
/// tags included) that pgn-reader drops without telling its visitor, or
/// `None` when every main-line token is a move number, SAN, NAG, comment,
/// variation, result or escape.
pub fn first_bad_token(game: &[u8]) -> Option<BadToken> {
    main_line_moves(game).err()
}

/// The number of main-line moves in one game's bytes (what pgn-reader hands
/// its visitor), or the first main-line token it drops.
pub fn main_line_moves(game: &[u8]) -> Result<u32, BadToken> {
    let mut c = Cursor { b: game, i: 0 };
    c.eat(b"\xef\xbb\xbf");
    c.skip_whitespace(true);
    c.skip_tags();
    let mut moves = 0u32;
    while let Some(ch) = c.peek() {
        let start = c.i;
        match ch {
            b'{' => {
                c.i += 1;
                c.skip_until_after(b'}');
            }
            b'\n' => {
                c.i += 1;
                match c.peek() {
                    Some(b'%') => {
                        c.i += 1;
                        c.skip_until(b'\n');
                    }
                    Some(b'[' | b'\n') => break,
                    Some(b'\r') => {
                        c.i += 1;
                        if c.peek() == Some(b'\n') {
                            break;
                        }
                    }
                    _ => {}
                }
            }
            b';' => {
                c.i += 1;
                c.skip_until(b'\n');
            }
            b'0' => {
                c.i += 1;
                if !c.eat_dash() {
                    return Err(c.bad(start, moves));
                }
                if c.eat(b"1") {
                    // 0-1
                } else if c.eat(b"0") {
                    // Castling with zeros: 0-0 or 0-0-0, then + or #.
                    let _ = c.eat_dash() && c.eat(b"0");
                    let _ = c.eat(b"+") || c.eat(b"#");
                    moves += 1;
                } else {
                    return Err(c.bad(start, moves));
                }
            }
            b'1' => {
                c.i += 1;
                if c.eat_dash() {
                    if !c.eat(b"0") {
                        return Err(c.bad(start, moves));
                    }
                } else if c.eat(b"/2") {
                    if !(c.eat_dash() && c.eat(b"1/2")) {
                        return Err(c.bad(start, moves));
                    }
                } else {
                    move_number(&mut c);
                }
            }
            b'\xc2' => {
                c.i += 1;
                if !(c.eat(b"\xbd") && c.eat_dash() && c.eat("\u{bd}".as_bytes())) {
                    return Err(c.bad(start, moves));
                }
            }
            b'2'..=b'9' => {
                c.i += 1;
                move_number(&mut c);
            }
            b'(' => {
                c.i += 1;
                c.skip_variation();
            }
            b')' | b'!' | b'?' | b'*' | b' ' | b'\t' | b'\r' | b'.' => c.i += 1,
            b'$' => {
                c.i += 1;
                let end = c.token_end(start);
                let digits = &game[c.i..end];
                let nag = !digits.is_empty()
                    && digits.len() <= 3
                    && digits.iter().all(u8::is_ascii_digit)
                    && digits
                        .iter()
                        .fold(0u32, |n, d| n * 10 + u32::from(d - b'0'))
                        <= 255;
                if !nag {
                    return Err(c.bad(start, moves));
                }
                c.i = end;
            }
            _ => {
                let end = c.token_end(start);
                let token = &game[start..end];
                if !simple_san(token) && SanPlus::from_ascii(token).is_err() {
                    return Err(c.bad(start, moves));
                }
                moves += 1;
                c.i = end;
            }
        }
    }
    Ok(moves)
}

/// The rest of a move number after its first digit: digits, then dots and
/// spaces.
fn move_number(c: &mut Cursor<'_>) {
    while let Some(b'0'..=b'9') = c.peek() {
        c.i += 1;
    }
    while let Some(b'.' | b' ') = c.peek() {
        c.i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(movetext: &str) -> Option<(u32, String, bool)> {
        let game = format!("[Event \"x\"]\n[Result \"*\"]\n\n{movetext}");
        first_bad_token(game.as_bytes()).map(|t| (t.moves_before, t.shown(), t.san_like))
    }

    #[test]
    fn every_kind_of_valid_token_passes() {
        for text in [
            "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 1-0",
            "1.e4 e5 2.Nf3 {a comment} Nc6 $1 3.Bb5!? a6?? 0-1",
            "1. e4 (1. d4 d5 (1... Nf6 junk \x00 here)) e5 ; rest of line \x00\n 2. Nf3 1/2-1/2",
            "1. e4 e5\n% escaped line \x00\n2. O-O 0-0 0-0-0+ O-O-O# *",
            "1. e4 e5 2. f4 $14 exf4 \u{bd}-\u{bd}",
            "12... Qxh2+ 13. Kxh2 1\u{2013}0",
            "1. e8=Q e1=N+ 2. -- Z0 *",
            "",
        ] {
            assert_eq!(bad(text), None, "{text:?}");
        }
    }

    #[test]
    fn junk_and_unparseable_san_are_found_with_their_ply() {
        assert_eq!(
            bad("1. e4 \x00\x01\u{fe} e5 *"),
            Some((1, "\"\\0\\u{1}\u{fe}\"".into(), false))
        );
        assert_eq!(
            bad("1. e4 e5 2. Qh5 Kx 1-0"),
            Some((3, "\"Kx\"".into(), true))
        );
        assert_eq!(bad("1. e4 e5 2. Qxx9 *").map(|b| b.0), Some(2));
        assert_eq!(
            bad("1. e4 e5 2. Nf3Nc6 *").map(|b| b.1),
            Some("\"Nf3Nc6\"".into())
        );
        for junk in [
            "1. e4 } e5 *",
            "1. e4 1/2 *",
            "1. e4 $x *",
            "1. e4 0 *",
            "1. e4 1-x *",
            "1. e4 $300 *",
        ] {
            assert!(
                matches!(bad(junk), Some((1, _, false))),
                "{junk:?}: {:?}",
                bad(junk)
            );
        }
    }

    #[test]
    fn simple_san_accepts_only_what_the_full_parser_accepts() {
        let alphabet = b"NQKPOabhix012789+#=-";
        let mut accepted = 0;
        let mut token = Vec::new();
        for len in 1..=5u32 {
            for mut n in 0..alphabet.len().pow(len) {
                token.clear();
                for _ in 0..len {
                    token.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                if simple_san(&token) {
                    accepted += 1;
                    assert!(
                        SanPlus::from_ascii(&token).is_ok(),
                        "{}",
                        String::from_utf8_lossy(&token)
                    );
                }
            }
        }
        assert!(accepted > 1000, "{accepted}");
    }

    #[test]
    fn the_movetext_ends_where_the_reader_ends_it() {
        // A blank line ends the game: what follows is the next game's.
        assert_eq!(bad("1. e4 *\n\n\x00\x00"), None);
        assert_eq!(bad("1. e4 *\n[\x00]"), None);
    }
}
