//! The temporary files of one build, and the removal of a killed build's.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use super::budget::Spill;

/// Temporary files of one build (or another command), beside the book or
/// in `--temp-dir`, named after the book: removed when the build ends, and
/// a killed build's by the next build of the same book.
pub(crate) struct TempFiles {
    pub dir: PathBuf,
    pub prefix: String,
}

impl TempFiles {
    pub fn new(book: &Path, spill: &Spill) -> Result<TempFiles> {
        TempFiles::named(book, spill.temp_dir.as_deref(), "spill")
    }

    /// The temporary files of a `command` on `book` (`book.command-*`), in
    /// `temp_dir` or beside the book.
    pub fn named(book: &Path, temp_dir: Option<&Path>, command: &str) -> Result<TempFiles> {
        let dir = match temp_dir {
            Some(d) => d.to_path_buf(),
            None => learnbook_base::atomic_file::directory_of(book).to_path_buf(),
        };
        if !dir.is_dir() {
            bail!(
                "the temporary directory {} is not a directory (--temp-dir)",
                dir.display()
            );
        }
        let name = book
            .file_name()
            .ok_or_else(|| anyhow::anyhow!("{}: not a file name", book.display()))?
            .to_string_lossy();
        let prefix = format!("{name}.{command}-");
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        Ok(TempFiles { dir, prefix })
    }

    pub fn path(&self, what: &str) -> PathBuf {
        self.dir.join(format!("{}{what}", self.prefix))
    }
}
