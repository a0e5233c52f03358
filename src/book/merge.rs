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

use super::db::merge::MergedShard;
use super::db::{Book, BookSettings};
use crate::atomic_file;

/// What `merge` did.
#[derive(Clone, Debug, Default)]
pub struct MergeSummary {
    /// Each input (the existing destination first, if there was one).
    pub inputs: Vec<(PathBuf, MergedShard)>,
    pub seconds: f64,
    /// Wall time of adding the rows, and of parent links and values.
    pub phases: Vec<(&'static str, f64)>,
}

impl MergeSummary {
    pub fn report(&self) -> String {
        let mut s = String::new();
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
            "merged {} books in {:.2} s ({})\n",
            self.inputs.len(),
            self.seconds,
            p.join(", ")
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
) -> Result<MergeSummary> {
    let start = Instant::now();
    if shards.is_empty() {
        bail!("no books to merge");
    }
    let mut inputs: Vec<PathBuf> = Vec::new();
    if out.exists() {
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
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // Removes what a killed merge left; removed again if this one fails.
    let pending = atomic_file::Pending::new(out, ".merging");
    let mut summary = MergeSummary::default();
    {
        let mut book = Book::open_or_create(pending.path(), settings)?;
        book.write_unjournaled()?;
        for input in &inputs {
            let merged = book.merge_book(input, allow_duplicates)?;
            summary.inputs.push((input.clone(), merged));
        }
        let added = start.elapsed().as_secs_f64();
        summary.phases.push(("rows", added));
        book.finish_merge()
            .context("computing the merged book's values")?;
        book.make_durable()?;
        summary
            .phases
            .push(("links and values", start.elapsed().as_secs_f64() - added));
    }
    pending.commit()?;
    summary.seconds = start.elapsed().as_secs_f64();
    Ok(summary)
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
    crate::shard::check_complete(shards.iter().map(|(s, _, name)| (*s, name.as_str())))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
