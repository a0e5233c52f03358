//! Option values as `setoption name X value V` lines, as a UCI engine (or
//! a GUI's engine file) reads them: the `.uci` file beside `--out`.

/// `setoption name X value V` lines, as a UCI engine reads them.
pub fn setoption_lines(values: &[(String, i64)]) -> String {
    values
        .iter()
        .map(|(n, v)| format!("setoption name {n} value {v}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setoption_lines_name_each_option() {
        let v = vec![("Hash".to_string(), 16), ("Move Overhead".to_string(), 10)];
        assert_eq!(
            setoption_lines(&v),
            "setoption name Hash value 16\nsetoption name Move Overhead value 10\n"
        );
    }
}
