//! Fuzzing `learnbook serve`'s `/masters` query parser (the harness and its
//! environment: `tests/common/fuzz.rs`).

mod common;

use std::{sync::OnceLock, time::Duration};

use common::fuzz::*;
use rand::{rngs::StdRng, Rng, SeedableRng};
use shakmaty::{fen::Fen, CastlingMode, EnPassantMode, Position};

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
        book::{keys::polyglot_key, view::explorer::Explored},
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
