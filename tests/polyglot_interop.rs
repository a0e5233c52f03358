//! Polyglot interop against the real peers: `polyglot make-book` (Debian),
//! the reference book shipped in ../shared/data, GNU Chess's book, and
//! python-chess as an independent reader.

mod common;

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
    process::Command,
};

use common::{ok, repo, run as learnbook, s, sample, sample_text, shared};
use rusqlite::Connection;
use tempfile::TempDir;

/// (key, move, weight, learn) entries of a .bin, read here independently.
fn entries(path: &Path) -> Vec<(u64, u16, u16, u32)> {
    let b = std::fs::read(path).expect("read bin");
    assert_eq!(b.len() % 16, 0);
    b.chunks_exact(16)
        .map(|c| {
            (
                u64::from_be_bytes(c[0..8].try_into().expect("8")),
                u16::from_be_bytes(c[8..10].try_into().expect("2")),
                u16::from_be_bytes(c[10..12].try_into().expect("2")),
                u32::from_be_bytes(c[12..16].try_into().expect("4")),
            )
        })
        .collect()
}

/// `build --allow-duplicates` (max ply 40) and `export --weights polyglot`,
/// the counterpart of `polyglot make-book -max-ply 40 -min-game N`.
/// Returns the book and the .bin.
fn as_polyglot_makes_it(dir: &Path, pgn: &Path, min_games: u32) -> (PathBuf, PathBuf) {
    let book = dir.join("book.sqlite");
    let bin = dir.join("ours.bin");
    ok(&[
        "build",
        "--allow-duplicates",
        "--max-ply",
        "40",
        "--book",
        s(&book),
        s(pgn),
    ]);
    let n = min_games.to_string();
    ok(&[
        "export",
        "--book",
        s(&book),
        "--polyglot",
        s(&bin),
        "--weights",
        "polyglot",
        "--min-games",
        &n,
    ]);
    (book, bin)
}

fn polyglot_bin() -> &'static str {
    "/usr/games/polyglot"
}

#[test]
fn export_is_read_by_python_chess() {
    if !(common::have_python_chess()) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let book = dir.path().join("book.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    for weights in ["polyglot", "value", "games"] {
        let out_bin = dir.path().join(format!("{weights}.bin"));
        ok(&[
            "export",
            "--book",
            s(&book),
            "--polyglot",
            s(&out_bin),
            "--weights",
            weights,
            "--min-games",
            "1",
        ]);
        let n = entries(&out_bin).len();
        assert!(n > 20_000, "{weights}: only {n} entries");
        // Fails the test if python-chess rejects the export.
        let report = common::python(&[
            s(&repo().join("tests/py/verify_polyglot.py")),
            s(&out_bin),
            s(&sample()),
        ]);
        assert!(report.contains(&format!("entries: {n},")), "{report}");
        assert!(report.contains("illegal: 0, unknown keys: 0"), "{report}");
    }
}

#[test]
fn same_entries_as_polyglot_make_book_run_here() {
    if !(common::have_program("/usr/games/polyglot")) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let pgn = dir.path().join("sample.pgn");
    let text = sample_text();
    std::fs::write(&pgn, text).expect("write");
    let theirs = dir.path().join("polyglot.bin");
    let status = Command::new(polyglot_bin())
        .args([
            "make-book",
            "-pgn",
            s(&pgn),
            "-bin",
            s(&theirs),
            "-max-ply",
            "40",
            "-min-game",
            "1",
        ])
        .output()
        .expect("polyglot is installed (.ci/run installs it)");
    assert!(status.status.success());
    let (_, ours) = as_polyglot_makes_it(dir.path(), &pgn, 1);
    let a: HashSet<_> = entries(&ours).into_iter().collect();
    let b: HashSet<_> = entries(&theirs).into_iter().collect();
    assert!(b.len() > 20_000);
    assert_eq!(a.len(), b.len());
    assert!(
        a == b,
        "{} entries only ours, {} only polyglot's",
        a.difference(&b).count(),
        b.difference(&a).count()
    );
}

#[test]
fn same_book_as_polyglot_on_the_master_games() {
    if !(common::have_shared()) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let (book, ours) =
        as_polyglot_makes_it(dir.path(), &shared().join("games/master-games.pgn.gz"), 3);
    let key = |e: &(u64, u16, u16, u32)| (e.0, e.1, e.2);
    let a: HashSet<_> = entries(&ours).iter().map(key).collect();
    let reference = entries(&shared().join("polyglot/master-games-maxply40-mingame3.bin"));
    let b: HashSet<_> = reference.iter().map(key).collect();
    let same = a.intersection(&b).count();
    let share = same as f64 / b.len() as f64;
    eprintln!(
        "{same} of {} reference entries equal: {:.3}%",
        b.len(),
        100.0 * share
    );
    assert!(share >= 0.999, "only {:.3}% equal", 100.0 * share);
    // Every difference is in a position where Polyglot halved its counts:
    // some move there was played in 16,384 games or more.
    let conn = Connection::open(&book).expect("open");
    let mut most: HashMap<u64, i64> = HashMap::new();
    for &(k, _, _) in a.symmetric_difference(&b) {
        let n = *most.entry(k).or_insert_with(|| {
            conn.query_row(
                "SELECT max(white + draws + black) FROM moves WHERE parent = ?1",
                [k as i64],
                |r| r.get(0),
            )
            .expect("query")
        });
        assert!(
            n >= 16_384,
            "entry of {k:016x} differs, but its most played move has only {n} games"
        );
    }
    assert!(most.len() <= 5, "differences in {} positions", most.len());
}

#[test]
fn gnuchess_book_round_trip() {
    if !(common::have_shared()) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let book = dir.path().join("gnu.sqlite");
    let out_bin = dir.path().join("gnu.bin");
    let original = shared().join("polyglot/gnuchess-book.bin");
    ok(&["import", "--book", s(&book), "--polyglot", s(&original)]);
    ok(&[
        "export",
        "--book",
        s(&book),
        "--polyglot",
        s(&out_bin),
        "--weights",
        "imported",
    ]);
    let mut a = entries(&out_bin);
    let mut b = entries(&original);
    assert_eq!(a.len(), b.len());
    a.sort_unstable();
    b.sort_unstable();
    assert!(a == b, "the round trip changed entries");
    ok(&["check", "--book", s(&book)]);
    // An imported book chooses its highest-weight move.
    let out = learnbook(&["choose", "--book", s(&book)]);
    assert!(out.status.success());
    let chosen = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let start = b
        .iter()
        .filter(|e| e.0 == 0x463b96181691fc9c)
        .max_by_key(|e| e.2)
        .expect("start entries");
    let to = start.1 & 63;
    let from = (start.1 >> 6) & 63;
    let sq = |x: u16| format!("{}{}", (b'a' + (x % 8) as u8) as char, x / 8 + 1);
    assert_eq!(chosen, format!("{}{}", sq(from), sq(to)));
}

#[test]
fn a_broken_polyglot_file_is_a_clear_error_and_changes_nothing() {
    let dir = TempDir::new().expect("tmp");
    let book = dir.path().join("book.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    let before = learnbook(&["stats", "--book", s(&book)]).stdout;
    let broken = dir.path().join("broken.bin");
    std::fs::write(&broken, vec![7u8; 16 * 10 + 5]).expect("write");
    let out = learnbook(&["import", "--book", s(&book), "--polyglot", s(&broken)]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a multiple of 16"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(learnbook(&["stats", "--book", s(&book)]).stdout, before);
    ok(&["check", "--book", s(&book)]);
}

/// The engines' Polyglot reader (`book=X.bin`, UCI `BookFile`) finds the
/// same moves and weights as python-chess, and plays them in proportion to
/// their weights.
#[test]
fn a_polyglot_book_is_read_as_python_chess_reads_it_and_played_by_weight() {
    if !(common::have_shared() && common::have_python_chess()) {
        return;
    }
    use learnbook::book::formats::polyglot::PolyglotBook;
    use rand::SeedableRng;
    use shakmaty::{fen::Fen, CastlingMode, Chess};

    let bin = shared().join("polyglot/gnuchess-book.bin");
    let book = PolyglotBook::open(&bin).expect("open");
    let text = common::python(&[
        s(&repo().join("tests/py/polyglot_moves.py")),
        s(&bin),
        "300",
        "7",
    ]);
    let mut compared = 0;
    for line in text.lines() {
        let (fen, listed) = line.split_once('\t').expect("tab");
        let pos: Chess = fen
            .parse::<Fen>()
            .expect("fen")
            .into_position(CastlingMode::Standard)
            .expect("legal");
        let mut theirs: Vec<String> = listed.split(',').map(String::from).collect();
        let mut ours: Vec<String> = book
            .moves(&pos)
            .iter()
            .map(|(m, w)| format!("{}:{w}", m.to_uci(CastlingMode::Standard)))
            .collect();
        theirs.sort();
        ours.sort();
        assert_eq!(ours, theirs, "at {fen}");
        compared += 1;
    }
    assert_eq!(compared, 300);

    // Picks follow the weights at the start position.
    let start = Chess::default();
    let moves = book.moves(&start);
    let total: f64 = moves.iter().map(|m| f64::from(m.1)).sum();
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let mut seen: HashMap<String, u32> = HashMap::new();
    let n = 20_000;
    for _ in 0..n {
        let m = book.pick(&start, &mut rng).expect("a book move");
        *seen
            .entry(m.to_uci(CastlingMode::Standard).to_string())
            .or_default() += 1;
    }
    for (m, w) in &moves {
        let share = f64::from(*w) / total;
        let got = f64::from(
            seen.get(&m.to_uci(CastlingMode::Standard).to_string())
                .copied()
                .unwrap_or(0),
        ) / f64::from(n);
        assert!(
            (got - share).abs() < 0.02,
            "{m:?}: played {got:.3}, weight share {share:.3}"
        );
    }
}
