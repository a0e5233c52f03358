//! BrainLearn's experience file (`.exp`): export and import.

use std::path::Path;

use anyhow::{bail, Result};

use super::db::Book;
use super::polyglot::ExportOptions;

/// `export --format exp`: returns the number of entries written.
pub fn export(_book: &Book, _path: &Path, _opts: &ExportOptions) -> Result<usize> {
    bail!("experience export is not built yet")
}

/// `import --format exp`: returns the number of entries read.
pub fn import(_book: &mut Book, _path: &Path) -> Result<usize> {
    bail!("experience import is not built yet")
}
