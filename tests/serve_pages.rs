//! `learnbook serve`'s PGN endpoint, the page's files and headers, CORS,
//! `learn` writing while it serves, SIGINT and SIGTERM, and lichess's own
//! client (berserk) validated against lichess's OpenAPI schema
//! (`tests/py/explorer_compat.py`). The harness: `tests/common/serve.rs`.

mod common;

use std::process::{Command, Stdio};

use common::serve::*;
use common::{have, have_shared, ok, repo, s, sample, shared};
use shakmaty::{san::San, Chess, Position};

// ------------------------------------------------------------------ PGN

/// Checks a PGN as `/masters/pgn` writes it: the seven tag roster in
/// order, and movetext whose moves replay from the start.
fn check_pgn(text: &str) -> usize {
    let roster = ["Event", "Site", "Date", "Round", "White", "Black", "Result"];
    let tags: Vec<(&str, &str)> = text
        .lines()
        .take_while(|l| l.starts_with('['))
        .filter_map(|l| {
            let l = l.strip_prefix('[')?.strip_suffix(']')?;
            let (name, value) = l.split_once(' ')?;
            Some((name, value.trim_matches('"')))
        })
        .collect();
    let names: Vec<&str> = tags.iter().map(|t| t.0).take(7).collect();
    assert_eq!(names, roster, "{text}");
    let result = tags[6].1;
    assert!(["1-0", "0-1", "1/2-1/2", "*"].contains(&result), "{text}");
    let movetext: String = text
        .lines()
        .skip_while(|l| l.starts_with('[') || l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let movetext = match (movetext.find('{'), movetext.find('}')) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &movetext[..a], &movetext[b + 1..]),
        _ => movetext,
    };
    let mut pos = Chess::default();
    let mut plies = 0;
    let mut tokens = movetext.split_whitespace().peekable();
    while let Some(t) = tokens.next() {
        if tokens.peek().is_none() {
            assert_eq!(t, result, "the movetext ends with the result: {text}");
            break;
        }
        if t.ends_with('.') {
            continue;
        }
        let san: San = t
            .trim_end_matches(['+', '#'])
            .parse()
            .unwrap_or_else(|e| panic!("{t}: {e}: {text}"));
        let mv = san
            .to_move(&pos)
            .unwrap_or_else(|e| panic!("{t}: {e}: {text}"));
        pos.play_unchecked(mv);
        plies += 1;
    }
    plies
}

#[test]
fn games_as_pgn_replay() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    let ids = some_game_ids(&server, &book);
    assert!(ids.len() >= 5, "{ids:?}");
    for id in &ids {
        let r = server.get(&format!("/masters/pgn/{id}"));
        assert_eq!(r.status, 200, "{id}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("application/x-chess-pgn"));
        let plies = check_pgn(&r.text());
        assert!(plies > 0, "{id}: {}", r.text());
        // The singular spelling lichess keeps answers the same.
        assert_eq!(server.get(&format!("/master/pgn/{id}")).body, r.body);
    }
}

// ------------------------------------------------------- page and headers

#[test]
fn every_file_of_the_page_is_served_with_its_content_type() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    let web = repo().join("src/serve/web");
    let mut files = Vec::new();
    let mut dirs = vec![web.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("read web/") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                files.push(p);
            }
        }
    }
    assert!(files.iter().any(|f| f.ends_with("index.html")));
    for f in &files {
        let rel = f.strip_prefix(&web).expect("under web/");
        let rel = rel.to_str().expect("utf-8 name");
        let want = std::fs::read(f).expect("read");
        for target in [format!("/static/{rel}"), format!("/{rel}")] {
            let r = server.get(&target);
            assert_eq!(
                r.status,
                200,
                "{target} (rebuild after adding files to web/): {}",
                r.text()
            );
            assert_eq!(r.body, want, "{target}");
            let ct = r.header("content-type").unwrap_or("");
            let expected = match f.extension().and_then(|e| e.to_str()) {
                Some("html") => "text/html",
                Some("js") => "javascript",
                Some("css") => "text/css",
                Some("json") => "application/json",
                Some("svg") => "image/svg+xml",
                Some("png") => "image/png",
                _ => "",
            };
            assert!(ct.contains(expected), "{target}: {ct}");
        }
    }
    let index = server.get("/");
    assert_eq!(index.status, 200);
    assert!(index
        .header("content-type")
        .unwrap_or("")
        .starts_with("text/html"));
    assert_eq!(
        index.body,
        std::fs::read(web.join("index.html")).expect("index")
    );
}

#[test]
fn cors_only_when_asked() {
    let (_dir, book) = sample_book();
    let plain = Server::start(&book, &[]);
    for target in ["/masters", "/nope", "/masters?fen=x"] {
        assert_eq!(
            plain.get(target).header("access-control-allow-origin"),
            None
        );
    }
    drop(plain);
    let cors = Server::start(&book, &["--cors"]);
    for target in [
        "/masters",
        "/nope",
        "/masters?fen=x",
        "/bench/constant",
        "/",
    ] {
        assert_eq!(
            cors.get(target).header("access-control-allow-origin"),
            Some("*"),
            "{target}"
        );
    }
    let hyper_made = cors.raw(b"HELLO\r\n\r\n");
    assert_eq!(hyper_made.header("access-control-allow-origin"), Some("*"));
}

// -------------------------------------------------------- learning, signals

#[test]
fn learn_writes_while_the_book_is_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = dir.path().join("book.sqlite");
    let (first, second) = sample_halves(dir.path());
    ok(&["build", "--book", s(&book), s(&first)]);
    let server = Server::start(&book, &[]);
    let before = counts(&server.json("/masters")["games"]);
    let mut learn = Command::new(common::bin())
        .args(["learn", "--quiet", "--book", s(&book), s(&second)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn learn");
    let mut reads = 0;
    let mut seen = vec![before];
    loop {
        let done = learn.try_wait().expect("learn").is_some();
        // Each answer is one snapshot: its moves add up to its counts.
        for play in ["", "e2e4", "d2d4,g8f6"] {
            let v = server.json(&format!("/masters?play={play}&moves=1000"));
            let sum = v["moves"]
                .as_array()
                .expect("moves")
                .iter()
                .map(counts)
                .fold((0, 0, 0), |a, c| (a.0 + c.0, a.1 + c.1, a.2 + c.2));
            assert_eq!(sum, counts(&v), "{play}: {v}");
            if play.is_empty() {
                seen.push(counts(&v["games"]));
            }
            reads += 1;
        }
        if done {
            break;
        }
    }
    let out = learn.wait_with_output().expect("learn");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Games only ever grow, and end at all 1,458.
    for w in seen.windows(2) {
        assert!(w[1].0 >= w[0].0 && w[1].1 >= w[0].1 && w[1].2 >= w[0].2);
    }
    let last = counts(&server.json("/masters")["games"]);
    assert_eq!(last.0 + last.1 + last.2, 1458, "after {reads} reads");
    assert!(before.0 + before.1 + before.2 < 1458);
}

#[test]
fn sigint_stops_gracefully_with_130() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    server.assert_serving();
    assert_eq!(server.stop(libc::SIGINT), Some(130));
}

#[test]
fn sigterm_stops_gracefully_with_143() {
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &[]);
    server.assert_serving();
    assert_eq!(server.stop(libc::SIGTERM), Some(143));
}

#[test]
fn a_missing_book_or_a_bad_address_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("none.sqlite");
    let out = common::run(&["serve", "--book", s(&missing), "--bind", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no book"));
    let (_d, book) = sample_book();
    let out = common::run(&["serve", "--book", s(&book), "--bind", "not-an-address"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bind"));
}

// --------------------------------------------- lichess's client, its schema

fn have_python_modules(modules: &[&str]) -> bool {
    let code = modules
        .iter()
        .map(|m| format!("import {m}"))
        .collect::<Vec<_>>()
        .join("; ");
    let ok = Command::new("python3")
        .args(["-c", &code])
        .output()
        .is_ok_and(|o| o.status.success());
    have(
        &format!(
            "python3 with {} (pip install berserk chess pyyaml openapi-schema-validator)",
            modules.join(", ")
        ),
        ok,
    )
}

#[test]
fn berserk_reads_the_explorer_and_every_answer_fits_lichess_schema() {
    if !have_shared()
        || !have_python_modules(&["berserk", "chess", "yaml", "openapi_schema_validator"])
    {
        return;
    }
    let (_dir, book) = sample_book();
    let server = Server::start(&book, &["--cors"]);
    let ids = some_game_ids(&server, &book);
    let report = common::python(&[
        s(&repo().join("tests/py/explorer_compat.py")),
        &format!("http://{}/", server.addr),
        s(&sample()),
        s(&shared().join("lichess-explorer-spec/specs")),
        "--positions",
        "200",
        "--ids",
        &ids.join(","),
    ]);
    assert!(report.contains("positions: 200,"), "{report}");
    assert!(report.contains("schema errors: 0"), "{report}");
    server.assert_serving();
}
