//! `learnbook serve` as a client sees it: the real binary on
//! `--bind 127.0.0.1:0` over a book of the sample's master games, asked
//! over plain TCP (the harness: `tests/common/serve.rs`). The lichess
//! response shape, the counts' consistency, every bad input (each answered
//! with a status and a one-line JSON error, the server answering a good
//! request after it). The PGN endpoint, the page and signals are in
//! `serve_pages.rs`, the limits in `serve_limits.rs`. No test asserts a
//! duration.

mod common;

use std::io::{Read, Write};

use common::serve::*;
use shakmaty::Chess;

// ------------------------------------------------------- the good answers

#[test]
fn the_start_position_in_lichess_shape() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    let v = server.json("/masters");
    check_masters(&v, &Chess::default());
    // Every move listed (the default, 12, is more than the start has here)
    // sums to the top-level counts, and all 1,458 games start here.
    let moves = v["moves"].as_array().expect("moves");
    assert!(!moves.is_empty() && moves.len() <= 12);
    let (w, d, b) = counts(&v);
    let sum = moves
        .iter()
        .map(counts)
        .fold((0, 0, 0), |a, c| (a.0 + c.0, a.1 + c.1, a.2 + c.2));
    if moves.len() < 12 {
        assert_eq!(sum, (w, d, b));
    }
    let (gw, gd, gb) = counts(&v["games"]);
    assert_eq!(gw + gd + gb, 1458);
    assert_eq!(v["inBook"], true);
    assert!(v["opening"].is_null(), "the start has no name: {v}");
    let d4 = moves.iter().find(|m| m["uci"] == "d2d4").expect("1. d4");
    assert_eq!(d4["san"], "d4");
    assert_eq!(d4["opening"]["name"], "Queen's Pawn Game");
    // The book's choice is flagged on its move alone.
    let choice = v["choice"].as_str().expect("a choice at the start");
    for m in moves {
        assert_eq!(m["choice"] == true, m["uci"] == choice, "{m}");
    }
    server.assert_serving();
}

#[test]
fn the_sicilian_is_named_after_play() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    let v = server.json("/masters?play=e2e4,c7c5");
    check_masters(&v, &after(&["e2e4", "c7c5"]));
    assert_eq!(v["opening"]["eco"], "B20");
    assert_eq!(v["opening"]["name"], "Sicilian Defense");
    // From the FEN itself, spaces in the three spellings lichess takes.
    let fen = "rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2";
    for spelled in [
        fen.replace(' ', "+"),
        fen.replace(' ', "%20"),
        fen.replace(' ', "_"),
    ] {
        let w = server.json(&format!("/masters?fen={spelled}"));
        assert_eq!(w["opening"]["name"], "Sicilian Defense", "{spelled}");
        assert_eq!(w["moves"], v["moves"]);
    }
    // A move's name is the name of the position it reaches; after 1. e4
    // the move c5 is the Sicilian.
    let e4 = server.json("/masters?play=e2e4");
    let c5 = e4["moves"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["uci"] == "c7c5"))
        .expect("1...c5 in the sample");
    assert_eq!(c5["opening"]["name"], "Sicilian Defense");
    // Off the named lines the opening is the last name on the way.
    let off = server.json("/masters?play=e2e4,c7c5,g1f3,h7h5");
    assert_eq!(off["opening"]["name"], "Sicilian Defense");
    assert_eq!(off["opening"]["eco"], "B27");
    assert_eq!(off["inBook"], false);
    assert_eq!(off["moves"].as_array().map(Vec::len), Some(0));
}

#[test]
fn counts_add_up_along_the_popular_line() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    let mut line: Vec<String> = Vec::new();
    for _ in 0..12 {
        let play = line.join(",");
        let v = server.json(&format!("/masters?play={play}&moves=1000"));
        let refs: Vec<&str> = line.iter().map(String::as_str).collect();
        check_masters(&v, &after(&refs));
        let moves = v["moves"].as_array().expect("moves");
        if moves.is_empty() {
            break;
        }
        let sum = moves
            .iter()
            .map(counts)
            .fold((0, 0, 0), |a, c| (a.0 + c.0, a.1 + c.1, a.2 + c.2));
        assert_eq!(sum, counts(&v), "the top-level counts are the moves' sum");
        let p: f64 = moves
            .iter()
            .map(|m| m["weighted"].as_f64().unwrap_or(0.0))
            .sum::<f64>()
            + v["leaveWeight"].as_f64().unwrap_or(0.0);
        assert!((p - 1.0).abs() < 1e-6, "probabilities sum to {p}: {v}");
        // The next position's games are this move's games, and those of
        // the other lines that transpose to it.
        let top = &moves[0];
        line.push(top["uci"].as_str().expect("uci").to_string());
        let next = server.json(&format!("/masters?play={}&moves=0", line.join(",")));
        let (tw, td, tb) = counts(top);
        let (nw, nd, nb) = counts(&next["games"]);
        assert!(nw >= tw && nd >= td && nb >= tb, "after {line:?}: {next}");
    }
    assert!(line.len() >= 8, "the popular line is long: {line:?}");
}

#[test]
fn moves_and_top_games_are_cut_and_clamped() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    let all = server.json("/masters?moves=1000");
    let n = all["moves"].as_array().map_or(0, Vec::len);
    assert!(n >= 3);
    assert_eq!(
        server.json("/masters?moves=2")["moves"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    assert_eq!(
        server.json("/masters?moves=0")["moves"]
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    let huge = server.json(
        "/masters?moves=1000000000000000000000000000000&topGames=1000000000000000000000000000000",
    );
    assert_eq!(huge["moves"], all["moves"]);
    assert!(huge["topGames"].as_array().map_or(99, Vec::len) <= 15);
    assert_eq!(
        server.json("/masters?topGames=0")["topGames"]
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    // lichess's other parameters are ignored.
    let other = server.json("/masters?variant=standard&speeds=blitz&moves=1000");
    assert_eq!(other["moves"], all["moves"]);
}

// --------------------------------------------------------------- bad input

#[test]
fn an_invalid_fen_is_a_400_naming_the_fen() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    for fen in [
        "xyz",
        "",
        "8/8/8/8/8/8/8/8+w+-+-+0+1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR+x+KQkq+-+0+1",
        "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR+w+KQkq+-+0+1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR%0Aw",
    ] {
        server
            .get(&format!("/masters?fen={fen}"))
            .assert_error(&[400], &["fen"]);
        server.assert_serving();
    }
}

#[test]
fn an_illegal_or_malformed_play_move_is_a_400() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    for (play, word) in [
        ("e2e5", "illegal move"),
        ("e2e4,e2e4", "illegal move"),
        ("e1g1", "illegal move"),
        ("e2e4,,e7e5", "invalid move"),
        ("Nf3", "invalid move"),
        ("e2e4%00", "invalid move"),
        ("e7e8x", "invalid move"),
        ("e2e4%2Ce7e5%2Cz9z9", "move 3"),
    ] {
        server
            .get(&format!("/masters?play={play}"))
            .assert_error(&[400], &["play", word]);
        server.assert_serving();
    }
}

#[test]
fn absurd_numbers_are_400s() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    for (q, name) in [
        ("moves=-1", "moves"),
        ("moves=-1000000000000000000000000000000", "moves"),
        ("moves=abc", "moves"),
        ("moves=1e3", "moves"),
        ("moves=", "moves"),
        ("moves=12&moves=3", "moves"),
        ("topGames=-5", "topGames"),
        ("topGames=ten", "topGames"),
        ("topGames=3.5", "topGames"),
        ("since=abc", "since"),
        ("until=2020-01", "until"),
    ] {
        server
            .get(&format!("/masters?{q}"))
            .assert_error(&[400], &[name]);
        server.assert_serving();
    }
}

#[test]
fn a_one_megabyte_query_is_refused_with_json() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    let play = "e2e4,".repeat((1 << 20) / 5);
    let r = server.get(&format!("/masters?play={play}"));
    // Past hyper's 400 KB head buffer: HTTP's 431 (414 for a target that
    // fits the buffer but not the URI limit).
    r.assert_error(&[414, 431], &["too"]);
    server.assert_serving();
    // 50 KB: read, and refused by the router as too long a query.
    let r = server.get(&format!("/masters?play={}", &play[..50_000]));
    r.assert_error(&[414], &["query too long"]);
    // 100 KB: past the URI limit (64 KB).
    let r = server.get(&format!("/masters?play={}", &play[..100_000]));
    r.assert_error(&[414], &["uri too long"]);
    // A megabyte of headers.
    let big = format!(
        "GET /masters HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(1 << 20)
    );
    server
        .raw(big.as_bytes())
        .assert_error(&[431], &["too large"]);
    server.assert_serving();
}

#[test]
fn bytes_that_are_not_utf8_and_bad_percent_encoding_are_400s() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    // Raw bytes that are not ASCII in the target: not HTTP (hyper's 400).
    let raw: &[u8] = b"GET /masters?fen=\xff\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    server.raw(raw).assert_error(&[400], &["malformed"]);
    server.assert_serving();
    // Percent-encoded bytes that are not UTF-8.
    server
        .get("/masters?fen=%FF%FE")
        .assert_error(&[400], &["fen", "UTF-8"]);
    server
        .get("/masters?play=e2e4%C3")
        .assert_error(&[400], &["play", "UTF-8"]);
    // Bad percent-encoding.
    for q in ["fen=%zz", "play=e2e4%2", "moves=%", "%G1=1"] {
        server
            .get(&format!("/masters?{q}"))
            .assert_error(&[400], &["percent"]);
    }
    server
        .get("/static/%ff.js")
        .assert_error(&[400], &["UTF-8"]);
    // Not HTTP at all.
    server
        .raw(b"HELLO\r\n\r\n")
        .assert_error(&[400], &["malformed"]);
    server.assert_serving();
}

#[test]
fn traversal_in_static_paths_is_refused() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    for path in [
        "/static/../Cargo.toml",
        "/static/../../../../etc/passwd",
        "/../Cargo.toml",
        "/static/%2e%2e/Cargo.toml",
        "/static/%2E%2E%2FCargo.toml",
        "/static/..%2f..%2fsrc%2fmain.rs",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/static/.%2e/Cargo.toml",
        "/static/vendor/..%5c..%5cCargo.toml",
        "/static//etc/passwd",
        "/static/%00",
    ] {
        let r = server.get(path);
        r.assert_error(&[400, 404], &[]);
        assert!(
            !r.text().contains("[package]") && !r.text().contains("root:"),
            "{path}"
        );
        server.assert_serving();
    }
    // The dot segments: a clear 400.
    server
        .get("/static/%2e%2e/Cargo.toml")
        .assert_error(&[400], &["bad path", ".."]);
}

#[test]
fn unknown_and_malformed_game_ids() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    server
        .get("/masters/pgn/0123456789abcdef")
        .assert_error(&[404], &["game not found", "0123456789abcdef"]);
    for id in [
        "zz",
        "aAbqI4ey",
        "0123456789abcdef0",
        "0123456789abcdeg",
        "%30123456789abcdef",
        "-123456789abcdef",
    ] {
        server
            .get(&format!("/masters/pgn/{id}"))
            .assert_error(&[400], &["invalid game id"]);
        server.assert_serving();
    }
    server
        .get("/masters/pgn/")
        .assert_error(&[404], &["not found"]);
    server
        .get("/masters/pgn/a/b")
        .assert_error(&[404], &["not found"]);
}

#[test]
fn a_client_that_never_finishes_its_request_is_cut_off() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    // Three such clients at once, each on its own connection.
    std::thread::scope(|scope| {
        for partial in [
            &b"GET /masters?play=e2e4 HTTP/1.1\r\nHost: x\r\n"[..],
            b"GET /mas",
            b"",
        ] {
            let server = &server;
            scope.spawn(move || {
                let mut stream = server.connect();
                stream.write_all(partial).expect("send a partial head");
                // The server gives up on the head (after HEADER_READ_TIMEOUT,
                // 5 s): the connection is closed, with no answer or a 408.
                let mut bytes = Vec::new();
                let _ = stream.read_to_end(&mut bytes);
                let r = Response::parse(&bytes);
                assert!(
                    r.status == 0 || r.status == 408,
                    "{}: {}",
                    r.status,
                    r.text()
                );
            });
        }
        // Meanwhile, and after, the others are served.
        server.assert_serving();
    });
    server.assert_serving();
}

#[test]
fn unknown_paths_and_methods_are_json_404_and_405() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    server
        .get("/nope")
        .assert_error(&[404], &["not found", "/nope"]);
    server
        .get("/masters/nope")
        .assert_error(&[404], &["not found"]);
    server
        .get("/lichess?fen=x")
        .assert_error(&[404], &["not found"]);
    let post = server.raw(
        b"POST /masters HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    );
    post.assert_error(&[405], &["method not allowed", "POST"]);
    let del = server.raw(b"DELETE /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    del.assert_error(&[405], &["method not allowed"]);
    server.assert_serving();
}

#[test]
fn the_constant_benchmark_endpoint() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    let r = server.get("/bench/constant");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.text(), r#"{"constant":true}"#);
}
