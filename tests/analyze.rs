//! `analyze`: the search core over the sample book; values that use the
//! scores and stay exactly those of a full re-evaluation; a killed run
//! resumes without analysing a position twice; bad engines are clear errors
//! that lose no stored score.

mod common;

use std::{
    path::Path,
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use common::{bin, count, number_after, ok, repo, run, s, sample};
use rusqlite::{Connection, OpenFlags};
use tempfile::TempDir;

fn analysed(book: &Path) -> (i64, i64) {
    let c = Connection::open_with_flags(book, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open");
    c.busy_timeout(Duration::from_secs(10)).expect("timeout");
    c.query_row(
        "SELECT count(*), coalesce(sum(interior), 0) FROM analysis",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .expect("count")
}

/// `analyze` of `book` at 3,000 nodes, positions with >= 40 games.
fn analyze_40(book: &Path) -> std::process::Output {
    ok(&[
        "analyze",
        "--book",
        s(book),
        "--nodes",
        "3000",
        "--min-games",
        "40",
    ])
}

fn sample_book(dir: &TempDir) -> std::path::PathBuf {
    let book = dir.path().join("sample.sqlite");
    ok(&["build", "--book", s(&book), s(&sample())]);
    book
}

#[test]
fn analysis_gives_every_busy_position_a_deviation_and_values_stay_exact() {
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(&dir);
    let before = String::from_utf8_lossy(&ok(&["show", "--book", s(&book)]).stdout).into_owned();
    let out = analyze_40(&book);
    let report = String::from_utf8_lossy(&out.stderr).into_owned();
    let total: i64 = number_after(&report, "analysed ", ' ');
    let (rows, interior) = analysed(&book);
    assert_eq!(rows, total, "{report}");
    assert!(
        interior >= 20 && rows > interior,
        "{rows} rows, {interior} interior"
    );
    let c = Connection::open(&book).expect("open");
    // Every position with >= 40 games reachable from the start is interior.
    let busy: i64 = c
        .query_row(
            "SELECT count(*) FROM positions WHERE white + draws + black >= 40 AND depth IS NOT NULL AND exact IS NULL",
            [],
            |r| r.get(0),
        )
        .expect("busy");
    assert_eq!(interior, busy);
    // A deviation was searched wherever a legal move is not a book move.
    let no_dev: i64 = c
        .query_row(
            "SELECT count(*) FROM analysis WHERE interior = 1 AND deviation IS NULL",
            [],
            |r| r.get(0),
        )
        .expect("dev");
    assert_eq!(no_dev, 0);
    // The root's value changed (search scores are inputs now) and the book is consistent.
    let after = String::from_utf8_lossy(&ok(&["show", "--book", s(&book)]).stdout).into_owned();
    assert_ne!(before, after);
    assert!(after.contains("analysis: score"), "{after}");
    ok(&["check", "--book", s(&book)]);
    // A second run finds nothing left to do.
    let again = analyze_40(&book);
    let again = String::from_utf8_lossy(&again.stderr).into_owned();
    assert!(again.contains("analysed 0 positions"), "{again}");
    assert_eq!(number_after::<i64>(&again, "; ", ' '), total, "{again}");
}

#[test]
fn a_killed_analysis_resumes_without_analysing_a_position_twice() {
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(&dir);
    let args = [
        "analyze",
        "--book",
        s(&book),
        "--nodes",
        "30000",
        "--min-games",
        "10",
        "--threads",
        "2",
    ];
    let mut child = Command::new(bin())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    // Kill it mid-run, once a full batch is stored.
    let start = Instant::now();
    loop {
        thread::sleep(Duration::from_millis(100));
        if analysed(&book).0 >= 256 {
            break;
        }
        // A watchdog, not a time limit: a loaded machine may take minutes.
        assert!(
            child.try_wait().expect("wait").is_none(),
            "analyze ended before a batch was stored"
        );
        assert!(
            start.elapsed() < common::WATCHDOG,
            "nothing stored in 20 minutes"
        );
    }
    assert!(
        child.try_wait().expect("wait").is_none(),
        "finished before the kill"
    );
    child.kill().expect("kill");
    child.wait().expect("reap");
    let (stored, _) = analysed(&book);
    ok(&["check", "--book", s(&book)]);
    let out = ok(&args);
    let report = String::from_utf8_lossy(&out.stderr).into_owned();
    let now: i64 = number_after(&report, "analysed ", ' ');
    let already: i64 = number_after(&report, "; ", ' ');
    assert_eq!(
        already, stored,
        "the rerun skips exactly what was stored: {report}"
    );
    assert_eq!(
        analysed(&book).0,
        stored + now,
        "no position analysed twice: {report}"
    );
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn a_bad_or_crashing_engine_is_a_clear_error_and_keeps_stored_scores() {
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(&dir);
    let out = run(&[
        "analyze",
        "--book",
        s(&book),
        "--engine",
        "cmd=/nonexistent/engine",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot start"), "{err}");
    let out = run(&["analyze", "--book", s(&book), "--engine", "name=x,bogus=1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bogus"));
    assert_eq!(analysed(&book).0, 0);

    // python-chess drives the fake engine; without it this part cannot run.
    if !common::have_python_chess() {
        return;
    }
    let fake = repo().join("tests/py/fake_engine.py");
    let fake_spec = |mode: &str| format!("name=fake,cmd=python3 {} {mode}", s(&fake));
    // An analysis by the fake engine in `mode`, which fails: its message.
    let analyse_failing = |mode: &str| -> String {
        let spec = fake_spec(mode);
        let out = run(&[
            "analyze",
            "--book",
            s(&book),
            "--engine",
            &spec,
            "--threads",
            "1",
            "--min-games",
            "40",
        ]);
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = analyse_failing("crash");
    assert!(err.contains("fake") && err.contains("kept"), "{err}");
    let (stored, _) = analysed(&book);
    assert!(stored >= 1, "the scores before the crash are kept");
    ok(&["check", "--book", s(&book)]);

    // An engine that ignores searchmoves would give a position's moves
    // outside the book its own best move's score: refused by name before
    // it stores a book move as the move outside the book.
    let err = analyse_failing("no-searchmoves");
    assert!(err.contains("ignores searchmoves"), "{err}");
    let wrong = count(
        &book,
        "SELECT count(*) FROM analysis a JOIN moves m ON m.parent = a.key AND m.move = a.dev_move
         WHERE a.engine = 'fake-no-searchmoves' AND m.white + m.draws + m.black > 0",
    );
    assert_eq!(wrong, 0, "a book move stored as the move outside the book");
    // As a judge, it scores each move by a search of the position after it.
    let spec = fake_spec("no-searchmoves");
    let out = ok(&[
        "bench",
        "book-quality",
        "--book",
        s(&book),
        "--judge",
        &spec,
        "--judge-depth",
        "1",
        "--positions",
        "3",
        "--threads",
        "1",
    ]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains(
            "the judge ignores searchmoves: every move scored by a search of the position after it"
        ),
        "{report}"
    );
}

#[test]
fn learn_with_analyze_searches_what_the_game_added_and_stays_exact() {
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(&dir);
    ok(&[
        "analyze",
        "--book",
        s(&book),
        "--nodes",
        "2000",
        "--min-games",
        "100",
    ]);
    let (before, _) = analysed(&book);
    // A game leaving the sample's lines early: its new positions have one game.
    let pgn = dir.path().join("new.pgn");
    std::fs::write(
        &pgn,
        "[Event \"t\"]\n[White \"a\"]\n[Black \"b\"]\n[Result \"0-1\"]\n\n1. e4 e5 2. Nf3 Nc6 3. a3 a6 4. h3 h6 0-1\n",
    )
    .expect("write");
    let out = ok(&[
        "learn",
        "--book",
        s(&book),
        "--analyze",
        "--analysis-nodes",
        "2000",
        "--analysis-min-games",
        "1",
        s(&pgn),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("analysed"), "{text}");
    let c = Connection::open(&book).expect("open");
    // The game's last position (after 4...h6) is now analysed as interior.
    let last_interior: i64 = c
        .query_row(
            "SELECT count(*) FROM analysis a JOIN positions p ON p.key = a.key
             WHERE p.depth = 8 AND p.white + p.draws + p.black = 1 AND a.interior = 1",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert!(last_interior >= 1);
    // The four new positions (after 3. a3 ... 4... h6) are new rows.
    assert!(analysed(&book).0 >= before + 4);
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn book_quality_judges_a_polyglot_export_of_the_books_own_choices_the_same() {
    if !(common::have_program("/usr/games/glaurung")) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(&dir);
    // Down to 10 games, so that the analysis finds positions where the
    // book's choice is to leave (15 with the default core at 3,000 nodes;
    // at 40 games there may be none).
    ok(&[
        "analyze",
        "--book",
        s(&book),
        "--nodes",
        "3000",
        "--min-games",
        "10",
    ]);
    // The top weight of `export --weights value` is the book's `best`.
    let bin = dir.path().join("self.bin");
    ok(&[
        "export",
        "--book",
        s(&book),
        "--polyglot",
        s(&bin),
        "--weights",
        "value",
    ]);
    // Where the book's choice is to leave it (its analysis's own move
    // scores higher), the export has no entry: a GUI would play one.
    let bytes = std::fs::read(&bin).expect("bin");
    let keys: std::collections::HashSet<i64> = bytes
        .chunks_exact(16)
        .map(|c| i64::from_be_bytes(c[0..8].try_into().expect("8")))
        .collect();
    let conn = rusqlite::Connection::open(&book).expect("open");
    let mut leave = conn
        .prepare(
            "SELECT p.key FROM positions p JOIN analysis a ON a.key = p.key
             WHERE a.interior = 1 AND p.best IS NULL AND p.exact IS NULL",
        )
        .expect("prepare");
    let left: Vec<i64> = leave
        .query_map([], |r| r.get(0))
        .expect("query")
        .map(|k| k.expect("key"))
        .collect();
    assert!(
        !left.is_empty(),
        "no analysed position where the book leaves"
    );
    for k in &left {
        assert!(
            !keys.contains(k),
            "{k:x}: the book leaves here, the export plays on"
        );
    }
    let csv = dir.path().join("verdicts.csv");
    let out = ok(&[
        "bench",
        "book-quality",
        "--book",
        s(&book),
        "--compare",
        &format!("self={}", s(&bin)),
        "--judge",
        "name=glaurung,cmd=/usr/games/glaurung,option.Threads=1",
        "--nodes",
        "20000",
        "--engine-player",
        "judge=name=glaurung,cmd=/usr/games/glaurung,option.Threads=1",
        "--engine-nodes",
        "20000",
        "--positions",
        "12",
        "--csv",
        s(&csv),
    ]);
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    // A player's row: name, moves, mean, median, p90, >=50cp, no move.
    let mean = |player: &str| -> f64 {
        report
            .lines()
            .find_map(|l| l.trim_start().strip_prefix(player))
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|m| m.parse().ok())
            .unwrap_or_else(|| panic!("no mean for {player} in {report}"))
    };
    assert_eq!(mean("learnbook best"), mean("self top"), "{report}");
    // The judge as a player, at its own budget from a cleared hash, plays
    // the judge's move everywhere: it loses nothing, and neither does the
    // better of it and the book's move.
    assert_eq!(mean("judge engine"), 0.0, "{report}");
    assert!(
        report.contains("the better of learnbook best and judge engine at each position (an arbiter knowing the judge): 0.0 cp on 12"),
        "{report}"
    );
    assert!(report.contains("Spearman"), "{report}");
    // The analyst's own picks where it searched a position with its moves,
    // and the margin table: a row per band of the advantage it claimed,
    // over positions where both its picks were judged.
    let judged = |player: &str| -> usize {
        report
            .lines()
            .find_map(|l| l.trim_start().strip_prefix(player))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|m| m.parse().ok())
            .unwrap_or_else(|| panic!("no row for {player} in {report}"))
    };
    let outside = judged("analyst's move outside");
    assert!(
        outside > 0 && judged("analyst's best game move") > 0,
        "{report}"
    );
    let table = report
        .split_once("by the advantage it claims for leaving:")
        .unwrap_or_else(|| panic!("no margin table in {report}"))
        .1;
    let in_table: usize = table
        .lines()
        .skip(2)
        .take_while(|l| !l.contains("Spearman"))
        .filter_map(|l| l.split_whitespace().rev().nth(3)?.parse::<usize>().ok())
        .sum();
    assert!(
        in_table > 0 && in_table <= outside,
        "{in_table} {outside}: {report}"
    );
    let rows = std::fs::read_to_string(&csv).expect("csv").lines().count();
    assert_eq!(rows, 13, "a header and a row per position");
    // The search core cannot judge itself.
    let out = run(&[
        "bench",
        "book-quality",
        "--book",
        s(&book),
        "--judge",
        "cmd=builtin",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_uci_engine_analyses_as_the_search_core_does() {
    if !(common::have_program("/usr/games/glaurung")) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(&dir);
    let out = ok(&[
        "analyze",
        "--book",
        s(&book),
        "--engine",
        "name=glaurung,cmd=/usr/games/glaurung,option.Threads=1",
        "--nodes",
        "5000",
        "--min-games",
        "100",
    ]);
    let report = String::from_utf8_lossy(&out.stderr).into_owned();
    let total: i64 = number_after(&report, "analysed ", ' ');
    assert!(total > 10, "{report}");
    let c = Connection::open(&book).expect("open");
    let (engines, budget): (i64, String) = c
        .query_row(
            // The engine as it names itself (`id name`: name and version).
            "SELECT count(DISTINCT engine), min(budget) FROM analysis WHERE engine = 'Glaurung 2.2'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("rows");
    assert_eq!((engines, budget.as_str()), (1, "nodes=5000"));
    // Every interior position has a deviation move that is legal and not a book move.
    let bad: i64 = c
        .query_row(
            "SELECT count(*) FROM analysis a JOIN moves m ON m.parent = a.key AND m.move = a.dev_move
             WHERE a.interior = 1 AND m.white + m.draws + m.black > 0",
            [],
            |r| r.get(0),
        )
        .expect("dev");
    assert_eq!(bad, 0, "a deviation was a book move");
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn the_match_runners_learner_analyses_each_learned_game_at_once() {
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(&dir);
    let pgn = dir.path().join("games.pgn");
    ok(&[
        "play",
        "--engine",
        &format!("name=lb,cmd=builtin,book={}", s(&book)),
        "--engine",
        "name=other,cmd=builtin",
        "--nodes",
        "300",
        "--games",
        "2",
        "--maxmoves",
        "30",
        "--pgnout",
        s(&pgn),
        "--learn",
        s(&book),
        "--learn-as",
        "lb",
        "--learn-analyze",
        "--analysis-nodes",
        "1000",
        "--analysis-min-games",
        "1",
    ]);
    // Every position of the learned games (one game each, at least) has a
    // search score, the last ones included.
    let c = Connection::open(&book).expect("open");
    let deep: i64 = c
        .query_row(
            "SELECT count(*) FROM analysis a JOIN positions p ON p.key = a.key WHERE p.depth >= 40",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert!(
        deep >= 2,
        "positions past the book's max ply were analysed: {deep}"
    );
    ok(&["check", "--book", s(&book)]);
}

#[test]
fn a_schema_2_book_is_upgraded_in_place_and_stays_consistent() {
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(&dir);
    {
        // The book as schema 2 wrote it: no ratings, no analysis, no new parameters.
        let c = Connection::open(&book).expect("open");
        c.execute_batch(
            "DROP TABLE analysis;
             ALTER TABLE positions DROP COLUMN expected;
             DELETE FROM meta WHERE key IN ('popularity', 'search_games');
             UPDATE meta SET value = '2' WHERE key = 'schema_version';",
        )
        .expect("downgrade");
    }
    ok(&["check", "--book", s(&book)]);
    let c = Connection::open(&book).expect("open");
    // Schema 2 kept no ratings: every game counts as between equals.
    let rated: i64 = c
        .query_row(
            "SELECT count(*) FROM positions WHERE expected != 500 * (white + draws + black)",
            [],
            |r| r.get(0),
        )
        .expect("expected");
    assert_eq!(rated, 0);
    let version: String = c
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .expect("version");
    assert_eq!(version, learnbook::book::db::SCHEMA_VERSION.to_string());
    analyze_40(&book);
    ok(&["check", "--book", s(&book)]);
}
