//! `--memory`: a size as the commands take it, the default budget, and
//! where a command spills what does not fit ([`Spill`]).

use std::path::PathBuf;

/// How much memory `build` may hold, and where it spills what does not fit.
#[derive(Clone, Debug)]
pub struct Spill {
    /// The budget in bytes: the counts while they fit, then the filter of
    /// shared positions and the tails index's sorting (SQLite's page cache
    /// and the reading threads come on top, a few tens of MB; the rows, the
    /// positions two games reach, are held whatever the budget).
    pub memory: u64,
    /// Directory of the temporary files (default: the book's own directory).
    pub temp_dir: Option<PathBuf>,
}

impl Default for Spill {
    fn default() -> Spill {
        Spill {
            memory: default_memory(),
            temp_dir: None,
        }
    }
}

/// The default budget: half of the machine's memory, at least 256 MiB.
pub fn default_memory() -> u64 {
    let total = learnbook_base::sys::physical_memory().unwrap_or(4 << 30);
    (total / 2).max(256 << 20)
}

/// Reads a size as `--memory` takes it: bytes, or a number with K, M, G or
/// T (powers of 1024; a trailing B or iB is allowed): `1G`, `256M`, `1.5G`.
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let upper = t.to_ascii_uppercase();
    let upper = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (number, unit) = match upper.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&upper[..i], Some(c)),
        _ => (upper, None),
    };
    let shift = match unit {
        None => 0,
        Some('K') => 10,
        Some('M') => 20,
        Some('G') => 30,
        Some('T') => 40,
        Some(c) => return Err(format!("unknown unit {c:?} in {t:?} (K, M, G or T)")),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{t:?} is not a size (e.g. 512M, 2G)"))?;
    if !value.is_finite() || value <= 0.0 {
        return Err(format!("{t:?}: a size is a positive number"));
    }
    let bytes = value * (1u64 << shift) as f64;
    if bytes >= u64::MAX as f64 {
        return Err(format!("{t:?} is too large"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_binary_units_and_bad_ones_are_refused() {
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("256m"), Ok(256 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("2KB"), Ok(2048));
        for bad in ["", "G", "12X", "-1G", "0", "nanM", "1e30T"] {
            assert!(parse_size(bad).is_err(), "{bad:?} accepted");
        }
    }
}
