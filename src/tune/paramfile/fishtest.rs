//! fishtest's SPSA lines, `name,start,min,max,c_end,r_end`: six
//! comma-separated fields, as Stockfish's `TUNE()` prints them.

use anyhow::Result;

use super::{entry_lines, line_entry, Entry, Format};

/// The entries of a fishtest file, in file order, each checked.
pub fn read(text: &str) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    for line in entry_lines(Format::Fishtest, text, 6) {
        let (n, chunks) = line?;
        out.push(line_entry(n, chunks[0], false, &chunks[1..])?);
    }
    Ok(out)
}

/// `entries` as fishtest takes them, joined by `","`.
pub fn write(entries: &[Entry]) -> String {
    let mut s = String::new();
    for e in entries {
        s.push_str(&format!(
            "{},{},{},{},{},{}\n",
            e.name, e.start, e.min, e.max, e.c_end, e.r_end
        ));
    }
    s
}
