//! `grow`: engine moves added by drop-out expansion over the sample book;
//! values that stay those of a full re-evaluation (`check`); a killed run
//! that resumes without expanding a position twice; a crashing engine that
//! loses nothing stored; a game that plays an engine move makes it an
//! ordinary move.

mod common;

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::Duration,
};

use common::{bin, count, number_after, ok, repo, run, s, sample};
use tempfile::TempDir;

/// The sample book, analysed at 2,000 nodes (positions with >= 40 games).
fn analysed_sample(dir: &TempDir) -> PathBuf {
    let book = dir.path().join("sample.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    ok(&[
        "analyze",
        "--book",
        s(&book),
        "--nodes",
        "2000",
        "--min-games",
        "40",
    ]);
    book
}

fn grow(book: &Path, expansions: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "grow",
        "--book",
        s(book),
        "--nodes",
        "2000",
        "--expansions",
        expansions,
    ];
    args.extend_from_slice(extra);
    String::from_utf8_lossy(&ok(&args).stderr).into_owned()
}

fn expanded(book: &Path) -> i64 {
    count(
        book,
        "SELECT count(*) FROM analysis WHERE grown IS NOT NULL",
    )
}

/// Positions with more engine moves than one expansion adds: expanded twice.
fn expanded_twice(book: &Path, width: i64) -> i64 {
    count(
        book,
        &format!(
            "SELECT count(*) FROM (SELECT parent FROM moves WHERE grown = 1 AND white + draws + black = 0
               GROUP BY parent HAVING count(*) > {width})"
        ),
    )
}

#[test]
fn grow_adds_searched_engine_moves_and_values_stay_exact() {
    let dir = TempDir::new().expect("tmp");
    let book = analysed_sample(&dir);
    let report = grow(&book, "40", &["--threads", "2"]);
    assert_eq!(number_after::<i64>(&report, "grew ", ' '), 40, "{report}");
    assert_eq!(expanded(&book), 40);
    let moves: i64 = number_after(&report, "searches): ", ' ');
    let new: i64 = number_after(&report, "engine moves, ", ' ');
    assert_eq!(
        moves,
        count(&book, "SELECT count(*) FROM moves WHERE grown = 1"),
        "{report}"
    );
    assert!(
        moves >= 40,
        "two moves an expansion where there are: {report}"
    );
    // The new rows are the positions no game reached (a move into a
    // single-game tail makes the tail's rows, with their game).
    assert_eq!(
        count(
            &book,
            "SELECT count(*) FROM positions WHERE white + draws + black = 0"
        ),
        new
    );
    // Every engine move has no games, and every position it added a search score.
    assert_eq!(
        count(
            &book,
            "SELECT count(*) FROM moves WHERE grown = 1 AND white + draws + black > 0"
        ),
        0
    );
    assert_eq!(
        count(
            &book,
            "SELECT count(*) FROM positions p LEFT JOIN analysis a ON a.key = p.key
             WHERE p.white + p.draws + p.black = 0 AND a.key IS NULL"
        ),
        0
    );
    // The start position is expanded first: its engine moves are shown marked.
    let show = String::from_utf8_lossy(&ok(&["show", "--book", s(&book)]).stdout).into_owned();
    assert!(show.contains("~ "), "{show}");
    // Every game move of an expanded position leads to a searched position:
    // game and engine moves are valued by the same searches.
    assert_eq!(
        count(
            &book,
            "SELECT count(*) FROM moves m JOIN analysis pa ON pa.key = m.parent AND pa.grown IS NOT NULL
             LEFT JOIN analysis ca ON ca.key = m.child LEFT JOIN positions c ON c.key = m.child
             WHERE m.white + m.draws + m.black > 0 AND ca.key IS NULL AND c.exact IS NULL"
        ),
        0
    );
    // Values and choices equal a full re-evaluation.
    ok(&["check", "--book", s(&book)]);
    assert_eq!(expanded_twice(&book, 2), 0);
}

#[test]
fn grow_from_a_line_stays_below_it_and_respects_width() {
    let dir = TempDir::new().expect("tmp");
    let book = analysed_sample(&dir);
    grow(&book, "10", &["--from", "e2e4 c7c5", "--width", "1"]);
    // Only positions below 1. e4 c5 grow: the first is that position (ply 2).
    assert_eq!(
        count(
            &book,
            "SELECT count(*) FROM analysis a JOIN positions p ON p.key = a.key
             WHERE a.grown IS NOT NULL AND p.depth < 2"
        ),
        0
    );
    assert_eq!(expanded(&book), 10);
    assert_eq!(expanded_twice(&book, 1), 0);
    ok(&["check", "--book", s(&book)]);
    let out = run(&["grow", "--book", s(&book), "--from", "e2e4 e7e4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--from"));
}

#[test]
fn a_killed_grow_resumes_without_expanding_a_position_twice() {
    let dir = TempDir::new().expect("tmp");
    let book = analysed_sample(&dir);
    let mut child = Command::new(bin())
        .args([
            "grow",
            "--book",
            s(&book),
            "--nodes",
            "20000",
            "--threads",
            "2",
            "--expansions",
            "100000",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    while expanded(&book) < 10 {
        thread::sleep(Duration::from_millis(50));
        assert!(
            child.try_wait().expect("wait").is_none(),
            "grow stopped before storing 10 expansions"
        );
    }
    assert!(child.try_wait().expect("wait").is_none(), "finished early");
    child.kill().expect("kill");
    child.wait().expect("reap");
    let stored = expanded(&book);
    ok(&["check", "--book", s(&book)]);
    grow(&book, "15", &[]);
    assert_eq!(expanded(&book), stored + 15);
    assert_eq!(expanded_twice(&book, 2), 0);
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn a_crashing_engine_loses_no_stored_expansion() {
    let dir = TempDir::new().expect("tmp");
    let book = analysed_sample(&dir);
    grow(&book, "5", &[]);
    // python-chess drives the fake engine; without it this part cannot run.
    if !common::have_python_chess() {
        return;
    }
    let fake = repo().join("tests/py/fake_engine.py");
    let spec = format!("name=fake,cmd=python3 {} crash", s(&fake));
    let out = run(&[
        "grow",
        "--book",
        s(&book),
        "--engine",
        &spec,
        "--threads",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fake") && err.contains("kept"), "{err}");
    assert_eq!(expanded(&book), 5);
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn a_game_through_an_engine_move_makes_it_an_ordinary_move() {
    let dir = TempDir::new().expect("tmp");
    let book = analysed_sample(&dir);
    grow(&book, "1", &[]);
    // The first engine move `grow` stored, and the book line to its position.
    let conn = rusqlite::Connection::open(&book).expect("open");
    let (parent, uci): (i64, String) = conn
        .query_row(
            "SELECT parent, uci FROM moves WHERE grown = 1 ORDER BY parent, move LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("an engine move");
    let mut line: Vec<String> = Vec::new();
    let mut key = parent;
    loop {
        let up: Option<i64> = conn
            .query_row("SELECT parent FROM positions WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .expect("a row");
        let Some(up) = up else { break };
        let mv: String = conn
            .query_row(
                "SELECT uci FROM moves WHERE parent = ?1 AND child = ?2",
                [up, key],
                |r| r.get(0),
            )
            .expect("the move into it");
        line.insert(0, mv);
        key = up;
    }
    drop(conn);
    // A game that plays the line, then the engine move.
    let sans = sans_from_start(line.iter().chain(std::iter::once(&uci)));
    let movetext: Vec<String> = sans
        .iter()
        .enumerate()
        .map(|(i, san)| {
            if i % 2 == 0 {
                format!("{}. {san}", i / 2 + 1)
            } else {
                san.clone()
            }
        })
        .collect();
    let pgn = dir.path().join("g.pgn");
    std::fs::write(
        &pgn,
        format!(
            "[Event \"t\"]\n[White \"a\"]\n[Black \"b\"]\n[Result \"1-0\"]\n\n{} 1-0\n",
            movetext.join(" ")
        ),
    )
    .expect("write");
    ok(&["learn", "--book", s(&book), s(&pgn)]);
    let games = count(
        &book,
        &format!(
            "SELECT white + draws + black FROM moves WHERE parent = {parent} AND uci = '{uci}'"
        ),
    );
    assert_eq!(games, 1);
    let played = sans.last().expect("the engine move");
    let show = String::from_utf8_lossy(
        &ok(&["show", "--book", s(&book), "--moves", &line.join(" ")]).stdout,
    )
    .into_owned();
    let row = show
        .lines()
        .find(|l| {
            l.split_whitespace()
                .any(|w| w.trim_start_matches('*') == played)
        })
        .unwrap_or_else(|| panic!("{played} in {show}"));
    assert!(!row.contains('~'), "{row}");
    ok(&["check", "--book", s(&book)]);
}

/// The SANs of moves given in UCI, played from the start position.
fn sans_from_start<'a>(ucis: impl Iterator<Item = &'a String>) -> Vec<String> {
    use shakmaty::{san::San, uci::UciMove, Chess, Position};
    let mut pos = Chess::default();
    let mut out = Vec::new();
    for uci in ucis {
        let mv = uci
            .parse::<UciMove>()
            .expect("uci")
            .to_move(&pos)
            .expect("legal");
        out.push(San::from_move(&pos, mv).to_string());
        pos.play_unchecked(mv);
    }
    out
}

#[test]
fn export_keeps_engine_moves_by_value_unless_told_not_to() {
    use learnbook::book::formats::polyglot::read_bin;
    let dir = TempDir::new().expect("tmp");
    let book = analysed_sample(&dir);
    // Below a line with few games, where engine moves win choices.
    grow(&book, "30", &["--from", "e2e4 c7c5 g1f3 d7d6"]);
    let with = dir.path().join("with.bin");
    let without = dir.path().join("without.bin");
    ok(&["export", "--book", s(&book), "--polyglot", s(&with)]);
    ok(&[
        "export",
        "--book",
        s(&book),
        "--polyglot",
        s(&without),
        "--no-engine-moves",
    ]);
    let entries = |p: &Path| -> std::collections::HashSet<(u64, u16)> {
        read_bin(p)
            .expect("read")
            .into_iter()
            .map(|e| (e.key.0, e.mv))
            .collect()
    };
    let (with, without) = (entries(&with), entries(&without));
    let conn = rusqlite::Connection::open(&book).expect("open");
    let engine: std::collections::HashSet<(u64, u16)> = conn
        .prepare("SELECT parent, move FROM moves WHERE grown = 1 AND white + draws + black = 0")
        .expect("prepare")
        .query_map([], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get::<_, u16>(1)?))
        })
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let added: Vec<_> = with.difference(&without).collect();
    assert!(!added.is_empty(), "some engine move is played by value");
    assert!(added.iter().all(|e| engine.contains(e)));
    assert!(without.iter().all(|e| !engine.contains(e)));
}

/// `(key, value, best)` of every position, in key order.
fn values(book: &Path) -> Vec<(i64, f64, Option<i64>)> {
    let conn = rusqlite::Connection::open(book).expect("open");
    let mut stmt = conn
        .prepare("SELECT key, value, best FROM positions ORDER BY key")
        .expect("prepare");
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    rows
}

#[test]
fn the_engine_margin_keeps_game_moves_until_a_searched_move_clears_it() {
    let dir = TempDir::new().expect("tmp");
    let book = analysed_sample(&dir);
    grow(&book, "30", &["--from", "e2e4 c7c5 g1f3 d7d6"]);
    // Positions with games whose choice is an engine move or leaving.
    let searched_choices = |book: &Path| {
        count(
            book,
            "SELECT count(*) FROM positions p LEFT JOIN moves m ON m.parent = p.key AND m.move = p.best
             WHERE p.white + p.draws + p.black > 0 AND p.key IN (SELECT key FROM analysis WHERE interior = 1)
               AND (p.best IS NULL OR (m.grown = 1 AND m.white + m.draws + m.black = 0))",
        )
    };
    // Built with the default margin (25 cp); 0 lets in every claim.
    let before = values(&book);
    let default = searched_choices(&book);
    let margin = |cp: &str| {
        let out = ok(&["reevaluate", "--book", s(&book), "--engine-margin", cp]);
        assert!(String::from_utf8_lossy(&out.stdout).contains("positions changed"));
        ok(&["check", "--book", s(&book)]);
        searched_choices(&book)
    };
    let none = margin("0");
    let wide = margin("50");
    assert!(
        none > wide,
        "{none} searched choices without a margin, {wide} with 50 cp"
    );
    assert!(
        none >= default && default >= wide,
        "{none} {default} {wide}"
    );
    assert_eq!(
        count(
            &book,
            "SELECT count(*) FROM meta WHERE key = 'engine_margin' AND value = '50'"
        ),
        1
    );
    // A bad margin is refused and changes nothing; the old margin restores every value.
    let bad = run(&["reevaluate", "--book", s(&book), "--engine-margin", "-5"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("engine_margin"));
    assert_eq!(searched_choices(&book), wide);
    margin("25");
    assert_eq!(values(&book), before);
}

#[test]
fn min_games_expands_only_positions_games_reach() {
    let dir = TempDir::new().expect("tmp");
    let book = analysed_sample(&dir);
    grow(&book, "20", &["--min-games", "5"]);
    assert_eq!(expanded(&book), 20);
    assert_eq!(
        count(
            &book,
            "SELECT count(*) FROM analysis a JOIN positions p ON p.key = a.key
             WHERE a.grown IS NOT NULL AND p.white + p.draws + p.black < 5"
        ),
        0
    );
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn merge_carries_engine_moves_and_stays_consistent() {
    let dir = TempDir::new().expect("tmp");
    let book = analysed_sample(&dir);
    grow(&book, "10", &[]);
    let engine = count(
        &book,
        "SELECT count(*) FROM moves WHERE grown = 1 AND white + draws + black = 0",
    );
    assert!(engine > 0);
    // The grown book merged with a book of more games: the engine moves
    // come along, and a game that plays one makes it ordinary.
    let more = dir.path().join("more.pgn");
    std::fs::write(
        &more,
        "[Event \"t\"]\n[White \"a\"]\n[Black \"b\"]\n[Result \"1/2-1/2\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 1/2-1/2\n",
    )
    .expect("write");
    let other = dir.path().join("other.sqlite");
    ok(&["build", "--book", s(&other), s(&more)]);
    let merged = dir.path().join("merged.sqlite");
    ok(&["merge", "--book", s(&merged), s(&book), s(&other)]);
    assert_eq!(
        count(
            &merged,
            "SELECT count(*) FROM moves WHERE grown = 1 AND white + draws + black = 0"
        ),
        engine
    );
    assert_eq!(expanded(&merged), 10);
    ok(&["check", "--book", s(&merged)]);
    let stats = String::from_utf8_lossy(&ok(&["stats", "--book", s(&merged)]).stdout).into_owned();
    assert!(
        stats.contains(&format!("engine moves  {engine}")),
        "{stats}"
    );
}

#[test]
fn a_uci_engine_with_multipv_finds_an_expansions_moves_in_one_search() {
    if !common::have_program("/usr/games/glaurung") {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let book = analysed_sample(&dir);
    // What learnbook sends the engine, logged on the way.
    let log = dir.path().join("sent.log");
    let wrapper = dir.path().join("glaurung.sh");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\ntee -a '{}' | /usr/games/glaurung\n", s(&log)),
    )
    .expect("wrapper");
    let spec = format!("name=glaurung,cmd=sh {}", s(&wrapper));
    let report = grow(
        &book,
        "4",
        &["--engine", &spec, "--threads", "1", "--width", "2"],
    );
    assert_eq!(expanded(&book), 4, "{report}");
    assert_eq!(
        count(&book, "SELECT count(*) FROM moves WHERE grown = 1"),
        8,
        "{report}"
    );
    // One search with searchmoves an expansion, under MultiPV 2 or 3 (the
    // width and the deviation, less a move the whole search found); every
    // other search under MultiPV 1.
    let sent = std::fs::read_to_string(&log).expect("log");
    let mut multipv = 1;
    let mut lines_searches = 0;
    let mut probes = 0;
    for line in sent.lines() {
        if let Some(v) = line.strip_prefix("setoption name MultiPV value ") {
            multipv = v.trim().parse().expect("MultiPV value");
        } else if line.trim() == "go depth 1 searchmoves a2a3" {
            // Whether the engine keeps to searchmoves, asked once.
            probes += 1;
        } else if line.starts_with("go ") {
            if line.contains(" searchmoves ") {
                lines_searches += 1;
                assert!((2..=3).contains(&multipv), "{line} under MultiPV {multipv}");
            } else {
                assert_eq!(multipv, 1, "{line}");
            }
        }
    }
    assert_eq!(lines_searches, 4, "{sent}");
    assert_eq!(probes, 1, "{sent}");
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn a_stale_multipv_line_repeating_a_move_is_dropped_not_an_error() {
    if !common::have_python_chess() {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let book = analysed_sample(&dir);
    let fake = repo().join("tests/py/fake_engine.py");
    let spec = format!("name=fake,cmd=python3 {} stale-multipv", s(&fake));
    let report = grow(
        &book,
        "3",
        &["--engine", &spec, "--threads", "1", "--width", "2"],
    );
    assert_eq!(expanded(&book), 3, "{report}");
    // Lines 1 and 2 name the same move: two distinct moves an expansion,
    // both kept as engine moves, none left for the deviation.
    assert_eq!(
        count(&book, "SELECT count(*) FROM moves WHERE grown = 1"),
        6,
        "{report}"
    );
    ok(&["check", "--book", s(&book)]);
}
