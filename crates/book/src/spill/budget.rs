//! How `build` shares its memory budget (`--memory`): the budget itself,
//! its shares for each structure, and when a build journals from the start.

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

/// The share of the budget the aggregate may fill: writing it (rows sorted,
/// the graph valued) needs about as much again.
pub(crate) const AGGREGATE_SHARE: f64 = 0.45;
/// The share of the budget for the filter of shared positions once the
/// counts no longer fit, at most (it is sized at 16 bits a position the
/// input may hold), and for each [`Sorter`](super::Sorter) in memory (the games' places,
/// their id order, the tails index, the parent links, the positions by
/// depth; the rest goes to sorted runs on disk; four at most at once).
pub(crate) const FILTER_SHARE: f64 = 0.25;
pub(crate) const SORT_SHARE: f64 = 0.05;
/// The share of the budget for one key range's counts, when all the counts
/// of a build do not fit (`build` counts and writes them range by range;
/// the filter and the keys of the rows are held beside them).
pub(crate) const PART_SHARE: f64 = 0.3;
/// The memory the counts of a position the filter calls shared take, about
/// (the position, its moves and its top games: 530 bytes measured on 2 M
/// generated games), for choosing the number of key ranges.
pub(crate) const PART_BYTES_PER_POSITION: u64 = 600;
/// SQLite's page caches while key ranges are counted and written, then
/// while the games are, then while the values are (shares of the budget).
pub(crate) const CACHE_SHARE_COUNTING: f64 = 0.05;
pub(crate) const CACHE_SHARE_WRITING: f64 = 0.25;
pub(crate) const CACHE_SHARE_VALUES: f64 = 0.5;

/// A journal up to this share of the budget is held in memory for its two
/// reads (and counted on two threads).
pub(crate) const JOURNAL_MEMORY_SHARE: f64 = 0.1;

/// Inputs of more PGN than this (decompressed, estimated) make a new book
/// through the journal from the start.
pub(crate) const JOURNAL_FROM: u64 = 16 << 20;

/// The decompressed size of the inputs, estimated from their files (`None`
/// for standard input or a file that cannot be read: the budget decides).
pub(crate) fn plain_size(inputs: &[PathBuf]) -> Option<u64> {
    let mut total = 0u64;
    for p in inputs {
        if p.as_os_str() == "-" {
            return None;
        }
        let len = std::fs::metadata(p).ok()?.len();
        let name = p.to_string_lossy();
        // PGN compresses about 4 times with gzip, 5 with zstd.
        let factor = if name.ends_with(".gz") {
            4
        } else if name.ends_with(".zst") {
            5
        } else {
            1
        };
        total = total.saturating_add(len.saturating_mul(factor));
    }
    Some(total)
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
