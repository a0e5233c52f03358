//! The fuzzing harness of the `fuzz_*` tests, on stable Rust. Eight targets get random bytes and mutations of
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
//!
//! The targets: `fuzz_pgn.rs`, `fuzz_books.rs` (Polyglot, ABK, experience),
//! `fuzz_tune.rs` (checkpoints, weights and parameter files), `fuzz_uci.rs`,
//! `fuzz_serve.rs`.

use std::{
    collections::BTreeMap,
    io::Write,
    panic::{catch_unwind, AssertUnwindSafe},
    path::Path,
    sync::{mpsc, OnceLock},
    thread,
    time::{Duration, Instant},
};

use learnbook::book::{
    build::build,
    formats::polyglot::{export_entries, write_bin, ExportOptions, WeightMode},
    pgn::validate::Filter,
    Book, BookSettings,
};
use rand::{rngs::StdRng, Rng, SeedableRng};
use shakmaty::{CastlingMode, Chess, Position};

// ---------------------------------------------------------------- harness

pub struct FuzzMode {
    pub secs: Option<f64>,
    pub seed: u64,
    pub case: Option<u64>,
}

pub fn mode() -> FuzzMode {
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
pub type CaseResult = Result<Vec<String>, String>;

/// The random stream of one case: a function of the seed, the target and
/// the case number alone, so a case replays by its number.
pub fn case_rng(seed: u64, target: &str, case: u64) -> StdRng {
    let t = target.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    StdRng::seed_from_u64(seed ^ t ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// An error message for the distinct-errors list: its first line, numbers
/// and quoted text replaced, temporary paths dropped.
pub fn normalize(msg: &str) -> String {
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
pub fn shorten(bytes: &[u8]) -> String {
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
pub fn names_a_problem(msg: &str) -> bool {
    msg.split(|c: char| !c.is_alphabetic())
        .any(|w| w.chars().count() >= 3)
}

/// Runs `cases` cases of one target (or `LEARNBOOK_FUZZ_SECS` seconds of
/// them), each on a worker thread with `timeout`, and fails on a panic, a
/// hang, an error message that says nothing, or a broken property.
pub fn fuzz<I, G, R>(name: &str, cases: u64, timeout: Duration, generate: G, run: R)
where
    I: Send + 'static,
    G: Fn(&mut StdRng) -> I,
    R: Fn(I) -> CaseResult + Send + Sync + 'static,
{
    // A hang guard, not a time limit: a case that takes milliseconds on a
    // quiet machine may take many seconds on a busy one.
    let timeout = timeout.max(Duration::from_secs(120));
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
pub const INTERESTING: &[u8] = b"{}()[]\"\\$;%*.\n\r \t0-=#+\x00\xff\xc2\xbd";

pub fn random_bytes(rng: &mut StdRng, max: usize) -> Vec<u8> {
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
pub fn mutate(rng: &mut StdRng, seed: &[u8], others: &[Vec<u8>], dict: &[&[u8]]) -> Vec<u8> {
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
pub fn scratch() -> tempfile::TempDir {
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

// ------------------------------------------------- books the targets share

/// A book of the sample's games to ply 10 at `path`: the books the
/// readers' seeds are written from.
pub fn sample_book_to_ply_10(path: &Path) -> Book {
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
    build(&mut book, vec![super::sample()], &filter).expect("build");
    book
}

/// A real Polyglot book: the sample's games to ply 10, moves played twice.
pub fn polyglot_seed() -> &'static [u8] {
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
            side: learnbook::book::formats::suite::SideToMove::Both,
        };
        let mut entries = export_entries(&book, &opts).expect("export");
        let path = dir.join("seed.bin");
        write_bin(&path, &mut entries).expect("write");
        std::fs::read(&path).expect("read")
    })
}

/// A game of random legal moves from the start (up to `plies`), as UCI
/// moves, and the position it reaches.
pub fn random_line(rng: &mut StdRng, plies: usize) -> (Vec<String>, Chess) {
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
