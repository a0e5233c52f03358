//! `learnbook improve`: a night of a strong engine spent on a book, in the
//! order that pays most, resumable, and split across machines.
//!
//! A plan is a list of passes, each an analysis (see [`super::run`]) of the
//! positions with at least `games` games to at most `ply` plies, at one
//! budget, taken by priority ([`super::targets::Target::priority`]). The
//! default plan first gives every position where games thin out a search
//! score at a modest budget (where the book's choice rests on a handful of
//! games), then searches the most played positions again deeper (where a
//! few centipawns decide between sound moves), then the rest of the book.
//! A deeper pass upgrades what a shallower one stored; nothing is searched
//! twice at one budget.
//!
//! With `--journal DIR` every result also goes to a part file of DIR
//! ([`super::journal`]), read back at the next start: a run killed at any
//! point, or moved to another machine with the same games, carries on.
//! With `--shard I/N` the book is only read and the shard's positions
//! (key modulo N) go to its own part; `improve --journal DIR` without a
//! shard then stores every part in the book: N machines do in a night what
//! one does in N nights.
//!
//! A `grow` pass spends what time is left on drop-out expansion
//! ([`super::grow`]) with the same engine: engine moves where the book's
//! lines run out. Each expansion goes to the journal too, replayed after
//! its analyses, so grow passes come last in a plan. Growth needs the
//! whole book, so a shard skips it: grow on one machine after the merge.

use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::{grow, journal, plan, run_plan_into, Budget, EngineChoice, Options, Summary};
use crate::book::{
    db::{grow::Expansion, Analysis},
    keys::{Key, KeyMap},
    Book,
};
use crate::shard::Shard;

/// One pass of a plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pass {
    /// Positions with at least this many games are analysed with their
    /// moves; their children with fewer as leaves. A grow pass expands
    /// positions with at least this many games (0: the engine's own too).
    pub min_games: u32,
    /// Positions at most this many plies from the start (their children as
    /// leaves); `None`: any.
    pub max_ply: Option<u32>,
    pub budget: Budget,
    /// A grow pass (drop-out expansion), not an analysis.
    pub grow: Option<Growth>,
}

/// How a grow pass expands (`grow`'s `--alpha` and `--width`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Growth {
    pub alpha: f64,
    pub width: usize,
}

impl std::fmt::Display for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.grow.is_some() {
            write!(f, "grow,")?;
        }
        write!(f, "games={}", self.min_games)?;
        if let Some(p) = self.max_ply {
            write!(f, ",ply={p}")?;
        }
        write!(f, ",{}", self.budget)?;
        if let Some(g) = self.grow {
            write!(f, ",alpha={},width={}", g.alpha, g.width)?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Pass {
    type Err = String;
    /// `games=3,ply=20,nodes=50000` (`depth=D` or `movetime=MS` instead of
    /// nodes; `ply` optional); `grow,games=0,nodes=200000[,alpha=20,width=2]`.
    fn from_str(s: &str) -> Result<Pass, String> {
        let (mut games, mut ply, mut budget) = (None, None, None);
        let (mut grow, mut alpha, mut width) = (false, None, None);
        for field in s.split(',').map(str::trim) {
            if field == "grow" {
                grow = true;
                continue;
            }
            let (k, v) = field
                .split_once('=')
                .ok_or_else(|| format!("{field:?} in pass {s:?} is not key=value"))?;
            let number = || -> Result<u64, String> {
                v.parse()
                    .map_err(|_| format!("{k}={v:?} in pass {s:?} is not a number"))
            };
            match k {
                "games" => games = Some(u32::try_from(number()?).map_err(|e| e.to_string())?),
                "ply" => ply = Some(u32::try_from(number()?).map_err(|e| e.to_string())?),
                "alpha" => {
                    alpha = Some(
                        v.parse::<f64>()
                            .ok()
                            .filter(|a| *a >= 0.0 && a.is_finite())
                            .ok_or_else(|| format!("alpha={v:?} in pass {s:?} is not a number >= 0"))?,
                    )
                }
                "width" => {
                    width = Some(usize::try_from(number()?).map_err(|e| e.to_string())?)
                        .filter(|w| *w > 0);
                    if width.is_none() {
                        return Err(format!("width= in pass {s:?} must be at least 1"));
                    }
                }
                "nodes" | "depth" | "movetime" => {
                    if budget.is_some() {
                        return Err(format!("pass {s:?} has two budgets"));
                    }
                    budget = Budget::parse(field).filter(|b| match b {
                        Budget::Nodes(n) | Budget::Movetime(n) => *n > 0,
                        Budget::Depth(d) => *d > 0,
                    });
                    if budget.is_none() {
                        return Err(format!("{field:?} in pass {s:?} is not a budget"));
                    }
                }
                _ => {
                    return Err(format!(
                        "unknown {k:?} in pass {s:?} (grow, games, ply, nodes, depth, movetime, alpha, width)"
                    ))
                }
            }
        }
        let min_games = games.ok_or_else(|| format!("pass {s:?} has no games="))?;
        if min_games == 0 && !grow {
            return Err(format!("games= in pass {s:?} must be at least 1"));
        }
        if grow && ply.is_some() {
            return Err(format!(
                "a grow pass has no ply= ({s:?}): it goes where the book's lines run out"
            ));
        }
        if !grow && (alpha.is_some() || width.is_some()) {
            return Err(format!("alpha= and width= are for grow passes ({s:?})"));
        }
        Ok(Pass {
            min_games,
            max_ply: ply,
            budget: budget.ok_or_else(|| format!("pass {s:?} has no budget (nodes=N)"))?,
            grow: grow.then(|| Growth {
                alpha: alpha.unwrap_or(grow::DEFAULT_ALPHA),
                width: width.unwrap_or(grow::DEFAULT_WIDTH),
            }),
        })
    }
}

/// The default plan (see the module's doc). The budgets suit Stockfish on
/// one thread; the first pass takes about 5 hours of two cores on the
/// master games.
pub const DEFAULT_PLAN: &str =
    "games=3,ply=20,nodes=50000;games=50,ply=16,nodes=1000000;games=3,nodes=50000";

/// Parses `a;b;c` into passes.
pub fn parse_plan(s: &str) -> Result<Vec<Pass>> {
    let plan = s
        .split(';')
        .filter(|p| !p.trim().is_empty())
        .map(|p| p.parse::<Pass>().map_err(anyhow::Error::msg))
        .collect::<Result<Vec<_>>>()?;
    if plan.is_empty() {
        bail!("the plan has no pass");
    }
    // The journal replays expansions after analyses.
    if let Some(i) = plan.iter().position(|p| p.grow.is_some()) {
        if let Some(p) = plan[i..].iter().find(|p| p.grow.is_none()) {
            bail!("the analysis pass {p} follows a grow pass: grow passes come last");
        }
    }
    Ok(plan)
}

#[derive(Clone, Debug)]
pub struct ImproveOptions {
    pub engine: EngineChoice,
    pub threads: usize,
    pub plan: Vec<Pass>,
    /// Stop searching then (what is done is kept).
    pub deadline: Option<Instant>,
    pub journal: Option<std::path::PathBuf>,
    /// Results stored (journal, then book) at a time, at most.
    pub store_every: usize,
    /// Search only this shard's positions, into the journal; the book is
    /// only read.
    pub shard: Option<Shard>,
    /// Score an interior position's leaf children from its own MultiPV
    /// search where the engine offers MultiPV (`bench multipv`: at the same
    /// choice quality, cheaper than one search a child); false: one search
    /// a child.
    pub multipv: bool,
    pub progress: bool,
}

/// What a run did: the journal read, then each pass.
#[derive(Debug, Default)]
pub struct ImproveSummary {
    pub journal_parts: usize,
    pub journal_rows: usize,
    /// Rows of the journal stored in the book (new to it).
    pub journal_stored: usize,
    pub journal_cut_short: usize,
    pub journal_expansions: usize,
    /// Expansions of the journal stored in the book (new to it).
    pub journal_grown: usize,
    pub passes: Vec<(Pass, Summary)>,
    pub grown: Vec<(Pass, grow::Summary)>,
    /// Grow passes a shard skipped.
    pub grow_skipped: usize,
    pub out_of_time: bool,
}

impl ImproveSummary {
    pub fn report(&self) -> String {
        let mut s = String::new();
        if self.journal_parts > 0 {
            s.push_str(&format!(
                "journal: {} parts, {} results, {} new to the book{}\n",
                self.journal_parts,
                self.journal_rows,
                self.journal_stored,
                if self.journal_cut_short > 0 {
                    format!(
                        "; {} parts end in a batch cut short (dropped)",
                        self.journal_cut_short
                    )
                } else {
                    String::new()
                }
            ));
            if self.journal_expansions > 0 {
                s.push_str(&format!(
                    "journal: {} expansions, {} new to the book\n",
                    self.journal_expansions, self.journal_grown
                ));
            }
        }
        for (pass, summary) in &self.passes {
            s.push_str(&format!("pass {pass}: {}", summary.report()));
        }
        for (pass, summary) in &self.grown {
            s.push_str(&format!("pass {pass}: {}", summary.report()));
        }
        if self.grow_skipped > 0 {
            s.push_str(&format!(
                "{} grow passes skipped: a shard does not grow (grow on one machine after the merge)\n",
                self.grow_skipped
            ));
        }
        if self.out_of_time {
            s.push_str("out of time: run again (with the same journal) to continue\n");
        }
        s
    }
}

/// Runs the plan on `book` (see the module's doc).
pub fn run(book: &mut Book, opts: &ImproveOptions) -> Result<ImproveSummary> {
    let mut out = ImproveSummary::default();
    let engine = opts.engine.label();
    let fingerprint = book.fingerprint()?;
    // What the journal holds, by position: stored in the book (one machine)
    // or kept beside it (a shard reads the book only).
    let mut known: KeyMap<Key, Analysis> = KeyMap::default();
    if let Some(dir) = &opts.journal {
        let loaded = journal::load(dir, &fingerprint)?;
        out.journal_parts = loaded.parts;
        out.journal_rows = loaded.rows.len();
        out.journal_cut_short = loaded.cut_short;
        out.journal_expansions = loaded.expansions.len();
        if opts.shard.is_none() {
            out.journal_stored = store_new(book, loaded.rows)?;
            out.journal_grown = replay_expansions(book, &loaded.expansions)?;
        } else {
            for row in loaded.rows {
                keep_stronger(&mut known, row);
            }
        }
    }
    let mut sink = Sink {
        dir: opts.journal.as_deref(),
        fingerprint: &fingerprint,
        shard: opts.shard,
        writer: None,
        pending: Vec::new(),
        since: Instant::now(),
    };
    for pass in &opts.plan {
        if opts.deadline.is_some_and(|d| Instant::now() >= d) {
            out.out_of_time = true;
            break;
        }
        if let Some(growth) = pass.grow {
            if opts.shard.is_some() {
                out.grow_skipped += 1;
                continue;
            }
            let summary = grow_pass(book, opts, pass, growth, &mut sink)?;
            let stopped = !summary.exhausted;
            out.grown.push((*pass, summary));
            if stopped {
                out.out_of_time = opts.deadline.is_some_and(|d| Instant::now() >= d);
                break;
            }
            continue;
        }
        // A shard groups only what it owns, so that every position's
        // results stay in one shard from pass to pass.
        let owns = |k: Key| opts.shard.is_none_or(|s| s.owns(k.0));
        let plan = plan::plan(
            book,
            pass.min_games,
            pass.max_ply,
            &engine,
            &pass.budget.to_string(),
            &known,
            &plan::Choice {
                group: opts.multipv.then_some(&owns as &dyn Fn(Key) -> bool),
                keep: &owns,
            },
            &std::env::temp_dir(),
            super::plan_memory(book),
        )?;
        let already = plan.done;
        let analysis = Options {
            engine: opts.engine.clone(),
            budget: pass.budget,
            threads: opts.threads,
            min_games: pass.min_games,
            batch: 256,
            progress: opts.progress,
        };
        let mut store = |batch: &[Analysis]| -> Result<()> {
            for a in batch {
                keep_stronger(&mut known, a.clone());
            }
            sink.pending.extend_from_slice(batch);
            if sink.pending.len() >= opts.store_every || sink.since.elapsed() >= SINK_EVERY {
                sink.flush(book)?;
            }
            Ok(())
        };
        let searched = run_plan_into(plan, &analysis, opts.deadline, &mut store);
        // What is pending is stored even when the searches failed.
        let flushed = sink.flush(book);
        let mut summary = searched?;
        flushed?;
        summary.already = already;
        let stopped = summary.left > 0;
        out.passes.push((*pass, summary));
        if stopped {
            out.out_of_time = opts.deadline.is_some_and(|d| Instant::now() >= d);
            break;
        }
    }
    Ok(out)
}

/// Runs a grow pass until the deadline or until nothing is left to expand,
/// each batch of expansions journaled before the book stores it.
fn grow_pass(
    book: &mut Book,
    opts: &ImproveOptions,
    pass: &Pass,
    growth: Growth,
    sink: &mut Sink<'_>,
) -> Result<grow::Summary> {
    let time = opts
        .deadline
        .map(|d| d.saturating_duration_since(Instant::now()));
    let grow_opts = grow::Options {
        analysis: Options {
            engine: opts.engine.clone(),
            budget: pass.budget,
            threads: opts.threads,
            min_games: super::DEFAULT_MIN_GAMES,
            batch: 256,
            progress: opts.progress,
        },
        alpha: growth.alpha,
        width: growth.width,
        expansions: None,
        time,
        from: Vec::new(),
        min_games: pass.min_games,
    };
    grow::run_recorded(book, &grow_opts, &mut |xs| sink.record_expansions(xs))
}

/// Stores the journal's expansions the book lacks (its parent not yet
/// expanded), in the order written; returns how many.
fn replay_expansions(book: &mut Book, expansions: &[Expansion]) -> Result<usize> {
    let mut new = Vec::new();
    for x in expansions {
        let done = book.analysis(x.parent)?.is_some_and(|a| a.grown.is_some());
        if !done {
            new.push(x.clone());
        }
    }
    // Batches keep the order: a later expansion may start from an earlier
    // one's position.
    for batch in new.chunks(256) {
        book.store_expansions(batch)
            .context("storing the journal's expansions in the book")?;
    }
    Ok(new.len())
}

/// Results are stored (journal, then book) [`DEFAULT_STORE_EVERY`] at a
/// time, or after this long: large gzip members compress a result to about
/// 16 bytes (about 22 in members of 256); a kill loses at most this much
/// work.
pub const DEFAULT_STORE_EVERY: usize = 4096;
const SINK_EVERY: std::time::Duration = std::time::Duration::from_secs(120);

/// Where results go: a part of the journal (made at the first result: a
/// run that searches nothing leaves no part), then the book (unless a
/// shard, which only reads it).
struct Sink<'a> {
    dir: Option<&'a std::path::Path>,
    fingerprint: &'a str,
    shard: Option<Shard>,
    writer: Option<journal::Writer>,
    pending: Vec<Analysis>,
    since: Instant,
}

impl Sink<'_> {
    /// The journal first: after a kill it holds all the book does.
    fn flush(&mut self, book: &mut Book) -> Result<()> {
        self.since = Instant::now();
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        if let Some(w) = self.writer()? {
            w.append(&pending)?;
        }
        if self.shard.is_none() {
            book.store_analysis(&pending)?;
        }
        Ok(())
    }

    /// Journals expansions (the book stores them after).
    fn record_expansions(&mut self, xs: &[Expansion]) -> Result<()> {
        match self.writer()? {
            Some(w) => w.append_expansions(xs),
            None => Ok(()),
        }
    }

    /// The run's part, made at the first use; `None` without a journal.
    fn writer(&mut self) -> Result<Option<&mut journal::Writer>> {
        let Some(dir) = self.dir else {
            return Ok(None);
        };
        if self.writer.is_none() {
            let name = part_name(self.shard);
            self.writer = Some(journal::Writer::create(dir, &name, self.fingerprint)?);
        }
        Ok(self.writer.as_mut())
    }
}

/// A part's name: when it started and which shard (a requeued shard
/// starts a new part; the old one is read back).
fn part_name(shard: Option<Shard>) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let pid = std::process::id();
    match shard {
        Some(s) => format!("part-{secs}-{pid}-shard-{}-of-{}", s.index, s.count),
        None => format!("part-{secs}-{pid}"),
    }
}

/// Keeps, for each position, the deeper of two results of one engine and
/// kind of budget, else the later.
fn keep_stronger(known: &mut KeyMap<Key, Analysis>, row: Analysis) {
    match known.get(&row.key) {
        Some(old) if old.engine == row.engine && stronger(old, &row) => {}
        _ => {
            known.insert(row.key, row);
        }
    }
}

/// `a` was searched with a larger budget than `b`, of the same kind.
fn stronger(a: &Analysis, b: &Analysis) -> bool {
    match (Budget::parse(&a.budget), Budget::parse(&b.budget)) {
        (Some(x), Some(y)) => x.covers(&y) && x != y,
        _ => false,
    }
}

/// Stores the journal's rows the book lacks (the stronger of two for a
/// position), in batches; returns how many.
fn store_new(book: &mut Book, rows: Vec<Analysis>) -> Result<usize> {
    let mut best: KeyMap<Key, Analysis> = KeyMap::default();
    for row in rows {
        keep_stronger(&mut best, row);
    }
    let mut new = Vec::new();
    for row in best.into_values() {
        let have = book.analysis(row.key)?;
        // An expansion's analysis is newer than any row (grow passes come
        // last) and is replayed after them.
        let same = have.as_ref().is_some_and(|h| {
            h.grown.is_some()
                || (h.engine == row.engine
                    && h.interior == row.interior
                    && h.book_moves == row.book_moves
                    && (h.budget == row.budget || stronger(h, &row)))
        });
        if !same {
            new.push(row);
        }
    }
    // Key order: the batches touch nearby pages.
    new.sort_by_key(|a| a.key.0);
    for batch in new.chunks(2048) {
        book.store_analysis(batch)
            .context("storing the journal's results in the book")?;
    }
    Ok(new.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_parse_and_print_back() {
        let plan = parse_plan(DEFAULT_PLAN).unwrap();
        assert_eq!(plan.len(), 3);
        assert_eq!(
            plan[0],
            Pass {
                min_games: 3,
                max_ply: Some(20),
                budget: Budget::Nodes(50_000),
                grow: None,
            }
        );
        let text: Vec<String> = plan.iter().map(ToString::to_string).collect();
        assert_eq!(text.join(";"), DEFAULT_PLAN);
        assert_eq!(
            "games=5,depth=18".parse::<Pass>().unwrap().budget,
            Budget::Depth(18)
        );
        let grow: Pass = "grow,games=0,nodes=200000".parse().unwrap();
        assert_eq!(
            grow.grow,
            Some(Growth {
                alpha: grow::DEFAULT_ALPHA,
                width: grow::DEFAULT_WIDTH
            })
        );
        assert_eq!(
            grow.to_string(),
            "grow,games=0,nodes=200000,alpha=20,width=2"
        );
        assert_eq!(grow.to_string().parse::<Pass>().unwrap(), grow);
        for bad in [
            "",
            "games=3",
            "nodes=10",
            "games=0,nodes=10",
            "games=3,nodes=0",
            "games=3,nodes=10,depth=5",
            "games=3,nodes=x",
            "games=3,speed=5,nodes=1",
            "games=3;nodes=1",
        ] {
            assert!(parse_plan(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_deeper_result_is_kept_over_a_shallower_one() {
        let row = |budget: &str, score| Analysis {
            key: Key(5),
            score,
            depth: 10,
            interior: false,
            deviation: None,
            dev_move: None,
            dev_depth: None,
            book_moves: 0,
            engine: "Stockfish 15.1".into(),
            budget: budget.into(),
            grown: None,
        };
        let mut known = KeyMap::default();
        keep_stronger(&mut known, row("nodes=1000000", 30));
        keep_stronger(&mut known, row("nodes=50000", 10));
        assert_eq!(known[&Key(5)].score, 30);
        keep_stronger(&mut known, row("nodes=2000000", 40));
        assert_eq!(known[&Key(5)].score, 40);
    }
}
