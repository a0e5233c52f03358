//! `bench generate`: seeded, reproducible games that `build` reads whole,
//! whose openings follow the book they were drawn from.

mod common;

use std::path::Path;
use std::process::Command;

use common::{bin, ok, s, sample};
use rusqlite::Connection;
use tempfile::TempDir;

fn generate(book: &Path, out: &Path, games: u32, seed: u32, threads: u32) {
    let status = Command::new(bin())
        .env("RAYON_NUM_THREADS", threads.to_string())
        .args(["bench", "generate", "--book", s(book), "--out", s(out)])
        .args(["--games", &games.to_string(), "--seed", &seed.to_string()])
        .args(["--min-book-games", "5"])
        .status()
        .expect("run generate");
    assert!(status.success());
}

/// Games of each first move, most played first.
fn first_moves(book: &Path) -> Vec<(String, i64)> {
    let c = Connection::open(book).expect("open");
    let mut st = c
        .prepare(
            "SELECT uci, white + draws + black AS n FROM moves
             WHERE parent = (SELECT key FROM positions WHERE depth = 0) ORDER BY n DESC",
        )
        .expect("prep");
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}

#[test]
fn the_same_seed_gives_the_same_games_at_any_thread_count_and_another_seed_other_games() {
    let dir = TempDir::new().expect("tmp");
    let master = dir.path().join("sample.sqlite");
    ok(&["build", "--book", s(&master), s(&sample())]);
    let (a, b, c) = (
        dir.path().join("a.pgn"),
        dir.path().join("b.pgn"),
        dir.path().join("c.pgn"),
    );
    generate(&master, &a, 10_000, 7, 1);
    generate(&master, &b, 10_000, 7, 2);
    generate(&master, &c, 10_000, 8, 2);
    let (a, b, c) = (
        std::fs::read(a).expect("a"),
        std::fs::read(b).expect("b"),
        std::fs::read(c).expect("c"),
    );
    assert_eq!(a, b, "same seed, 1 and 2 threads: the same bytes");
    assert_ne!(a, c, "another seed: other games");
}

#[test]
fn generated_games_build_whole_and_their_first_moves_follow_the_book() {
    let dir = TempDir::new().expect("tmp");
    let master = dir.path().join("sample.sqlite");
    ok(&["build", "--book", s(&master), s(&sample())]);
    let pgn = dir.path().join("gen.pgn.zst");
    generate(&master, &pgn, 20_000, 1, 2);
    let book = dir.path().join("gen.sqlite");
    let out = ok(&["build", "--book", s(&book), s(&pgn)]);
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(
        summary.contains("games read: 20000, used: 20000, skipped: 0"),
        "{summary}"
    );
    let (real, generated) = (first_moves(&master), first_moves(&book));
    // The sample's two most played first moves are nearly tied (1.e4 582
    // games, 1.d4 581), so the same two, in either order.
    let top = |v: &[(String, i64)]| {
        let mut t = [v[0].0.clone(), v[1].0.clone()];
        t.sort();
        t
    };
    assert_eq!(
        top(&real),
        top(&generated),
        "the two most played first moves"
    );
    let total = |v: &[(String, i64)]| v.iter().map(|m| m.1).sum::<i64>() as f64;
    let (rt, gt) = (total(&real), total(&generated));
    for (mv, n) in real.iter().take(2) {
        let share = *n as f64 / rt;
        let g = generated.iter().find(|m| &m.0 == mv).map_or(0, |m| m.1) as f64 / gt;
        assert!(
            (share - g).abs() < 0.02,
            "{mv}: {share:.3} of the book's games, {g:.3} of the generated"
        );
    }
    // Past the book, games go their own way: most positions are one game's.
    let all = common::positions(&book);
    let single = all.iter().filter(|p| p.2 + p.3 + p.4 == 1).count() as f64 / all.len() as f64;
    assert!(single > 0.5, "single-game positions {single:.2}");
}
