//! The book's lines as PGN: one game with variations, or one game a line.

use std::path::Path;

use anyhow::{bail, Result};

use super::db::Book;
use super::polyglot::ExportOptions;

/// `export --format pgn`: returns the number of lines written.
pub fn export(_book: &Book, _path: &Path, _opts: &ExportOptions) -> Result<usize> {
    bail!("PGN export is not built yet")
}
