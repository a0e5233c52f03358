//! Writing PGN as its export format asks: movetext in lines of at most 80
//! characters (the explorer's games, the suites' lines).

use std::io::{self, Write};

/// The longest line [`MovetextWriter`] writes (PGN's export format).
pub const WIDTH: usize = 80;

/// `text`'s words in lines of at most 80 characters.
pub fn wrap_movetext(text: &str) -> String {
    let mut w = MovetextWriter::new(Vec::new());
    for word in text.split(' ') {
        // Writing to memory cannot fail.
        let _ = w.word(word);
    }
    String::from_utf8_lossy(&w.into_inner()).into_owned()
}

/// Movetext written word by word to `out` in lines of at most [`WIDTH`]
/// characters (a longer word gets a line of its own): the streaming form of
/// [`wrap_movetext`], for movetext too large to build in memory (the PGN
/// export of a book).
pub struct MovetextWriter<W: Write> {
    out: W,
    /// Characters on the current line.
    len: usize,
}

impl<W: Write> MovetextWriter<W> {
    pub fn new(out: W) -> MovetextWriter<W> {
        MovetextWriter { out, len: 0 }
    }

    /// One word, after a space or a line break.
    pub fn word(&mut self, word: &str) -> io::Result<()> {
        if self.len > 0 && self.len + 1 + word.len() > WIDTH {
            self.out.write_all(b"\n")?;
            self.len = 0;
        } else if self.len > 0 {
            self.out.write_all(b" ")?;
            self.len += 1;
        }
        self.out.write_all(word.as_bytes())?;
        self.len += word.len();
        Ok(())
    }

    /// `text` right after the last word (a variation's `)`), or on a new
    /// line where the line is full.
    pub fn close(&mut self, text: &str) -> io::Result<()> {
        if self.len > 0 && self.len + text.len() > WIDTH {
            self.out.write_all(b"\n")?;
            self.len = 0;
        }
        self.out.write_all(text.as_bytes())?;
        self.len += text.len();
        Ok(())
    }

    /// A `{comment}`, its words wrapped as the movetext's; braces in `text`
    /// (which would end it early) become parentheses.
    pub fn comment(&mut self, text: &str) -> io::Result<()> {
        let clean = text.replace('{', "(").replace('}', ")");
        let words: Vec<&str> = clean.split_whitespace().collect();
        let last = words.len().saturating_sub(1);
        if words.is_empty() {
            return self.word("{}");
        }
        for (i, w) in words.iter().enumerate() {
            let open = if i == 0 { "{" } else { "" };
            let close = if i == last { "}" } else { "" };
            self.word(&format!("{open}{w}{close}"))?;
        }
        Ok(())
    }

    /// Ends the current line (the movetext's last) and writes `text` as is:
    /// a game's end and the tags of the next.
    pub fn raw(&mut self, text: &str) -> io::Result<()> {
        if self.len > 0 {
            self.out.write_all(b"\n")?;
            self.len = 0;
        }
        self.out.write_all(text.as_bytes())
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_stop_at_80_characters_between_words() {
        let text = "1. e4 e5 ".repeat(20) + "*";
        let wrapped = super::wrap_movetext(&text);
        assert!(wrapped.lines().all(|l| l.len() <= 80), "{wrapped}");
        assert_eq!(wrapped.replace('\n', " "), text);
    }

    #[test]
    fn comments_wrap_between_words_and_lose_their_braces() {
        let mut w = super::MovetextWriter::new(Vec::new());
        w.word("1.").unwrap();
        w.word("e4").unwrap();
        w.comment(&"a {b} c ".repeat(30)).unwrap();
        w.raw("*\n").unwrap();
        let text = String::from_utf8(w.into_inner()).unwrap();
        assert!(text.lines().all(|l| l.len() <= 80), "{text}");
        assert_eq!(text.matches('{').count(), 1, "{text}");
        assert_eq!(text.matches('}').count(), 1, "{text}");
        assert!(text.starts_with("1. e4 {a (b) c"), "{text}");
        assert!(text.ends_with("c}\n*\n"), "{text}");
    }
}
