//! `build`'s aggregate of many games: each position and move counted
//! with its results, ratings and top games, and each game's row, in
//! memory ([`Aggregate`]); `--min-games` ([`prune`]). The rows it counts
//! are the store's plain data (`db::bulk::input`: [`NodeAgg`], [`EdgeAgg`],
//! [`GameRow`]). What is made of it is in `graph` (rows, parent links,
//! tails, the graph to value), and `load` has the store's bulk writer
//! (`db::bulk`) write it.

use rayon::prelude::*;
use shakmaty::Chess;

use crate::db::bulk::input::{EdgeAgg, GameRow, NodeAgg};
use crate::db::codec::moves_to_blob;
use crate::db::top_games::{mover_elo, rank_of, TopEntry, HELD_BYTES};
use crate::keys::{polyglot_key, Key, KeyMap};
use crate::pgn::game::{Counts, Game, GameTags};

/// In-memory aggregate of many games, for `build`.
#[derive(Default)]
pub struct Aggregate {
    pub nodes: KeyMap<Key, NodeAgg>,
    /// The moves of a position other than its first ([`NodeAgg::first`]).
    pub edges: KeyMap<(Key, u16), EdgeAgg>,
    /// Games in input order, each once ([`Aggregate::game_index`] finds
    /// one by hash; a Vec moves no rows when it grows).
    pub games: Vec<GameRow>,
    pub game_index: KeyMap<u64, u32>,
    /// The names [`GameRow::source`] indexes.
    pub sources: Vec<String>,
    /// A new book keeps single-game tails as their game's moves
    /// ([`crate::db::tails`]) rather than as rows.
    pub tails: bool,
    /// Heap bytes the games hold beside their rows (names, moves, keys),
    /// for [`Aggregate::approx_bytes`].
    game_heap: u64,
    /// Entries held in the nodes' top lists (less what was dropped), for
    /// [`Aggregate::approx_bytes`].
    top_entries: i64,
}

impl GameRow {
    /// The row of `game`, from input `source`, counted `copies` times.
    fn new(game: &Game, source: u32, copies: u32, keys: Option<Vec<Key>>) -> GameRow {
        let mut row = GameRow::without_names(game, source, copies, keys);
        row.white = game.white.clone();
        row.black = game.black.clone();
        row.tags = game.tags.clone();
        row
    }

    /// The row without the names and tags, which a caller that owns the
    /// game can move into it instead of copying them.
    pub(in crate::build) fn without_names(
        game: &Game,
        source: u32,
        copies: u32,
        keys: Option<Vec<Key>>,
    ) -> GameRow {
        GameRow {
            copies,
            hash: game.hash,
            source,
            white: String::new(),
            black: String::new(),
            result: game.result.as_str(),
            plies: game.total_plies,
            start: game.start,
            moves: moves_to_blob(game.plies.iter().map(|p| p.mv.0)),
            expected: game.expected_milli(),
            white_elo: game.white_elo,
            black_elo: game.black_elo,
            tags: GameTags::default(),
            rest: moves_to_blob(game.rest.iter().copied()),
            keys,
        }
    }
}

/// Heap bytes of a game's tags.
fn tags_len(t: &GameTags) -> usize {
    [&t.event, &t.site, &t.date, &t.round, &t.fen]
        .iter()
        .map(|v| v.as_ref().map_or(0, |v| v.len() + 16))
        .sum()
}

impl EdgeAgg {
    pub(in crate::build) fn new(child: Key, castle: bool) -> EdgeAgg {
        EdgeAgg {
            child,
            castle,
            counts: Counts::default(),
            rating_sum: 0,
            rated: 0,
        }
    }

    /// Counts one game with result counts `c` and the mover's rating.
    pub(in crate::build) fn add(&mut self, c: Counts, mover_elo: Option<u32>) {
        self.counts.add(c);
        if let Some(r) = mover_elo {
            self.rating_sum += u64::from(r);
            self.rated += 1;
        }
    }
}

impl Aggregate {
    pub fn add(&mut self, game: &Game, source: &str) {
        self.count_positions(game, |_, _| true);
        self.add_game_row(game, source);
    }

    /// Counts the positions of `game` that `keep(index, key)` keeps (index
    /// 0 is the start) and the moves out of them; no game row (a build over
    /// its memory budget writes the games apart, see `book::spill`).
    pub fn count_positions(&mut self, game: &Game, keep: impl Fn(usize, Key) -> bool) {
        let c = game.result.counts();
        let expected = game.expected_milli();
        let rank = rank_of(game.white_elo, game.black_elo);
        let mut last_kept = false;
        // Each position and the move out of it together: one look-up.
        for (ply, key) in game.keys().enumerate() {
            last_kept = keep(ply, key);
            if !last_kept {
                continue;
            }
            let depth = game.start_ply + ply as u32;
            let n = self.nodes.entry(key).or_insert_with(|| NodeAgg {
                depth,
                ..NodeAgg::default()
            });
            n.depth = n.depth.min(depth);
            n.counts.add(c);
            n.expected += expected;
            let Some(p) = game.plies.get(ply) else {
                continue;
            };
            let new = || EdgeAgg::new(p.child, p.castle);
            let e = match &mut n.first {
                first @ None => &mut first.insert((p.mv.0, new())).1,
                Some((mv, e)) if *mv == p.mv.0 => e,
                _ => self.edges.entry((key, p.mv.0)).or_insert_with(new),
            };
            let before = e.counts.total();
            e.add(c, mover_elo(depth.into(), game.white_elo, game.black_elo));
            let entry = TopEntry {
                mv: p.mv,
                rank,
                game: game.hash,
            };
            let held = n.top.len() as i64;
            n.top.add(entry, before);
            self.top_entries += n.top.len() as i64 - held;
        }
        if let Some(e) = game.terminal {
            let last = game.plies.last().map_or(game.start, |p| p.child);
            if let Some(n) = self.nodes.get_mut(&last).filter(|_| last_kept) {
                n.exact = Some(e);
            }
        }
    }

    fn add_game_row(&mut self, game: &Game, source: &str) {
        if let Some(&i) = self.game_index.get(&game.hash) {
            let row = &mut self.games[i as usize];
            row.copies += 1;
            row.keys = None;
            return;
        }
        if self.sources.last().is_none_or(|s| s != source) {
            self.sources.push(source.to_string());
        }
        let standard = game.start_ply == 0 && game.start == polyglot_key(&Chess::default());
        let keep_keys = self.tails && standard;
        // Each allocation with the allocator's own 16 bytes.
        self.game_heap += (game.white.len() + game.black.len() + 2 * game.plies.len() + 48) as u64;
        if keep_keys {
            self.game_heap += (8 * (game.plies.len() + 1) + 16) as u64;
        }
        self.game_index.insert(game.hash, self.games.len() as u32);
        self.game_heap += (2 * game.rest.len() + tags_len(&game.tags)) as u64;
        let keys = keep_keys.then(|| game.keys().collect());
        self.games
            .push(GameRow::new(game, self.sources.len() as u32 - 1, 1, keys));
    }

    /// The memory the aggregate holds, in bytes, with the next game: its
    /// tables at their capacity (three times that for a table about to
    /// grow, which holds its old and its doubled buckets while it does) and
    /// the games' own allocations. What `build --memory` compares with its
    /// budget: a close estimate, not a measurement.
    pub fn approx_bytes(&self) -> u64 {
        fn table<K, V, S>(m: &std::collections::HashMap<K, V, S>) -> u64 {
            // One control byte an entry beside the entry itself; a game
            // adds at most a few hundred entries.
            let bytes = (m.capacity() * (std::mem::size_of::<(K, V)>() + 1)) as u64;
            if m.len() + 512 >= m.capacity() {
                3 * bytes
            } else {
                bytes
            }
        }
        table(&self.nodes)
            + table(&self.edges)
            + table(&self.game_index)
            + (self.games.capacity() * std::mem::size_of::<GameRow>()) as u64
            + self.game_heap
            + self.top_entries.max(0) as u64 * HELD_BYTES as u64 * 2
    }

    /// An empty aggregate; `tails`: a new book keeps single-game tails.
    pub fn new(tails: bool) -> Aggregate {
        Aggregate {
            tails,
            ..Aggregate::default()
        }
    }

    /// How many different moves were counted.
    pub fn move_count(&self) -> usize {
        self.nodes.values().filter(|n| n.first.is_some()).count() + self.edges.len()
    }

    /// The games in the order that gives their ids: by source name, then
    /// hash (the same for any split of the input into runs or shards).
    pub(in crate::build) fn games_in_id_order(&mut self) -> Vec<GameRow> {
        let mut games = std::mem::take(&mut self.games);
        let sources = &self.sources;
        games.par_sort_unstable_by(|a, b| {
            (&sources[a.source as usize], a.hash).cmp(&(&sources[b.source as usize], b.hash))
        });
        games
    }
}

/// `--min-games`: drops the positions and moves fewer than `min_games` games
/// reach (a move to a dropped position has fewer games than it, so goes too).
pub(in crate::build) fn prune(
    mut nodes: KeyMap<Key, NodeAgg>,
    mut edges: KeyMap<(Key, u16), EdgeAgg>,
    min_games: u32,
) -> (KeyMap<Key, NodeAgg>, KeyMap<(Key, u16), EdgeAgg>) {
    if min_games > 1 {
        nodes.retain(|_, n| n.counts.total() >= min_games);
        for n in nodes.values_mut() {
            if n.first.is_some_and(|(_, e)| e.counts.total() < min_games) {
                n.first = None;
            }
        }
        edges.retain(|_, e| e.counts.total() >= min_games);
    }
    (nodes, edges)
}

#[cfg(test)]
pub(in crate::build) mod tests {
    use super::*;
    use crate::pgn::{input::GameStream, validate::Filter};

    /// Games read from PGN text, each validated as `build` does.
    pub(in crate::build) fn games(pgn: &str) -> Vec<Game> {
        let mut stream = GameStream::new(Box::new(std::io::Cursor::new(pgn.as_bytes().to_vec())));
        let filter = Filter {
            max_ply: 40,
            min_elo: None,
            allow_duplicates: false,
            no_tails: false,
        };
        stream
            .next_batch(100)
            .iter()
            .map(|raw| raw.validate(&filter).expect("a valid game"))
            .collect()
    }

    /// Four games: two that part at ply 4, one that reaches the first's
    /// position at ply 4 by another order, and one that leaves them all at
    /// ply 3 and goes on alone.
    pub(in crate::build) const PGN: &str = r#"
[Event "a"]
[White "W1"]
[Black "B1"]
[WhiteElo "2500"]
[BlackElo "2400"]
[Result "1-0"]

1. e4 e5 2. Nf3 Nc6 1-0

[Event "b"]
[White "W2"]
[Black "B2"]
[Result "0-1"]

1. e4 e5 2. Nf3 Nf6 0-1

[Event "c"]
[White "W3"]
[Black "B3"]
[Result "1/2-1/2"]

1. Nf3 Nc6 2. e4 e5 1/2-1/2

[Event "d"]
[White "W4"]
[Black "B4"]
[Result "1-0"]

1. e4 e5 2. Bc4 Nf6 3. d3 Bc5 4. Nc3 d6 1-0
"#;

    pub(in crate::build) fn aggregate() -> (Aggregate, Vec<Game>) {
        let games = games(PGN);
        assert_eq!(games.len(), 4);
        let mut agg = Aggregate::new(true);
        for g in &games {
            agg.add(g, "test.pgn");
        }
        (agg, games)
    }

    /// The key after `plies` plies of `game`.
    pub(in crate::build) fn key_at(game: &Game, plies: usize) -> Key {
        game.keys().nth(plies).expect("a position")
    }

    #[test]
    fn each_position_and_move_gets_its_games_results_and_ratings() {
        let (agg, games) = aggregate();
        let start = &agg.nodes[&games[0].start];
        assert_eq!(start.depth, 0);
        assert_eq!(
            (start.counts.white, start.counts.draws, start.counts.black),
            (2, 1, 1)
        );
        // 1. e4: three games; the start's first move, the other (1. Nf3) apart.
        let (mv, e4) = start.first.expect("a first move");
        assert_eq!(mv, games[0].plies[0].mv.0);
        assert_eq!(e4.counts.total(), 3);
        assert_eq!(e4.child, key_at(&games[0], 1));
        // Only game a has ratings: White's 2500 with the move White played.
        assert_eq!((e4.rating_sum, e4.rated), (2500, 1));
        let nf3 = agg.edges[&(games[0].start, games[2].plies[0].mv.0)];
        assert_eq!((nf3.counts.draws, nf3.counts.total()), (1, 1));
        // The position after 2... Nc6, reached by games a and c in
        // another order: both counted, at its depth.
        let transposed = &agg.nodes[&key_at(&games[0], 4)];
        assert_eq!(key_at(&games[2], 4), key_at(&games[0], 4));
        assert_eq!(transposed.counts.total(), 2);
        assert_eq!(transposed.depth, 4);
        assert_eq!(agg.games.len(), 4);
        // Start, e4, e5, Nf3 (a, b), Nc6, Nf6, Nf3 (c), Nc6 (c), e4 (c),
        // Bc4 and d's five more, the moves out of them less the last ones.
        assert_eq!(agg.nodes.len(), 1 + 1 + 1 + 1 + 2 + 1 + 1 + 1 + 1 + 5);
        // One move into each position but the start, two into the
        // transposed one.
        assert_eq!(agg.move_count(), agg.nodes.len());
        // Each move out of a position is counted once per game through it.
        let moves: u32 = agg
            .nodes
            .values()
            .filter_map(|n| n.first.map(|(_, e)| e.counts.total()))
            .chain(agg.edges.values().map(|e| e.counts.total()))
            .sum();
        let plies: usize = games.iter().map(|g| g.plies.len()).sum();
        assert_eq!(moves as usize, plies);
    }

    #[test]
    fn a_game_added_twice_is_one_row_with_two_copies_and_no_tail() {
        let (mut agg, games) = aggregate();
        assert!(agg.games[0].keys.is_some());
        agg.add(&games[0], "again.pgn");
        assert_eq!(agg.games.len(), 4);
        assert_eq!(agg.games[0].copies, 2);
        // Counted twice, it can have no single-game tail.
        assert!(agg.games[0].keys.is_none());
        assert_eq!(agg.nodes[&games[0].start].counts.total(), 5);
        // Its row kept the first source it came from.
        assert_eq!(agg.sources, ["test.pgn"]);
    }

    #[test]
    fn min_games_drops_the_positions_and_moves_fewer_games_reach() {
        let (agg, games) = aggregate();
        let (nodes, edges) = prune(agg.nodes.clone(), agg.edges.clone(), 1);
        assert_eq!(
            (nodes.len(), edges.len()),
            (agg.nodes.len(), agg.edges.len())
        );
        let (nodes, edges) = prune(agg.nodes, agg.edges, 2);
        assert!(nodes.values().all(|n| n.counts.total() >= 2));
        // The start, 1. e4, 1... e5, 2. Nf3 (a and b), and the transposed
        // position (a and c).
        assert_eq!(nodes.len(), 5);
        // 1. Nf3 (one game) goes, 1. e4 stays.
        assert!(edges.is_empty());
        let start = &nodes[&games[0].start];
        assert_eq!(start.first.map(|(mv, _)| mv), Some(games[0].plies[0].mv.0));
        // After 2. Nf3 the two games part: no move out of it has two.
        assert!(nodes[&key_at(&games[0], 3)].first.is_none());
    }
}
