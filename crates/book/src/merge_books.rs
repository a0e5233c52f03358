//! `merge`: books built separately, from parts of the games, into one book
//! equal to the book of all the games.
//!
//! The result is written beside its destination and renamed into place when
//! complete: a killed merge leaves no new book, or the old one unchanged
//! (an existing destination is one of the inputs, not written to).

use std::{
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::{bail, Context, Result};

use super::db::analysis_file::AnalysisFile;
use super::db::merge::MergedShard;
use super::db::{files, Book, BookSettings};
use learnbook_base::atomic_file;

/// What `merge` did.
#[derive(Clone, Debug, Default)]
pub struct MergeSummary {
    /// Each input (the existing destination first, if there was one).
    pub inputs: Vec<(PathBuf, MergedShard)>,
    pub seconds: f64,
    /// Wall time of adding the rows, and of parent links and values.
    pub phases: Vec<(&'static str, f64)>,
    /// Analysis files added (`analyze --shard`): files, positions.
    pub analysis: Option<(usize, usize)>,
    /// The values computed depth by depth through SQLite (the graph did
    /// not fit the memory budget).
    pub by_depth: bool,
}

impl MergeSummary {
    pub fn report(&self) -> String {
        let mut s = String::new();
        if let Some((files, rows)) = self.analysis {
            return format!(
                "added the analysis of {files} shards: {rows} positions, in {:.2} s\n",
                self.seconds
            );
        }
        for (path, m) in &self.inputs {
            s.push_str(&format!(
                "{}: {} positions, {} moves, {} games ({} already in the book)\n",
                path.display(),
                m.positions,
                m.moves,
                m.games,
                m.duplicates
            ));
        }
        let p: Vec<String> = self
            .phases
            .iter()
            .map(|(name, t)| format!("{name} {t:.2} s"))
            .collect();
        s.push_str(&format!(
            "merged {} books in {:.2} s ({}){}\n",
            self.inputs.len(),
            self.seconds,
            p.join(", "),
            if self.by_depth {
                "; valued by depth through SQLite (the graph is over half of --memory)"
            } else {
                ""
            }
        ));
        s
    }
}

/// Merges `shards` into the book at `out` (created, or added to). Counts
/// add; a game in two books counts once unless `allow_duplicates`; the
/// positions and moves fewer than `min_games` games reach are dropped at the
/// end (so the result equals `build --min-games` of all the games).
pub fn merge_books(
    out: &Path,
    shards: &[PathBuf],
    allow_duplicates: bool,
    min_games: u32,
    memory: u64,
) -> Result<MergeSummary> {
    let start = Instant::now();
    if shards.is_empty() {
        bail!("no books to merge");
    }
    let mut analysis = Vec::new();
    // (A missing input is named below.)
    for s in shards.iter().filter(|s| s.exists()) {
        if let Some(file) = AnalysisFile::open(s)? {
            analysis.push((s.display().to_string(), file));
        }
    }
    if !analysis.is_empty() {
        if analysis.len() != shards.len() {
            bail!("analysis files (analyze --shard) are added to a book on their own: give them without books");
        }
        let rows = add_analysis_files(out, &analysis)?;
        return Ok(MergeSummary {
            analysis: Some((analysis.len(), rows)),
            seconds: start.elapsed().as_secs_f64(),
            ..MergeSummary::default()
        });
    }
    // Fails now, not after the merge, where a process has a book open.
    files::refuse_if_open(out)?;
    let replaces = out.exists();
    let mut inputs: Vec<PathBuf> = Vec::new();
    if replaces {
        inputs.push(out.to_path_buf());
    }
    for s in shards {
        if !s.exists() {
            bail!("no book at {}", s.display());
        }
        if same_file(s, out) {
            bail!(
                "{} is the output book: it is added to, not merged with itself",
                s.display()
            );
        }
        if inputs.iter().any(|i| same_file(i, s)) {
            bail!("{} is given twice", s.display());
        }
        inputs.push(s.clone());
    }
    check_shards(&inputs)?;
    let settings = BookSettings {
        min_games,
        ..Book::open(&inputs[0])?.settings
    };
    if min_games > 1 && out.exists() {
        bail!(
            "--min-games makes a new book: {} exists (merge into a new file)",
            out.display()
        );
    }
    let dir = atomic_file::directory_of(out);
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Removes what a killed merge left; removed again if this one fails.
    let pending = atomic_file::Pending::new(out, ".merging");
    let mut summary = MergeSummary::default();
    {
        let mut book = Book::open_or_create(pending.path(), settings)?;
        book.write_unjournaled()?;
        book.limit_memory(memory)?;
        for input in &inputs {
            let merged = book.merge_book(input, allow_duplicates)?;
            summary.inputs.push((input.clone(), merged));
        }
        let added = start.elapsed().as_secs_f64();
        summary.phases.push(("rows", added));
        let name = out
            .file_name()
            .map_or_else(|| "book".into(), |n| n.to_string_lossy());
        summary.by_depth = book
            .finish_merge(memory, dir, &format!("{name}.merging-"))
            .context("computing the merged book's values")?;
        book.make_durable()?;
        summary
            .phases
            .push(("links and values", start.elapsed().as_secs_f64() - added));
    }
    files::commit_new_book(pending, replaces)?;
    summary.seconds = start.elapsed().as_secs_f64();
    Ok(summary)
}

/// Adds the analysis files of every shard of one `analyze --shard` job to
/// the book they analysed, in one transaction; returns the positions added.
fn add_analysis_files(out: &Path, files: &[(String, AnalysisFile)]) -> Result<usize> {
    let (first_name, first) = &files[0];
    if let Some((name, _)) = files.iter().find(|(_, f)| f.job != first.job) {
        bail!(
            "{name} and {first_name} are the analysis of different jobs (another book, engine, \
             budget, --min-games or number of shards)"
        );
    }
    learnbook_base::shard::check_complete(files.iter().map(|(name, f)| (f.shard, name.as_str())))?;
    let mut book = Book::open(out)?;
    let analysed = book.fingerprint()?;
    if analysed != first.book {
        bail!(
            "{} is not the book the shards analysed (it holds other games): add the analysis \
             to that book",
            out.display()
        );
    }
    let mut rows = Vec::new();
    for (name, f) in files {
        rows.extend(f.rows().with_context(|| format!("reading {name}"))?);
    }
    book.store_analysis(&rows)
        .context("adding the analysis to the book")?;
    Ok(rows.len())
}

/// The inputs that are shards (`build --shard`) must be every shard of
/// one job, each once: a missing one would lose its games silently, a
/// repeated one count them twice. Books that are not shards may come
/// with them (the book being added to, say).
fn check_shards(inputs: &[PathBuf]) -> Result<()> {
    let mut shards = Vec::new();
    for input in inputs {
        if let Some((shard, job)) = Book::open(input)?.shard()? {
            shards.push((shard, job, input.display().to_string()));
        }
    }
    if let Some((_, job, name)) = shards.first() {
        if let Some((_, _, other)) = shards.iter().find(|(_, j, _)| j != job) {
            bail!(
                "{other} and {name} are shards of different jobs (other inputs, filters or \
                 settings, or another number of shards): merge the shards of one build"
            );
        }
    }
    learnbook_base::shard::check_complete(shards.iter().map(|(s, _, name)| (*s, name.as_str())))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
