//! A journal of analysis results that outlives the book and the machine:
//! a folder of part files, each a run's results as text, written a batch
//! at a time as its own gzip member (a kill loses at most the batch being
//! written). `improve --journal DIR` reads every part into a book built
//! again from the same games, and carries on where the last run stopped.
//!
//! A part is `<name>.tsv.gz`; after the header line `# learnbook analysis
//! journal 1 book=<fingerprint>`, one line a position:
//! `key score depth interior deviation dev_move dev_depth book_moves
//! engine budget`, tab separated, `key` in hex, `-` for none; or one line
//! an expansion of `grow` (its engine moves, the positions they reach and
//! every search score it stored): `grow` and the expansion as JSON, tab
//! separated. Expansions are replayed in the order written.

use std::{
    fs,
    io::{BufRead, BufReader, Read, Write},
    path::{Path, PathBuf},
};

use anyhow::{bail, Context, Result};
use flate2::{read::MultiGzDecoder, write::GzEncoder, Compression};

use crate::book::{
    db::{grow::Expansion, Analysis},
    keys::{Key, MoveCode},
};

const HEADER: &str = "# learnbook analysis journal 1";
const EXTENSION: &str = ".tsv.gz";
/// The first field of an expansion's line.
const GROWN: &str = "grow";

/// What reading a journal found.
#[derive(Debug, Default)]
pub struct Loaded {
    pub rows: Vec<Analysis>,
    /// Expansions, in the order written (parts by name).
    pub expansions: Vec<Expansion>,
    pub parts: usize,
    /// Lines of a last batch cut short by a kill (dropped).
    pub cut_short: usize,
}

/// Reads every part in `dir` made of the book with `fingerprint` (a part
/// of another book is an error: its keys would mean other positions'
/// scores). A missing folder is an empty journal.
pub fn load(dir: &Path, fingerprint: &str) -> Result<Loaded> {
    let mut out = Loaded::default();
    if !dir.exists() {
        return Ok(out);
    }
    for path in parts(dir)? {
        read_part(&path, fingerprint, &mut out)
            .with_context(|| format!("journal part {}", path.display()))?;
        out.parts += 1;
    }
    Ok(out)
}

/// The part files of `dir`, by name.
fn parts(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = e?.path();
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(EXTENSION))
        {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn read_part(path: &Path, fingerprint: &str, out: &mut Loaded) -> Result<()> {
    let file = fs::File::open(path).context("cannot open")?;
    let mut text = Vec::new();
    // A member cut short by a kill ends the readable text; the complete
    // lines before it are kept, its partial last line dropped.
    let cut = MultiGzDecoder::new(BufReader::new(file))
        .read_to_end(&mut text)
        .is_err();
    let complete = match text.iter().rposition(|&b| b == b'\n') {
        Some(i) => i + 1,
        None => 0,
    };
    if cut || complete < text.len() {
        out.cut_short += 1;
    }
    let mut lines = text[..complete].lines();
    let header = lines.next().transpose()?.unwrap_or_default();
    let Some(book) = header.strip_prefix(HEADER).map(str::trim) else {
        bail!("not a learnbook analysis journal (no header line)");
    };
    if book.strip_prefix("book=") != Some(fingerprint) {
        bail!("made of another book ({book}), not of this one (book={fingerprint})");
    }
    for (n, line) in lines.enumerate() {
        let line = line?;
        let at = || format!("line {}: {line:?}", n + 2);
        match line.strip_prefix(GROWN).and_then(|l| l.strip_prefix('\t')) {
            Some(json) => out.expansions.push(parse_expansion(json).with_context(at)?),
            None => out.rows.push(parse_line(&line).with_context(at)?),
        }
    }
    Ok(())
}

fn parse_expansion(json: &str) -> Result<Expansion> {
    let x: Expansion = serde_json::from_str(json)?;
    let analyses = std::iter::once(&x.analysis)
        .chain(x.moves.iter().map(|m| &m.child_analysis))
        .chain(&x.leaves);
    for a in analyses {
        check_scores(a)?;
    }
    if x.analysis.key != x.parent || x.analysis.grown.is_none() {
        bail!("the expansion's own analysis is not its parent's");
    }
    Ok(x)
}

fn check_scores(a: &Analysis) -> Result<()> {
    for s in std::iter::once(a.score).chain(a.deviation) {
        if !(-32_000..=32_000).contains(&s) {
            bail!("score {s} is out of range");
        }
    }
    if a.engine.is_empty() || a.budget.is_empty() {
        bail!("no engine or budget");
    }
    Ok(())
}

fn parse_line(line: &str) -> Result<Analysis> {
    let f: Vec<&str> = line.split('\t').collect();
    let [key, score, depth, interior, dev, dev_move, dev_depth, book_moves, engine, budget] = f[..]
    else {
        bail!("expected 10 fields, found {}", f.len());
    };
    let opt =
        |s: &str| -> Result<Option<i64>> { Ok(if s == "-" { None } else { Some(s.parse()?) }) };
    let a = Analysis {
        key: Key(u64::from_str_radix(key, 16)?),
        score: score.parse()?,
        depth: depth.parse()?,
        interior: match interior {
            "1" => true,
            "0" => false,
            _ => bail!("interior must be 0 or 1"),
        },
        deviation: opt(dev)?.map(i32::try_from).transpose()?,
        dev_move: opt(dev_move)?.map(u16::try_from).transpose()?.map(MoveCode),
        dev_depth: opt(dev_depth)?.map(u32::try_from).transpose()?,
        book_moves: book_moves.parse()?,
        engine: engine.to_string(),
        budget: budget.to_string(),
        grown: None,
    };
    check_scores(&a)?;
    Ok(a)
}

fn format_line(a: &Analysis) -> String {
    let opt = |v: Option<i64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
    // Tabs or line ends in a name would break the line.
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    format!(
        "{:016x}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
        a.key.0,
        a.score,
        a.depth,
        u8::from(a.interior),
        opt(a.deviation.map(i64::from)),
        opt(a.dev_move.map(|m| i64::from(m.0))),
        opt(a.dev_depth.map(i64::from)),
        a.book_moves,
        clean(&a.engine),
        clean(&a.budget),
    )
}

/// A part being written.
pub struct Writer {
    file: fs::File,
    pub path: PathBuf,
}

impl Writer {
    /// Creates the part `<name>.tsv.gz` in `dir` (made if missing); an
    /// existing part of that name is an error, never overwritten.
    pub fn create(dir: &Path, name: &str, fingerprint: &str) -> Result<Writer> {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join(format!("{name}{EXTENSION}"));
        let file = fs::OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("cannot create the journal part {}", path.display()))?;
        let mut w = Writer { file, path };
        w.member(format!("{HEADER} book={fingerprint}\n").as_bytes())?;
        Ok(w)
    }

    /// Appends `rows` as one gzip member, synced.
    pub fn append(&mut self, rows: &[Analysis]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let text: String = rows.iter().map(format_line).collect();
        self.member(text.as_bytes())
    }

    /// Appends `expansions` as one gzip member, synced.
    pub fn append_expansions(&mut self, expansions: &[Expansion]) -> Result<()> {
        if expansions.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        for x in expansions {
            // JSON escapes tabs and line ends: one line an expansion.
            text.push_str(GROWN);
            text.push('\t');
            text.push_str(&serde_json::to_string(x)?);
            text.push('\n');
        }
        self.member(text.as_bytes())
    }

    fn member(&mut self, text: &[u8]) -> Result<()> {
        self.check_still_ours()?;
        let mut gz = GzEncoder::new(Vec::new(), Compression::best());
        gz.write_all(text)?;
        let bytes = gz.finish()?;
        self.file
            .write_all(&bytes)
            .and_then(|()| self.file.sync_data())
            .with_context(|| format!("cannot write the journal part {}", self.path.display()))
    }
}

impl Writer {
    /// A part replaced on disk (a checkout, a copy over it) while this run
    /// appends would swallow what follows into an unlinked file: stop instead.
    fn check_still_ours(&self) -> Result<()> {
        use std::os::unix::fs::MetadataExt;
        let open = self.file.metadata()?;
        let on_disk = fs::metadata(&self.path).ok();
        match on_disk {
            Some(m) if m.dev() == open.dev() && m.ino() == open.ino() => Ok(()),
            _ => bail!(
                "the journal part {} was replaced or removed while this run wrote it; \
                 stopping (the book has every result: `improve --journal` on a fresh part continues)",
                self.path.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_part_stops_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Writer::create(dir.path(), "a", "games=3").unwrap();
        a.append(&[row(1, true)]).unwrap();
        let copy = dir.path().join("copy");
        fs::copy(&a.path, &copy).unwrap();
        fs::rename(&copy, &a.path).unwrap();
        let err = a.append(&[row(2, false)]).unwrap_err();
        assert!(err.to_string().contains("replaced or removed"), "{err}");
    }

    fn row(key: u64, interior: bool) -> Analysis {
        Analysis {
            key: Key(key),
            score: -35,
            depth: 14,
            interior,
            deviation: interior.then_some(-80),
            dev_move: interior.then_some(MoveCode(0x0c1c)),
            dev_depth: interior.then_some(13),
            book_moves: u32::from(interior) * 3,
            engine: "Stockfish 15.1".into(),
            budget: "nodes=50000".into(),
            grown: None,
        }
    }

    #[test]
    fn rows_come_back_as_written_across_parts() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Writer::create(dir.path(), "a", "games=3").unwrap();
        a.append(&[row(1, true), row(u64::MAX, false)]).unwrap();
        a.append(&[row(7, false)]).unwrap();
        let mut b = Writer::create(dir.path(), "b", "games=3").unwrap();
        b.append(&[row(9, true)]).unwrap();
        let got = load(dir.path(), "games=3").unwrap();
        assert_eq!(got.parts, 2);
        assert_eq!(got.cut_short, 0);
        let want = [
            row(1, true),
            row(u64::MAX, false),
            row(7, false),
            row(9, true),
        ];
        assert_eq!(format!("{:?}", got.rows), format!("{want:?}"));
        // A part is never overwritten.
        assert!(Writer::create(dir.path(), "a", "games=3").is_err());
    }

    fn expansion(parent: u64) -> Expansion {
        use crate::book::db::grow::EngineMove;
        let mut analysis = row(parent, true);
        analysis.grown = Some(2);
        let mut child = row(parent + 1, false);
        child.engine = "an \"engine\"\twith\ttabs".into();
        Expansion {
            parent: Key(parent),
            analysis,
            moves: vec![EngineMove {
                mv: MoveCode(0x031c),
                uci: "e2e4".into(),
                child: Key(parent + 1),
                child_analysis: child,
            }],
            leaves: vec![row(u64::MAX, false)],
        }
    }

    #[test]
    fn expansions_come_back_in_order_beside_rows() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::create(dir.path(), "a", "f").unwrap();
        w.append(&[row(1, true)]).unwrap();
        w.append_expansions(&[expansion(10), expansion(3)]).unwrap();
        w.append(&[row(2, false)]).unwrap();
        let got = load(dir.path(), "f").unwrap();
        assert_eq!(got.rows, vec![row(1, true), row(2, false)]);
        assert_eq!(got.expansions, vec![expansion(10), expansion(3)]);
        // A score out of range, or an analysis not the parent's, is refused.
        let mut bad = expansion(5);
        bad.leaves[0].score = 40_000;
        assert!(parse_expansion(&serde_json::to_string(&bad).unwrap()).is_err());
        let mut bad = expansion(5);
        bad.analysis.key = Key(6);
        assert!(parse_expansion(&serde_json::to_string(&bad).unwrap()).is_err());
        assert!(parse_expansion("{\"parent\": 1}").is_err());
    }

    #[test]
    fn a_batch_cut_short_loses_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::create(dir.path(), "a", "f").unwrap();
        w.append(&[row(1, true)]).unwrap();
        w.append(&[row(2, true), row(3, false)]).unwrap();
        let len = fs::metadata(&w.path).unwrap().len();
        let f = fs::OpenOptions::new().write(true).open(&w.path).unwrap();
        f.set_len(len - 9).unwrap();
        let got = load(dir.path(), "f").unwrap();
        assert_eq!(got.cut_short, 1);
        assert!(got.rows.iter().any(|r| r.key == Key(1)));
        assert!(got.rows.len() < 3);
    }

    #[test]
    fn another_books_part_or_a_bad_line_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::create(dir.path(), "a", "f").unwrap();
        w.append(&[row(1, true)]).unwrap();
        let e = load(dir.path(), "other").unwrap_err();
        assert!(format!("{e:#}").contains("another book"), "{e:#}");
        for bad in [
            "zz\t1\t1\t0\t-\t-\t-\t0\te\tnodes=1",
            "01\t1\t1\t2\t-\t-\t-\t0\te\tnodes=1",
            "01\t99999\t1\t0\t-\t-\t-\t0\te\tnodes=1",
            "01\t1\t1\t0\t-\t-\t-\t0\te",
        ] {
            assert!(parse_line(bad).is_err(), "{bad}");
        }
        // Not gzip at all.
        fs::write(dir.path().join("c.tsv.gz"), b"random bytes").unwrap();
        assert!(load(dir.path(), "f").is_err());
    }
}
