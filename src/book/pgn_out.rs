//! Writing PGN as its export format asks: movetext in lines of at most 80
//! characters (the explorer's games, the suites' lines).

/// `text`'s words in lines of at most 80 characters.
pub fn wrap_movetext(text: &str) -> String {
    const WIDTH: usize = 80;
    let mut out = String::new();
    let mut len = 0;
    for word in text.split(' ') {
        if len > 0 && len + 1 + word.len() > WIDTH {
            out.push('\n');
            len = 0;
        } else if len > 0 {
            out.push(' ');
            len += 1;
        }
        out.push_str(word);
        len += word.len();
    }
    out
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
}
