//! The explorer page in a real browser: Debian's chromium, headless, driven
//! through `chromedriver` over the W3C WebDriver protocol (a small blocking
//! client in `tests/common/browser.rs`: HTTP/1.1 over a `TcpStream`, JSON by
//! serde_json). The
//! test builds and analyses a book from the sample games, starts
//! `learnbook serve` on a free port, loads the page and uses it as a
//! person would: clicks a row of the moves table, plays a move on the
//! board by clicking two squares, goes back with the button and the arrow
//! keys, flips the board, pastes a FEN and a PGN, opens a top game's PGN,
//! and reloads a linked position. Every check waits for the page's
//! `body[data-ready="1"]` (the current position's answer rendered) and
//! compares with what `/masters` answers.
//!
//! The page runs under the server's Content-Security-Policy: every
//! violation the browser reports (a `securitypolicyviolation` event,
//! recorded from before the page's first script) fails the test, and one
//! made on purpose at the end shows that they are seen. At 1280x800 and
//! 1200x800 the board and the moves table stand side by side (their boxes
//! compared), and a screenshot is taken.
//!
//! `LEARNBOOK_SCREENSHOTS=1` also writes `docs/explorer-start.png`,
//! `docs/explorer-deep.png` and `docs/explorer-1280.png`; `LEARNBOOK_EXPLORER_BOOK=PATH` serves that
//! book instead of building the sample's (the screenshots in `docs/` are
//! of the master games' book).

mod common;

use common::{browser::*, *};
use serde_json::{json, Value};
use std::{
    path::{Path, PathBuf},
    process::Command,
};

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
const AFTER_E4: &str = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";
const AFTER_C5: &str = "rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2";
const NAJDORF_PGN: &str = "1. e4 c5 2. Nf3 d6 3. d4 cxd4 4. Nxd4 Nf6 5. Nc3 a6";
const NAJDORF: &str = "rnbqkb1r/1p2pppp/p2p1n2/8/3NP3/2N5/PPP2PPP/R1BQKB1R w KQkq - 0 6";
/// A position pasted as a FEN: the Ruy Lopez's main line after 9.h3.
const PASTED: &str = "r1bq1rk1/2p1bppp/p1np1n2/1p2p3/4P3/1BP2N1P/PP1P1PP1/RNBQR1K1 b - - 0 9";

// ------------------------------------------------------------------ the test

/// The moves table shows exactly `/masters`'s moves with their games, and
/// its total row their sum.
/// A book value as the page writes it: sign (− for minus, ± for 0) and
/// three decimals, or – for none.
fn value_text(v: &Value) -> String {
    match v.as_f64() {
        None => "–".to_string(),
        Some(x) => {
            let sign = if x > 0.0 {
                "+"
            } else if x < 0.0 {
                "−"
            } else {
                "±"
            };
            format!("{sign}{:.3}", x.abs())
        }
    }
}

fn assert_table(page: &Value, api: &Value) {
    let rows = page["rows"].as_array().expect("rows");
    let moves = api["moves"].as_array().expect("moves");
    let digits = |v: &Value| -> u64 {
        v.as_str()
            .expect("text")
            .chars()
            .filter(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap_or(0)
    };
    let games = |m: &Value| {
        ["white", "draws", "black"]
            .map(|k| m[k].as_u64().expect(k))
            .iter()
            .sum::<u64>()
    };
    assert_eq!(rows.len(), moves.len(), "rows {page} against {api}");
    for (row, m) in rows.iter().zip(moves) {
        assert_eq!(row["uci"], m["uci"], "row order: {page}");
        assert_eq!(row["san"], m["san"]);
        assert_eq!(digits(&row["games"]), games(m), "games of {}", m["uci"]);
        assert_eq!(row["choice"], m["choice"], "choice mark of {}", m["uci"]);
        assert_eq!(
            row["value"] == "–",
            m["value"].is_null(),
            "value of {}",
            m["uci"]
        );
        // The score the choice ranks by, beside the value: as the API has it.
        assert_eq!(
            row["score"].as_str().expect("score"),
            value_text(&m["score"]),
            "score of {}",
            m["uci"]
        );
        let weighted = m["weighted"].as_f64().expect("weighted");
        assert_eq!(
            row["book"].as_str().expect("book").ends_with('%'),
            weighted > 0.0,
            "probability of {}: {row}",
            m["uci"]
        );
        assert_eq!(
            row["eval"],
            score_text(&m["analysis"]),
            "eval of {}",
            m["uci"]
        );
    }
    if !api["analysis"].is_null() {
        let summary = page["analysis"].as_str().expect("analysis");
        assert!(
            summary.starts_with(&score_text(&api["analysis"])),
            "{summary} against {}",
            api["analysis"]
        );
    }
    assert_eq!(digits(&page["total"]), games(api), "total row");
    let top = api["topGames"].as_array().expect("topGames");
    let ids: Vec<&Value> = top.iter().map(|g| &g["id"]).collect();
    let shown: Vec<&Value> = page["games"].as_array().expect("games").iter().collect();
    assert_eq!(shown, ids, "top games");
}

/// A search score as the page writes it: pawns with two decimals and a
/// sign (`+0.31`, `−0.05`, `±0.00`), mate as `#3` or `#−3`, or `–` for
/// none.
fn score_text(analysis: &Value) -> String {
    let Some(cp) = analysis["score"].as_i64() else {
        return "–".to_string();
    };
    if cp.abs() >= 29_000 {
        // Mate in n moves: (30000 - plies) centipawns.
        let moves = (30_000 - cp.abs() + 1) / 2;
        return format!("{}{moves}", if cp > 0 { "#" } else { "#−" });
    }
    let sign = match cp.signum() {
        1 => "+",
        -1 => "−",
        _ => "±",
    };
    format!("{sign}{}.{:02}", cp.abs() / 100, cp.abs() % 100)
}

fn has_row(page: &Value, uci: &str) -> bool {
    page["rows"]
        .as_array()
        .is_some_and(|r| r.iter().any(|row| row["uci"] == uci))
}

#[test]
fn explorer_page_in_chromium() {
    if !have("chromium", Path::new(CHROMIUM).is_file())
        || !have("chromedriver", Path::new(CHROMEDRIVER).is_file())
    {
        return;
    }
    let screenshots = std::env::var("LEARNBOOK_SCREENSHOTS").is_ok_and(|v| v == "1");
    let dir = tempfile::tempdir().expect("tempdir");
    let book: PathBuf = match std::env::var_os("LEARNBOOK_EXPLORER_BOOK") {
        Some(p) => PathBuf::from(p),
        None => {
            let book = dir.path().join("sample.sqlite");
            ok(&["build", "--book", s(&book), s(&sample())]);
            // The positions with the most games (and their children):
            // enough for the page's analysis columns, in a few seconds.
            ok(&["analyze", "--book", s(&book), "--min-games", "150"]);
            book
        }
    };

    let mut serve = Command::new(bin());
    serve.args(["serve", "--book", s(&book), "--bind", "127.0.0.1:0"]);
    let (_server, line) = start_and_read(serve, "listening on http://", false);
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("the URL")
        .to_string();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();

    let browser = Browser::start(1360, 900);

    // The start position: e4 and d4 rows, games as /masters counts them.
    browser.goto(&url);
    browser.wait_position(START);
    let api = masters(&addr, START, &[]);
    assert!(!api["analysis"].is_null(), "the start is analysed: {api}");
    let page = browser.state();
    assert!(has_row(&page, "e2e4") && has_row(&page, "d2d4"), "{page}");
    assert_table(&page, &api);
    if screenshots {
        browser.park_mouse();
        browser.screenshot(&repo().join("docs/explorer-start.png"));
    }

    // A click on the e4 row plays it.
    browser.click("#moves tbody tr[data-uci='e2e4']");
    browser.wait_position(AFTER_E4);
    let page = browser.state();
    assert_eq!(page["board"], AFTER_E4.split(' ').next().unwrap(), "{page}");
    assert_eq!(page["line"], json!(["e4"]));
    let api = masters(&addr, START, &["e2e4"]);
    assert_eq!(api["fen"], AFTER_E4);
    assert_table(&page, &api);
    assert!(has_row(&page, "c7c5"), "{page}");

    // ...c5 on the board: a click on c7, then one on c5.
    let c7 = browser.square_point("c7", true);
    let c5 = browser.square_point("c5", true);
    browser.click_points(&[c7, c5]);
    browser.wait_position(AFTER_C5);
    let page = browser.state();
    assert_eq!(page["board"], AFTER_C5.split(' ').next().unwrap(), "{page}");
    assert_eq!(page["line"], json!(["e4", "c5"]));
    let opening = page["opening"].as_str().unwrap_or("");
    assert!(
        opening.contains("Sicilian"),
        "opening after 1.e4 c5: {page}"
    );
    assert_table(&page, &masters(&addr, START, &["e2e4", "c7c5"]));

    // Back with the button, forward and back with the arrow keys; the
    // line keeps its moves and marks the current one.
    browser.click("#back");
    browser.wait_position(AFTER_E4);
    assert_eq!(browser.state()["current"], "1");
    browser.key("\u{E014}"); // ArrowRight
    browser.wait_position(AFTER_C5);
    browser.key("\u{E012}"); // ArrowLeft
    browser.wait_position(AFTER_E4);
    let page = browser.state();
    assert_eq!(page["line"], json!(["e4", "c5"]), "{page}");
    assert_eq!(page["current"], "1");
    assert_table(&page, &masters(&addr, START, &["e2e4"]));

    // A click on the line's c5 goes there.
    browser.click("#line .mv[data-ply='2']");
    browser.wait_position(AFTER_C5);

    // Flip: Black at the bottom, and a move played there by clicks.
    browser.click("#flip");
    browser.wait_for(
        "the flipped board",
        "return document.querySelector('#board').classList.contains('orientation-black');",
        json!([]),
    );
    let g1 = browser.square_point("g1", false);
    let f3 = browser.square_point("f3", false);
    browser.click_points(&[g1, f3]);
    browser.wait_position("rnbqkbnr/pp1ppppp/8/2p5/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2");
    assert!(browser.state()["hash"]
        .as_str()
        .is_some_and(|h| h.contains("o=black")));
    browser.click("#flip");
    browser.wait_for(
        "the board back to White",
        "return document.querySelector('#board').classList.contains('orientation-white');",
        json!([]),
    );

    // A FEN pasted: the board shows it, its king where the FEN puts it.
    browser.type_into("#paste", PASTED);
    browser.click("#paste-go");
    browser.wait_position(PASTED);
    let page = browser.state();
    assert_eq!(page["board"], PASTED.split(' ').next().unwrap(), "{page}");
    assert_eq!(page["line"], json!([]));
    assert_eq!(page["pasteError"], "");
    // (once chessground's animation of the king from e1 has ended)
    let (x, y) = browser.square_point("g1", true);
    let (_, _, w, _) = browser.board_box();
    browser.wait_for(
        "the white king drawn on g1",
        "const r = document.querySelector('#board piece.king.white').getBoundingClientRect();
         return Math.abs(r.left + r.width / 2 - arguments[0]) < arguments[2]
             && Math.abs(r.top + r.height / 2 - arguments[1]) < arguments[2];",
        json!([x, y, w / 32.0]),
    );
    assert_table(&page, &masters(&addr, PASTED, &[]));

    // A bad FEN: an inline error, no alert, the position kept.
    browser.type_into(
        "#paste",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN w KQkq - 0 1",
    );
    browser.click("#paste-go");
    browser.wait_for(
        "the paste error",
        "return document.getElementById('paste-error').textContent.length > 0;",
        json!([]),
    );
    assert_eq!(browser.state()["fen"], PASTED);

    // A promotion on the board asks for the piece.
    browser.type_into("#paste", "8/P7/8/8/8/8/8/k6K w - - 0 1");
    browser.click("#paste-go");
    browser.wait_position("8/P7/8/8/8/8/8/k6K w - - 0 1");
    let a7 = browser.square_point("a7", true);
    let a8 = browser.square_point("a8", true);
    browser.click_points(&[a7, a8]);
    browser.wait_for(
        "the promotion choice",
        "return !document.getElementById('promotion').hidden;",
        json!([]),
    );
    browser.click("#promotion button[data-role='n']");
    browser.wait_position("N7/8/8/8/8/8/8/k6K b - - 0 1");
    assert_eq!(browser.state()["line"], json!(["a8=N"]));

    // A PGN pasted: the line becomes its moves, at its end.
    browser.type_into("#paste", NAJDORF_PGN);
    browser.click("#paste-go");
    browser.wait_position(NAJDORF);
    let page = browser.state();
    assert_eq!(
        page["line"],
        json!(["e4", "c5", "Nf3", "d6", "d4", "cxd4", "Nxd4", "Nf6", "Nc3", "a6"]),
        "{page}"
    );
    assert_eq!(page["current"], "10");
    let opening = page["opening"].as_str().unwrap_or("");
    assert!(opening.contains("Najdorf"), "{page}");
    let play = [
        "e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6", "b1c3", "a7a6",
    ];
    let api = masters(&addr, START, &play);
    assert_eq!(api["fen"], NAJDORF);
    assert_table(&page, &api);
    if screenshots {
        browser.park_mouse();
        browser.screenshot(&repo().join("docs/explorer-deep.png"));
    }

    // The link reloads the same position.
    let hash = page["hash"].as_str().expect("hash").to_string();
    assert!(hash.contains("play=e2e4,c7c5,"), "{hash}");
    browser.goto("about:blank");
    browser.goto(&format!("{url}{hash}"));
    browser.wait_position(NAJDORF);
    assert_eq!(browser.state()["line"], page["line"]);

    // A top game after 1.e4 c5 opens its PGN in the panel, and replays
    // on the board.
    browser.goto(&format!("{url}#play=e2e4,c7c5"));
    browser.wait_position(AFTER_C5);
    let top = browser.state()["games"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let id = top
        .first()
        .and_then(|v| v.as_str())
        .expect("top games after 1.e4 c5")
        .to_string();
    browser.click(&format!("#top-games tr[data-id='{id}']"));
    browser.wait_for(
        "the game's PGN",
        "return document.getElementById('pgn-panel').open \
         && document.getElementById('pgn-text').textContent.includes('[White ');",
        json!([]),
    );
    let (status, pgn) = http(&addr, "GET", &format!("/masters/pgn/{id}"), None);
    assert_eq!(status, 200);
    let shown = browser.js(
        "return document.getElementById('pgn-text').textContent;",
        json!([]),
    );
    assert_eq!(shown, Value::String(pgn));
    browser.click("#pgn-load");
    browser.wait_for(
        "the game replayed",
        "return !document.getElementById('pgn-panel').open \
         && document.querySelectorAll('#line .mv').length > 2 \
         && document.body.dataset.ready === '1';",
        json!([]),
    );
    let page = browser.state();
    assert_eq!(page["line"][0], "e4", "{page}");
    assert_eq!(page["line"][1], "c5", "{page}");
    assert_eq!(page["pasteError"], "");

    let severe = browser.severe_logs();
    assert!(severe.is_empty(), "browser errors: {severe:?}");
    let violations = browser.csp_violations();
    assert!(violations.is_empty(), "CSP violations: {violations:?}");

    // Board and moves side by side from 1,200 px of width (laid out again
    // at each size, the page reloaded at the first).
    browser.goto(&format!("{url}#play=e2e4,c7c5"));
    browser.wait_position(AFTER_C5);
    for (width, height) in [(1280, 800), (1200, 800)] {
        let l = browser.layout(width, height);
        let n = |part: &str, i: usize| l[part][i].as_f64().expect("number");
        let (board, moves) = ("board", "moves");
        assert!(
            n(board, 2) <= n(moves, 0),
            "{width}x{height}: the moves table is not right of the board: {l}"
        );
        assert!(
            n(moves, 1) < n(board, 3) && n(board, 1) < n(moves, 3),
            "{width}x{height}: board and moves table are not side by side: {l}"
        );
        assert!(
            n(moves, 2) <= f64::from(width),
            "{width}x{height}: the moves table runs past the window: {l}"
        );
        assert!(
            l["scrollWidth"].as_f64().expect("number") <= l["innerWidth"].as_f64().expect("number"),
            "{width}x{height}: the page scrolls sideways: {l}"
        );
        if width == 1280 {
            browser.park_mouse();
            let shot = dir.path().join("explorer-1280.png");
            browser.screenshot(&shot);
            if screenshots {
                std::fs::copy(&shot, repo().join("docs/explorer-1280.png")).expect("copy");
            }
        }
    }
    // Narrower, one column: the table below the board.
    let l = browser.layout(1100, 800);
    assert!(
        l["moves"][1].as_f64() >= l["board"][3].as_f64(),
        "1100x800: the moves table is not below the board: {l}"
    );

    // A violation made on purpose is seen: the policy is in force and
    // the check above could fail.
    browser.js(
        "document.body.insertAdjacentHTML('beforeend', '<div style=\"color: red\"></div>'); return true;",
        json!([]),
    );
    browser.wait_for(
        "the violation reported",
        "return window.__cspViolations.length > 0;",
        json!([]),
    );
    assert!(
        browser.csp_violations()[0].contains("style-src"),
        "{:?}",
        browser.csp_violations()
    );
}
