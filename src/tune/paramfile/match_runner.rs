//! Option values as cutechess-cli's and fastchess's `-engine` arguments,
//! `option.X=V` on one line: the `.options` file beside `--out`.

/// `option.X=V` arguments for cutechess-cli's and fastchess's `-engine`,
/// on one line, each quoted for a POSIX shell where it needs to be
/// (`'option.Move Overhead=10'`).
pub fn match_runner_options(values: &[(String, i64)]) -> String {
    let args: Vec<String> = values
        .iter()
        .map(|(n, v)| shell_word(&format!("option.{n}={v}")))
        .collect();
    format!("{}\n", args.join(" "))
}

fn shell_word(s: &str) -> String {
    let plain = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._=-+/:@%,".contains(c));
    if plain && !s.is_empty() {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_quoted_where_a_shell_needs_it() {
        let v = vec![("Hash".to_string(), 16), ("Move Overhead".to_string(), 10)];
        assert_eq!(
            match_runner_options(&v),
            "option.Hash=16 'option.Move Overhead=10'\n"
        );
        let odd = vec![("It's".to_string(), -1)];
        assert_eq!(match_runner_options(&odd), "'option.It'\\''s=-1'\n");
    }
}
