//! OpenBench's SPSA lines, `name, int|float, start, min, max, c_end, r_end`:
//! seven comma-separated fields, written back joined by `", "` as
//! OpenBench writes them.

use anyhow::{bail, Result};

use super::{entry_lines, line_entry, Entry, Format};

/// The entries of an OpenBench file, in file order, each checked.
pub fn read(text: &str) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    for line in entry_lines(Format::OpenBench, text, 7) {
        let (n, chunks) = line?;
        let name = chunks[0];
        let float = match chunks[1] {
            "int" => false,
            "float" => true,
            other => bail!("line {n} ({name}): the type is {other:?}, expected int or float"),
        };
        out.push(line_entry(n, name, float, &chunks[2..])?);
    }
    Ok(out)
}

/// `entries` as OpenBench writes them.
pub fn write(entries: &[Entry]) -> String {
    let mut s = String::new();
    for e in entries {
        let kind = if e.float { "float" } else { "int" };
        s.push_str(&format!(
            "{}, {kind}, {}, {}, {}, {}, {}\n",
            e.name, e.start, e.min, e.max, e.c_end, e.r_end
        ));
    }
    s
}
