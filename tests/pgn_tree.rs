//! `export --format pgn`: the book's lines as PGN, read back by python-chess
//! (every move legal, the lines counted from the Polyglot export of the same
//! options, the comments' counts against the book's moves) and by
//! pgn-extract (Debian's `pgn-extract`, `/usr/games/pgn-extract`).

mod common;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    process::Command,
};

use common::{ok, repo, run, s, sample, shared};
use learnbook::book::keys::Key;
use tempfile::TempDir;

const PGN_EXTRACT: &str = "/usr/games/pgn-extract";

fn build(dir: &Path, pgn: &Path) -> PathBuf {
    let book = dir.join("book.sqlite");
    ok(&["build", "--book", s(&book), s(pgn)]);
    book
}

/// `export --book BOOK --out OUT extra...`: the number it reports writing.
fn export(book: &Path, out: &Path, extra: &[&str]) -> usize {
    let mut args = vec!["export", "--book", s(book), "--out", s(out)];
    args.extend_from_slice(extra);
    let o = ok(&args);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    common::number_after(&text, "wrote ", ' ')
}

/// What `tests/py/pgn_tree_check.py` reports.
struct Check {
    figures: HashMap<String, String>,
    /// `(parent, child, games, white, draws, black)` of each comment with counts.
    comments: Vec<[u64; 6]>,
    /// `(child, engine, depth, score)` of each comment with an analysis.
    analyses: Vec<(u64, String, u32, String)>,
}

impl Check {
    fn get(&self, key: &str) -> usize {
        self.figures
            .get(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key:?} in {:?}", self.figures))
    }
}

fn python_check(pgn: &Path, bin: &Path, max_ply: u32, layout: &str) -> Check {
    let text = common::python(&[
        s(&repo().join("tests/py/pgn_tree_check.py")),
        s(pgn),
        s(bin),
        &max_ply.to_string(),
        layout,
    ]);
    let mut figures = HashMap::new();
    let mut comments = Vec::new();
    let mut analyses = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("A ") {
            let v: Vec<&str> = rest.splitn(5, ' ').collect();
            let [_, child, depth, score, engine] = v[..] else {
                panic!("{line}")
            };
            analyses.push((
                child.parse().expect("key"),
                engine.to_string(),
                depth.parse().expect("depth"),
                score.to_string(),
            ));
            continue;
        }
        if let Some(rest) = line.strip_prefix("C ") {
            let v: Vec<u64> = rest
                .split(' ')
                .map(|x| x.parse().expect("number"))
                .collect();
            comments.push(v.try_into().expect("six numbers"));
        } else if let Some((k, v)) = line.split_once(": ") {
            figures.insert(k.to_string(), v.to_string());
        }
    }
    Check {
        figures,
        comments,
        analyses,
    }
}

/// The checks both layouts pass: no error, every line within the ply
/// limit, exactly the .bin's edges, the line count equal to the one
/// computed from the .bin and to the one learnbook reports.
fn assert_read_alike(c: &Check, written: usize, max_ply: u32) {
    assert_eq!(c.get("errors"), 0, "{:?}", c.figures);
    assert_eq!(c.get("expected lines"), written, "{:?}", c.figures);
    assert_eq!(c.get("lines"), written, "{:?}", c.figures);
    assert!(c.get("deepest") <= max_ply as usize, "{:?}", c.figures);
    assert_eq!(c.get("order"), 0, "{:?}", c.figures);
    assert_eq!(c.get("missing edges"), 0, "{:?}", c.figures);
    assert_eq!(c.get("extra edges"), 0, "{:?}", c.figures);
}

/// The comments' counts are the book's counts of those moves.
fn assert_counts_are_the_books(book: &Path, c: &Check) {
    let moves: HashMap<(i64, i64), (i64, i64, i64)> = common::book_moves(book)
        .into_iter()
        .filter_map(|(p, _, child, w, d, b)| Some(((p, child?), (w, d, b))))
        .collect();
    for &[parent, child, games, w, d, b] in &c.comments {
        let key = (Key(parent).to_sql(), Key(child).to_sql());
        let (bw, bd, bb) = moves
            .get(&key)
            .copied()
            .unwrap_or_else(|| panic!("no book move {parent:x} -> {child:x}"));
        assert_eq!(
            (w as i64, d as i64, b as i64),
            (bw, bd, bb),
            "{parent:x} -> {child:x}"
        );
        assert_eq!(games, w + d + b);
    }
}

/// The comments' analyses are the book's analyses of the positions after
/// the moves, for the side that moved.
fn assert_analyses_are_the_books(book: &Path, c: &Check) {
    let b = learnbook::book::Book::open(book).expect("open");
    for (child, engine, depth, score) in &c.analyses {
        let a = b.analysis(Key(*child)).expect("read").expect("analysed");
        assert_eq!(
            (engine.as_str(), *depth, score.as_str()),
            (
                a.engine.as_str(),
                a.depth,
                learnbook::book::view::report::format_cp(-a.score).as_str()
            ),
            "{child:x}"
        );
    }
}

/// pgn-extract reads `pgn` without a diagnostic and writes `games` games.
fn assert_pgn_extract_reads(pgn: &Path, dir: &Path, games: usize) {
    let out_pgn = dir.join("extracted.pgn");
    let log = dir.join("pgn-extract.log");
    let o = Command::new(PGN_EXTRACT)
        .args(["-s", "-Wsan"])
        .arg(format!("-o{}", s(&out_pgn)))
        .arg(format!("-l{}", s(&log)))
        .arg(pgn)
        .output()
        .expect("pgn-extract");
    let diagnostics = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        o.status.success(),
        "pgn-extract failed: {diagnostics}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let extracted = std::fs::read_to_string(&out_pgn).expect("extracted");
    let written = extracted.matches("[Event ").count();
    assert_eq!(written, games, "pgn-extract wrote {written}: {diagnostics}");
    // It is silent about a file it reads whole ("Failed to make move...",
    // "Missing end of a nested comment." otherwise).
    assert!(diagnostics.trim().is_empty(), "pgn-extract: {diagnostics}");
}

#[test]
fn the_tree_is_read_by_python_chess_with_the_books_lines_and_counts() {
    if !common::have_python_chess() {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let book = build(dir.path(), &sample());
    // Searched positions: their scores go into the comments.
    ok(&[
        "analyze",
        "--book",
        s(&book),
        "--nodes",
        "2000",
        "--min-games",
        "40",
    ]);
    let pgn = dir.path().join("book.pgn");
    let bin = dir.path().join("book.bin");
    // PGN's default ply limit is 12; the .bin is given it.
    let lines = export(&book, &pgn, &[]);
    export(&book, &bin, &["--max-ply", "12"]);
    let c = python_check(&pgn, &bin, 12, "tree");
    assert_eq!(c.get("games"), 1);
    assert_eq!(c.get("repeated"), 0, "{:?}", c.figures);
    assert_read_alike(&c, lines, 12);
    assert_eq!(c.get("deepest"), 12, "{:?}", c.figures);
    assert!(lines > 200, "only {lines} lines");
    // Every move carries its counts, and they are the book's.
    assert_eq!(c.comments.len(), c.get("bin edges"), "{:?}", c.figures);
    assert_counts_are_the_books(&book, &c);
    assert!(c.analyses.len() > 50, "{} analyses", c.analyses.len());
    assert_analyses_are_the_books(&book, &c);
    let text = std::fs::read_to_string(&pgn).expect("pgn");
    assert!(text.lines().all(|l| l.len() <= 80));
    assert!(text.starts_with("[Event \"learnbook\"]\n[Site \"book.sqlite\"]\n"));
    // Words, whatever the line breaks.
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("transposes to 1. "),
        "no transposition marked"
    );
    assert!(text.contains(", value "), "no value");
    assert!(text.contains(" $2 ") || text.contains(" $4 ") || text.contains(" $6 "));
    assert!(text.contains(&format!("max-ply 12; {lines} lines.")));

    // Other options select other moves, and the counts follow.
    let pgn6 = dir.path().join("six.pgn");
    let bin6 = dir.path().join("six.bin");
    let opts = ["--max-ply", "6", "--weights", "games", "--min-games", "3"];
    let lines6 = export(&book, &pgn6, &opts);
    export(&book, &bin6, &opts);
    let c6 = python_check(&pgn6, &bin6, 6, "tree");
    assert_read_alike(&c6, lines6, 6);
    assert!(lines6 > 50 && lines6 != lines, "{lines6}");
}

#[test]
fn pgn_lines_write_one_game_a_line() {
    if !common::have_python_chess() {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let book = build(dir.path(), &sample());
    let tree = dir.path().join("tree.pgn");
    let lines_pgn = dir.path().join("lines.pgn");
    let bin = dir.path().join("book.bin");
    let in_tree = export(&book, &tree, &["--max-ply", "10"]);
    let lines = export(
        &book,
        &lines_pgn,
        &["--max-ply", "10", "--pgn-lines", "--format", "pgn"],
    );
    export(&book, &bin, &["--max-ply", "10"]);
    assert_eq!(lines, in_tree);
    let c = python_check(&lines_pgn, &bin, 10, "lines");
    assert_eq!(c.get("games"), lines);
    assert_read_alike(&c, lines, 10);
    assert_counts_are_the_books(&book, &c);
    let text = std::fs::read_to_string(&lines_pgn).expect("pgn");
    assert_eq!(text.matches("[Result \"*\"]").count(), lines);
    assert!(text.contains(&format!("[Round \"{lines}\"]")));
}

#[test]
fn pgn_extract_reads_the_tree_and_the_lines() {
    if !common::have_program(PGN_EXTRACT) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let book = build(dir.path(), &sample());
    let tree = dir.path().join("tree.pgn");
    let lines_pgn = dir.path().join("lines.pgn");
    export(&book, &tree, &[]);
    let lines = export(&book, &lines_pgn, &["--pgn-lines"]);
    assert_pgn_extract_reads(&tree, dir.path(), 1);
    assert_pgn_extract_reads(&lines_pgn, dir.path(), lines);
}

#[test]
fn pgn_lines_is_for_pgn_only_and_a_tree_has_both_sides() {
    let dir = TempDir::new().expect("tmp");
    let book = build(dir.path(), &sample());
    for (args, named) in [
        (vec!["--out", "x.bin", "--pgn-lines"], "--pgn-lines"),
        (
            vec!["--out", "x.pgn", "--format", "bin", "--pgn-lines"],
            "--pgn-lines",
        ),
        (vec!["--polyglot", "x.bin", "--pgn-lines"], "--pgn-lines"),
        (vec!["--out", "x.pgn", "--side", "white"], "--side"),
    ] {
        let mut all = vec!["export", "--book", s(&book)];
        all.extend(args.iter().copied());
        let o = run(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(named), "{err}");
    }
    assert!(!Path::new("x.bin").exists() && !Path::new("x.pgn").exists());
}

#[test]
fn the_master_book_at_ply_8() {
    if !(common::have_shared() && common::have_python_chess() && common::have_program(PGN_EXTRACT))
    {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let book = build(dir.path(), &shared().join("games/master-games.pgn.gz"));
    // The book's choices, and every move played (a larger tree).
    for (weights, at_least) in [("value", 1_000), ("games", 10_000)] {
        let pgn = dir.path().join(format!("{weights}.pgn"));
        let bin = dir.path().join(format!("{weights}.bin"));
        let opts = ["--max-ply", "8", "--weights", weights];
        let lines = export(&book, &pgn, &opts);
        export(&book, &bin, &opts);
        let c = python_check(&pgn, &bin, 8, "tree");
        assert_eq!(c.get("games"), 1);
        assert_eq!(c.get("repeated"), 0, "{:?}", c.figures);
        assert_read_alike(&c, lines, 8);
        assert!(lines > at_least, "{weights}: {lines}");
        assert_eq!(c.comments.len(), c.get("bin edges"));
        assert_counts_are_the_books(&book, &c);
        assert_pgn_extract_reads(&pgn, dir.path(), 1);
    }
}
