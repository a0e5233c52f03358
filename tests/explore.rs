//! The explorer's data (ratings, top games, whole games) is the same
//! whichever way the games came in: one build, a build over its memory
//! budget, a build then games learned one at a time, shards merged; `check`
//! recomputes it from the games; every game's PGN reads back as the same game.

mod common;

use std::path::{Path, PathBuf};

use common::{ok, s, sample, sample_text};
use learnbook::book::{
    db::{MoveRating, TopEntry},
    keys::Key,
    pgn::{input::GameStream, validate::Filter},
    view::explorer::{game_pgn, parse_game_id},
    Book,
};
use tempfile::TempDir;

/// Every stored position's explorer data, through the `Book` API (tails
/// read as the rows they stand for).
fn explorer_view(path: &Path) -> Vec<(Key, Vec<TopEntry>, Vec<MoveRating>)> {
    let book = Book::open(path).expect("open");
    let mut keys: Vec<Key> = book
        .load_graph()
        .expect("graph")
        .nodes
        .iter()
        .map(|n| n.key)
        .collect();
    keys.sort_unstable();
    keys.into_iter()
        .map(|k| {
            let top = book.top_entries(k).expect("top");
            let mut moves = book.explorer_moves(k).expect("moves");
            moves.sort_by_key(|m| m.mv);
            (k, top, moves)
        })
        .collect()
}

fn write_games(dir: &TempDir, name: &str, games: &[&[u8]]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, games.concat()).expect("write");
    path
}

/// The sample's games, each as its own PGN text.
fn sample_games() -> Vec<Vec<u8>> {
    let text = sample_text();
    let mut games = Vec::new();
    let mut start = 0;
    let starts: Vec<usize> = text
        .windows(8)
        .enumerate()
        .filter(|(i, w)| *w == b"[Event \"" && (*i == 0 || text[i - 1] == b'\n'))
        .map(|(i, _)| i)
        .collect();
    for &i in starts.iter().skip(1) {
        games.push(text[start..i].to_vec());
        start = i;
    }
    games.push(text[start..].to_vec());
    games
}

fn is_consistent(path: &Path) {
    let out = ok(&["check", "--book", s(path)]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("book is consistent"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn ratings_and_top_games_agree_across_build_learn_and_merge() {
    let dir = TempDir::new().expect("tempdir");
    let games = sample_games();
    assert!(games.len() > 1000, "{} games", games.len());
    let refs: Vec<&[u8]> = games.iter().map(|g| g.as_slice()).collect();
    let (first, second) = refs.split_at(refs.len() / 2);
    let a = write_games(&dir, "a.pgn", first);
    let b = write_games(&dir, "b.pgn", second);

    let whole = dir.path().join("whole.sqlite");
    ok(&["build", "--book", s(&whole), s(&sample())]);
    is_consistent(&whole);
    let reference = explorer_view(&whole);
    let with_top = reference.iter().filter(|r| r.1.len() > 1).count();
    let rated = reference
        .iter()
        .flat_map(|r| &r.2)
        .filter(|m| m.rated > 0)
        .count();
    assert!(with_top > 1000 && rated > 1000, "{with_top} {rated}");

    // Over a tiny memory budget: journal, filter, exact counts.
    let spilled = dir.path().join("spilled.sqlite");
    ok(&[
        "build",
        "--memory",
        "8M",
        "--book",
        s(&spilled),
        s(&sample()),
    ]);
    assert!(explorer_view(&spilled) == reference, "build --memory");

    // Half built, the rest learned one game at a time.
    let learned = dir.path().join("learned.sqlite");
    ok(&["build", "--book", s(&learned), s(&a)]);
    ok(&["learn", "--book", s(&learned), s(&b)]);
    is_consistent(&learned);
    let view = explorer_view(&learned);
    assert_eq!(view.len(), reference.len());
    for (x, y) in view.iter().zip(&reference) {
        assert_eq!(x, y, "learned against built");
    }

    // Two shards merged, one game in both (counted once).
    let a2 = write_games(&dir, "a2.pgn", &[first, &second[..1]].concat());
    let (sa, sb) = (dir.path().join("sa.sqlite"), dir.path().join("sb.sqlite"));
    ok(&["build", "--book", s(&sa), s(&a2)]);
    ok(&["build", "--book", s(&sb), s(&b)]);
    let merged = dir.path().join("merged.sqlite");
    ok(&["merge", "--book", s(&merged), s(&sa), s(&sb)]);
    is_consistent(&merged);
    let view = explorer_view(&merged);
    assert_eq!(view.len(), reference.len());
    for (x, y) in view.iter().zip(&reference) {
        assert_eq!(x, y, "merged against built");
    }
}

#[test]
fn every_game_reads_back_from_its_pgn_as_the_same_game() {
    let dir = TempDir::new().expect("tempdir");
    let path = dir.path().join("book.sqlite");
    ok(&["build", "--book", s(&path), s(&sample())]);
    let book = Book::open(&path).expect("open");
    let mut ids = Vec::new();
    book.for_each_game_moves(|g| {
        assert!(g.whole, "game {:016x} is not whole", g.hash);
        ids.push(g.hash);
        Ok(())
    })
    .expect("games");
    assert!(ids.len() > 1000);
    let filter = Filter {
        max_ply: 40,
        min_elo: None,
        allow_duplicates: false,
        no_tails: false,
    };
    for id in ids {
        let text = game_pgn(&book, id).expect("read").expect("a game");
        assert_eq!(
            parse_game_id(&learnbook::book::view::explorer::game_id_text(id)),
            Some(id)
        );
        let mut stream = GameStream::from_bytes(text.clone().into_bytes());
        let raw = stream.next_batch(2);
        assert_eq!(raw.len(), 1, "{text}");
        let game = raw[0].validate(&filter).expect("a valid game");
        // The hash covers players, Event/Site/Date/Round, every move and
        // the result: the PGN is the whole game.
        assert_eq!(game.hash, id, "{text}");
    }
    assert_eq!(game_pgn(&book, 12345).expect("read"), None);
}
