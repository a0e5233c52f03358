//! Hossa's loop on real books: incremental re-evaluation is exact, lines that
//! lose sink, lines that win stay, one lucky game does not win, and many
//! losses as White do not make the book believe every White move loses.

mod common;

use std::path::Path;

use common::{sample, shared};
use learnbook::book::{
    build::build_book,
    choose::{choose, Mode},
    keys::polyglot_key,
    pgn::{
        game::{Game, GameResult},
        input::{open_input, GameStream},
        validate::{Filter, Header},
    },
    Book, BookSettings,
};
use rand::{rngs::StdRng, Rng, SeedableRng};
use shakmaty::{CastlingMode, Chess, Move, Position};
use tempfile::TempDir;

fn master() -> std::path::PathBuf {
    shared().join("games/master-games.pgn.gz")
}

fn filter() -> Filter {
    Filter {
        max_ply: 40,
        min_elo: None,
        allow_duplicates: false,
        no_tails: false,
    }
}

/// A fresh book built from the repo's sample of master games.
fn sample_book(dir: &TempDir) -> Book {
    let path = dir.path().join("book.sqlite");
    build_book(
        &path,
        BookSettings::default(),
        vec![sample()],
        filter(),
        &Default::default(),
        learnbook::shard::Shard::WHOLE,
    )
    .expect("build");
    Book::open(&path).expect("open")
}

/// A game with the given moves from the start position.
fn game(moves: &[Move], result: &str, round: usize) -> Game {
    let identity = [format!("Round={round}")];
    let header = Header {
        white: "learnbook",
        black: "opponent",
        identity: &identity,
        fen: None,
        white_elo: None,
        black_elo: None,
    };
    let result = GameResult::parse(result).expect("a result");
    Game::from_moves(&header, Chess::default(), moves, result, filter().max_ply)
        .expect("valid game")
}

/// The line the book plays against itself from the start, up to `plies`.
fn book_line(book: &Book, plies: usize) -> Vec<Move> {
    let mut pos = Chess::default();
    let mut line = Vec::new();
    let mut rng = StdRng::seed_from_u64(1);
    while line.len() < plies {
        match choose(book, &pos, Mode::Best, &mut rng).expect("choose") {
            Some(m) => {
                pos.play_unchecked(m);
                line.push(m);
            }
            None => break,
        }
    }
    line
}

/// Plays White's book choices against Black's moves of `line`; returns the
/// number of plies for which White still follows `line`.
fn white_follows(book: &Book, line: &[Move]) -> usize {
    let mut pos = Chess::default();
    let mut rng = StdRng::seed_from_u64(1);
    for (i, m) in line.iter().enumerate() {
        if pos.turn().is_white() {
            let c = choose(book, &pos, Mode::Best, &mut rng).expect("choose");
            if c.as_ref() != Some(m) {
                return i;
            }
        }
        pos.play_unchecked(*m);
    }
    line.len()
}

/// Asserts every stored value and choice equals a full re-evaluation.
fn assert_exact(book: &Book, context: &str) {
    let stored = book.load_graph().expect("load");
    let mut fresh = book.load_graph().expect("load");
    fresh.evaluate(&book.settings.params);
    for (i, (a, b)) in stored.nodes.iter().zip(&fresh.nodes).enumerate() {
        assert_eq!(
            a.value.to_bits(),
            b.value.to_bits(),
            "{context}: value of {}: {} vs {}",
            a.key,
            a.value,
            b.value
        );
        assert_eq!(
            stored.best[i], fresh.best[i],
            "{context}: choice of {}",
            a.key
        );
    }
}

fn read_games(path: &Path, skip: usize, n: usize) -> Vec<Game> {
    let mut stream = GameStream::new(open_input(path).expect("open"));
    let mut out = Vec::new();
    let mut seen = 0;
    while out.len() < n {
        let batch = stream.next_batch(1024);
        assert!(!batch.is_empty(), "input too short");
        for raw in batch {
            seen += 1;
            if seen <= skip || out.len() >= n {
                continue;
            }
            if let Ok(g) = raw.validate(&filter()) {
                out.push(g);
            }
        }
    }
    out
}

#[test]
fn a_game_given_as_moves_is_the_game_read_from_its_pgn() {
    // The learner adds its games as moves; the same game as PGN must be the
    // same game (same hash, keys and terminal value), or it would count twice.
    let mut stream = GameStream::new(open_input(&sample()).expect("open"));
    let raws = stream.next_batch(50);
    assert!(raws.len() >= 20, "the sample has games");
    let mut compared = 0;
    for raw in raws {
        let whole = Filter {
            max_ply: 1000,
            ..filter()
        };
        let Ok(read) = raw.validate(&whole) else {
            continue;
        };
        let Some(boards) = read.boards() else {
            continue;
        };
        let moves: Vec<Move> = read
            .plies
            .iter()
            .zip(&boards)
            .map(|(p, pos)| p.mv.to_move(pos).expect("legal"))
            .collect();
        let header = Header {
            white: &raw.white,
            black: &raw.black,
            identity: &raw.identity,
            fen: raw.fen.as_deref(),
            white_elo: raw.white_elo,
            black_elo: raw.black_elo,
        };
        let given = Game::from_moves(&header, Chess::default(), &moves, read.result, 1000)
            .expect("legal moves");
        assert_eq!(given.hash, read.hash, "game {}", raw.number);
        assert_eq!(given.plies, read.plies, "game {}", raw.number);
        assert_eq!(given.terminal, read.terminal, "game {}", raw.number);
        assert_eq!(given.expected_milli(), read.expected_milli());
        compared += 1;
    }
    assert!(compared >= 20, "only {compared} games compared");
    // An illegal move is refused, not stored.
    let e4 = learnbook::book::view::report::parse_uci(&Chess::default(), "e2e4").expect("e4");
    let header = Header {
        white: "a",
        black: "b",
        identity: &[],
        fen: None,
        white_elo: None,
        black_elo: None,
    };
    assert!(Game::from_moves(&header, Chess::default(), &[e4, e4], GameResult::Draw, 40).is_err());
}

#[test]
fn incremental_equals_full_after_each_of_1000_games_on_an_analysed_book() {
    if !(common::have_shared()) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let mut book = sample_book(&dir);
    // Search scores are inputs too: positions with >= 10 games carry a
    // score and a deviation, their children a score.
    let opts = learnbook::analyze::Options {
        engine: learnbook::analyze::EngineChoice::open(None).expect("builtin"),
        budget: learnbook::analyze::Budget::Nodes(1_500),
        threads: 2,
        min_games: 10,
        batch: 64,
        progress: false,
    };
    let s = learnbook::analyze::run(&mut book, &opts).expect("analyze");
    assert!(s.interior >= 100 && s.leaves > s.interior, "{s:?}");
    assert_exact(&book, "after the analysis");
    // Master games not in the sample (the sample is every 100th game).
    let games = read_games(&master(), 5_001, 1_000);
    let mut added = 0;
    for (i, g) in games.iter().enumerate() {
        if book.add_game(g, "master").expect("add").is_some() {
            added += 1;
        }
        assert_exact(&book, &format!("after game {i}"));
    }
    assert!(added >= 990, "only {added} of 1000 games were new");
}

/// `add_game` keeps what it read between games; a write by another
/// connection, or by this one outside `add_game`, must not leave it stale.
#[test]
fn learning_stays_exact_when_others_write_to_the_book() {
    if !(common::have_shared()) {
        return;
    }
    let dir = TempDir::new().expect("tmp");
    let mut a = sample_book(&dir);
    let mut b = Book::open(&a.path).expect("second connection");
    let games = read_games(&master(), 7_001, 120);
    for (i, g) in games.iter().enumerate() {
        // Two learners on one book, in an irregular order.
        let learner = if i % 3 == 1 { &mut b } else { &mut a };
        learner.add_game(g, "master").expect("add");
        if i == 62 {
            // This connection, outside add_game: new moves from the root.
            let bin = shared().join("polyglot/gnuchess-book.bin");
            learnbook::book::formats::polyglot_import::import(&mut a, &bin).expect("import");
        }
        if i % 10 == 9 || i == 63 {
            assert_exact(&a, &format!("after game {i}"));
            let report = learnbook::book::check::check(&a).expect("check");
            assert!(report.ok(), "after game {i}: {:?}", report.problems);
        }
    }
    let games_in_book: i64 = a.totals().expect("count").games;
    let root = a
        .position(polyglot_key(&Chess::default()))
        .expect("read")
        .expect("root");
    assert_eq!(i64::from(root.counts.total()), games_in_book);
}

#[test]
fn losing_line_sinks_winning_line_stays() {
    let dir = TempDir::new().expect("tmp");
    let mut book = sample_book(&dir);
    let line = book_line(&book, 16);
    assert!(
        line.len() >= 6,
        "the sample book plays at least 6 plies: {}",
        line.len()
    );
    assert_eq!(white_follows(&book, &line), line.len());
    let root = polyglot_key(&Chess::default());
    let first = learnbook::book::keys::MoveCode::from_move(&line[0]);
    let q_first = |b: &Book| {
        b.moves(root)
            .expect("moves")
            .iter()
            .find(|m| m.mv == first)
            .and_then(|m| m.q)
            .expect("q")
    };
    let q_before = q_first(&book);

    // (b) The line keeps winning: White keeps playing it, and its value rises.
    let copy = dir.path().join("won.sqlite");
    book.vacuum_into(&copy).expect("copy");
    let mut won = Book::open(&copy).expect("open copy");
    for r in 0..3 {
        won.add_game(&game(&line, "1-0", 100 + r), "test")
            .expect("add")
            .expect("new");
        assert_eq!(
            white_follows(&won, &line),
            line.len(),
            "after win {r} White left its winning line"
        );
    }
    assert!(
        q_first(&won) > q_before,
        "the winning first move did not rise"
    );

    // (a) The same line loses three games: White no longer plays into it.
    for r in 0..3 {
        book.add_game(&game(&line, "0-1", r), "test")
            .expect("add")
            .expect("new");
    }
    let follows = white_follows(&book, &line);
    assert!(
        follows < line.len(),
        "White still plays the line it lost three times"
    );
    assert!(
        q_first(&book) < q_before,
        "the losing first move did not sink"
    );
    assert_exact(&book, "after the losses");
}

#[test]
fn one_lucky_game_does_not_outrank_a_solid_line() {
    let dir = TempDir::new().expect("tmp");
    let mut book = sample_book(&dir);
    let pos = Chess::default();
    let before = book
        .stored_best(polyglot_key(&pos))
        .expect("q")
        .expect("a root choice");
    // 1. h4 is not in the sample; one brilliant win with it.
    let mut p = Chess::default();
    let mut moves = Vec::new();
    for uci in [
        "h2h4", "e7e5", "h1h3", "d8h4", "h3e3", "f8c5", "e3e5", "e8f8", "e5e8",
    ] {
        let m = learnbook::book::view::report::parse_uci(&p, uci).expect("legal");
        p.play_unchecked(m);
        moves.push(m);
    }
    book.add_game(&game(&moves, "1-0", 1), "lucky")
        .expect("add")
        .expect("new");
    let after = book
        .stored_best(polyglot_key(&pos))
        .expect("q")
        .expect("a root choice");
    assert_eq!(
        after, before,
        "one won game with 1. h4 changed the root choice"
    );
    let root_moves = book.moves(polyglot_key(&pos)).expect("moves");
    let h4 = root_moves
        .iter()
        .find(|m| m.uci == "h2h4")
        .expect("h4 is in the book now");
    let best = root_moves
        .iter()
        .find(|m| m.mv == before)
        .expect("best move");
    assert!(best.child_games >= 100, "the choice has solid evidence");
    // One won game is worth at most 1/(1+K): far from a win.
    assert!(h4.q.expect("q") <= 1.0 / (1.0 + book.settings.params.prior_games) + 1e-12);
}

#[test]
fn hossa_failure_does_not_happen() {
    // 200 games in which White always loses, with every first move.
    let dir = TempDir::new().expect("tmp");
    let mut book = sample_book(&dir);
    let start = Chess::default();
    let root = polyglot_key(&start);
    let solid: Vec<(String, u32)> = book
        .moves(root)
        .expect("moves")
        .into_iter()
        .map(|m| (m.uci, m.child_games))
        .collect();
    let mut rng = StdRng::seed_from_u64(7);
    let first_moves: Vec<Move> = start.legal_moves().into_iter().collect();
    for i in 0..200 {
        let mut pos = start.clone();
        let mut moves = vec![first_moves[i % first_moves.len()]];
        pos.play_unchecked(moves[0]);
        for _ in 0..11 {
            let legal = pos.legal_moves();
            if legal.is_empty() {
                break;
            }
            let m = legal[rng.random_range(0..legal.len())];
            pos.play_unchecked(m);
            moves.push(m);
        }
        book.add_game(&game(&moves, "0-1", i), "losses")
            .expect("add")
            .expect("new");
        if i % 25 == 24 {
            let choice = book
                .stored_best(root)
                .expect("q")
                .expect("White still has a book move");
            let uci = choice
                .to_move(&start)
                .expect("legal")
                .to_uci(CastlingMode::Standard)
                .to_string();
            let games_before = solid.iter().find(|(u, _)| *u == uci).map_or(0, |(_, n)| *n);
            assert!(
                games_before >= 100,
                "after {} losses the book chose {uci}, which had {games_before} games",
                i + 1
            );
            let v = book.position(root).expect("q").expect("root").value;
            let p = book.settings.params;
            assert!(v >= p.deviation && v < 1.0, "root value {v} outside [D, 1)");
        }
    }
    assert_exact(&book, "after 200 losses");
}

/// `bench learn`'s floor (`add_counts_only`) must count a game as learning
/// does, or the two would be timed doing different work; like learning,
/// it refuses a game already in the book.
#[test]
fn the_learn_floor_counts_a_game_as_learning_does() {
    let (dir_a, dir_b) = (TempDir::new().expect("tmp"), TempDir::new().expect("tmp"));
    let mut learned = sample_book(&dir_a);
    let mut floor = sample_book(&dir_b);
    let line = book_line(&learned, 12);
    assert!(
        line.len() >= 6,
        "the sample book plays {} plies",
        line.len()
    );
    let g = game(&line, "0-1", 7);
    let mut keys = vec![polyglot_key(&Chess::default())];
    let mut pos = Chess::default();
    for m in &line {
        pos.play_unchecked(*m);
        keys.push(polyglot_key(&pos));
    }
    let before: Vec<_> = keys
        .iter()
        .map(|&k| learned.position(k).expect("q").expect("a row").counts)
        .collect();
    assert!(learned.add_game(&g, "test").expect("add").is_some());
    assert!(floor.add_counts_only(&g, "test").expect("floor"));
    assert!(!floor.add_counts_only(&g, "test").expect("floor again"));
    // The positions of two games or more are rows; one game's are a
    // tail, which learning turns into rows and the floor leaves alone.
    let rows = before.iter().filter(|c| c.total() >= 2).count();
    assert!(rows >= 6, "{rows} rows on the line");
    for (i, &k) in keys.iter().enumerate().take(rows) {
        assert!(before[i].total() >= 2);
        let a = learned.position(k).expect("q").expect("a row").counts;
        let b = floor.position(k).expect("q").expect("a row").counts;
        assert_eq!(a, b, "position {i} of the line");
        assert_eq!(a.black, before[i].black + 1, "position {i} counts the loss");
        assert_eq!(a.white + a.draws, before[i].white + before[i].draws);
        let moves = |book: &Book| {
            book.moves(k)
                .expect("moves")
                .into_iter()
                .map(|m| (m.uci, m.counts))
                .collect::<Vec<_>>()
        };
        assert_eq!(moves(&learned), moves(&floor), "the moves of position {i}");
    }
}
