//! A shard's analysis in a file of its own (`analyze --shard I/N --out F`):
//! the `analysis` rows of the positions it searched, and in `meta` which
//! shard of which job it is. `merge` adds the N files of a job to the book
//! they analysed ([`Book::store_analysis`], one transaction).
//!
//! The shards only read the book, so that N of them can share one file;
//! each writes its own file, in batches, and a rerun skips what is there.

use std::path::Path;

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

use super::analysis::{
    analysis_from_row, insert_analysis, Analysis, ANALYSIS_COLUMNS, INSERT_ANALYSIS,
};
use super::book::Book;
use super::schema::SCHEMA;
use crate::keys::{Key, KeySet};
use learnbook_base::shard::Shard;

/// The `meta` value of `kind` that marks an analysis file.
const KIND: &str = "analysis";

/// An open analysis file.
pub struct AnalysisFile {
    conn: Connection,
    pub shard: Shard,
    /// The job's fingerprint: the book analysed, the engine, the budget,
    /// the number of shards.
    pub job: String,
    /// The analysed book's [`Book::fingerprint`].
    pub book: String,
}

impl AnalysisFile {
    /// Opens the file of `shard` of job `job`, creating it if missing; an
    /// existing file must be that shard of that job.
    pub fn create_or_resume(
        path: &Path,
        shard: Shard,
        job: &str,
        book: &str,
    ) -> Result<AnalysisFile> {
        let conn = Connection::open(path)
            .with_context(|| format!("cannot create the analysis file {}", path.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(30))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .with_context(|| format!("{} is not an analysis file", path.display()))?;
        // A book's tables, of which it fills `meta` and `analysis`.
        conn.execute_batch(SCHEMA)
            .with_context(|| format!("{} is not an analysis file", path.display()))?;
        // A file an older learnbook began.
        super::schema::add_grow_columns(&conn)?;
        let meta = |k: &str| -> Result<Option<String>> {
            Ok(conn
                .query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0))
                .optional()?)
        };
        match (meta("kind")?, meta("shard")?, meta("job")?) {
            (None, None, None) => {
                let rows = [
                    ("kind", KIND.to_string()),
                    ("shard", shard.to_string()),
                    ("job", job.into()),
                    ("book", book.into()),
                ];
                for (k, v) in rows {
                    conn.execute(
                        "INSERT INTO meta(key, value) VALUES (?1, ?2)",
                        params![k, v],
                    )?;
                }
            }
            (Some(kind), Some(s), Some(j))
                if kind == KIND && s == shard.to_string() && j == job => {}
            _ => bail!(
                "{} exists and is not the analysis of shard {shard} of this job (another book, \
                 engine, budget or shard): remove it or give another --out",
                path.display()
            ),
        }
        Ok(AnalysisFile {
            conn,
            shard,
            job: job.to_string(),
            book: book.to_string(),
        })
    }

    /// Opens an existing analysis file for `merge`; `None` if `path` is
    /// not one (a book, say).
    pub fn open(path: &Path) -> Result<Option<AnalysisFile>> {
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let meta = |k: &str| -> Option<String> {
            conn.query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0))
                .ok()
        };
        if meta("kind").as_deref() != Some(KIND) {
            return Ok(None);
        }
        let (Some(shard), Some(job), Some(book)) = (meta("shard"), meta("job"), meta("book"))
        else {
            bail!("{}: an analysis file without its shard", path.display());
        };
        let shard =
            Shard::parse(&shard).with_context(|| format!("{}: its shard", path.display()))?;
        Ok(Some(AnalysisFile {
            conn,
            shard,
            job,
            book,
        }))
    }

    /// The positions already in the file.
    pub fn keys(&self) -> Result<KeySet<Key>> {
        let mut stmt = self.conn.prepare("SELECT key FROM analysis")?;
        let keys = stmt.query_map([], |r| r.get::<_, Key>(0))?;
        Ok(keys.collect::<rusqlite::Result<_>>()?)
    }

    /// Adds `rows`, in one transaction.
    pub fn store(&mut self, rows: &[Analysis]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(INSERT_ANALYSIS)?;
            for a in rows {
                insert_analysis(&mut stmt, a)?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Every row of the file.
    pub fn rows(&self) -> Result<Vec<Analysis>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {ANALYSIS_COLUMNS} FROM analysis ORDER BY key"
        ))?;
        let rows = stmt.query_map([], analysis_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl Book {
    /// What identifies the book an analysis is made of: its games (their
    /// number and their hashes summed), which decide its positions and
    /// counts; not the rows, which an analysis itself changes (a tail
    /// position searched becomes a row). The same book on another machine
    /// gives the same text.
    pub fn fingerprint(&self) -> Result<String> {
        let (games, copies, hashes): (i64, i64, i64) = self.conn.query_row(
            "SELECT count(*), coalesce(sum(copies), 0), coalesce(sum(hash % 1000000007), 0) FROM games",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        Ok(format!("games={games} copies={copies} hashes={hashes}"))
    }
}
