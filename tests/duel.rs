//! `learnbook duel`: one real engine (Debian's glaurung) plays two exported
//! books; python-chess checks, as an independent reader of both `.bin`
//! files, that every book move in the games came from the right book.

mod common;

use std::path::Path;

use common::{have_program, have_python_chess, ok, python, run, s, sample};
use tempfile::TempDir;

const GLAURUNG: &str = "/usr/games/glaurung";

/// Two books from the sample games: `value` weights and polyglot's.
fn books(dir: &Path) -> (String, String) {
    let book = dir.join("b.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    let a = dir.join("value.bin");
    let b = dir.join("freq.bin");
    ok(&["export", "--book", s(&book), "--polyglot", s(&a)]);
    ok(&[
        "export",
        "--book",
        s(&book),
        "--polyglot",
        s(&b),
        "--weights",
        "polyglot",
        "--min-games",
        "3",
    ]);
    (s(&a).to_string(), s(&b).to_string())
}

fn duel(a: &str, b: &str, pgn: &Path, mode: &str, pairs: &str) -> serde_json::Value {
    let out = ok(&[
        "duel",
        "--engine",
        &format!("cmd={GLAURUNG}"),
        "--book",
        a,
        "--book",
        b,
        "--mode",
        mode,
        "--starts",
        s(&sample()),
        "--pairs",
        pairs,
        "--nodes",
        "3000",
        "--concurrency",
        "2",
        "--pgnout",
        s(pgn),
        "--json",
    ]);
    serde_json::from_slice(&out.stdout).expect("duel --json")
}

/// python-chess reads the games and both books: for each side, every move
/// without an engine comment after the start (4 to 8 plies) and before its
/// first searched move must be in its book, and with `best` the heaviest.
/// Prints the number of book moves checked.
const CHECK: &str = r#"
import sys, chess.pgn, chess.polyglot
pgn, mode, books = sys.argv[1], sys.argv[2], {sys.argv[3]: sys.argv[4], sys.argv[5]: sys.argv[6]}
readers = {name: chess.polyglot.open_reader(path) for name, path in books.items()}
checked = 0
with open(pgn) as f:
    while True:
        g = chess.pgn.read_game(f)
        if g is None:
            break
        names = {chess.WHITE: g.headers["White"], chess.BLACK: g.headers["Black"]}
        out = {chess.WHITE: False, chess.BLACK: False}
        board = g.board()
        nodes = list(g.mainline())
        # The start: the plies before either side's first book or engine move
        # are not known here; a move counts once a reader could have played it.
        for ply, node in enumerate(nodes):
            side = board.turn
            searched = node.comment.strip() != ""
            if searched:
                out[side] = True
            elif ply >= 8 and not out[side]:
                entries = list(readers[names[side]].find_all(board))
                moves = [e.move for e in entries]
                assert node.move in moves, (g.headers["Round"], ply, node.move.uci(), names[side])
                if mode == "best":
                    top = max(e.weight for e in entries)
                    assert any(e.move == node.move and e.weight == top for e in entries), (ply, node.move.uci())
                checked += 1
            board.push(node.move)
print(checked)
"#;

fn python_check(pgn: &Path, mode: &str, names: [&str; 2], books: [&str; 2]) -> u64 {
    python(&[
        "-c",
        CHECK,
        s(pgn),
        mode,
        names[0],
        books[0],
        names[1],
        books[1],
    ])
    .trim()
    .parse()
    .expect("count")
}

#[test]
fn a_duel_plays_each_book_until_it_ends_and_resumes_from_its_games() {
    if !(have_program(GLAURUNG) && have_python_chess()) {
        return;
    }
    let dir = TempDir::new().unwrap();
    let (a, b) = books(dir.path());
    let pgn = dir.path().join("duel.pgn");
    let r = duel(&a, &b, &pgn, "weighted", "4");
    assert_eq!(r["games"], 8);
    let penta: u64 = r["pentanomial"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(penta, 4);
    let wdl: u64 = r["wdl"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(wdl, 8);
    assert_eq!(r["sides"][0]["name"], "value");
    assert_eq!(r["sides"][1]["name"], "freq");
    for side in 0..2 {
        assert_eq!(r["sides"][side]["games"], 8);
        assert!(r["sides"][side]["book_plies"].as_f64().unwrap() > 0.0);
        let exits = r["sides"][side]["distinct_exits"].as_u64().unwrap();
        assert!((1..=8).contains(&exits), "{exits}");
    }
    let elo = &r["elo"];
    assert!(elo["low"].as_f64().unwrap() <= elo["value"].as_f64().unwrap());
    assert!(elo["value"].as_f64().unwrap() <= elo["high"].as_f64().unwrap());
    assert!(python_check(&pgn, "weighted", ["value", "freq"], [&a, &b]) > 0);

    // The same command again plays nothing and reports the same games.
    let before = std::fs::read(&pgn).unwrap();
    let again = duel(&a, &b, &pgn, "weighted", "4");
    assert_eq!(std::fs::read(&pgn).unwrap(), before);
    assert_eq!(again, r);
    // More pairs: only the new games are played.
    let more = duel(&a, &b, &pgn, "weighted", "5");
    assert_eq!(more["games"], 10);
    assert!(std::fs::read(&pgn).unwrap().starts_with(&before));

    // The ceiling: the engine itself, deeper for the first plies, against a book.
    let deep = dir.path().join("deep.pgn");
    let out = ok(&[
        "duel",
        "--engine",
        &format!("cmd={GLAURUNG}"),
        "--deep-start",
        "12:9000",
        "--book",
        &b,
        "--starts",
        s(&sample()),
        "--pairs",
        "1",
        "--nodes",
        "3000",
        "--pgnout",
        s(&deep),
        "--json",
    ]);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(r["games"], 2);
    assert_eq!(r["sides"][0]["name"], "engine-9000-nodes-to-ply-12");
    assert_eq!(r["sides"][0]["book_plies"].as_f64(), Some(0.0));
    assert!(r["sides"][1]["book_plies"].as_f64().unwrap() > 0.0);

    // Best: each book's heaviest move, every time.
    let best = dir.path().join("best.pgn");
    let r = duel(&a, &b, &best, "best", "3");
    assert_eq!(r["games"], 6);
    assert!(python_check(&best, "best", ["value", "freq"], [&a, &b]) > 0);
}

#[test]
fn bad_books_and_arguments_are_refused_before_any_game() {
    let dir = TempDir::new().unwrap();
    let bad = dir.path().join("bad.bin");
    std::fs::write(&bad, b"not a polyglot book").unwrap();
    let pgn = dir.path().join("g.pgn");
    let starts = sample();
    let base = [
        "duel",
        "--engine",
        "cmd=/nonexistent/engine",
        "--starts",
        s(&starts),
        "--pgnout",
        s(&pgn),
    ];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        run(&args)
    };
    let out = with(&["--book", s(&bad), "--book", s(&bad)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.bin"), "{err}");
    let out = with(&["--book", s(&bad)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exactly twice"));
    let out = with(&[
        "--book",
        s(&bad),
        "--book",
        s(&bad),
        "--deep-start",
        "16:1000",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("give --book once"));
    let out = with(&["--book", s(&bad), "--deep-start", "16"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("PLIES:NODES"));
    let out = with(&["--book", s(&bad), "--book", s(&bad), "--start-plies", "8-4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!pgn.exists(), "no game file for a refused duel");
}
