//! The search's unit tests (apart, so that the search reads in one file).

use super::*;

fn best(fen: &str, depth: i32) -> (String, i32) {
    let pos = Position::from_fen(fen).unwrap();
    let mut s = Searcher::new(16, Weights::default());
    let stop = AtomicBool::new(false);
    let ponder = AtomicBool::new(false);
    let limits = Limits {
        depth: Some(depth),
        ..Limits::default()
    };
    let r = s.search(&pos, &[], &limits, &stop, &ponder, &mut |_| {});
    let m = r.best.unwrap();
    (
        m.to_uci(shakmaty::CastlingMode::Standard).to_string(),
        r.score,
    )
}

#[test]
fn finds_back_rank_mate() {
    let (m, score) = best("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1", 6);
    assert_eq!(m, "d1d8");
    assert_eq!(uci_score(score), "mate 1");
}

#[test]
fn see_values_exchanges() {
    // Pawn takes a defended knight: wins knight for pawn.
    let pos = Position::from_fen("4k3/8/3n4/4P3/8/8/8/4K3 w - - 0 1").unwrap();
    let m = pos.parse_uci("e5d6").unwrap();
    assert_eq!(see(&pos, m), 320);
    // Queen takes a pawn defended by a pawn: loses the queen for a pawn.
    let pos = Position::from_fen("4k3/2p5/3p4/8/8/8/3Q4/4K3 w - - 0 1").unwrap();
    let m = pos.parse_uci("d2d6").unwrap();
    assert_eq!(see(&pos, m), 100 - 950);
}

#[test]
fn node_limited_search_is_deterministic() {
    let pos =
        Position::from_fen("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
            .unwrap();
    let run = || {
        let mut s = Searcher::new(16, Weights::default());
        let stop = AtomicBool::new(false);
        let ponder = AtomicBool::new(false);
        let limits = Limits {
            nodes: Some(30_000),
            ..Limits::default()
        };
        let r = s.search(&pos, &[], &limits, &stop, &ponder, &mut |_| {});
        (r.best, r.nodes)
    };
    let a = run();
    assert_eq!(a.1, 30_000);
    assert_eq!(a, run());
}

#[test]
fn the_lmr_table_follows_its_parameters_however_the_weights_change() {
    let mut s = Searcher::new(1, Weights::default());
    assert_eq!(
        s.lmr[10][20],
        (0.85 + 10f64.ln() * 20f64.ln() / 1.85) as i32
    );
    assert_eq!((s.lmr[0][5], s.lmr[5][0]), (0, 0));
    // Through the public field: the next search rebuilds the table.
    s.weights.set("search_lmr_divisor_x100", 100).unwrap();
    s.weights.set("search_lmr_base_x100", 200).unwrap();
    let pos = Position::default();
    let (stop, ponder) = (AtomicBool::new(false), AtomicBool::new(false));
    let limits = Limits {
        depth: Some(2),
        ..Limits::default()
    };
    s.search(&pos, &[], &limits, &stop, &ponder, &mut |_| {});
    assert_eq!(s.lmr[10][20], (2.0 + 10f64.ln() * 20f64.ln()) as i32);
    // Through set_weights: at once.
    s.set_weights(Weights::default());
    assert_eq!(
        s.lmr[10][20],
        (0.85 + 10f64.ln() * 20f64.ln() / 1.85) as i32
    );
}

#[test]
fn repetition_is_a_draw() {
    // White, a rook down, can step back into a position seen before.
    let a = Position::from_fen("7k/8/8/8/8/8/7r/1K6 w - - 10 60").unwrap();
    let b = a.play(a.parse_uci("b1a1").unwrap());
    let mut s = Searcher::new(16, Weights::default());
    let (stop, ponder) = (AtomicBool::new(false), AtomicBool::new(false));
    let limits = Limits {
        depth: Some(6),
        ..Limits::default()
    };
    let r = s.search(&a, &[b.key], &limits, &stop, &ponder, &mut |_| {});
    assert_eq!(r.score, 0);
    assert_eq!(r.best, a.parse_uci("b1a1"));
    // Without that history the same search sees a lost position.
    s.clear();
    let r = s.search(&a, &[], &limits, &stop, &ponder, &mut |_| {});
    assert!(r.score < -300, "{}", r.score);
}

#[test]
fn a_search_with_a_net_evaluates_incrementally_as_from_scratch() {
    // `Search::evaluate` asserts, under test, that each incremental
    // evaluation equals one from scratch: a search over positions with
    // castling, en passant and promotions exercises every kind of move.
    let net = std::sync::Arc::new(crate::net::random_net(16, 11));
    let mut s = Searcher::new(4, Weights::default());
    s.set_net(Some(net.clone()));
    let stop = AtomicBool::new(false);
    let ponder = AtomicBool::new(false);
    for fen in [
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        "r3k2r/1P4P1/8/3pP3/8/8/1p4p1/R3K2R w KQkq d6 0 1",
        "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1",
    ] {
        let pos = Position::from_fen(fen).unwrap();
        let limits = Limits {
            nodes: Some(20_000),
            ..Limits::default()
        };
        let r = s.search(&pos, &[], &limits, &stop, &ponder, &mut |_| {});
        assert!(r.best.is_some());
        assert_eq!(s.evaluate(&pos), net.evaluate_position(&pos.chess));
    }
}
