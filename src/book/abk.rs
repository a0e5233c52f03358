//! Arena's `.abk` opening book: export and import.

use std::path::Path;

use anyhow::{bail, Result};

use super::db::Book;
use super::polyglot::ExportOptions;

/// `export --format abk`: returns the number of moves written.
pub fn export(_book: &Book, _path: &Path, _opts: &ExportOptions) -> Result<usize> {
    bail!("ABK export is not built yet")
}

/// `import --format abk`: returns the number of moves read.
pub fn import(_book: &mut Book, _path: &Path) -> Result<usize> {
    bail!("ABK import is not built yet")
}
