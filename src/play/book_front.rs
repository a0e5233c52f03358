//! An opening book in front of any player, as a GUI or match runner plays
//! one (cutechess's `book=`): the book's move while it has one, then the
//! engine for the rest of the game. Also the node jitter that keeps a
//! fixed-node engine from replaying one game from one start, and a deeper
//! search for a game's first plies, or in the book's own positions (the
//! ceilings a book is measured against).

use rand::{rngs::StdRng, Rng, SeedableRng};

use crate::book::choose::Mode;
use crate::book::opening_book::{Decision, OpeningBook};
use crate::engine_io::protocol::{Budget, Fault, Player, Reply, Request};

/// A player that answers from `book` until the book has no move in a
/// game, then leaves the rest of that game to `inner`.
pub struct BookFront {
    inner: Box<dyn Player>,
    book: OpeningBook,
    mode: Mode,
    rng: StdRng,
    /// Whether the book still plays in this game.
    in_book: bool,
    /// Where the book has a move, the engine at these nodes chooses it
    /// instead: the best any choice within the book's reach can do.
    deep_nodes: Option<u64>,
}

impl BookFront {
    pub fn new(inner: Box<dyn Player>, book: OpeningBook, mode: Mode, seed: u64) -> BookFront {
        BookFront {
            inner,
            book,
            mode,
            rng: StdRng::seed_from_u64(seed),
            in_book: true,
            deep_nodes: None,
        }
    }

    /// The engine at `nodes` chooses the move wherever the book has one.
    pub fn with_deep_nodes(self, nodes: Option<u64>) -> BookFront {
        BookFront {
            deep_nodes: nodes,
            ..self
        }
    }
}

impl Player for BookFront {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn new_game(&mut self) -> Result<(), Fault> {
        self.in_book = true;
        self.inner.new_game()
    }

    fn think(&mut self, req: &Request) -> Result<Reply, Fault> {
        if self.in_book {
            match self.book.decide(req.position, self.mode, &mut self.rng) {
                Ok(Decision::Play(mv)) => {
                    let Some(nodes) = self.deep_nodes else {
                        return Ok(Reply::Move {
                            mv,
                            score_cp: None,
                            depth: None,
                        });
                    };
                    // Played as a book move (no score in the PGN), so the
                    // report counts it with the book's plies.
                    let budget = Budget::Nodes(nodes);
                    return match self.inner.think(&Request { budget, ..*req })? {
                        Reply::Move { mv, .. } => Ok(Reply::Move {
                            mv,
                            score_cp: None,
                            depth: None,
                        }),
                        resign => Ok(resign),
                    };
                }
                // Once out, out: a transposition back into the book later
                // is the engine's game, as in a GUI that stops at the
                // book's first miss.
                Ok(Decision::Search(_)) => self.in_book = false,
                Err(e) => return Err(Fault::Crash(format!("{}: book: {e:#}", self.inner.name()))),
            }
        }
        self.inner.think(req)
    }
}

/// A player whose fixed node budget varies by up to `fraction` either way,
/// drawn anew for every move: one engine from one start then plays more
/// than one game, as engines on a clock do.
pub struct NodeJitter {
    inner: Box<dyn Player>,
    fraction: f64,
    rng: StdRng,
}

impl NodeJitter {
    pub fn new(inner: Box<dyn Player>, fraction: f64, seed: u64) -> NodeJitter {
        NodeJitter {
            inner,
            fraction: fraction.clamp(0.0, 0.9),
            rng: StdRng::seed_from_u64(seed),
        }
    }
}

impl Player for NodeJitter {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn new_game(&mut self) -> Result<(), Fault> {
        self.inner.new_game()
    }

    fn think(&mut self, req: &Request) -> Result<Reply, Fault> {
        let budget = match req.budget {
            Budget::Nodes(n) if self.fraction > 0.0 => {
                let f = self.rng.random_range(-self.fraction..=self.fraction);
                Budget::Nodes(((n as f64) * (1.0 + f)).round().max(1.0) as u64)
            }
            b => b,
        };
        self.inner.think(&Request { budget, ..*req })
    }
}

/// A player that searches the game's first `plies` (counted from the
/// standard start) at `nodes` instead of its budget: an engine given far
/// more time for the opening, the ceiling of what better opening moves are
/// worth against a book.
pub struct DeepStart {
    inner: Box<dyn Player>,
    plies: usize,
    nodes: u64,
}

impl DeepStart {
    pub fn new(inner: Box<dyn Player>, plies: usize, nodes: u64) -> DeepStart {
        DeepStart {
            inner,
            plies,
            nodes,
        }
    }
}

impl Player for DeepStart {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn new_game(&mut self) -> Result<(), Fault> {
        self.inner.new_game()
    }

    fn think(&mut self, req: &Request) -> Result<Reply, Fault> {
        if req.moves.len() < self.plies {
            return self.inner.think(&Request {
                budget: Budget::Nodes(self.nodes),
                ..*req
            });
        }
        self.inner.think(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Chess, Move, Position};

    /// Plays the first legal move and records the budgets it was given.
    struct First {
        budgets: std::sync::Arc<std::sync::Mutex<Vec<Budget>>>,
        searched: std::sync::Arc<std::sync::Mutex<usize>>,
    }

    impl Player for First {
        fn name(&self) -> &str {
            "first"
        }
        fn new_game(&mut self) -> Result<(), Fault> {
            Ok(())
        }
        fn think(&mut self, req: &Request) -> Result<Reply, Fault> {
            self.budgets.lock().unwrap().push(req.budget);
            *self.searched.lock().unwrap() += 1;
            Ok(Reply::Move {
                mv: req.position.legal_moves()[0],
                score_cp: Some(0),
                depth: Some(1),
            })
        }
    }

    fn first() -> (First, std::sync::Arc<std::sync::Mutex<Vec<Budget>>>) {
        let budgets = std::sync::Arc::default();
        (
            First {
                budgets: std::sync::Arc::clone(&budgets),
                searched: std::sync::Arc::default(),
            },
            budgets,
        )
    }

    fn ask(p: &mut dyn Player, pos: &Chess, budget: Budget) -> Move {
        let start = Chess::default();
        let req = Request {
            start_fen: None,
            start: &start,
            moves: &[],
            position: pos,
            budget,
        };
        match p.think(&req).unwrap() {
            Reply::Move { mv, .. } => mv,
            Reply::Resign => panic!("resigned"),
        }
    }

    #[test]
    fn jitter_stays_within_its_fraction_and_varies() {
        let (inner, budgets) = first();
        let mut p = NodeJitter::new(Box::new(inner), 0.1, 7);
        for _ in 0..200 {
            ask(&mut p, &Chess::default(), Budget::Nodes(20_000));
        }
        let seen: Vec<u64> = budgets
            .lock()
            .unwrap()
            .iter()
            .map(|b| match b {
                Budget::Nodes(n) => *n,
                _ => panic!("not nodes"),
            })
            .collect();
        assert!(seen.iter().all(|n| (18_000..=22_000).contains(n)));
        let distinct: std::collections::HashSet<_> = seen.iter().collect();
        assert!(distinct.len() > 50, "{} distinct budgets", distinct.len());
        // Other budgets pass unchanged.
        ask(&mut p, &Chess::default(), Budget::Depth(5));
        assert_eq!(budgets.lock().unwrap().last(), Some(&Budget::Depth(5)));
    }

    #[test]
    fn a_deep_start_searches_the_first_plies_at_its_own_budget() {
        let (inner, budgets) = first();
        let mut p = DeepStart::new(Box::new(inner), 2, 1_000_000);
        let start = Chess::default();
        let e4 = start.legal_moves()[0];
        let after = start.clone().play(e4).unwrap();
        let reply = after.legal_moves()[0];
        let third = after.clone().play(reply).unwrap();
        for (moves, pos) in [
            (vec![], &start),
            (vec![e4], &after),
            (vec![e4, reply], &third),
        ] {
            let req = Request {
                start_fen: None,
                start: &start,
                moves: &moves,
                position: pos,
                budget: Budget::Nodes(20_000),
            };
            p.think(&req).unwrap();
        }
        assert_eq!(
            *budgets.lock().unwrap(),
            vec![
                Budget::Nodes(1_000_000),
                Budget::Nodes(1_000_000),
                Budget::Nodes(20_000)
            ]
        );
    }

    /// A Polyglot book of 1. e4 (weight 5) and 1. d4 (weight 1) from the
    /// start and 1... e5 after 1. e4, at `path`: the start, 1. e4, 1. d4,
    /// the position after 1. e4, and 1... e5.
    fn e4_book(path: &std::path::Path) -> (Chess, Move, Move, Chess, Move) {
        let start = Chess::default();
        let uci = |pos: &Chess, m: &str| {
            shakmaty::uci::UciMove::from_ascii(m.as_bytes())
                .unwrap()
                .to_move(pos)
                .unwrap()
        };
        let (e4, d4) = (uci(&start, "e2e4"), uci(&start, "d2d4"));
        let after_e4 = start.clone().play(e4).unwrap();
        let e5 = uci(&after_e4, "e7e5");
        let entry = |pos: &Chess, m: Move, weight: u16| crate::book::formats::polyglot::Entry {
            key: crate::book::keys::polyglot_key(pos),
            mv: crate::book::keys::MoveCode::from_move(&m).0,
            weight,
            learn: 0,
        };
        let mut entries = vec![
            entry(&start, e4, 5),
            entry(&start, d4, 1),
            entry(&after_e4, e5, 1),
        ];
        crate::book::formats::polyglot::write_bin(path, &mut entries).unwrap();
        (start, e4, d4, after_e4, e5)
    }

    #[test]
    fn the_book_plays_until_its_first_miss_then_the_engine_plays_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.bin");
        let (start, e4, d4, after_e4, e5) = e4_book(&path);

        let (inner, _) = first();
        let searched = std::sync::Arc::clone(&inner.searched);
        let book = OpeningBook::open(&path).unwrap();
        let mut p = BookFront::new(Box::new(inner), book, Mode::Best, 1);
        p.new_game().unwrap();
        // Best: the heaviest move, every time.
        for _ in 0..20 {
            assert_eq!(ask(&mut p, &start, Budget::Nodes(1)), e4);
        }
        assert_eq!(*searched.lock().unwrap(), 0);
        // A position the book lacks: the engine; then the engine even where
        // the book has a move again, until the next game.
        let other = start.clone().play(d4).unwrap();
        ask(&mut p, &other, Budget::Nodes(1));
        assert_eq!(*searched.lock().unwrap(), 1);
        ask(&mut p, &after_e4, Budget::Nodes(1));
        assert_eq!(*searched.lock().unwrap(), 2);
        p.new_game().unwrap();
        assert_eq!(ask(&mut p, &after_e4, Budget::Nodes(1)), e5);
        assert_eq!(*searched.lock().unwrap(), 2);
    }

    #[test]
    fn with_deep_nodes_the_engine_chooses_where_the_book_has_a_move() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.bin");
        let (start, _, d4, _, _) = e4_book(&path);
        let (inner, budgets) = first();
        let book = OpeningBook::open(&path).unwrap();
        let mut p =
            BookFront::new(Box::new(inner), book, Mode::Best, 1).with_deep_nodes(Some(1_000_000));
        p.new_game().unwrap();
        let req = |pos| Request {
            start_fen: None,
            start: &start,
            moves: &[],
            position: pos,
            budget: Budget::Nodes(20_000),
        };
        // The engine's own move (the first legal one), not the book's e4,
        // and without a score: the PGN counts it as a book move.
        match p.think(&req(&start)).unwrap() {
            Reply::Move { mv, score_cp, .. } => {
                assert_eq!(mv, start.legal_moves()[0]);
                assert_eq!(score_cp, None);
            }
            Reply::Resign => panic!("resigned"),
        }
        // Out of the book: the engine at the game's budget, with its score.
        let other = start.clone().play(d4).unwrap();
        match p.think(&req(&other)).unwrap() {
            Reply::Move { score_cp, .. } => assert_eq!(score_cp, Some(0)),
            Reply::Resign => panic!("resigned"),
        }
        assert_eq!(
            *budgets.lock().unwrap(),
            vec![Budget::Nodes(1_000_000), Budget::Nodes(20_000)]
        );
    }
}
