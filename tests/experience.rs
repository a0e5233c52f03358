//! BrainLearn experience files (`.exp`): Stockfish's keys against
//! Stockfish, the export read by `jja` (an independent reader), the round
//! trip, files `jja` writes imported, a learned score changing the book's
//! choice, and malformed files refused without touching the book.

mod common;

use std::{
    collections::{BTreeSet, HashMap, HashSet},
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::OnceLock,
};

use common::{count, have, have_program, have_shared, ok, run, s, sample, shared};
use learnbook::book::{
    db::Book,
    formats::{
        experience::{self, move_score, to_internal, ExpEntry, ENTRY_SIZE},
        sf_keys::{sf_key, SfKey, SfMove},
    },
    keys::{polyglot_key, Key},
};
use shakmaty::{fen::Fen, CastlingMode, Chess, EnPassantMode, Position};
use tempfile::TempDir;

const STOCKFISH: &str = "/usr/games/stockfish";

/// `jja` on PATH or in ~/.cargo/bin.
fn jja() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/bin/jja"));
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("jja"))
        .chain(home)
        .find(|p| p.is_file())
}

fn have_jja() -> bool {
    have("jja (cargo install --locked jja)", jja().is_some())
}

fn jja_run(args: &[&str], stdin: Option<&[u8]>) -> String {
    let mut child = Command::new(jja().expect("jja"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run jja");
    {
        let mut input = child.stdin.take().expect("stdin");
        if let Some(bytes) = stdin {
            input.write_all(bytes).expect("write to jja");
        }
    }
    let out = child.wait_with_output().expect("jja");
    assert!(
        out.status.success(),
        "jja {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn epd(pos: &Chess) -> String {
    let fen = Fen::from_position(pos, EnPassantMode::Legal).to_string();
    fen.split(' ').take(4).collect::<Vec<_>>().join(" ")
}

/// `(uci, depth, score)` of each entry `jja find` reports for `pos`.
fn jja_entries(exp: &Path, pos: &Chess) -> BTreeSet<(String, i32, i32)> {
    let out = jja_run(
        &["--porcelain=csv", "find", s(exp), "--fen", &epd(pos)],
        None,
    );
    out.lines()
        .skip_while(|l| !l.starts_with("*,uci"))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert!(f.len() >= 4, "jja find line {l:?}");
            (
                f[1].to_string(),
                f[2].parse().expect("depth"),
                f[3].parse().expect("score"),
            )
        })
        .collect()
}

/// Builds `pgn` into `dir/name` and analyses it with the search core.
fn analysed_book(dir: &Path, name: &str, pgn: &Path, min_games: &str, extra: &[&str]) -> PathBuf {
    let book = dir.join(name);
    let mut args = vec!["build", "--book", s(&book)];
    args.extend_from_slice(extra);
    args.push(s(pgn));
    ok(&args);
    ok(&[
        "analyze",
        "--book",
        s(&book),
        "--engine",
        "builtin",
        "--nodes",
        "2000",
        "--min-games",
        min_games,
        "--threads",
        "1",
    ]);
    book
}

/// The sample games, built and analysed once for every test here.
fn sample_analysed() -> &'static Path {
    static BOOK: OnceLock<(TempDir, PathBuf)> = OnceLock::new();
    &BOOK
        .get_or_init(|| {
            let dir = TempDir::new().expect("tempdir");
            let book = analysed_book(dir.path(), "sample.sqlite", &sample(), "20", &[]);
            (dir, book)
        })
        .1
}

fn copy_of(book: &Path, dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(book, &to).expect("copy the book");
    to
}

/// A position of the book with what the export should write for it.
struct Expected {
    pos: Chess,
    /// UCI from the start position.
    line: Vec<String>,
    /// `(uci, depth, score in internal units)`.
    entries: BTreeSet<(String, i32, i32)>,
}

/// Walks the book from the start position through its moves (depth
/// first, each position once, positions before ply `max_ply`) towards
/// every analysed position and every parent of one (a transposition can
/// reach an analysed position from one that is not), and lists for each
/// position its moves with a search score: the child's score negated (a
/// mate one ply further), or the parent's searched deviation.
fn expected(book: &Path, max_ply: usize) -> Vec<Expected> {
    let b = Book::open(book).expect("open");
    let analysed: HashSet<Key> = scores(book)
        .into_iter()
        .map(|r| Key::from_sql(r.0))
        .collect();
    let mut parents: HashMap<Key, Vec<Key>> = HashMap::new();
    let mut seeds: Vec<Key> = analysed.iter().copied().collect();
    b.for_each_move(|m| {
        if let Some(c) = m.child {
            parents.entry(c).or_default().push(m.parent);
            if analysed.contains(&c) {
                seeds.push(m.parent);
            }
        }
    })
    .expect("moves");
    let mut wanted: HashSet<Key> = HashSet::new();
    while let Some(k) = seeds.pop() {
        if wanted.insert(k) {
            seeds.extend(parents.get(&k).into_iter().flatten().copied());
        }
    }
    let mut out = Vec::new();
    let start = Chess::default();
    let mut seen: HashSet<Key> = HashSet::from([polyglot_key(&start)]);
    let mut stack = vec![(start, Vec::<String>::new())];
    while let Some((pos, line)) = stack.pop() {
        if line.len() >= max_ply {
            continue;
        }
        let key = polyglot_key(&pos);
        let parent = b.analysis(key).expect("analysis");
        let mut entries = BTreeSet::new();
        for m in b.moves(key).expect("moves") {
            let mv = m.mv.to_move(&pos).expect("a legal book move");
            let uci = mv.to_uci(CastlingMode::Standard).to_string();
            let mut next = pos.clone();
            next.play_unchecked(mv);
            let child = polyglot_key(&next);
            let scored = match b.analysis(child).expect("analysis") {
                Some(a) => Some((move_score(a.score), a.depth)),
                None => parent.as_ref().and_then(|p| {
                    (p.dev_move == Some(m.mv))
                        .then_some(p.deviation.map(|d| (d, p.dev_depth.unwrap_or(p.depth))))
                        .flatten()
                }),
            };
            if let Some((score, depth)) = scored {
                entries.insert((uci.clone(), depth as i32, to_internal(score)));
            }
            if wanted.contains(&child) && seen.insert(child) {
                let mut l = line.clone();
                l.push(uci);
                stack.push((next, l));
            }
        }
        if !entries.is_empty() {
            out.push(Expected { pos, line, entries });
        }
    }
    out
}

fn export_exp(book: &Path, exp: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "export",
        "--book",
        s(book),
        "--out",
        s(exp),
        "--min-games",
        "1",
    ];
    args.extend_from_slice(extra);
    String::from_utf8_lossy(&ok(&args).stdout).into_owned()
}

/// Every position of the export as `jja find` reads it: the same moves,
/// depths and scores as the book's, and no entry elsewhere.
fn assert_jja_reads_the_book(book: &Path, exp: &Path, max_ply: usize) {
    let want = expected(book, max_ply);
    let total: usize = want.iter().map(|e| e.entries.len()).sum();
    assert!(total > 100, "only {total} scored moves");
    let size = std::fs::metadata(exp).expect("exp").len() as usize;
    assert_eq!(
        size,
        total * ENTRY_SIZE,
        "the file has exactly the book's scored moves"
    );
    let mut by_hash = 0;
    for e in &want {
        if e.pos.castles().is_empty() {
            // jja hashes a position without castling rights without
            // Stockfish's number for the empty set (Stockfish XORs it:
            // stockfish_keys_are_stockfishs_own), so its --fen misses
            // these; its --hash reads our entries under Stockfish's key.
            by_hash += 1;
            let codes: BTreeSet<(u16, i32, i32)> = e
                .entries
                .iter()
                .map(|(uci, depth, score)| {
                    let m = uci
                        .parse::<shakmaty::uci::UciMove>()
                        .expect("uci")
                        .to_move(&e.pos)
                        .expect("legal");
                    (SfMove::from_move(&m).expect("code").0, *depth, *score)
                })
                .collect();
            assert_eq!(
                jja_hash_entries(exp, sf_key(&e.pos)),
                codes,
                "jja --hash reads other entries at {} (after {:?})",
                epd(&e.pos),
                e.line
            );
            continue;
        }
        assert_eq!(
            jja_entries(exp, &e.pos),
            e.entries,
            "jja reads other entries at {} (after {:?})",
            epd(&e.pos),
            e.line
        );
    }
    eprintln!(
        "jja read {} positions ({} by Stockfish key: no castling rights), {total} entries",
        want.len(),
        by_hash
    );
}

/// `(move code, depth, score)` of each entry `jja find --hash` reports.
fn jja_hash_entries(exp: &Path, key: SfKey) -> BTreeSet<(u16, i32, i32)> {
    let out = jja_run(&["find", s(exp), "--hash", &key.0.to_string()], None);
    out.lines()
        .filter(|l| l.starts_with('['))
        .map(|l| {
            let f: Vec<i128> = l
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .map(|x| x.trim().parse().expect("number"))
                .collect();
            assert_eq!(f.len(), 5, "{l}");
            assert_eq!(f[0] as u64, key.0, "{l}");
            ((f[3] & 0xffff) as u16, f[1] as i32, f[2] as i32)
        })
        .collect()
}

#[test]
fn stockfish_keys_are_stockfishs_own() {
    if !have_program(STOCKFISH) {
        return;
    }
    // Castling rights partly and wholly gone, en passant possible and not,
    // promotions, Black to move.
    let commands = [
        "position startpos",
        "position startpos moves e2e4",
        "position startpos moves e2e4 g8f6 e4e5 d7d5",
        "position startpos moves e2e4 e7e5 g1f3 b8c6 f1c4 g8f6 e1g1",
        "position startpos moves e2e4 e7e5 e1e2 e8e7",
        "position fen r3k2r/8/8/8/8/8/8/R3K2R b Kq - 0 1",
        "position fen 8/8/8/8/8/8/8/K6k w - - 0 1",
        "position fen 3r4/4P3/8/8/8/8/k7/4K3 w - - 0 1",
        "position fen 3r4/4P3/8/8/8/8/k7/4K3 w - - 0 1 moves e7d8q",
        "position fen 3r4/4P3/8/8/8/8/k7/4K3 w - - 0 1 moves e7d8n",
        "position fen 4k3/8/8/2pP4/8/8/8/4K3 w - c6 0 1",
    ];
    let mut input = String::new();
    for c in commands {
        input.push_str(c);
        input.push_str("\nd\n");
    }
    input.push_str("quit\n");
    let mut child = Command::new(STOCKFISH)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("stockfish");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("stockfish");
    let text = String::from_utf8_lossy(&out.stdout);
    let fens: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Fen: "))
        .collect();
    let keys: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Key: "))
        .collect();
    assert_eq!(fens.len(), commands.len(), "{text}");
    assert_eq!(keys.len(), commands.len(), "{text}");
    for (fen, key) in fens.iter().zip(&keys) {
        let pos: Chess = fen
            .parse::<Fen>()
            .expect("fen")
            .into_position(CastlingMode::Standard)
            .expect("legal");
        let want = u64::from_str_radix(key.trim(), 16).expect("hex key");
        assert_eq!(sf_key(&pos), SfKey(want), "{fen}");
    }
}

#[test]
fn jja_reads_the_export_of_the_sample_book_as_the_book_scores_it() {
    if !have_jja() {
        return;
    }
    let dir = TempDir::new().expect("tempdir");
    let exp = dir.path().join("sample.exp");
    let said = export_exp(sample_analysed(), &exp, &[]);
    assert!(said.contains("entries for"), "{said}");
    assert_jja_reads_the_book(sample_analysed(), &exp, usize::MAX);
}

/// The master games: the whole book, analysed where 400 games or more
/// went (3,534 positions; about half a minute on two busy cores). Built
/// once for the tests here.
fn master_analysed() -> &'static Path {
    static BOOK: OnceLock<(TempDir, PathBuf)> = OnceLock::new();
    &BOOK
        .get_or_init(|| {
            let dir = TempDir::new().expect("tempdir");
            let book = analysed_book(
                dir.path(),
                "master.sqlite",
                &shared().join("games/master-games.pgn.gz"),
                "400",
                &[],
            );
            (dir, book)
        })
        .1
}

#[test]
fn jja_reads_the_export_of_the_master_book_as_the_book_scores_it() {
    if !have_shared() || !have_jja() {
        return;
    }
    let dir = TempDir::new().expect("tempdir");
    let exp = dir.path().join("master.exp");
    export_exp(master_analysed(), &exp, &[]);
    assert_jja_reads_the_book(master_analysed(), &exp, usize::MAX);
}

#[test]
fn the_master_books_export_imported_into_a_new_master_book_gives_its_scores_back() {
    if !have_shared() {
        return;
    }
    let dir = TempDir::new().expect("tempdir");
    let exp = dir.path().join("master.exp");
    export_exp(master_analysed(), &exp, &[]);
    let said = assert_round_trip(
        master_analysed(),
        &shared().join("games/master-games.pgn.gz"),
        &exp,
        dir.path(),
    );
    assert!(said.contains("0 of positions not reached"), "{said}");
}

/// `exp`, exported from `book`, imported into a new book of `games` in
/// `dir`: every scored book move's child has its score and depth back (the
/// start position is no move's child: it is the one row not there), and
/// the new book exports the same file, byte for byte. Returns what the
/// import said.
fn assert_round_trip(book: &Path, games: &Path, exp: &Path, dir: &Path) -> String {
    let fresh = dir.join("fresh.sqlite");
    ok(&["build", "--book", s(&fresh), s(games)]);
    let said = import_exp(&fresh, exp);
    let before = scores(book);
    let after = scores(&fresh);
    assert!(after.is_subset(&before), "imported scores differ");
    assert_eq!(before.len() - after.len(), 1, "only the root is missing");
    let second = dir.join("second.exp");
    export_exp(&fresh, &second, &[]);
    assert_eq!(
        std::fs::read(exp).expect("first"),
        std::fs::read(&second).expect("second")
    );
    said
}

/// What `import --in exp` into `book` printed.
fn import_exp(book: &Path, exp: &Path) -> String {
    String::from_utf8_lossy(&ok(&["import", "--book", s(book), "--in", s(exp)]).stdout).into_owned()
}

/// `(key, score, depth)` of every analysis row of `book`.
fn scores(book: &Path) -> BTreeSet<(i64, i64, i64)> {
    let c = rusqlite::Connection::open(book).expect("open");
    let mut stmt = c
        .prepare("SELECT key, score, depth FROM analysis")
        .expect("prepare");
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query");
    rows.map(|r| r.expect("row")).collect()
}

#[test]
fn export_then_import_into_a_new_book_gives_the_same_moves_and_scores() {
    let dir = TempDir::new().expect("tempdir");
    let exp = dir.path().join("first.exp");
    export_exp(sample_analysed(), &exp, &[]);
    // The file holds the book's scored moves, one entry each.
    let want: usize = expected(sample_analysed(), usize::MAX)
        .iter()
        .map(|e| e.entries.len())
        .sum();
    let entries = experience::read(&exp).expect("read back");
    assert_eq!(entries.len(), want);
    let said = assert_round_trip(sample_analysed(), &sample(), &exp, dir.path());
    assert!(said.contains("0 added as engine moves"), "{said}");
    // Imported again: nothing is deeper, nothing changes.
    let said = import_exp(&dir.path().join("fresh.sqlite"), &exp);
    assert!(said.contains("0 search scores stored"), "{said}");
}

#[test]
fn experience_files_jja_writes_are_imported() {
    if !have_jja() {
        return;
    }
    let dir = TempDir::new().expect("tempdir");
    let ours = dir.path().join("ours.exp");
    export_exp(sample_analysed(), &ours, &[]);

    // 1. jja's dump of our file restored by jja: jja writes every entry.
    let dump = jja_run(&["dump", s(&ours)], None);
    let theirs = dir.path().join("theirs.exp");
    jja_run(&["restore", s(&theirs)], Some(dump.as_bytes()));
    let fresh = dir.path().join("fresh.sqlite");
    ok(&["build", "--book", s(&fresh), s(&sample())]);
    ok(&["import", "--book", s(&fresh), "--in", s(&theirs)]);
    let mut want = scores(sample_analysed());
    let got = scores(&fresh);
    assert!(got.is_subset(&want));
    assert_eq!(want.len() - got.len(), 1);

    // 2. jja converting evaluations (lichess's export format) to an
    // experience file: it keys the positions and codes the moves itself.
    // Scores are given in internal units (jja copies them).
    let positions = expected(sample_analysed(), 6);
    let mut lines = String::new();
    let mut want_rows = BTreeSet::new();
    // (Positions with castling rights: jja keys the others otherwise.)
    let with_rights = positions.iter().filter(|e| !e.pos.castles().is_empty());
    for (i, e) in with_rights.take(40).enumerate() {
        let b = Book::open(sample_analysed()).expect("open");
        let moves = b.moves(polyglot_key(&e.pos)).expect("moves");
        let m = &moves[i % moves.len()];
        let mv = m.mv.to_move(&e.pos).expect("legal");
        let uci = mv.to_uci(CastlingMode::Standard).to_string();
        let internal = 37 * i as i32 - 500;
        let depth = 30 + i as i32;
        lines.push_str(&format!(
            "{{\"fen\":\"{}\",\"evals\":[{{\"pvs\":[{{\"cp\":{internal},\"line\":\"{uci}\"}}],\"knodes\":1,\"depth\":{depth}}}]}}\n",
            epd(&e.pos)
        ));
        let mut next = e.pos.clone();
        next.play_unchecked(mv);
        want_rows.insert((
            polyglot_key(&next).to_sql(),
            i64::from(learnbook::book::values::minimax::child_score(
                experience::from_internal(internal),
            )),
            i64::from(depth),
        ));
    }
    let lichess = dir.path().join("lichess.exp");
    jja_run(&["restore", "--json", s(&lichess)], Some(lines.as_bytes()));
    let fresh2 = dir.path().join("fresh2.sqlite");
    ok(&["build", "--book", s(&fresh2), s(&sample())]);
    ok(&["import", "--book", s(&fresh2), "--in", s(&lichess)]);
    want = scores(&fresh2);
    assert!(!want_rows.is_empty());
    assert!(
        want_rows.is_subset(&want),
        "missing: {:?}",
        want_rows.difference(&want).collect::<Vec<_>>()
    );
    assert_eq!(want.len(), want_rows.len());
}

#[test]
fn a_learned_score_changes_the_books_choice_where_it_says_so() {
    let dir = TempDir::new().expect("tempdir");
    let book = copy_of(sample_analysed(), dir.path(), "book.sqlite");
    // A position past the opening where the book chooses one move of
    // several: the engine learned that another wins (mate in 5 moves).
    let choose = |line: &[String]| {
        let moves = line.join(" ");
        // Exit 1 and "(none)" where leaving the book is the choice.
        let out = run(&["choose", "--book", s(&book), "--moves", &moves]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let b = Book::open(&book).expect("open");
    let (target, line, other) = expected(&book, 8)
        .into_iter()
        .filter(|e| e.line.len() >= 3)
        .find_map(|e| {
            let chosen = choose(&e.line);
            let moves = b.moves(polyglot_key(&e.pos)).expect("moves");
            let other = moves
                .iter()
                .filter_map(|m| m.mv.to_move(&e.pos))
                .find(|m| m.to_uci(CastlingMode::Standard).to_string() != chosen)?;
            Some((e.pos, e.line, other))
        })
        .expect("a position with two book moves");
    drop(b);
    let before = choose(&line);
    let exp = dir.path().join("learned.exp");
    experience::write_entries(
        &exp,
        &[ExpEntry {
            key: sf_key(&target),
            depth: 200,
            score: to_internal(29_990),
            mv: SfMove::from_move(&other).expect("code"),
            performance: 100,
        }],
    )
    .expect("write");
    ok(&["import", "--book", s(&book), "--in", s(&exp)]);
    let after = choose(&line);
    assert_ne!(before, after);
    assert_eq!(after, other.to_uci(CastlingMode::Standard).to_string());
    ok(&["check", "--book", s(&book)]);
}

/// Imports `bytes` into a copy of the analysed sample book: exit 2, a
/// message containing `says`, the book unchanged.
fn refused(bytes: &[u8], says: &str) {
    let dir = TempDir::new().expect("tempdir");
    let book = copy_of(sample_analysed(), dir.path(), "book.sqlite");
    let exp = dir.path().join("bad.exp");
    std::fs::write(&exp, bytes).expect("write");
    let before = (scores(&book), count(&book, "SELECT count(*) FROM moves"));
    let out = run(&["import", "--book", s(&book), "--in", s(&exp)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(says), "{says:?} not in {err}");
    assert_eq!(
        before,
        (scores(&book), count(&book, "SELECT count(*) FROM moves")),
        "the book changed"
    );
}

#[test]
fn malformed_experience_files_are_refused_and_change_nothing() {
    let dir = TempDir::new().expect("tempdir");
    let exp = dir.path().join("good.exp");
    export_exp(sample_analysed(), &exp, &[]);
    let good = std::fs::read(&exp).expect("read");
    assert!(good.len() > 10 * ENTRY_SIZE);

    refused(&good[..good.len() - 5], "truncated experience file");
    let mut sugar = b"SugaR Experience version 2".to_vec();
    sugar.extend_from_slice(&good[..48]);
    refused(&sugar, "SugaR experience file");
    // Random bytes (fixed seed): a whole number of entries, still refused.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let random: Vec<u8> = (0..24 * 50)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    refused(&random, "absurd");
    let mut deep = good.clone();
    deep[8..12].copy_from_slice(&999i32.to_le_bytes());
    refused(&deep, "absurd depth 999 in the entry at offset 0");
    let mut score = good.clone();
    score[24 + 12..24 + 16].copy_from_slice(&32_005i32.to_le_bytes());
    refused(&score, "absurd score 32005 in the entry at offset 24");
    // The start position's entry with a move it has not: e2e5.
    let start = ExpEntry {
        key: sf_key(&Chess::default()),
        depth: 20,
        score: 0,
        mv: SfMove(12 << 6 | 36),
        performance: 100,
    };
    let illegal = dir.path().join("illegal.exp");
    experience::write_entries(&illegal, &[start]).expect("write");
    let mut bytes = good.clone();
    bytes.extend_from_slice(&std::fs::read(&illegal).expect("read"));
    refused(
        &bytes,
        &format!(
            "e2e5 (0x0324) of the entry at offset {} is not legal",
            good.len()
        ),
    );
}

#[test]
fn unreached_keys_are_counted_not_fatal() {
    let dir = TempDir::new().expect("tempdir");
    let book = copy_of(sample_analysed(), dir.path(), "book.sqlite");
    let exp = dir.path().join("stray.exp");
    experience::write_entries(
        &exp,
        &[ExpEntry {
            key: SfKey(0x0123_4567_89ab_cdef),
            depth: 10,
            score: 50,
            mv: SfMove(12 << 6 | 28),
            performance: 100,
        }],
    )
    .expect("write");
    let out = ok(&["import", "--book", s(&book), "--in", s(&exp)]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("1 of positions not reached"), "{said}");
}

#[test]
fn a_move_the_book_lacks_is_added_as_an_engine_move_with_its_score() {
    let dir = TempDir::new().expect("tempdir");
    let book = copy_of(sample_analysed(), dir.path(), "book.sqlite");
    let start = Chess::default();
    let b = Book::open(&book).expect("open");
    let book_moves: HashSet<_> = b
        .moves(polyglot_key(&start))
        .expect("moves")
        .into_iter()
        .map(|m| m.mv)
        .collect();
    drop(b);
    let lacking = start
        .legal_moves()
        .into_iter()
        .find(|m| !book_moves.contains(&learnbook::book::keys::MoveCode::from_move(m)))
        .expect("a legal move the book lacks");
    let exp = dir.path().join("new.exp");
    experience::write_entries(
        &exp,
        &[ExpEntry {
            key: sf_key(&start),
            depth: 33,
            score: to_internal(-120),
            mv: SfMove::from_move(&lacking).expect("code"),
            performance: 100,
        }],
    )
    .expect("write");
    let out = ok(&["import", "--book", s(&book), "--in", s(&exp)]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("1 added as engine moves"), "{said}");
    let b = Book::open(&book).expect("open");
    let added = b
        .moves(polyglot_key(&start))
        .expect("moves")
        .into_iter()
        .find(|m| m.mv == learnbook::book::keys::MoveCode::from_move(&lacking))
        .expect("the move is in the book");
    assert!(added.engine, "an engine move");
    let child = added.child.expect("its position");
    let row = b.analysis(child).expect("analysis").expect("scored");
    assert_eq!((row.score, row.depth), (120, 33));
    assert_eq!(row.engine, experience::ENGINE_NAME);
    drop(b);
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn side_keeps_one_sides_scored_moves() {
    let dir = TempDir::new().expect("tempdir");
    let read = |side: &str| {
        let exp = dir.path().join(format!("{side}.exp"));
        export_exp(sample_analysed(), &exp, &["--side", side]);
        let mut entries: Vec<_> = experience::read(&exp)
            .expect("read back")
            .into_iter()
            .map(|e| (e.key.0, e.mv.0))
            .collect();
        entries.sort_unstable();
        entries
    };
    let (white, black, both) = (read("white"), read("black"), read("both"));
    assert!(!white.is_empty() && !black.is_empty());
    // The two sides split the whole file: no entry in both, none left out.
    let mut joined = [white.clone(), black.clone()].concat();
    joined.sort_unstable();
    assert_eq!(joined, both);
    assert!(white.iter().all(|e| black.binary_search(e).is_err()));
}

#[test]
fn a_refused_file_leaves_no_new_book_behind() {
    let dir = TempDir::new().expect("tempdir");
    // Not whole entries: 25 bytes for an experience file, 17 for Polyglot.
    for (name, bytes) in [("bad.exp", 25), ("bad.bin", 17)] {
        let file = dir.path().join(name);
        std::fs::write(&file, vec![7u8; bytes]).expect("write");
        let book = dir.path().join(format!("{name}.sqlite"));
        let o = run(&["import", "--book", s(&book), "--in", s(&file)]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        assert!(
            !book.exists(),
            "{name}: a book was left at {}",
            book.display()
        );
    }
}
