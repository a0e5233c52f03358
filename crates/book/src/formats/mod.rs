//! The book file formats `export` writes and `import` reads, chosen by
//! `--format` or the file's extension, each in its own file: Polyglot
//! `.bin` (with the move selection the other exports share), Arena's
//! `.abk`, BrainLearn's `.exp` (with Stockfish's keys), the book as PGN,
//! and opening suites cut from the book. This file is the two commands'
//! dispatch to each format's module.

pub mod abk;
pub mod experience;
pub mod pgn_tree;
pub mod polyglot;
pub mod polyglot_import;
pub mod sf_keys;
pub mod suite;

use std::path::Path;

use anyhow::{bail, Context, Result};

use super::db::files;
use super::{Book, BookSettings};
use pgn_tree::Layout;
use polyglot::ExportOptions;

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

/// What [`export`] wrote, by format.
#[derive(Clone, Debug)]
pub enum Exported {
    /// Polyglot entries.
    Bin(usize),
    Abk(abk::ExportSummary),
    Exp(experience::ExportSummary),
    /// PGN lines (games, or one game's variations).
    Pgn(usize),
}

impl Exported {
    /// The text `export` prints for the file `out`.
    pub fn report(&self, out: &Path) -> String {
        let wrote = |n: usize, what: &str| format!("wrote {n} {what} to {}\n", out.display());
        match self {
            Exported::Bin(n) => wrote(*n, "entries"),
            Exported::Abk(s) => format!(
                "{} moves in a tree of {} entries, {} plies deep ({} entries copy transposed positions' moves, {} moves left without replies that are elsewhere, {} selected moves not reached from the start position)\n{}",
                s.moves,
                s.entries,
                s.depth,
                s.copies,
                s.leaves,
                s.unreached,
                wrote(s.entries, "entries")
            ),
            Exported::Exp(s) => format!(
                "wrote {} entries for {} positions to {} ({} selected moves have no search score)\n",
                s.entries,
                s.positions,
                out.display(),
                s.unscored
            ),
            Exported::Pgn(n) => wrote(*n, "lines"),
        }
    }
}

/// `export`: the book's selection (`opts`) written to `out` in `format`
/// (`layout`: PGN's variations or lines).
pub fn export(
    book: &Book,
    out: &Path,
    format: BookFormat,
    opts: &ExportOptions,
    layout: Layout,
) -> Result<Exported> {
    Ok(match format {
        BookFormat::Bin => Exported::Bin(polyglot::export(book, out, opts)?),
        BookFormat::Abk => Exported::Abk(abk::export(book, out, opts)?),
        BookFormat::Exp => Exported::Exp(experience::export(book, out, opts)?),
        BookFormat::Pgn => Exported::Pgn(pgn_tree::export(book, out, opts, layout)?),
    })
}

/// What [`import`] read, by format.
#[derive(Clone, Debug)]
pub enum Imported {
    Bin(polyglot_import::ImportSummary),
    Abk(abk::ImportSummary),
    Exp(experience::ImportSummary),
}

impl Imported {
    /// The text `import` prints for the file `input`.
    pub fn report(&self, input: &Path) -> String {
        match self {
            Imported::Bin(s) => format!(
                "imported {} entries ({} reached from the start position, {} illegal there)\n",
                s.entries, s.reached, s.illegal
            ),
            Imported::Abk(s) => format!(
                "imported {} moves of {} positions from {} entries of {} ({} deleted or empty skipped, {} not reached from the start position)\n",
                s.moves, s.positions, s.entries, input.display(), s.void, s.unreached
            ),
            Imported::Exp(s) => format!(
                "imported {} entries from {}: {} of book moves, {} added as engine moves, {} duplicates, {} of positions not reached; {} search scores stored, {} kept (as deep or deeper)\n",
                s.entries,
                input.display(),
                s.book_moves,
                s.engine_moves,
                s.duplicates,
                s.unmatched,
                s.stored,
                s.kept
            ),
        }
    }
}

/// `import`: the book file `input` (bin, abk or exp) read into the book at
/// `path`, created if missing (default settings), SQLite held to `memory`
/// bytes. An ABK file is read and checked whole before the book is opened,
/// so a bad file changes nothing; a book this import created goes with an
/// error (it holds nothing), and before one is created the files a crashed
/// book left there go (a book in use there stops the import).
pub fn import(path: &Path, input: &Path, format: BookFormat, memory: u64) -> Result<Imported> {
    if format == BookFormat::Pgn {
        bail!("import reads bin, abk or exp; PGN games are read by `build`");
    }
    let abk = match format {
        BookFormat::Abk => Some(abk::read_file(input)?),
        _ => None,
    };
    let existed = path.exists();
    if !existed {
        // A crashed book's WAL there goes first; a book in use there stops it.
        files::clear_for_new_book(path)?;
    }
    let imported = import_into(path, input, format, abk, memory);
    if imported.is_err() && !existed {
        // A book this import created holds nothing: it goes with the error.
        for suffix in ["", "-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            let _ = std::fs::remove_file(std::path::PathBuf::from(p));
        }
    }
    imported
}

/// [`import`]'s work once the file is known good enough to open the book.
fn import_into(
    path: &Path,
    input: &Path,
    format: BookFormat,
    abk: Option<abk::AbkBook>,
    memory: u64,
) -> Result<Imported> {
    // Dropped (closed) on return, before the caller removes a new book.
    let mut b = Book::open_or_create(path, BookSettings::default())?;
    b.limit_memory(memory)?;
    Ok(match format {
        BookFormat::Bin => Imported::Bin(polyglot_import::import(&mut b, input)?),
        BookFormat::Abk => {
            let abk = abk.context("the ABK book was read above")?;
            Imported::Abk(abk::store(&mut b, &abk)?)
        }
        BookFormat::Exp => Imported::Exp(experience::import(&mut b, input)?),
        BookFormat::Pgn => bail!("import reads bin, abk or exp; PGN games are read by `build`"),
    })
}
