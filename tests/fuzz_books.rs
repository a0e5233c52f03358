//! Fuzzing the book formats read from outside: Polyglot books (import and
//! play), Arena ABK books and BrainLearn experience files (the harness and
//! its environment: `tests/common/fuzz.rs`).

mod common;

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
    time::Duration,
};

use common::fuzz::*;
use learnbook::book::{
    check::check,
    choose::Mode,
    formats::{
        polyglot::{ExportOptions, WeightMode},
        polyglot_import::import,
    },
    opening_book::{Decision, OpeningBook},
    Book, BookSettings,
};
use rand::{rngs::StdRng, Rng, SeedableRng};
use shakmaty::{Chess, Position};

// --------------------------------------------------------------- Polyglot

fn gen_polyglot(rng: &mut StdRng) -> Vec<u8> {
    let seed = polyglot_seed();
    match rng.random_range(0..8) {
        0 => random_bytes(rng, 1024),
        1 | 2 => mutate(rng, seed, &[], &[]),
        _ => {
            // Whole entries: kept, dropped, repeated, reordered, or a field
            // of one replaced, so that the file still reads.
            let records: Vec<&[u8]> = seed.chunks_exact(16).collect();
            let mut out: Vec<[u8; 16]> = records
                .iter()
                .filter(|_| rng.random_range(0..4) != 0)
                .map(|r| <[u8; 16]>::try_from(*r).expect("16"))
                .collect();
            for _ in 0..rng.random_range(1..=16) {
                if out.is_empty() {
                    out.push(rng.random());
                    continue;
                }
                let i = rng.random_range(0..out.len());
                match rng.random_range(0..6) {
                    0 => out[i][8..10].copy_from_slice(&rng.random::<u16>().to_be_bytes()),
                    1 => out[i][10..12].copy_from_slice(&rng.random::<u16>().to_be_bytes()),
                    2 => out[i][12..16].copy_from_slice(&rng.random::<u32>().to_be_bytes()),
                    3 => {
                        let j = rng.random_range(0..out.len());
                        let key = out[j];
                        out[i][..8].copy_from_slice(&key[..8]);
                    }
                    4 => out.insert(i, rng.random()),
                    _ => {
                        let r = out[i];
                        out.insert(rng.random_range(0..=out.len()), r);
                    }
                }
            }
            if rng.random() {
                out.sort();
            }
            out.concat()
        }
    }
}

fn run_polyglot(dir: &Path, bytes: Vec<u8>) -> CaseResult {
    let bin = dir.join("case.bin");
    std::fs::write(&bin, &bytes).map_err(|e| e.to_string())?;
    let mut errors = Vec::new();
    // As an engine plays from it: every move it gives is legal.
    match OpeningBook::open(&bin) {
        Err(e) => errors.push(format!("{e:#}")),
        Ok(book) => {
            let mut rng = StdRng::seed_from_u64(bytes.len() as u64);
            let mut pos = Chess::default();
            for _ in 0..16 {
                let m = match book.decide(&pos, Mode::Weighted, &mut rng) {
                    Err(e) => {
                        errors.push(format!("{e:#}"));
                        break;
                    }
                    Ok(Decision::Play(m)) => {
                        if !pos.is_legal(m) {
                            return Err(format!("the book played an illegal move {m:?}"));
                        }
                        m
                    }
                    Ok(Decision::Search(_)) => {
                        let legal = pos.legal_moves();
                        if legal.is_empty() {
                            break;
                        }
                        legal[rng.random_range(0..legal.len())]
                    }
                };
                pos.play_unchecked(m);
            }
        }
    }
    // Imported into a new book: the book is consistent.
    let path = dir.join("case.sqlite");
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
    let mut book =
        Book::open_or_create(&path, BookSettings::default()).map_err(|e| format!("{e:#}"))?;
    match import(&mut book, &bin) {
        Err(e) => errors.push(format!("{e:#}")),
        Ok(_) => {
            let report = check(&book).map_err(|e| format!("check failed: {e:#}"))?;
            if !report.ok() {
                return Err(format!(
                    "import made an inconsistent book: {:?}",
                    report.problems
                ));
            }
        }
    }
    Ok(errors)
}

#[test]
fn polyglot_books_survive_random_and_mutated_entries() {
    // Dropped (removed) when the test ends.
    let dir = scratch();
    let path = dir.path().to_path_buf();
    fuzz(
        "polyglot",
        300,
        Duration::from_secs(60),
        gen_polyglot,
        move |bytes| run_polyglot(&path, bytes),
    );
}

// -------------------------------------------------------------------- ABK

/// A real ABK book: the sample's games to ply 10, moves played twice, as
/// `export --format abk` writes it.
fn abk_seed() -> &'static [u8] {
    static ABK: OnceLock<Vec<u8>> = OnceLock::new();
    ABK.get_or_init(|| {
        let scratch = scratch();
        let dir = scratch.path();
        let book = sample_book_to_ply_10(&dir.join("seed.sqlite"));
        let opts = ExportOptions {
            weights: WeightMode::Games,
            min_games: 2,
            max_ply: None,
            engine_moves: true,
            side: learnbook::book::formats::suite::SideToMove::Both,
        };
        let path = dir.join("seed.abk");
        learnbook::book::formats::abk::export(&book, &path, &opts).expect("export");
        std::fs::read(&path).expect("read")
    })
}

/// Values that hit an ABK field's edges: none, zero, the root, just past
/// the end, the largest.
fn abk_word(rng: &mut StdRng, entries: u32) -> u32 {
    let root = learnbook::book::formats::abk::ROOT;
    match rng.random_range(0..8) {
        0 => u32::MAX,
        1 => 0,
        2 => root,
        3 => root + entries,
        4 => root + entries.saturating_sub(1),
        5 => rng.random_range(root..root + entries.max(1)),
        6 => rng.random_range(0..root),
        _ => rng.random(),
    }
}

fn gen_abk(rng: &mut StdRng) -> Vec<u8> {
    use learnbook::book::formats::abk::{ENTRIES_START, ENTRY_LEN};
    let seed = abk_seed();
    match rng.random_range(0..8) {
        0 => random_bytes(rng, 1024),
        1 => {
            // The header area kept, random entries after it.
            let mut v = seed[..ENTRIES_START].to_vec();
            v.extend(random_bytes(rng, 4096));
            v
        }
        2 => mutate(rng, seed, &[], &[b"\x03ABK", b"\xff\xff\xff\xff"]),
        _ => {
            // Whole entries kept, a field of a few replaced, the file cut at
            // an entry: the file still reads up to the tree's checks.
            let mut v = seed.to_vec();
            let n = ((v.len() - ENTRIES_START) / ENTRY_LEN) as u32;
            for _ in 0..rng.random_range(1..=4) {
                let i = ENTRIES_START + ENTRY_LEN * rng.random_range(0..n.max(1)) as usize;
                if i + ENTRY_LEN > v.len() {
                    continue;
                }
                let e = &mut v[i..i + ENTRY_LEN];
                match rng.random_range(0..8) {
                    0 => e[0] = rng.random_range(0..70),
                    1 => e[1] = rng.random_range(0..70),
                    2 => e[2] = [0u8, 1, 4, 0x81, 0x84, 0x85, 0xfc, 0xff][rng.random_range(0..8)],
                    3 => e[3] = rng.random(),
                    4 => {
                        let f = 4 + 4 * rng.random_range(0..3);
                        e[f..f + 4].copy_from_slice(&rng.random::<u32>().to_le_bytes());
                    }
                    5 => e[16..20].copy_from_slice(
                        &[0u32, 1, 0x0100_0000, 7][rng.random_range(0..4)].to_le_bytes(),
                    ),
                    6 => e[20..24].copy_from_slice(&abk_word(rng, n).to_le_bytes()),
                    _ => e[24..28].copy_from_slice(&abk_word(rng, n).to_le_bytes()),
                }
            }
            if rng.random_range(0..4) == 0 {
                let keep = rng.random_range(0..=n) as usize;
                v.truncate(ENTRIES_START + keep * ENTRY_LEN);
            }
            v
        }
    }
}

fn run_abk(dir: &Path, bytes: Vec<u8>) -> CaseResult {
    use learnbook::book::formats::abk;
    let file = dir.join("case.abk");
    std::fs::write(&file, &bytes).map_err(|e| e.to_string())?;
    let path = dir.join("case.sqlite");
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
    let mut book =
        Book::open_or_create(&path, BookSettings::default()).map_err(|e| format!("{e:#}"))?;
    match abk::import(&mut book, &file) {
        // Refused: nothing stored.
        Err(e) => {
            let mut moves = 0;
            book.for_each_move(|_| moves += 1)
                .map_err(|e| format!("{e:#}"))?;
            if moves != 0 {
                return Err(format!("a refused file left {moves} moves in the book"));
            }
            Ok(vec![format!("{e:#}")])
        }
        // Accepted: a consistent book whose every move is legal where it
        // stands, with statistics that add up.
        Ok(summary) => {
            let report = check(&book).map_err(|e| format!("check failed: {e:#}"))?;
            if !report.ok() {
                return Err(format!(
                    "import made an inconsistent book: {:?}",
                    report.problems
                ));
            }
            let mut moves = 0;
            book.for_each_move(|_| moves += 1)
                .map_err(|e| format!("{e:#}"))?;
            if moves != summary.moves {
                return Err(format!(
                    "import says {} moves, the book has {moves}",
                    summary.moves
                ));
            }
            Ok(Vec::new())
        }
    }
}

#[test]
fn abk_books_survive_random_and_mutated_entries() {
    // Dropped (removed) when the test ends.
    let dir = scratch();
    let path = dir.path().to_path_buf();
    fuzz("abk", 300, Duration::from_secs(60), gen_abk, move |bytes| {
        run_abk(&path, bytes)
    });
}

// ------------------------------------------------------------- experience

/// A book of the sample's games to ply 10 and a real experience file for
/// it: an entry for every book move before ply 8 (Stockfish keys and move
/// codes), scores and depths varied. Made once.
fn experience_seed() -> &'static (tempfile::TempDir, PathBuf, Vec<u8>) {
    use learnbook::book::{
        formats::{
            experience::{write_entries, ExpEntry},
            sf_keys::{sf_key, SfMove},
        },
        keys::polyglot_key,
    };
    static SEED: OnceLock<(tempfile::TempDir, PathBuf, Vec<u8>)> = OnceLock::new();
    SEED.get_or_init(|| {
        let scratch = scratch();
        let dir = scratch.path();
        let path = dir.join("seed.sqlite");
        let book = sample_book_to_ply_10(&path);
        let mut entries = Vec::new();
        let mut stack = vec![(Chess::default(), 0u32)];
        let mut seen = std::collections::HashSet::new();
        while let Some((pos, ply)) = stack.pop() {
            if ply >= 8 || !seen.insert(polyglot_key(&pos)) {
                continue;
            }
            for m in book.moves(polyglot_key(&pos)).expect("moves") {
                let Some(mv) = m.mv.to_move(&pos) else {
                    continue;
                };
                let n = entries.len() as i32;
                entries.push(ExpEntry {
                    key: sf_key(&pos),
                    depth: 1 + n % 60,
                    score: (n * 37) % 2000 - 1000,
                    mv: SfMove::from_move(&mv).expect("code"),
                    performance: 100,
                });
                let mut next = pos.clone();
                next.play_unchecked(mv);
                stack.push((next, ply + 1));
            }
        }
        drop(book);
        let exp = dir.join("seed.exp");
        write_entries(&exp, &entries).expect("write");
        let bytes = std::fs::read(&exp).expect("read");
        (scratch, path, bytes)
    })
}

fn gen_experience(rng: &mut StdRng) -> Vec<u8> {
    let seed = &experience_seed().2;
    match rng.random_range(0..8) {
        0 => random_bytes(rng, 1024),
        1 => mutate(rng, seed, &[], &[b"SugaR Experience version 2"]),
        _ => {
            // Whole entries kept, dropped, repeated, or a field replaced
            // (key, depth, score, move, padding, performance).
            let mut out: Vec<[u8; 24]> = seed
                .chunks_exact(24)
                .filter(|_| rng.random_range(0..4) != 0)
                .map(|r| <[u8; 24]>::try_from(r).expect("24"))
                .collect();
            for _ in 0..rng.random_range(1..=3) {
                if out.is_empty() {
                    out.push(rng.random());
                    continue;
                }
                let i = rng.random_range(0..out.len());
                match rng.random_range(0..7) {
                    0 => {
                        let j = rng.random_range(0..out.len());
                        let key = out[j];
                        out[i][..8].copy_from_slice(&key[..8]);
                    }
                    1 => out[i][8..12].copy_from_slice(&rng.random_range(-5..300i32).to_le_bytes()),
                    2 => out[i][12..16]
                        .copy_from_slice(&rng.random_range(-33_000..33_000i32).to_le_bytes()),
                    3 => out[i][16..18].copy_from_slice(&rng.random::<u16>().to_le_bytes()),
                    4 => out[i][18..24].copy_from_slice(&rng.random::<[u8; 6]>()),
                    5 => out.insert(i, rng.random()),
                    _ => {
                        let r = out[i];
                        out.insert(rng.random_range(0..=out.len()), r);
                    }
                }
            }
            out.concat()
        }
    }
}

/// Imported into a copy of the seed's book: accepted and the book stays
/// consistent, or refused with a message and the book unchanged.
fn run_experience(dir: &Path, bytes: Vec<u8>) -> CaseResult {
    use learnbook::book::formats::experience::import;
    let exp = dir.join("case.exp");
    std::fs::write(&exp, &bytes).map_err(|e| e.to_string())?;
    let path = dir.join("case.sqlite");
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
    std::fs::copy(&experience_seed().1, &path).map_err(|e| e.to_string())?;
    let mut book = Book::open(&path).map_err(|e| format!("{e:#}"))?;
    let before = book.analysed_count().map_err(|e| format!("{e:#}"))?;
    match import(&mut book, &exp) {
        Err(e) => {
            if book.analysed_count().map_err(|e| format!("{e:#}"))? != before {
                return Err(format!("a refused file changed the book: {e:#}"));
            }
            Ok(vec![format!("{e:#}")])
        }
        Ok(_) => {
            let report = check(&book).map_err(|e| format!("check failed: {e:#}"))?;
            if !report.ok() {
                return Err(format!(
                    "import made an inconsistent book: {:?}",
                    report.problems
                ));
            }
            Ok(Vec::new())
        }
    }
}

#[test]
fn experience_files_survive_random_and_mutated_entries() {
    let dir = scratch();
    let path = dir.path().to_path_buf();
    fuzz(
        "experience",
        300,
        Duration::from_secs(60),
        gen_experience,
        move |bytes| run_experience(&path, bytes),
    );
}
