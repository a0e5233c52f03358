//! `improve`: passes of analysis by priority with a journal. A run killed
//! midway and run again, a run moved to a fresh copy of the book through
//! its journal, and two shards stored after, all end with the analysis
//! and values one uninterrupted run gives. Bad plans and another book's
//! journal are clear errors.

mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
    thread,
    time::{Duration, Instant},
};

use common::{bin, count, differences, ok, run, s, sample};
use tempfile::TempDir;

/// Two small passes: the busy positions, then the busiest again deeper (an
/// upgrade of what the first stored). Budgets large enough for the kill
/// below to come while the first pass runs.
const PLAN: &str = "games=12,nodes=12000;games=60,ply=6,nodes=30000";

fn sample_book(dir: &Path, name: &str) -> PathBuf {
    let book = dir.join(name);
    ok(&["build", "--book", s(&book), s(&sample())]);
    book
}

fn improve(book: &Path, journal: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "improve",
        "--book",
        s(book),
        "--engine",
        "builtin",
        "--plan",
        PLAN,
        "--threads",
        "2",
        "--journal",
        s(journal),
    ];
    args.extend_from_slice(extra);
    ok(&args)
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Journal lines (results) in every part of `dir`.
fn journal_rows(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).expect("journal dir") {
        let path = e.expect("entry").path();
        let mut text = String::new();
        // A part cut short by a kill reads up to the cut.
        let _ = std::io::Read::read_to_string(
            &mut flate2::read::MultiGzDecoder::new(std::fs::File::open(&path).expect("part")),
            &mut text,
        );
        n += text.lines().filter(|l| !l.starts_with('#')).count();
    }
    n
}

fn assert_same_analysis(a: &Path, b: &Path) {
    for table in ["analysis", "positions"] {
        assert_eq!(
            differences(a, b, table, "*"),
            (0, 0),
            "{table} differ between {} and {}",
            a.display(),
            b.display()
        );
    }
}

#[test]
fn killed_resumed_moved_and_sharded_runs_end_as_one_run() {
    let dir = TempDir::new().expect("tmp");
    let d = dir.path();

    // One run, start to end.
    let one = sample_book(d, "one.sqlite");
    let out = improve(&one, &d.join("j-one"), &[]);
    let report = stderr(&out);
    assert!(
        report.contains("pass games=12,nodes=12000: analysed"),
        "{report}"
    );
    let rows = count(&one, "SELECT count(*) FROM analysis");
    let deep = count(
        &one,
        "SELECT count(*) FROM analysis WHERE budget = 'nodes=30000'",
    );
    assert!(
        rows > 100 && deep > 5 && deep < rows,
        "{rows} {deep}\n{report}"
    );
    assert_eq!(
        count(&one, "SELECT count(DISTINCT engine) FROM analysis"),
        1
    );

    // Killed midway (SIGKILL, after some results reached the journal),
    // then run again with the same journal.
    let killed = sample_book(d, "killed.sqlite");
    let journal = d.join("j-killed");
    let mut child = Command::new(bin())
        .args([
            "improve",
            "--book",
            s(&killed),
            "--engine",
            "builtin",
            "--plan",
            PLAN,
            "--threads",
            "1",
            "--journal",
            s(&journal),
            "--store-every",
            "16",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    while (!journal.exists() || journal_rows(&journal) < 40)
        && child.try_wait().expect("wait").is_none()
    {
        assert!(start.elapsed() < common::WATCHDOG, "no results");
        thread::sleep(Duration::from_millis(20));
    }
    let was_running = child.try_wait().expect("wait").is_none();
    child.kill().expect("kill");
    child.wait().expect("reap");
    assert!(was_running, "the run ended before it could be killed");
    // Killed before the first pass ended: the deeper pass stored nothing.
    let part_rows = journal_rows(&journal);
    assert!(part_rows < rows as usize, "{part_rows} of {rows}");
    assert_eq!(
        count(
            &killed,
            "SELECT count(*) FROM analysis WHERE budget = 'nodes=30000'"
        ),
        0
    );
    // The book holds no result the journal lacks (the journal is written first).
    assert!(count(&killed, "SELECT count(*) FROM analysis") as usize <= part_rows);
    let again = improve(&killed, &journal, &[]);
    let again = String::from_utf8_lossy(&again.stderr).into_owned();
    assert!(again.contains("journal: 1 parts"), "{again}");
    assert_same_analysis(&one, &killed);

    // Moved: a fresh book of the same games takes the whole journal and
    // searches nothing.
    let moved = sample_book(d, "moved.sqlite");
    let out = improve(&moved, &journal, &[]);
    let report = stderr(&out);
    assert!(report.contains("journal: 2 parts"), "{report}");
    assert!(report.contains("analysed 0 positions"), "{report}");
    assert_same_analysis(&one, &moved);

    // Two shards into one journal (the book only read), then stored.
    let sharded = sample_book(d, "sharded.sqlite");
    let journal = d.join("j-shards");
    for i in 0..2 {
        let shard = format!("{i}/2");
        improve(&sharded, &journal, &["--shard", &shard]);
    }
    assert_eq!(count(&sharded, "SELECT count(*) FROM analysis"), 0);
    let out = improve(&sharded, &journal, &["--time", "0s"]);
    let report = stderr(&out);
    assert!(report.contains("journal: 2 parts"), "{report}");
    assert_same_analysis(&one, &sharded);
    let check = ok(&["check", "--book", s(&sharded)]);
    assert!(String::from_utf8_lossy(&check.stdout).contains("book is consistent"));
}

/// A grow pass after an analysis: its expansions reach the journal, and a
/// fresh book of the same games replays them into the same engine moves,
/// positions, scores and values without a search; a shard skips growth.
#[test]
fn a_grow_pass_is_journaled_and_replayed_into_a_fresh_book() {
    const GROW_PLAN: &str = "games=12,nodes=4000;grow,games=0,nodes=4000,alpha=20,width=2";
    let dir = TempDir::new().expect("tmp");
    let d = dir.path();
    let grown = sample_book(d, "grown.sqlite");
    let journal = d.join("j");
    let args = |book: &Path, time: &'static str| {
        ok(&[
            "improve",
            "--book",
            s(book),
            "--engine",
            "builtin",
            "--plan",
            GROW_PLAN,
            "--threads",
            "2",
            "--journal",
            s(&journal),
            "--time",
            time,
        ])
    };
    // A run stops at --time; the next goes on from the journal. A loaded
    // machine may need several runs to reach the grow pass and grow.
    let mut report = String::new();
    let (mut engine_moves, mut expanded) = (0, 0);
    for _ in 0..40 {
        report = stderr(&args(&grown, "25s"));
        engine_moves = count(&grown, "SELECT count(*) FROM moves WHERE grown = 1");
        expanded = count(
            &grown,
            "SELECT count(*) FROM analysis WHERE grown IS NOT NULL",
        );
        if engine_moves > 10 && expanded > 5 {
            break;
        }
    }
    assert!(
        report.contains("pass grow,games=0,nodes=4000,alpha=20,width=2: grew"),
        "{report}"
    );
    assert!(
        engine_moves > 10 && expanded > 5,
        "{engine_moves} {expanded}\n{report}"
    );

    let fresh = sample_book(d, "fresh.sqlite");
    let out = args(&fresh, "0s");
    let report = stderr(&out);
    assert!(
        report.contains(&format!(
            "journal: {expanded} expansions, {expanded} new to the book"
        )),
        "{report}"
    );
    for table in ["analysis", "positions", "moves"] {
        assert_eq!(differences(&grown, &fresh, table, "*"), (0, 0), "{table}");
    }
    let check = ok(&["check", "--book", s(&fresh)]);
    assert!(String::from_utf8_lossy(&check.stdout).contains("book is consistent"));
    // Run again on the same book: nothing replayed twice.
    let out = args(&fresh, "0s");
    let report = stderr(&out);
    assert!(report.contains(", 0 new to the book"), "{report}");

    let shard_book = sample_book(d, "shard.sqlite");
    let out = ok(&[
        "improve",
        "--book",
        s(&shard_book),
        "--engine",
        "builtin",
        "--plan",
        GROW_PLAN,
        "--journal",
        s(&d.join("j-shard")),
        "--shard",
        "0/2",
    ]);
    let report = stderr(&out);
    assert!(report.contains("1 grow passes skipped"), "{report}");
}

#[test]
fn bad_plans_and_another_books_journal_are_refused() {
    let dir = TempDir::new().expect("tmp");
    let book = sample_book(dir.path(), "b.sqlite");
    for plan in [
        "games=3",
        "games=3,nodes=0",
        "games=3,nodes=10,depth=4",
        "x",
        "grow,games=0,ply=5,nodes=10",
        "grow,games=0,nodes=10;games=3,nodes=10",
        "games=3,nodes=10,alpha=5",
        "grow,games=0,nodes=10,width=0",
    ] {
        let out = run(&[
            "improve",
            "--book",
            s(&book),
            "--engine",
            "builtin",
            "--plan",
            plan,
        ]);
        assert_eq!(out.status.code(), Some(2), "{plan}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--plan"),
            "{plan}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A journal made of another book: its keys would be other positions.
    let journal = dir.path().join("j");
    improve(&book, &journal, &[]);
    let other = dir.path().join("other.sqlite");
    let mut head = std::process::Command::new(bin())
        .args(["build", "--book", s(&other), "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    {
        use std::io::Write;
        let mut stdin = head.stdin.take().expect("stdin");
        stdin
            .write_all(b"[Result \"1-0\"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n")
            .expect("write");
    }
    assert!(head.wait().expect("wait").success());
    let out = run(&[
        "improve",
        "--book",
        s(&other),
        "--engine",
        "builtin",
        "--plan",
        PLAN,
        "--journal",
        s(&journal),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("another book"), "{err}");
    assert_eq!(count(&other, "SELECT count(*) FROM analysis"), 0);
}

/// A UCI engine with MultiPV: one search of each interior position scores
/// its leaf children too. The positions analysed are those of one search a
/// child, and two shards analyse them too; a leaf's score is the parent's
/// line for its move, as Stockfish itself gives it asked directly.
#[test]
fn multipv_scores_leaves_from_their_parents_search_and_shards_agree() {
    const SF: &str = "/usr/games/stockfish";
    if !(common::have_program(SF) && common::have_python_chess()) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let d = dir.path();
    let engine = format!("cmd={SF},option.Threads=1,option.Hash=16");
    let plan = "games=60,nodes=4000";
    let run = |book: &Path, journal: &str, extra: &[&str]| {
        let mut args = vec![
            "improve",
            "--book",
            s(book),
            "--engine",
            &engine,
            "--plan",
            plan,
            "--threads",
            "2",
            "--journal",
        ];
        let j = d.join(journal);
        args.push(s(&j));
        args.extend_from_slice(extra);
        String::from_utf8_lossy(&ok(&args).stderr).into_owned()
    };
    let multi = sample_book(d, "multi.sqlite");
    run(&multi, "j-multi", &[]);
    let single = sample_book(d, "single.sqlite");
    run(&single, "j-single", &["--one-search-a-child"]);
    let keys = |b: &Path, interior: i64| {
        count(
            b,
            &format!("SELECT count(*) FROM analysis WHERE interior = {interior}"),
        )
    };
    assert!(keys(&multi, 1) > 5 && keys(&multi, 0) > keys(&multi, 1));
    assert_eq!(
        (keys(&multi, 0), keys(&multi, 1)),
        (keys(&single, 0), keys(&single, 1))
    );
    assert_eq!(
        differences(&multi, &single, "analysis", "key, interior"),
        (0, 0)
    );
    // The scores are the engine's either way, but not the same searches.
    assert!(differences(&multi, &single, "analysis", "key, score").0 > 0);

    let sharded = sample_book(d, "sharded.sqlite");
    for i in 0..2 {
        run(&sharded, "j-shards", &["--shard", &format!("{i}/2")]);
    }
    run(&sharded, "j-shards", &["--time", "0s"]);
    // The same positions, engine and budget; a leaf whose parent the other
    // shard owns is searched alone there, so some scores differ.
    assert_eq!(
        differences(
            &multi,
            &sharded,
            "analysis",
            "key, interior, engine, budget"
        ),
        (0, 0)
    );

    // A leaf of the root (fewer than 60 games): its score is minus the
    // root's MultiPV line for its move, asked of Stockfish by python-chess.
    let conn = rusqlite::Connection::open(&multi).expect("open");
    let (uci, score): (String, i64) = conn
        .query_row(
            "SELECT m.uci, a.score FROM moves m JOIN analysis a ON a.key = m.child
             WHERE m.parent = (SELECT key FROM positions WHERE depth = 0) AND a.interior = 0
             ORDER BY m.white + m.draws + m.black DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("a leaf of the root");
    let book_moves = count(
        &multi,
        "SELECT count(*) FROM moves WHERE parent = (SELECT key FROM positions WHERE depth = 0)
         AND white + draws + black > 0",
    );
    let script = format!(
        "import chess, chess.engine\n\
         e = chess.engine.SimpleEngine.popen_uci('{SF}')\n\
         e.configure({{'Threads': 1, 'Hash': 16}})\n\
         infos = e.analyse(chess.Board(), chess.engine.Limit(nodes=4000), multipv={k})\n\
         e.quit()\n\
         print([i['score'].white().score(mate_score=30000) for i in infos if i['pv'][0].uci() == '{uci}'])\n",
        k = book_moves + 1
    );
    let text = common::python(&["-c", &script]);
    assert_eq!(text.trim(), format!("[{}]", -score), "leaf {uci}");
}
