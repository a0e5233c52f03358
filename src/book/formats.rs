//! The book file formats `export` writes and `import` reads, chosen by
//! `--format` or the file's extension.

use std::path::Path;

use anyhow::{bail, Result};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BookFormat {
    /// Polyglot `.bin`.
    Bin,
    /// Arena's `.abk`.
    Abk,
    /// BrainLearn's experience file (`.exp`).
    Exp,
    /// The book's lines as PGN with variations.
    Pgn,
}

impl BookFormat {
    /// `given`, else the format `path`'s extension names.
    pub fn resolve(given: Option<BookFormat>, path: &Path) -> Result<BookFormat> {
        if let Some(f) = given {
            return Ok(f);
        }
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        Ok(match ext.as_deref() {
            Some("bin") => BookFormat::Bin,
            Some("abk") => BookFormat::Abk,
            Some("exp") => BookFormat::Exp,
            Some("pgn") => BookFormat::Pgn,
            _ => bail!(
                "cannot tell the format of {} from its extension: give --format bin, abk, exp or pgn",
                path.display()
            ),
        })
    }
}

impl std::str::FromStr for BookFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<BookFormat, String> {
        match s.to_ascii_lowercase().as_str() {
            "bin" | "polyglot" => Ok(BookFormat::Bin),
            "abk" => Ok(BookFormat::Abk),
            "exp" => Ok(BookFormat::Exp),
            "pgn" => Ok(BookFormat::Pgn),
            _ => Err(format!(
                "unknown book format {s:?} (expected bin, abk, exp or pgn)"
            )),
        }
    }
}
