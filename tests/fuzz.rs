//! Fuzzing on stable Rust. Eight targets get random bytes and mutations of
//! real inputs: PGN ingest, Polyglot books (import and play), SPSA
//! checkpoints, weights and parameter files, UCI command lines,
//! `learnbook serve`'s `/masters` query parser, Arena ABK books (import)
//! and BrainLearn experience files (import). Every case
//! must come back (no panic, no hang) and say what it did: accepted, or
//! rejected with a message that names the problem; each target also checks
//! a property of what it accepted.
//!
//! The generator is seeded and hand-rolled (mutations: bit flips, bytes set
//! to delimiters, insertions, deletions, truncation, duplication, splices
//! with other real inputs, dictionary tokens; structure-aware ones where a
//! checksum or a record size would stop everything at the door).
//!
//! By default each target runs a fixed number of cases from a fixed seed:
//! the file takes seconds. Environment:
//! * `LEARNBOOK_FUZZ_SECS=600`: run each target for that many seconds and
//!   print what it tried and every distinct error (`scripts/fuzz.sh`);
//! * `LEARNBOOK_FUZZ_SEED=n`: another seed;
//! * `LEARNBOOK_FUZZ_CASE=i`: replay case `i` alone (a failure prints it).

mod common;

use std::{
    collections::BTreeMap,
    io::Write,
    panic::{catch_unwind, AssertUnwindSafe},
    path::{Path, PathBuf},
    sync::{mpsc, Arc, Mutex, OnceLock},
    thread,
    time::{Duration, Instant},
};

use learnbook::{
    book::{
        build::build,
        check::check,
        ingest::{Filter, GameStream, RawGame},
        movetext::main_line_moves,
        polyglot::{export_entries, import, write_bin, ExportOptions, WeightMode},
        select::{Decision, Mode, OpeningBook},
        Book, BookSettings,
    },
    engine::{eval::evaluate, params::Weights, presets::preset},
    tune::{
        checkpoint::{Iteration, State},
        report, run,
        settings::{AdjudicationSpec, LimitSpec, Settings},
        spsa::{self, all_params, read_param_file, Schedule},
    },
    uci,
};
use rand::{rngs::StdRng, Rng, SeedableRng};
use shakmaty::{fen::Fen, CastlingMode, Chess, EnPassantMode, Position};

// ---------------------------------------------------------------- harness

struct FuzzMode {
    secs: Option<f64>,
    seed: u64,
    case: Option<u64>,
}

fn mode() -> FuzzMode {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    FuzzMode {
        secs: var("LEARNBOOK_FUZZ_SECS").map(|v| v.parse().expect("LEARNBOOK_FUZZ_SECS")),
        seed: var("LEARNBOOK_FUZZ_SEED")
            .map_or(20261123, |v| v.parse().expect("LEARNBOOK_FUZZ_SEED")),
        case: var("LEARNBOOK_FUZZ_CASE").map(|v| v.parse().expect("LEARNBOOK_FUZZ_CASE")),
    }
}

/// What a case did: the error messages it answered with (empty when
/// everything was accepted), or a broken property.
type CaseResult = Result<Vec<String>, String>;

/// The random stream of one case: a function of the seed, the target and
/// the case number alone, so a case replays by its number.
fn case_rng(seed: u64, target: &str, case: u64) -> StdRng {
    let t = target.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    StdRng::seed_from_u64(seed ^ t ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// An error message for the distinct-errors list: its first line, numbers
/// and quoted text replaced, temporary paths dropped.
fn normalize(msg: &str) -> String {
    let msg = msg.lines().next().unwrap_or("");
    let mut out = String::new();
    let mut chars = msg.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|d| d.is_ascii_digit() || *d == '.')
            {
                chars.next();
            }
            out.push('N');
        } else if c == '"' {
            while let Some(d) = chars.next() {
                match d {
                    '\\' => {
                        chars.next();
                    }
                    '"' => break,
                    _ => {}
                }
            }
            out.push_str("\"…\"");
        } else if c == '/' && (out.is_empty() || out.ends_with(' ')) {
            // A path: up to the next space or colon.
            while chars.peek().is_some_and(|d| *d != ' ' && *d != ':') {
                chars.next();
            }
            out.push_str("<path>");
        } else {
            out.push(c);
        }
    }
    // Parameter names (pst_rook_eg_c4, king_attack_cap) are one kind.
    let out: Vec<String> = out
        .split(' ')
        .map(|w| {
            let name = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
            if name.contains('_') && !["c_end", "r_end", "big_a"].contains(&name) {
                w.replace(name, "<name>")
            } else {
                w.to_string()
            }
        })
        .collect();
    out.join(" ").chars().take(140).collect()
}

/// Bytes for a failure message: the start and the end of them.
fn shorten(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= 400 {
        return format!("{text:?}");
    }
    let head: String = chars[..250].iter().collect();
    let tail: String = chars[chars.len() - 150..].iter().collect();
    format!("{head:?} … ({} chars) … {tail:?}", chars.len())
}

/// A message names a problem: it has a word of three letters or more.
fn names_a_problem(msg: &str) -> bool {
    msg.split(|c: char| !c.is_alphabetic())
        .any(|w| w.chars().count() >= 3)
}

/// Runs `cases` cases of one target (or `LEARNBOOK_FUZZ_SECS` seconds of
/// them), each on a worker thread with `timeout`, and fails on a panic, a
/// hang, an error message that says nothing, or a broken property.
fn fuzz<I, G, R>(name: &str, cases: u64, timeout: Duration, generate: G, run: R)
where
    I: Send + 'static,
    G: Fn(&mut StdRng) -> I,
    R: Fn(I) -> CaseResult + Send + Sync + 'static,
{
    let m = mode();
    let (tx_in, rx_in) = mpsc::channel::<I>();
    let (tx_out, rx_out) = mpsc::channel::<std::thread::Result<CaseResult>>();
    thread::Builder::new()
        .name(format!("fuzz-{name}"))
        .stack_size(64 << 20)
        .spawn(move || {
            for input in rx_in {
                let r = catch_unwind(AssertUnwindSafe(|| run(input)));
                if tx_out.send(r).is_err() {
                    break;
                }
            }
        })
        .expect("worker");
    let start = Instant::now();
    let (mut tried, mut rejecting) = (0u64, 0u64);
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    let (mut panics, mut hangs) = (0u64, 0u64);
    let mut case = m.case.unwrap_or(0);
    loop {
        let more = match (m.case, m.secs) {
            (Some(_), _) => tried == 0,
            (None, Some(secs)) => start.elapsed().as_secs_f64() < secs,
            (None, None) => tried < cases,
        };
        if !more {
            break;
        }
        let input = generate(&mut case_rng(m.seed, name, case));
        tx_in.send(input).expect("worker alive");
        tried += 1;
        let replay = format!("LEARNBOOK_FUZZ_SEED={} LEARNBOOK_FUZZ_CASE={case}", m.seed);
        match rx_out.recv_timeout(timeout) {
            Ok(Ok(Ok(messages))) => {
                if !messages.is_empty() {
                    rejecting += 1;
                }
                for msg in messages {
                    if !names_a_problem(&msg) {
                        failures.push(format!(
                            "case {case}: an error that says nothing: {} ({replay})",
                            shorten(msg.as_bytes())
                        ));
                    }
                    *errors.entry(normalize(&msg)).or_default() += 1;
                }
            }
            Ok(Ok(Err(broken))) => failures.push(format!("case {case}: {broken} ({replay})")),
            Ok(Err(payload)) => {
                panics += 1;
                let msg = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!("case {case}: panic: {msg} ({replay})"));
            }
            Err(_) => {
                // The worker is stuck in the case: nothing after it is safe.
                hangs += 1;
                failures.push(format!(
                    "case {case}: no answer within {timeout:?} (a hang) ({replay})"
                ));
                break;
            }
        }
        if failures.len() >= 20 {
            break;
        }
        case += 1;
    }
    drop(tx_in);
    let secs = start.elapsed().as_secs_f64();
    let mut out = format!(
        "fuzz {name}: {tried} inputs in {secs:.1} s (seed {}), {rejecting} answered with an error, \
         {panics} panics, {hangs} hangs, {} failures, {} distinct errors\n",
        m.seed,
        failures.len(),
        errors.len()
    );
    if m.secs.is_some() || m.case.is_some() {
        let mut by_count: Vec<_> = errors.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (msg, n) in by_count {
            out.push_str(&format!("  {n:>9}  {msg}\n"));
        }
    }
    for f in &failures {
        out.push_str(&format!("  FAILED {f}\n"));
    }
    // Straight to the terminal in long mode, so scripts/fuzz.sh logs it.
    let _ = std::io::stderr().write_all(out.as_bytes());
    assert!(failures.is_empty(), "{out}");
}

// -------------------------------------------------------------- mutations

/// Bytes that start or end structure in the inputs: delimiters, quotes,
/// escapes, line ends, a zero and a high byte.
const INTERESTING: &[u8] = b"{}()[]\"\\$;%*.\n\r \t0-=#+\x00\xff\xc2\xbd";

fn random_bytes(rng: &mut StdRng, max: usize) -> Vec<u8> {
    let n = rng.random_range(0..=max);
    match rng.random_range(0..3) {
        0 => (0..n).map(|_| rng.random()).collect(),
        1 => (0..n).map(|_| rng.random_range(0x20..0x7f)).collect(),
        _ => (0..n)
            .map(|_| {
                if rng.random_range(0..4) == 0 {
                    INTERESTING[rng.random_range(0..INTERESTING.len())]
                } else {
                    rng.random_range(0x20..0x7f)
                }
            })
            .collect(),
    }
}

/// 1 to 8 random edits of `seed`; `others` feed splices, `dict` tokens.
fn mutate(rng: &mut StdRng, seed: &[u8], others: &[Vec<u8>], dict: &[&[u8]]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..rng.random_range(1..=8) {
        let len = v.len();
        let at = rng.random_range(0..=len);
        let span = |rng: &mut StdRng| rng.random_range(0..=(len - at).min(64));
        match rng.random_range(0..10) {
            9 => {
                // A long line or token: a piece repeated up to 32 KB.
                let n = span(rng).max(1).min(len - at);
                let copy = v[at..at + n].repeat(rng.random_range(2..=(32 << 10) / n.max(1)));
                v.splice(at..at, copy);
            }
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.random_range(0..len);
                v[i] = INTERESTING[rng.random_range(0..INTERESTING.len())];
            }
            2 => {
                let bytes = random_bytes(rng, 16);
                v.splice(at..at, bytes);
            }
            3 => {
                let n = span(rng);
                v.drain(at..at + n);
            }
            4 => v.truncate(at),
            5 => {
                let n = span(rng);
                let copy = v[at..at + n].to_vec();
                let to = rng.random_range(0..=len);
                v.splice(to..to, copy);
            }
            6 if !dict.is_empty() => {
                let token = dict[rng.random_range(0..dict.len())];
                v.splice(at..at, token.iter().copied());
            }
            7 if !others.is_empty() => {
                let other = &others[rng.random_range(0..others.len())];
                let from = rng.random_range(0..=other.len());
                let n = rng.random_range(0..=(other.len() - from).min(256));
                let cut = span(rng);
                v.splice(at..at + cut, other[from..from + n].iter().copied());
            }
            _ => {
                // A number somewhere becomes an extreme one.
                let extreme: &[u8] = [
                    &b"0"[..],
                    b"-1",
                    b"255",
                    b"256",
                    b"65535",
                    b"4294967296",
                    b"18446744073709551616",
                    b"-9223372036854775809",
                    b"1e308",
                    b"1e999",
                    b"nan",
                    b"inf",
                ][rng.random_range(0..12)];
                if let Some(p) = v.iter().skip(at).position(u8::is_ascii_digit) {
                    let i = at + p;
                    let end = v[i..]
                        .iter()
                        .position(|c| !c.is_ascii_digit())
                        .map_or(v.len(), |e| i + e);
                    v.splice(i..end, extreme.iter().copied());
                }
            }
        }
    }
    v
}

/// A directory for one test's files, removed when it is dropped; in memory
/// where there is /dev/shm (SQLite's syncs cost nothing there).
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::Builder::new()
            .prefix("learnbook-fuzz")
            .tempdir_in(shm)
        {
            return d;
        }
    }
    tempfile::tempdir().expect("tempdir")
}

// -------------------------------------------------------------------- PGN

const BEFORE: &str =
    "[Event \"fuzz\"]\n[White \"Fuzz-Before\"]\n[Black \"x\"]\n[Result \"1-0\"]\n\n\
                      1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 1-0";
const AFTER: &str = "[Event \"fuzz\"]\n[White \"Fuzz-After\"]\n[Black \"y\"]\n[Result \"0-1\"]\n\n\
                     1. d4 d5 2. c4 e6 {QGD} 3. Nc3 Nf6 0-1";

/// Real games: the sample's master games and every game of tests/corpus.
fn pgn_seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut texts = vec![common::sample_text()];
        for f in [
            "mixed.pgn",
            "annotated.pgn",
            "bom-crlf.pgn",
            "latin1.pgn",
            "garbage.pgn",
            "truncated.pgn",
        ] {
            texts.push(std::fs::read(common::repo().join("tests/corpus").join(f)).expect("corpus"));
        }
        let mut games = Vec::new();
        for t in texts {
            let mut start = 0;
            for i in 1..t.len().saturating_sub(2) {
                if &t[i..i + 3] == b"\n\n[" {
                    games.push(t[start..i].to_vec());
                    start = i + 2;
                }
            }
            games.push(t[start..].to_vec());
        }
        games
    })
}

const PGN_DICT: &[&[u8]] = &[
    b"{",
    b"}",
    b"(",
    b")",
    b"[",
    b"]",
    b"\"",
    b"\\",
    b"$",
    b"$1",
    b"$300",
    b"!?",
    b"*",
    b"1-0",
    b"0-1",
    b"1/2-1/2",
    "½-½".as_bytes(),
    "1–0".as_bytes(),
    b"0-0",
    b"0-0-0",
    b"O-O",
    b"--",
    b"Z0",
    b"e8=Q",
    b"exd6",
    b"Kx",
    b"\n%",
    b";",
    b"\n\n",
    b"\r\n",
    b"\n[",
    b"[FEN \"",
    b"[SetUp \"1\"]\n",
    b"[Variant \"chess960\"]\n",
    b"[Result \"*\"]\n",
    b"\xef\xbb\xbf",
    b"1.",
    b"...",
    b"12...",
    b"\x00",
    b"\xff",
    b" e4 ",
    b" Nf3 ",
    b" a1=Q ",
];

struct PgnCase {
    bytes: Vec<u8>,
    /// Bytes of the mutated part, when framed by BEFORE and AFTER.
    middle: Option<Vec<u8>>,
}

fn gen_pgn(rng: &mut StdRng) -> PgnCase {
    let seeds = pgn_seeds();
    if rng.random_range(0..4) == 0 {
        return PgnCase {
            bytes: random_bytes(rng, 4096),
            middle: None,
        };
    }
    let mut middle = Vec::new();
    for _ in 0..rng.random_range(1..=3) {
        let seed = &seeds[rng.random_range(0..seeds.len())];
        middle.extend(mutate(rng, seed, seeds, PGN_DICT));
        middle.extend_from_slice(b"\n\n");
    }
    let mut bytes = format!("{BEFORE}\n\n").into_bytes();
    bytes.extend_from_slice(&middle);
    bytes.extend_from_slice(AFTER.as_bytes());
    bytes.push(b'\n');
    PgnCase {
        bytes,
        middle: Some(middle),
    }
}

/// Whether the reader may join AFTER to the mutated games: a comment left
/// open, a backslash in a tag value (it escapes the line end), or a tag
/// section that ends the middle (the next game's tags continue it).
fn may_swallow_after(middle: &[u8]) -> bool {
    if middle.contains(&b'{') || middle.contains(&b'\\') {
        return true;
    }
    let last = middle
        .split(|&c| c == b'\n')
        .map(|l| l.trim_ascii())
        .rfind(|l| !l.is_empty());
    last.is_some_and(|l| l.starts_with(b"[") || l.starts_with(b"%"))
}

fn run_pgn(case: PgnCase) -> CaseResult {
    let filter = Filter {
        max_ply: 40,
        min_elo: None,
        allow_duplicates: false,
        no_tails: false,
    };
    let mut stream = GameStream::from_bytes(case.bytes);
    let mut games: Vec<RawGame> = Vec::new();
    loop {
        let batch = stream.next_batch(64);
        if batch.is_empty() {
            break;
        }
        games.extend(batch);
    }
    let mut errors = Vec::new();
    if let Some(e) = &stream.error {
        errors.push(e.clone());
    }
    let mut used = Vec::new();
    for g in &games {
        // What the token check counts is what the reader handed over.
        if let Ok(n) = main_line_moves(&g.text) {
            if n as usize != g.sans.len() {
                return Err(format!(
                    "game {}: the token check counts {n} moves, the reader gave {}: {}",
                    g.number,
                    g.sans.len(),
                    shorten(&g.text)
                ));
            }
        }
        match g.validate(&filter) {
            Ok(_) => used.push(g.white.clone()),
            Err(reason) => errors.push(reason.to_string()),
        }
    }
    if let Some(middle) = &case.middle {
        if used.first().map(String::as_str) != Some("Fuzz-Before") {
            return Err(format!(
                "the game before the mutated ones was lost: used {used:?}"
            ));
        }
        if !may_swallow_after(middle) && used.last().map(String::as_str) != Some("Fuzz-After") {
            return Err(format!(
                "the game after the mutated ones was lost: used {used:?}, middle {}",
                shorten(middle)
            ));
        }
    }
    Ok(errors)
}

#[test]
fn pgn_ingest_survives_random_and_mutated_games() {
    fuzz("pgn", 3000, Duration::from_secs(20), gen_pgn, run_pgn);
}

// --------------------------------------------------------------- Polyglot

/// A book of the sample's games to ply 10 at `path`: the books the
/// readers' seeds are written from.
fn sample_book_to_ply_10(path: &Path) -> Book {
    let settings = BookSettings {
        max_ply: 10,
        ..BookSettings::default()
    };
    let mut book = Book::open_or_create(path, settings).expect("book");
    let filter = Filter {
        max_ply: 10,
        min_elo: None,
        allow_duplicates: false,
        no_tails: false,
    };
    build(&mut book, vec![common::sample()], &filter).expect("build");
    book
}

/// A real Polyglot book: the sample's games to ply 10, moves played twice.
fn polyglot_seed() -> &'static [u8] {
    static BIN: OnceLock<Vec<u8>> = OnceLock::new();
    BIN.get_or_init(|| {
        let scratch = scratch();
        let dir = scratch.path();
        let book = sample_book_to_ply_10(&dir.join("seed.sqlite"));
        let opts = ExportOptions {
            weights: WeightMode::Polyglot,
            min_games: 2,
            max_ply: None,
            engine_moves: true,
            side: learnbook::book::suite::SideToMove::Both,
        };
        let mut entries = export_entries(&book, &opts).expect("export");
        let path = dir.join("seed.bin");
        write_bin(&path, &mut entries).expect("write");
        std::fs::read(&path).expect("read")
    })
}

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

// ------------------------------------------------------------- checkpoint

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Real checkpoints: a few parameters and three iterations, and every
/// parameter with none.
fn checkpoint_seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let w = Weights::default();
        let make = |params: Vec<spsa::TuneParam>, iterations: u64| {
            let mut s = State::new(Settings {
                limit: LimitSpec::Clock("40/10+0.1".into()),
                pairs_per_iteration: 4,
                schedule: Schedule::new(10),
                seed: 7,
                openings: "openings.epd".into(),
                openings_count: 3,
                adjudication: AdjudicationSpec {
                    draw: Some((40, 8, 10)),
                    resign: Some((3, 400)),
                    max_moves: Some(200),
                },
                base: w.values(),
                params,
                engine: None,
                progress_match: None,
            });
            for k in 0..iterations {
                s.theta[0] += 1.5;
                s.history.push(Iteration {
                    number: k + 1,
                    wins: 3,
                    draws: 2,
                    losses: 3,
                    theta: s.theta.clone(),
                });
            }
            let scratch = scratch();
            let path = scratch.path().join("seed.ckpt");
            s.save(&path).expect("save");
            std::fs::read(&path).expect("read")
        };
        vec![
            make(all_params(&w)[..4].to_vec(), 3),
            make(all_params(&w), 0),
        ]
    })
}

const JSON_DICT: &[&[u8]] = &[
    b"-1",
    b"0",
    b"1e308",
    b"-1e308",
    b"1e-320",
    b"18446744073709551616",
    b"-0",
    b"null",
    b"true",
    b"\"x\"",
    b"[]",
    b"{}",
    b",",
    b":",
    b"\"min\":",
    b"\"max\":",
    b"\"c_end\":",
    b"\"index\":",
    b"\"iterations\":",
    b"\"alpha\":",
    b"\"theta\":[",
    b"\"history\":[",
    b"\"Nodes\":",
    b"\"Clock\":\"",
];

fn seal(body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "learnbook-tune-checkpoint 1 {} {:016x}\n",
        body.len(),
        fnv1a(body)
    )
    .into_bytes();
    out.extend_from_slice(body);
    out.push(b'\n');
    out
}

fn gen_checkpoint(rng: &mut StdRng) -> Vec<u8> {
    let seeds = checkpoint_seeds();
    let seed = &seeds[rng.random_range(0..seeds.len())];
    match rng.random_range(0..10) {
        0 => random_bytes(rng, 2048),
        1 | 2 => mutate(rng, seed, seeds, JSON_DICT),
        _ => {
            // The body changed and the header made to match, so that the
            // JSON and the consistency checks are reached.
            let nl = seed.iter().position(|&c| c == b'\n').unwrap_or(0);
            let body = &seed[nl + 1..seed.len() - 1];
            seal(&mutate(rng, body, &[], JSON_DICT))
        }
    }
}

fn run_checkpoint(dir: &Path, bytes: Vec<u8>) -> CaseResult {
    let path = dir.join("case.ckpt");
    std::fs::write(&path, &bytes).map_err(|e| e.to_string())?;
    let state = match State::load(&path) {
        Err(e) => return Ok(vec![format!("{e:#}")]),
        Ok(s) => s,
    };
    // What a resume and tune-report do with it before any game.
    let mut errors = Vec::new();
    let s = &state.settings;
    let base = state.base();
    let _ = spsa::weights_at(&base, &s.params, &state.theta);
    let k = state.iteration();
    let flip = spsa::flips(&mut spsa::iteration_rng(s.seed, k), s.params.len());
    let _ = spsa::perturbed(&s.schedule, &s.params, &state.theta, &flip, k);
    let mut theta = state.theta.clone();
    spsa::step(&s.schedule, &s.params, &mut theta, &flip, k, 3.0);
    let _ = run::summary(&state);
    let _ = report::csv(&state);
    if bytes.len().is_multiple_of(8) {
        if let Err(e) = report::plot(&state, &dir.join("case.png")) {
            errors.push(format!("{e:#}"));
        }
    }
    let out = dir.join("case.toml");
    match run::write_weights(&state, &out) {
        Err(e) => errors.push(format!("{e:#}")),
        Ok(()) => {
            Weights::load(&out).map_err(|e| format!("written weights do not load: {e:#}"))?;
        }
    }
    let again = dir.join("again.ckpt");
    state.save(&again).map_err(|e| format!("save: {e:#}"))?;
    if State::load(&again).map_err(|e| format!("a saved state does not load: {e:#}"))? != state {
        let back = State::load(&again).map_err(|e| format!("{e:#}"))?;
        let (a, b) = (format!("{state:?}"), format!("{back:?}"));
        let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let from = a[..at].char_indices().rev().nth(80).map_or(0, |(i, _)| i);
        return Err(format!(
            "a saved state loads as another state: …{}… became …{}…",
            a[from..].chars().take(160).collect::<String>(),
            b[from..].chars().take(160).collect::<String>()
        ));
    }
    Ok(errors)
}

#[test]
fn checkpoints_survive_random_and_mutated_files() {
    // Dropped (removed) when the test ends.
    let dir = scratch();
    let path = dir.path().to_path_buf();
    fuzz(
        "checkpoint",
        3000,
        Duration::from_secs(20),
        gen_checkpoint,
        move |bytes| run_checkpoint(&path, bytes),
    );
}

// ---------------------------------------------------------------- weights

fn weights_seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut seeds = Vec::new();
        for f in ["material-mobility.toml", "scalars.toml", "scrambled.toml"] {
            seeds.push(std::fs::read(common::repo().join("data/tune").join(f)).expect("data/tune"));
        }
        for name in ["default", "kaissa", "kotok"] {
            let (w, notes) = preset(name).expect("preset");
            seeds.push(format!("{notes}{}", w.to_toml(name)).into_bytes());
        }
        seeds
    })
}

const TOML_DICT: &[&[u8]] = &[
    b"nan",
    b"inf",
    b"-inf",
    b"+nan",
    b"1e400",
    b"9999999999",
    b"-9223372036854775808",
    b"0x10",
    b"0b1",
    b"\"x\"",
    b"[1, 2]",
    b"{}",
    b"{ c_end = 0 }",
    b"{ min = nan }",
    b"{ max = -1e9 }",
    b"{ r_end = inf }",
    b" = ",
    b"\n",
    b"*",
    b"pawn_mg",
    b"\"pst_knight_mg_*\"",
    b"[table]\n",
    b"[[arr]]\n",
    b"#",
    b"'''",
    b"\"\"\"",
    b"1979-05-27T07:32:00Z",
    b"true",
];

/// A few positions to evaluate with loaded weights.
fn positions() -> Vec<Chess> {
    [
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP3PPP/R2QKB1R w KQ - 1 9",
        "8/5k2/8/3K4/8/8/8/8 w - - 0 1",
        "6k1/5ppp/8/8/8/8/1P3PPP/6K1 b - - 0 40",
        "8/P7/8/8/8/8/6kp/4K3 w - - 0 1",
    ]
    .iter()
    .map(|f| {
        f.parse::<Fen>()
            .expect("fen")
            .into_position(CastlingMode::Standard)
            .expect("position")
    })
    .collect()
}

fn gen_weights(rng: &mut StdRng) -> Vec<u8> {
    let seeds = weights_seeds();
    match rng.random_range(0..10) {
        0 | 1 => return random_bytes(rng, 1024),
        2 => {
            let name = ["default", "kaissa", "kotok"][rng.random_range(0..3)];
            return mutate(rng, name.as_bytes(), &[], &[]);
        }
        _ => {}
    }
    let seed = &seeds[rng.random_range(0..seeds.len())];
    if rng.random() {
        return mutate(rng, seed, seeds, TOML_DICT);
    }
    // Values replaced line by line, so that the TOML still parses and the
    // loaders' own checks are reached.
    let text = String::from_utf8_lossy(seed);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..rng.random_range(1..=4) {
        let i = rng.random_range(0..lines.len());
        if let Some((key, _)) = lines[i].split_once(" = ") {
            let value = TOML_VALUES[rng.random_range(0..TOML_VALUES.len())];
            lines[i] = format!("{key} = {value}");
        }
    }
    lines.join("\n").into_bytes()
}

/// Values for a `name = value` line of a weights or parameter file.
const TOML_VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "2147483648",
    "-2147483649",
    "nan",
    "inf",
    "-inf",
    "1.5",
    "\"x\"",
    "[]",
    "{}",
    "{ c_end = 0 }",
    "{ c_end = -3 }",
    "{ c_end = nan }",
    "{ c_end = inf }",
    "{ r_end = 0 }",
    "{ r_end = nan }",
    "{ min = nan }",
    "{ max = nan }",
    "{ min = -nan, max = nan }",
    "{ min = -inf }",
    "{ max = inf }",
    "{ min = 10, max = 5 }",
    "{ min = 1e300 }",
    "{ min = 1 }",
    "{ max = 1 }",
    "{ step = 1 }",
    "{ c_end = \"x\" }",
    "{ min = [] }",
    "{ c_end = 1e-300, r_end = 1e300 }",
];

fn run_weights(dir: &Path, bytes: Vec<u8>) -> CaseResult {
    let mut errors = Vec::new();
    let Ok(text) = std::str::from_utf8(&bytes) else {
        // Not UTF-8: the file loader refuses it.
        let path = dir.join("case.toml");
        std::fs::write(&path, &bytes).map_err(|e| e.to_string())?;
        return match Weights::load(&path) {
            Ok(_) => Err("a file that is not UTF-8 loaded".into()),
            Err(e) => Ok(vec![format!("{e:#}")]),
        };
    };
    if bytes.len() <= 24 {
        // A preset name (`learnbook weights --preset`).
        if let Err(e) = preset(text.trim()) {
            errors.push(format!("{e:#}"));
        }
    }
    // Both loaders read every text; the errors counted are those of the
    // loader the text is meant for (a parameter file has `name = { ... }`),
    // the other's must name a problem too.
    let param_file = text.lines().any(|l| {
        l.split_once('=')
            .is_some_and(|(_, v)| v.trim_start().starts_with('{'))
    });
    let mut other = Vec::new();
    let (weights_errors, param_errors) = if param_file {
        (&mut other, &mut errors)
    } else {
        (&mut errors, &mut other)
    };
    match Weights::from_toml(text) {
        Err(e) => weights_errors.push(format!("{e:#}")),
        Ok(w) => {
            for p in w.params() {
                if p.value < p.min || p.value > p.max {
                    return Err(format!(
                        "{} = {} is outside [{}, {}]",
                        p.name, p.value, p.min, p.max
                    ));
                }
            }
            for pos in positions() {
                let _ = evaluate(&pos, &w);
            }
            let back =
                Weights::from_toml(&w.to_toml("fuzz")).map_err(|e| format!("round trip: {e:#}"))?;
            if back != w {
                return Err("weights change in a TOML round trip".into());
            }
        }
    }
    // The same text as an SPSA parameter file, and one step with it.
    match read_param_file(text, &Weights::default()) {
        Err(e) => param_errors.push(format!("{e:#}")),
        Ok(params) => {
            let schedule = Schedule::new(100);
            let mut theta: Vec<f64> = params.iter().map(|p| p.start).collect();
            let flip = spsa::flips(&mut spsa::iteration_rng(1, 0), params.len());
            let _ = spsa::perturbed(&schedule, &params, &theta, &flip, 0);
            spsa::step(&schedule, &params, &mut theta, &flip, 0, 2.0);
            let _ = spsa::weights_at(&Weights::default(), &params, &theta);
        }
    }
    if let Some(e) = other.iter().find(|e| !names_a_problem(e)) {
        return Err(format!("an error that says nothing: {e:?}"));
    }
    Ok(errors)
}

#[test]
fn weights_and_parameter_files_survive_random_and_mutated_text() {
    // Dropped (removed) when the test ends.
    let dir = scratch();
    let path = dir.path().to_path_buf();
    fuzz(
        "weights",
        3000,
        Duration::from_secs(20),
        gen_weights,
        move |bytes| run_weights(&path, bytes),
    );
}

// -------------------------------------------------------------------- UCI

/// The engine's output, captured in process.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("capture").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const UCI_COMMANDS: &[&str] = &[
    "uci",
    "isready",
    "ucinewgame",
    "setoption",
    "position",
    "go",
    "stop",
    "ponderhit",
    "quit",
    "eval",
];

const UCI_WORDS: &[&str] = &[
    "uci",
    "isready",
    "ucinewgame",
    "setoption",
    "name",
    "value",
    "position",
    "startpos",
    "fen",
    "moves",
    "go",
    "wtime",
    "btime",
    "winc",
    "binc",
    "movestogo",
    "movetime",
    "nodes",
    "depth",
    "mate",
    "infinite",
    "ponder",
    "searchmoves",
    "stop",
    "ponderhit",
    "quit",
    "eval",
    "Hash",
    "Clear",
    "Move",
    "Overhead",
    "OwnBook",
    "BookFile",
    "BookMode",
    "WeightsFile",
    "pawn_mg",
    "king_attack_divisor",
    "true",
    "false",
    "best",
    "weighted",
    "<empty>",
    "e2e4",
    "e7e5",
    "e1g1",
    "a7a8q",
    "0000",
    "0",
    "-1",
    "1",
    "3",
    "100",
    "4294967296",
    "99999999999999999999",
    "-",
    "w",
    "b",
    "KQkq",
    "8/8/8/8/8/8/8/8",
    "x",
    "\u{1F600}",
    "ünïcode",
];

/// A game of random legal moves from the start (up to `plies`), as UCI
/// moves, and the position it reaches.
fn random_line(rng: &mut StdRng, plies: usize) -> (Vec<String>, Chess) {
    let mut pos = Chess::default();
    let mut out = Vec::new();
    let plies = rng.random_range(0..=plies);
    for _ in 0..plies {
        let legal = pos.legal_moves();
        if legal.is_empty() {
            break;
        }
        let m = legal[rng.random_range(0..legal.len())];
        out.push(m.to_uci(CastlingMode::Standard).to_string());
        pos.play_unchecked(m);
    }
    (out, pos)
}

fn uci_line(rng: &mut StdRng, bin: &str) -> Vec<u8> {
    let toml = common::repo()
        .join("data/tune/scrambled.toml")
        .display()
        .to_string();
    let moves = random_line(rng, 60).0.join(" ");
    let fen = Fen::from_position(&random_line(rng, 30).1, EnPassantMode::Legal).to_string();
    let more = random_line(rng, 3).0.join(" ");
    let base = [
        "uci".to_string(),
        "isready".into(),
        "ucinewgame".into(),
        "eval".into(),
        "stop".into(),
        "ponderhit".into(),
        format!("position startpos moves {moves}"),
        format!("position fen {fen}"),
        format!("position fen {fen} moves {more}"),
        "go depth 2".into(),
        "go nodes 3000".into(),
        "go movetime 20".into(),
        "go wtime 1000 btime 1000 winc 10 binc 10 movestogo 20".into(),
        "go infinite".into(),
        "go ponder wtime 500 btime 500".into(),
        "go searchmoves e2e4 d2d4 depth 3".into(),
        "go mate 2".into(),
        "setoption name Hash value 8".into(),
        "setoption name Clear Hash".into(),
        "setoption name Move Overhead value 10".into(),
        "setoption name OwnBook value true".into(),
        format!("setoption name BookFile value {bin}"),
        "setoption name BookFile value no/such/book.bin".into(),
        "setoption name BookMode value weighted".into(),
        format!("setoption name WeightsFile value {toml}"),
        "setoption name WeightsFile value <empty>".into(),
        "setoption name pawn_mg value 90".into(),
        "quit".into(),
        String::new(),
    ][rng.random_range(0..29)]
    .clone();
    let mut words: Vec<String> = base.split(' ').map(str::to_string).collect();
    if words.is_empty() {
        words.push(String::new());
    }
    if rng.random_range(0..2) == 0 {
        for _ in 0..rng.random_range(1..=4) {
            let i = rng.random_range(0..=words.len());
            let w = UCI_WORDS[rng.random_range(0..UCI_WORDS.len())].to_string();
            match rng.random_range(0..4) {
                0 => words.insert(i, w),
                1 if i < words.len() => words[i] = w,
                2 if i < words.len() => {
                    words.remove(i);
                }
                _ if !words.is_empty() => {
                    let (a, b) = (
                        rng.random_range(0..words.len()),
                        rng.random_range(0..words.len()),
                    );
                    words.swap(a, b);
                }
                _ => {}
            }
        }
    }
    let mut line = words.join(" ").into_bytes();
    if rng.random_range(0..6) == 0 {
        line = mutate(rng, &line, &[], &[]);
    }
    // One line stays one line.
    for c in line.iter_mut() {
        if *c == b'\n' || *c == b'\r' {
            *c = b' ';
        }
    }
    cap_hash(line)
}

/// Asking for a hash table of gigabytes is a request for memory, not a
/// malformed line: the fuzzer keeps Hash at 256 MB or less.
fn cap_hash(line: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8_lossy(&line).to_ascii_lowercase();
    if !text.contains("hash") {
        return line;
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if line[i].is_ascii_digit() {
            let end = line[i..]
                .iter()
                .position(|c| !c.is_ascii_digit())
                .map_or(line.len(), |e| i + e);
            let big = end - i > 3
                || std::str::from_utf8(&line[i..end])
                    .ok()
                    .and_then(|n| n.parse::<u32>().ok())
                    .is_none_or(|n| n > 256);
            out.extend_from_slice(if big { b"16" } else { &line[i..end] });
            i = end;
        } else {
            out.push(line[i]);
            i += 1;
        }
    }
    out
}

fn gen_uci(rng: &mut StdRng, bin: &str) -> Vec<Vec<u8>> {
    (0..rng.random_range(1..=12))
        .map(|_| uci_line(rng, bin))
        .collect()
}

fn run_uci(lines: Vec<Vec<u8>>) -> CaseResult {
    static LOCK: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let captured = Captured::default();
    uci::capture_output(Some(Box::new(captured.clone())));
    // Each line is followed by isready: the readyok after it closes its answer.
    let mut input = Vec::new();
    for l in &lines {
        input.extend_from_slice(l);
        input.extend_from_slice(b"\nisready\n");
    }
    input.extend_from_slice(b"quit\n");
    let result = uci::run(std::io::Cursor::new(input), uci::Config::default());
    uci::capture_output(None);
    result.map_err(|e| format!("the engine loop failed: {e:#}"))?;
    let out = String::from_utf8_lossy(&captured.0.lock().expect("capture")).into_owned();
    if out.contains("search thread failed") {
        return Err(format!("the search thread panicked: {out}"));
    }
    // Split the output into each line's answer.
    let mut answers = out.split("readyok\n");
    let errors: Vec<String> = out
        .lines()
        .filter_map(|l| l.strip_prefix("info string "))
        .filter(|l| *l != "book move" && !l.starts_with("static eval"))
        .map(str::to_string)
        .collect();
    for line in &lines {
        let text = String::from_utf8_lossy(line);
        let first = text.split_whitespace().next().unwrap_or("");
        if first == "quit" {
            return Ok(errors);
        }
        let Some(mut answer) = answers.next().map(str::to_string) else {
            return Err(format!(
                "no answer to {text:?} (and the lines after it): {out}"
            ));
        };
        if first == "isready" {
            answer.push_str(answers.next().unwrap_or(""));
        }
        if !first.is_empty()
            && !UCI_COMMANDS.contains(&first)
            && !answer.contains("unknown command")
        {
            return Err(format!(
                "the unknown command {text:?} was not answered: {answer:?}"
            ));
        }
    }
    check_bestmoves(&lines, &out, &errors)?;
    Ok(errors)
}

/// Every `go` that was not refused is answered with one `bestmove` (by
/// `quit` at the latest).
fn check_bestmoves(lines: &[Vec<u8>], out: &str, errors: &[String]) -> Result<(), String> {
    let gos = lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .take_while(|l| l.split_whitespace().next() != Some("quit"))
        .filter(|l| l.split_whitespace().next() == Some("go"))
        .count();
    let refused = errors.iter().filter(|e| e.contains("go ignored")).count();
    let answered = out.lines().filter(|l| l.starts_with("bestmove")).count();
    if answered + refused != gos {
        return Err(format!(
            "{gos} go commands, {refused} refused, {answered} bestmoves: {out}"
        ));
    }
    Ok(())
}

#[test]
fn uci_survives_random_and_mutated_command_lines() {
    let scratch = scratch();
    let bin = scratch.path().join("book.bin");
    std::fs::write(&bin, polyglot_seed()).expect("write the book");
    let bin = bin.display().to_string();
    fuzz(
        "uci",
        100,
        Duration::from_secs(60),
        move |rng| gen_uci(rng, &bin),
        run_uci,
    );
}

/// Found by the fuzzer: `value` before `name` sliced args[4..1] and the
/// engine died.
#[test]
fn setoption_with_value_before_name_is_answered_not_a_panic() {
    let lines = vec![
        b"setoption value 5 name Hash".to_vec(),
        b"setoption name Hash value 8 value".to_vec(),
        b"setoption value name".to_vec(),
        b"go depth 1".to_vec(),
    ];
    let answers = run_uci(lines).expect("every line answered");
    assert!(
        answers
            .iter()
            .any(|a| a.contains("Hash must be 1..65536 MB")),
        "{answers:?}"
    );
}

/// Found by the fuzzer: a line that is not UTF-8 ended the engine's loop
/// (`BufRead::lines` fails on it), so every later command went unanswered.
#[test]
fn a_line_that_is_not_utf8_is_answered_and_the_session_goes_on() {
    let lines = vec![
        b"setoption name BookFile value M\xfcller.bin".to_vec(),
        b"\xff\xfe junk".to_vec(),
        b"position startpos moves e2e4".to_vec(),
        b"go depth 1".to_vec(),
    ];
    let answers = run_uci(lines).expect("every line answered");
    assert!(
        answers.iter().any(|a| a.contains("cannot open book")),
        "{answers:?}"
    );
}

// ------------------------------------------------------------ serve query

/// Tokens of `/masters` queries: parameter names, separators, encodings,
/// moves and FEN pieces.
const QUERY_DICT: &[&[u8]] = &[
    b"fen=",
    b"&play=",
    b"&moves=",
    b"&topGames=",
    b"&since=",
    b"&until=",
    b"&variant=standard",
    b",",
    b"%2C",
    b"%20",
    b"+",
    b"_",
    b"%",
    b"%2",
    b"%FF",
    b"%C3",
    b"%E2%82",
    b"%00",
    b"%0A",
    b"=",
    b"&",
    b"&&",
    b"e1g1",
    b"e1h1",
    b"e7e8q",
    b"a7a8n",
    b"0000",
    b"-",
    b"8/8/8/8/8/8/8/8",
    b"/8",
    b"KQkq",
    b"HAha",
    b" w ",
    b" b ",
    b"-1",
    b"99999999999999999999999999999",
];

/// A real query: a random legal line as `play`, or the position it reaches
/// as `fen` (spaces spelled any of lichess's three ways) and more moves as
/// `play`, with some of `moves`, `topGames`, `since`, `until`.
fn serve_query(rng: &mut StdRng) -> Vec<u8> {
    let (line, pos) = random_line(rng, 40);
    let mut parts = Vec::new();
    if rng.random() {
        let mode = if rng.random() {
            EnPassantMode::Legal
        } else {
            EnPassantMode::Always
        };
        let fen = Fen::from_position(&pos, mode).to_string();
        let space = ["+", "%20", "_"][rng.random_range(0..3)];
        let fen = fen.replace('/', if rng.random() { "/" } else { "%2F" });
        parts.push(format!("fen={}", fen.replace(' ', space)));
        let legal = pos.legal_moves();
        if !legal.is_empty() && rng.random() {
            let m = legal[rng.random_range(0..legal.len())];
            parts.push(format!("play={}", m.to_uci(CastlingMode::Standard)));
        }
    } else if !line.is_empty() || rng.random() {
        let comma = if rng.random_range(0..4) == 0 {
            "%2C"
        } else {
            ","
        };
        parts.push(format!("play={}", line.join(comma)));
    }
    for name in ["moves", "topGames", "since", "until"] {
        if rng.random_range(0..3) == 0 {
            let n: u32 = [0, 1, 5, 12, 15, 16, 2000][rng.random_range(0..7)];
            parts.push(format!("{name}={n}"));
        }
    }
    let len = parts.len();
    // Parameters come in any order.
    for i in (1..len).rev() {
        parts.swap(i, rng.random_range(0..=i));
    }
    parts.join("&").into_bytes()
}

fn serve_query_seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut rng = StdRng::seed_from_u64(7);
        let mut seeds: Vec<Vec<u8>> = (0..64).map(|_| serve_query(&mut rng)).collect();
        // lichess's documented example.
        seeds.push(b"play=d2d4,d7d5,c2c4,c7c6,c4d5".to_vec());
        seeds
    })
}

fn gen_serve_query(rng: &mut StdRng) -> Vec<u8> {
    match rng.random_range(0..10) {
        0 | 1 => random_bytes(rng, 512),
        2 => serve_query(rng),
        _ => {
            let seed = serve_query(rng);
            mutate(rng, &seed, serve_query_seeds(), QUERY_DICT)
        }
    }
}

fn run_serve_query(bytes: Vec<u8>) -> CaseResult {
    use learnbook::{
        book::{explorer_view::Explored, keys::polyglot_key},
        serve::{json, query},
    };
    let q = match query::parse(&bytes) {
        Err(e) => {
            if e.message.contains(['\n', '\r']) {
                return Err(format!("an error of more than one line: {:?}", e.message));
            }
            if e.status != 400 && e.status != 414 {
                return Err(format!("status {} for {:?}", e.status, e.message));
            }
            return Ok(vec![e.message]);
        }
        Ok(q) => q,
    };
    // An accepted query: limits kept, the line ends at the position.
    if q.top_games > 15 {
        return Err(format!("topGames {} above 15", q.top_games));
    }
    if q.line.last() != Some(&polyglot_key(&q.pos)) {
        return Err("the line does not end at the position".into());
    }
    // The answer for a position the book does not have: names looked up
    // along the line, JSON that reads back.
    let empty = Explored::not_in_book(polyglot_key(&q.pos));
    let text = serde_json::to_string(&json::masters(&q, &empty)).map_err(|e| e.to_string())?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    // The position asked again by the FEN the answer gives is the same
    // position, key for key (the book's keys hash a pseudo-legal en
    // passant square: found here, a FEN with legal en passant only lost it).
    let fen = v["fen"].as_str().ok_or("no fen in the answer")?;
    let again = query::parse(format!("fen={}", fen.replace(' ', "+")).as_bytes())
        .map_err(|e| format!("the answer's FEN {fen:?} is refused: {e}"))?;
    if polyglot_key(&again.pos) != polyglot_key(&q.pos) {
        return Err(format!("{fen:?} reads back as another position"));
    }
    Ok(Vec::new())
}

#[test]
fn serve_query_survives_random_and_mutated_queries() {
    fuzz(
        "serve-query",
        20000,
        Duration::from_secs(20),
        gen_serve_query,
        run_serve_query,
    );
}

/// `learnbook serve`'s bad queries, one per kind, as the fuzzer reports them.
#[test]
fn serve_query_errors_are_one_line_and_name_the_problem() {
    for q in [
        &b"fen=%FF"[..],
        b"fen=\n",
        b"play=e2e4\n",
        b"play=e2e5",
        b"moves=-1",
        b"topGames=x",
        b"%",
        b"play=e2e4&play=e2e4",
    ] {
        let messages = run_serve_query(q.to_vec()).expect("refused, not broken");
        assert_eq!(messages.len(), 1, "{q:?}");
        assert!(names_a_problem(&messages[0]), "{:?}", messages[0]);
    }
}

/// Found by the fuzzer: the answer's FEN left out an en passant square
/// that only a pseudo-legal capture uses (here exf3 would leave the king
/// in check), so asking that FEN again gave another Polyglot key, another
/// book position. The answer writes it now.
#[test]
fn the_answers_fen_keeps_a_pseudo_legal_en_passant_square() {
    let q = b"fen=r1bq1br1/pp2p1pp/n1p1kp1n/2P5/NP2p3/B2P3N/P3QPPP/R3KB1R+w+KQ+-+0+14&play=f2f4";
    assert_eq!(run_serve_query(q.to_vec()), Ok(Vec::new()));
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
            side: learnbook::book::suite::SideToMove::Both,
        };
        let path = dir.join("seed.abk");
        learnbook::book::abk::export(&book, &path, &opts).expect("export");
        std::fs::read(&path).expect("read")
    })
}

/// Values that hit an ABK field's edges: none, zero, the root, just past
/// the end, the largest.
fn abk_word(rng: &mut StdRng, entries: u32) -> u32 {
    let root = learnbook::book::abk::ROOT;
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
    use learnbook::book::abk::{ENTRIES_START, ENTRY_LEN};
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
    use learnbook::book::abk;
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
        experience::{write_entries, ExpEntry},
        keys::polyglot_key,
        sf_keys::{sf_key, SfMove},
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
    use learnbook::book::experience::import;
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
