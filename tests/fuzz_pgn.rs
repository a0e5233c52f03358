//! Fuzzing PGN ingest (the harness and its environment: `tests/common/fuzz.rs`).

mod common;

use std::{sync::OnceLock, time::Duration};

use common::fuzz::*;
use learnbook::book::pgn::{
    input::{GameStream, RawGame},
    movetext::main_line_moves,
    validate::Filter,
};
use rand::{rngs::StdRng, Rng};

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
