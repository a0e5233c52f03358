//! Write-temp-and-rename, the one way the crate replaces a file: a crash or
//! kill while writing leaves the old file (or none), never half a new one,
//! and a failed write leaves no temporary file behind.

use std::{
    fs,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};

/// A file being written beside its destination. [`Pending::commit`] renames
/// it into place; dropped without a commit (an error on the way), it is
/// removed.
pub struct Pending {
    tmp: PathBuf,
    dest: PathBuf,
    committed: bool,
}

impl Pending {
    /// A temporary path `dest` + `suffix`. A leftover of an earlier killed
    /// run there (and its SQLite journals) is removed first.
    pub fn new(dest: &Path, suffix: &str) -> Pending {
        let mut tmp = dest.as_os_str().to_owned();
        tmp.push(suffix);
        let pending = Pending {
            tmp: PathBuf::from(tmp),
            dest: dest.to_path_buf(),
            committed: false,
        };
        pending.remove_tmp();
        pending
    }

    /// A temporary file at `path` itself, never committed: removed when
    /// dropped (and first, if an earlier run left it).
    pub fn temporary(path: &Path) -> Pending {
        Pending::new(path, "")
    }

    /// Where to write.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// Where [`Pending::commit`] puts the file.
    pub fn destination(&self) -> &Path {
        &self.dest
    }

    /// Moves the written file to its destination (atomically on one file
    /// system) and syncs the directory.
    pub fn commit(mut self) -> Result<()> {
        fs::rename(&self.tmp, &self.dest).with_context(|| {
            format!(
                "cannot move {} to {}",
                self.tmp.display(),
                self.dest.display()
            )
        })?;
        self.committed = true;
        // The rename is durable only once the directory is synced (a power
        // loss could otherwise bring back the old file). Best effort: some
        // file systems refuse to sync a directory, and the new file is in
        // place either way.
        let dir = match self.dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    fn remove_tmp(&self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = self.tmp.as_os_str().to_owned();
            p.push(suffix);
            let _ = fs::remove_file(PathBuf::from(p));
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.committed {
            self.remove_tmp();
        }
    }
}

/// The directory a file at `path` is in (`.` for a bare file name).
pub fn directory_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The file name of `path`, to name temporary files beside it (`book` for
/// a path without one).
pub fn file_name_of(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| "book".into(), |n| n.to_string_lossy().into_owned())
}

/// Replaces `path` with what `fill` writes, synced to disk before the rename.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let pending = Pending::new(path, ".tmp");
    let file = fs::File::create(pending.path())
        .with_context(|| format!("cannot create {}", pending.path().display()))?;
    let mut w = BufWriter::new(file);
    fill(&mut w)
        .and_then(|_| w.flush())
        .and_then(|_| w.get_ref().sync_all())
        .with_context(|| format!("cannot write {}", pending.path().display()))?;
    drop(w);
    pending.commit()
}

/// Replaces `path` with `bytes`.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |w| w.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_keeps_the_old_file_and_leaves_no_temporary() {
        let dir = tempfile::TempDir::new().expect("tmp");
        let path = dir.path().join("out.bin");
        write(&path, b"old").expect("write");
        let err = write_with(&path, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(err.is_err());
        assert_eq!(fs::read(&path).expect("read"), b"old");
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.bin")]);
        write(&path, b"new").expect("write");
        assert_eq!(fs::read(&path).expect("read"), b"new");
    }
}
