//! Arena `.abk` export and import against an independent reader, `jja`
//! (`cargo install --locked jja`, done by `.ci/run`): what `jja` reads in
//! our ABK books, at every position, is the selection a Polyglot export
//! with the same options makes, with the priorities the module documents;
//! a round trip through `import` keeps moves and statistics; malformed
//! files are refused and change nothing.

mod common;

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    path::{Path, PathBuf},
    process::Command,
};

use common::{ok, run, s, sample, shared};
use learnbook::book::keys::{polyglot_key, Key, MoveCode};
use shakmaty::{Chess, Position};
use tempfile::TempDir;

/// Moves and weights by position: key -> move -> weight.
type ByPosition = BTreeMap<u64, BTreeMap<u16, u16>>;

/// `jja` on PATH, else in cargo's bin directory.
fn jja() -> Option<PathBuf> {
    let on_path = Command::new("jja")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if on_path {
        return Some(PathBuf::from("jja"));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    Some(home.join(".cargo/bin/jja")).filter(|p| p.is_file())
}

fn have_jja() -> bool {
    common::have("jja (cargo install --locked jja)", jja().is_some())
}

/// (key, move, weight) of a Polyglot book, read here.
fn bin_entries(path: &Path) -> Vec<(u64, u16, u16)> {
    let b = std::fs::read(path).expect("read bin");
    assert_eq!(b.len() % 16, 0);
    b.chunks_exact(16)
        .map(|c| {
            (
                u64::from_be_bytes(c[0..8].try_into().expect("8")),
                u16::from_be_bytes(c[8..10].try_into().expect("2")),
                u16::from_be_bytes(c[10..12].try_into().expect("2")),
            )
        })
        .collect()
}

fn by_position(entries: &[(u64, u16, u16)]) -> ByPosition {
    let mut out = ByPosition::new();
    for &(k, m, w) in entries {
        let old = out.entry(k).or_default().insert(m, w);
        assert!(old.is_none(), "{k:016x} has move {m:#06x} twice");
    }
    out
}

/// What `jja` reads in an ABK book, by position: its conversion to
/// Polyglot (`jja edit --no-scale IN.abk -o OUT.bin`), which walks the
/// whole tree, merges each position's moves and weighs a move 2500 x its
/// priority (without `--no-scale`, it scales each position's heaviest move
/// to 65520).
fn jja_reads(abk: &Path) -> ByPosition {
    let jja = jja().expect("jja");
    let out_bin = abk.with_extension("jja.bin");
    let _ = std::fs::remove_file(&out_bin);
    let out = Command::new(&jja)
        .args(["edit", "--no-scale", s(abk), "-o", s(&out_bin)])
        .output()
        .expect("run jja");
    assert!(
        out.status.success(),
        "jja edit {}: {}{}",
        abk.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    by_position(&bin_entries(&out_bin))
}

/// The priority the export documents: the weight relative to the
/// position's heaviest move, 1..=9.
fn priority(w: u16, heaviest: u16) -> u16 {
    let p = (9.0 * f64::from(w) / f64::from(heaviest)).round();
    p.clamp(1.0, 9.0) as u16
}

/// Depth from the start of every position a selection reaches from the
/// start position through its own moves.
fn reached(selection: &ByPosition) -> HashMap<u64, u32> {
    let mut depth = HashMap::new();
    let start = Chess::default();
    depth.insert(polyglot_key(&start).0, 0);
    let mut queue = VecDeque::from([(start, 0u32)]);
    while let Some((pos, d)) = queue.pop_front() {
        let Some(moves) = selection.get(&polyglot_key(&pos).0) else {
            continue;
        };
        for &m in moves.keys() {
            let mv = MoveCode(m).to_move(&pos).expect("a selected move is legal");
            let mut next = pos.clone();
            next.play_unchecked(mv);
            let k = polyglot_key(&next).0;
            if let std::collections::hash_map::Entry::Vacant(e) = depth.entry(k) {
                e.insert(d + 1);
                queue.push_back((next, d + 1));
            }
        }
    }
    depth
}

/// What `jja` should read in the ABK export: the Polyglot export's
/// selection at the positions it reaches from the start, weighed
/// 2500 x priority.
fn expected(bin: &Path) -> ByPosition {
    let selection = by_position(&bin_entries(bin));
    let reached = reached(&selection);
    selection
        .into_iter()
        .filter(|(k, _)| reached.contains_key(k))
        .map(|(k, moves)| {
            let heaviest = moves.values().copied().max().expect("moves");
            let weighed = moves
                .into_iter()
                .map(|(m, w)| (m, 2500 * priority(w, heaviest)))
                .collect();
            (k, weighed)
        })
        .collect()
}

/// Asserts two readings agree at every position, naming the first
/// differences.
fn assert_same_positions(what: &str, ours: &ByPosition, theirs: &ByPosition) {
    let differ: Vec<String> = ours
        .keys()
        .chain(theirs.keys())
        .filter(|k| ours.get(k) != theirs.get(k))
        .take(5)
        .map(|k| {
            format!(
                "{k:016x}: expected {:?}, jja {:?}",
                ours.get(k),
                theirs.get(k)
            )
        })
        .collect();
    assert!(
        differ.is_empty(),
        "{what}: {} positions expected, jja read {}; first differences:\n{}",
        ours.len(),
        theirs.len(),
        differ.join("\n")
    );
    eprintln!(
        "{what}: jja reads the same moves and weights at all {} positions ({} moves)",
        ours.len(),
        ours.values().map(BTreeMap::len).sum::<usize>()
    );
}

/// `export` with `--out out` (ABK or bin, by extension) and `opts`.
fn export(book: &Path, out: &Path, opts: &[&str]) -> String {
    let mut args = vec!["export", "--book", s(book), "--out", s(out)];
    args.extend_from_slice(opts);
    String::from_utf8_lossy(&ok(&args).stdout).into_owned()
}

/// Exports ABK and bin with `opts` and checks `jja`'s reading of the ABK
/// at every position.
fn check_against_jja(dir: &Path, book: &Path, name: &str, opts: &[&str]) {
    let abk = dir.join(format!("{name}.abk"));
    let bin = dir.join(format!("{name}.bin"));
    export(book, &abk, opts);
    export(book, &bin, opts);
    let want = expected(&bin);
    assert!(want.len() > 100, "{name}: only {} positions", want.len());
    assert_same_positions(name, &want, &jja_reads(&abk));
}

fn sample_book(dir: &Path) -> PathBuf {
    let book = dir.join("sample.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    book
}

#[test]
fn export_is_read_by_jja_at_every_position_of_the_sample() {
    if !have_jja() {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(dir.path());
    for (name, opts) in [
        ("games", &["--weights", "games"][..]),
        ("value", &["--weights", "value"][..]),
        (
            "polyglot-2",
            &["--weights", "polyglot", "--min-games", "2"][..],
        ),
        (
            "games-ply12",
            &["--weights", "games", "--max-ply", "12"][..],
        ),
    ] {
        check_against_jja(dir.path(), &book, name, opts);
    }
    // The header as jja reads it.
    let abk = dir.path().join("games.abk");
    let info = Command::new(jja().expect("jja"))
        .args(["info", s(&abk)])
        .output()
        .expect("jja info");
    let text = String::from_utf8_lossy(&info.stdout);
    let entries = (std::fs::metadata(&abk).expect("size").len() as usize - 25_200) / 28;
    assert!(text.contains(&format!("Book Moves: {entries}")), "{text}");
    assert!(text.contains("Author: \"learnbook\""), "{text}");
}

/// The master games (`learnbook build`, plies 40, in debug: minutes), as
/// the Polyglot reference book is made: moves of 3 games or more.
#[test]
fn export_is_read_by_jja_at_every_position_of_the_master_book() {
    if !(common::have_shared() && have_jja()) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let book = dir.path().join("master.sqlite");
    ok(&[
        "build",
        "--book",
        s(&book),
        s(&shared().join("games/master-games.pgn.gz")),
    ]);
    check_against_jja(
        dir.path(),
        &book,
        "master-games-3",
        &["--weights", "games", "--min-games", "3"],
    );
    check_against_jja(
        dir.path(),
        &book,
        "master-polyglot-3",
        &["--weights", "polyglot", "--min-games", "3"],
    );
    // And back: imported into a new book, the same moves with the same
    // statistics, and the same ABK book exported again.
    let abk = dir.path().join("master-games-3.abk");
    let again = dir.path().join("again.sqlite");
    ok(&["import", "--book", s(&again), "--in", s(&abk)]);
    let again_abk = dir.path().join("again.abk");
    export(
        &again,
        &again_abk,
        &["--weights", "games", "--min-games", "3"],
    );
    assert!(
        std::fs::read(&abk).expect("read") == std::fs::read(&again_abk).expect("read"),
        "the re-exported ABK book differs"
    );
}

/// Moves (parent, move, child, white, draws, black) of a book, by (parent, move).
fn moves_of(book: &Path) -> BTreeMap<(i64, i64), common::MoveRow> {
    common::book_moves(book)
        .into_iter()
        .map(|m| ((m.0, m.1), m))
        .collect()
}

#[test]
fn an_abk_book_imported_into_a_new_book_keeps_its_moves_and_statistics() {
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(dir.path());
    let abk = dir.path().join("out.abk");
    let said = export(&book, &abk, &["--weights", "games"]);
    assert!(said.contains(" 0 selected moves not reached"), "{said}");
    let new = dir.path().join("new.sqlite");
    let out = ok(&["import", "--book", s(&new), "--in", s(&abk)]);
    let text = String::from_utf8_lossy(&out.stdout);
    // Every move of the sample book is selected (--min-games 1) and
    // reached: the new book has them all, with the same games.
    let original = moves_of(&book);
    let imported = moves_of(&new);
    assert_eq!(original.len(), imported.len(), "{text}");
    assert!(
        original == imported,
        "{} moves differ",
        original
            .iter()
            .filter(|(k, m)| imported.get(k) != Some(m))
            .count()
    );
    ok(&["check", "--book", s(&new)]);
    // Exported again: the same file, byte for byte.
    let again = dir.path().join("again.abk");
    export(&new, &again, &["--weights", "games"]);
    assert!(
        std::fs::read(&abk).expect("read") == std::fs::read(&again).expect("read"),
        "the re-exported ABK book differs"
    );
    // The priorities, imported as weights (2500 x priority), are what jja
    // converts the ABK book to.
    if have_jja() {
        let bin = dir.path().join("imported.bin");
        export(&new, &bin, &["--weights", "imported"]);
        assert_same_positions(
            "imported weights",
            &by_position(&bin_entries(&bin)),
            &jja_reads(&abk),
        );
    }
}

/// The bytes of a book file and its journals, to tell that nothing wrote
/// to it.
fn book_bytes(book: &Path) -> Vec<Vec<u8>> {
    ["", "-wal", "-shm", "-journal"]
        .iter()
        .map(|suffix| {
            let mut p = book.as_os_str().to_owned();
            p.push(suffix);
            std::fs::read(PathBuf::from(p)).unwrap_or_default()
        })
        .collect()
}

/// Entry `index`'s bytes in an ABK file.
fn entry(bytes: &mut [u8], index: usize) -> &mut [u8] {
    &mut bytes[index * 28..index * 28 + 28]
}

#[test]
fn malformed_abk_files_are_refused_with_a_clear_error_and_change_nothing() {
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(dir.path());
    let abk = dir.path().join("good.abk");
    export(&book, &abk, &["--weights", "games", "--min-games", "2"]);
    let good = std::fs::read(&abk).expect("read");
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
    cases.push((
        "truncated in an entry",
        good[..good.len() - 5].to_vec(),
        "truncated",
    ));
    cases.push(("truncated in the header", good[..100].to_vec(), "truncated"));
    cases.push((
        "truncated before the entries",
        good[..20_000].to_vec(),
        "truncated",
    ));
    let mut wrong_magic = good.clone();
    wrong_magic[1] = b'X';
    cases.push(("wrong magic", wrong_magic, "wrong signature"));
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let random: Vec<u8> = (0..30_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    cases.push(("random bytes", random, "not an ABK book"));
    // The start position's first move made a1-a8: the rook is blocked.
    let mut illegal = good.clone();
    entry(&mut illegal, 900)[0..3].copy_from_slice(&[0, 56, 0]);
    cases.push(("an illegal move", illegal, "illegal in its position"));
    // A reply of the first move made illegal deeper in the tree.
    let mut deep = good.clone();
    let reply = u32::from_le_bytes(entry(&mut deep, 900)[20..24].try_into().expect("4")) as usize;
    entry(&mut deep, reply)[0..3].copy_from_slice(&[0, 56, 0]);
    cases.push(("an illegal reply", deep, "illegal in its position"));
    let mut out_of_range = good.clone();
    entry(&mut out_of_range, 900)[20..24].copy_from_slice(&5u32.to_le_bytes());
    cases.push(("a next move out of range", out_of_range, "out of range"));
    let mut past_end = good.clone();
    let n = (good.len() / 28) as u32;
    entry(&mut past_end, 900)[24..28].copy_from_slice(&n.to_le_bytes());
    cases.push(("a sibling past the end", past_end, "out of range"));
    let mut looping = good.clone();
    entry(&mut looping, 901)[24..28].copy_from_slice(&900u32.to_le_bytes());
    cases.push(("a sibling chain that loops", looping, "reached twice"));
    let mut absurd = good.clone();
    let e = entry(&mut absurd, 900);
    let games = u32::from_le_bytes(e[4..8].try_into().expect("4"));
    e[8..12].copy_from_slice(&(games + 1).to_le_bytes());
    cases.push(("more wins than games", absurd, "absurd statistics"));
    let mut promotion = good.clone();
    entry(&mut promotion, 900)[2] = 0x77;
    cases.push(("a promotion byte", promotion, "promotion byte"));

    let fresh = dir.path().join("fresh.sqlite");
    for (what, bytes, says) in cases {
        let bad = dir.path().join("bad.abk");
        std::fs::write(&bad, &bytes).expect("write");
        let before = book_bytes(&book);
        let out = run(&["import", "--book", s(&book), "--in", s(&bad)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains(says), "{what}: {err:?} does not say {says:?}");
        assert!(
            err.contains("bad.abk"),
            "{what}: {err:?} does not name the file"
        );
        assert!(book_bytes(&book) == before, "{what}: the book changed");
        // Into a book that does not exist yet: none is created.
        let out = run(&["import", "--book", s(&fresh), "--in", s(&bad)]);
        assert_eq!(out.status.code(), Some(2), "{what}");
        assert!(!fresh.exists(), "{what}: a book was created");
    }
    // The good file still imports.
    ok(&["import", "--book", s(&fresh), "--in", s(&abk)]);
}

#[test]
fn side_keeps_one_sides_moves() {
    use learnbook::book::formats::abk::read_file;
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(dir.path());
    let depth: HashMap<i64, i64> = common::positions(&book)
        .into_iter()
        .filter_map(|p| p.1.map(|d| (p.0, d)))
        .collect();
    let white_to_move = |k: u64| depth.get(&Key(k).to_sql()).map(|d| d % 2 == 0);
    // Polyglot: the positions of that side only, with the same weights.
    let both_bin = dir.path().join("both.bin");
    export(&book, &both_bin, &["--weights", "games"]);
    let both = bin_entries(&both_bin);
    for (side, white) in [("white", true), ("black", false)] {
        let bin = dir.path().join(format!("{side}.bin"));
        export(&book, &bin, &["--weights", "games", "--side", side]);
        let mut got = bin_entries(&bin);
        let mut want: Vec<_> = both
            .iter()
            .copied()
            .filter(|e| white_to_move(e.0) == Some(white))
            .collect();
        got.sort_unstable();
        want.sort_unstable();
        assert!(want.len() > 10_000, "{side}: {}", want.len());
        assert!(
            got == want,
            "{side}: {} entries, expected {}",
            got.len(),
            want.len()
        );
    }
    // ABK: the same tree, the other side's moves with priority 0.
    let both_abk = dir.path().join("both.abk");
    export(&book, &both_abk, &["--weights", "games"]);
    let all = read_file(&both_abk).expect("read");
    let white_abk = dir.path().join("white.abk");
    export(
        &book,
        &white_abk,
        &["--weights", "games", "--side", "white"],
    );
    let white = read_file(&white_abk).expect("read");
    assert_eq!(white.moves.len(), all.moves.len());
    for (w, a) in white.moves.iter().zip(&all.moves) {
        assert_eq!((w.parent, w.mv, w.counts), (a.parent, a.mv, a.counts));
        let expected = if w.depth % 2 == 0 { a.priority } else { 0 };
        assert_eq!(w.priority, expected, "{} at depth {}", w.uci, w.depth);
    }
    if have_jja() {
        // jja reads White's positions as in the export of both sides.
        let theirs = jja_reads(&white_abk);
        let want: ByPosition = expected(&both_bin)
            .into_iter()
            .filter(|(k, _)| white_to_move(*k) == Some(true))
            .collect();
        let got: ByPosition = theirs
            .into_iter()
            .filter(|(k, _)| white_to_move(*k) == Some(true))
            .collect();
        assert_same_positions("--side white", &want, &got);
    }
}
