//! What a new book's rows are made of, from `build`'s aggregate
//! ([`super::aggregate`]): the moves in the tables' order and each position's
//! parents, the single-game tails (found, and valued from their last
//! position back), and the graph of the rest, valued, as position rows
//! (the store's plain rows, `db::bulk::input`, which `load` has the bulk
//! writer write). No SQL here.

use anyhow::{anyhow, bail, Result};
use rayon::prelude::*;
use shakmaty::Chess;

use crate::db::bulk::input::{EdgeAgg, GameRow, GameTail, NodeAgg, PositionRow};
use crate::db::codec::moves_from_blob;
use crate::db::tail_index::prefix;
use crate::db::tails::value_chain;
use crate::db::top_games::{mover_elo, rank_of, TopEntry, TopList};
use crate::journal::GamesInOrder;
use crate::keys::{polyglot_key, Key, KeyMap, MoveCode};
use crate::pgn::game::Game;
use crate::values::minimax::{Graph, NodeInfo, ValueParams};

/// What the thread that prepares the rows sends before it values them:
/// the moves and the parent links.
pub(in crate::build) type MoveRows = (Vec<((i64, u16), EdgeAgg)>, Links);
/// The rows' top lists, in key order.
pub(in crate::build) type Tops = Vec<TopList>;
/// `(child, parent)` of every move, sorted (see [`parent_links`]).
pub(in crate::build) type Links = Vec<(i64, i64)>;

/// Frees `value` on a thread of its own: a build's tables hold millions of
/// small allocations, and the book is complete before they are freed.
pub(in crate::build) fn drop_apart<T: Send + 'static>(value: T) {
    std::thread::spawn(move || drop(value));
}

/// The first `rows` nodes of the valued graph as rows, in key order.
pub(in crate::build) fn position_rows<'a>(
    g: &'a Graph,
    rows: usize,
    tops: &'a [TopList],
    links: &[(i64, i64)],
) -> Vec<PositionRow<'a>> {
    // Both lists are sorted by key: the first link of a child is its smallest parent.
    let mut link = links.iter().peekable();
    g.nodes
        .iter()
        .zip(&g.best)
        .zip(tops)
        .take(rows)
        .map(|((n, best), top)| {
            let key = n.key.to_sql();
            while link.next_if(|l| l.0 < key).is_some() {}
            PositionRow {
                node: n,
                best: best.map(|m| m.0),
                parent: link.peek().filter(|l| l.0 == key).map(|l| l.1),
                top,
            }
        })
        .collect()
}

/// Finds the tail of `game` as `find_tails` does (a position the aggregate
/// did not count, `counted` gives `None`, is one this game alone reaches)
/// and values it.
/// The games in id order made into [`GameTail`]s on every core (`lookup`:
/// the counted rows), handed to `write` a batch at a time with the number
/// of games before it, while the next batch is made.
pub(in crate::build) fn for_each_tail_batch<'a>(
    games: GamesInOrder<'_>,
    tails: bool,
    lookup: impl Fn(&Key) -> Option<&'a NodeAgg> + Sync,
    params: &ValueParams,
    mut write: impl FnMut(&[GameTail], i64) -> Result<()>,
) -> Result<()> {
    const BATCH: usize = 4096;
    let count = games.count;
    std::thread::scope(|scope| -> Result<()> {
        let (send, batches) = std::sync::mpsc::sync_channel::<Result<Vec<GameTail>>>(2);
        // A batch is freed on a thread of its own: freeing what the
        // reading threads allocated waits on their allocator's locks,
        // half this thread's time when it freed them itself.
        let (send_used, used) = std::sync::mpsc::channel::<Vec<GameTail>>();
        scope.spawn(move || used.into_iter().for_each(drop));
        let lookup = &lookup;
        scope.spawn(move || {
            let read = games.for_each_batch(BATCH, |batch| {
                let batch = batch
                    .into_par_iter()
                    .map(|(g, source, copies)| game_tail(g, source, copies, tails, lookup, params))
                    .collect();
                send.send(Ok(batch))
                    .map_err(|_| anyhow!("the writer stopped"))
            });
            if let Err(e) = read {
                let _ = send.send(Err(e));
            }
        });
        let mut written = 0i64;
        for batch in batches {
            let batch = batch?;
            write(&batch, written)?;
            written += batch.len() as i64;
            let _ = send_used.send(batch);
        }
        if written as u64 != count {
            bail!("{written} of {count} games were read");
        }
        Ok(())
    })
}

pub(in crate::build) fn game_tail<'a>(
    mut game: Game,
    source: u32,
    copies: u32,
    tails: bool,
    counted: impl Fn(&Key) -> Option<&'a NodeAgg>,
    params: &ValueParams,
) -> GameTail {
    let expected = game.expected_milli();
    let mut out = GameTail {
        row: GameRow::without_names(&game, source, copies, None),
        tail: None,
        head: None,
        keys: Vec::new(),
        counted: Vec::new(),
        rows: Vec::new(),
    };
    let standard = game.start_ply == 0 && game.start == polyglot_key(&Chess::default());
    if tails && copies == 1 && standard {
        let keys: Vec<Key> = game.keys().collect();
        // Each position looked up once (the table is far larger than the cache).
        let counted: Vec<Option<&NodeAgg>> = keys.iter().map(counted).collect();
        let single = |n: &Option<&NodeAgg>| n.is_none_or(|n| n.counts.total() == 1);
        let t = counted.iter().rposition(|n| !single(n)).unwrap_or(0) + 1;
        let last = keys.len() - 1;
        // A position only this game reaches, as the aggregate would count it.
        let alone = |i: usize| NodeAgg {
            depth: i as u32,
            counts: game.result.counts(),
            expected,
            exact: if i == last { game.terminal } else { None },
            first: None,
            top: TopList::default(),
        };
        let rank = rank_of(game.white_elo, game.black_elo);
        // Before the tail: rows. The aggregate counted the positions the
        // filter called shared (and the moves out of them); a position
        // only this game reaches, it did not.
        for (i, &k) in keys[..t].iter().enumerate() {
            if counted[i].is_none() {
                let mut n = alone(i);
                if let Some(p) = game.plies.get(i) {
                    let mut e = EdgeAgg::new(p.child, p.castle);
                    let elo = mover_elo(i as u64, game.white_elo, game.black_elo);
                    e.add(game.result.counts(), elo);
                    n.first = Some((p.mv.0, e));
                    n.top = TopList::single(TopEntry {
                        mv: p.mv,
                        rank,
                        game: game.hash,
                    });
                }
                out.rows.push((k, n));
            }
        }
        if t < keys.len() {
            let mut chain: Vec<NodeInfo> = (t..keys.len())
                .map(|i| match counted[i] {
                    Some(n) => {
                        out.counted.push(keys[i]);
                        node_info(keys[i], n)
                    }
                    None => node_info(keys[i], &alone(i)),
                })
                .collect();
            value_chain(&mut chain, game.plies[t..].iter().map(|p| p.mv), params);
            out.head = Some(chain[0]);
            out.keys = keys[t..].to_vec();
            out.tail = Some(t as u32);
        }
    }
    // The names and tags moved, not copied: a build makes a row of every game.
    out.row.white = std::mem::take(&mut game.white);
    out.row.black = std::mem::take(&mut game.black);
    out.row.tags = std::mem::take(&mut game.tags);
    out
}

/// Aggregated moves as rows (the first of each position in `nodes`, and
/// the others), in the table's order (keys as SQLite stores them, signed).
pub(in crate::build) fn sorted_edges<'a>(
    nodes: impl Iterator<Item = (&'a Key, &'a NodeAgg)>,
    others: KeyMap<(Key, u16), EdgeAgg>,
) -> Vec<((i64, u16), EdgeAgg)> {
    let mut rows: Vec<((i64, u16), EdgeAgg)> = nodes
        .filter_map(|(k, n)| n.first.map(|(mv, e)| ((k.to_sql(), mv), e)))
        .chain(others.into_iter().map(|((p, mv), e)| ((p.to_sql(), mv), e)))
        .collect();
    rows.par_sort_unstable_by_key(|&(k, _)| k);
    rows
}

/// `(child, parent)` of every move, sorted and without repeats, so grouped
/// by child.
pub(in crate::build) fn parent_links(edge_rows: &[((i64, u16), EdgeAgg)]) -> Vec<(i64, i64)> {
    let mut links: Vec<(i64, i64)> = edge_rows
        .iter()
        .map(|&((p, _), ref e)| (e.child.to_sql(), p))
        .collect();
    links.par_sort_unstable();
    links.dedup();
    links
}

/// The entries of the tails index: `(prefix, game id)` of every tail position, in
/// order, without repeats (ids are ranks in `games`).
pub(in crate::build) fn tail_entries(
    games: &[GameRow],
    tail_of: &[(usize, usize)],
) -> Vec<(i64, i64)> {
    let mut listed: Vec<(i64, i64)> = Vec::new();
    for &(i, t) in tail_of {
        if let Some(keys) = &games[i].keys {
            listed.extend(keys[t..].iter().map(|&k| (prefix(k), i as i64 + 1)));
        }
    }
    listed.par_sort_unstable();
    listed.dedup();
    listed
}

/// What [`super::load::bulk_load`] values, tails left out (the moves to write go
/// ahead, as [`MoveRows`]).
pub(in crate::build) struct Prepared {
    pub edge_list: Vec<(Key, MoveCode, Key)>,
    /// The rows in key order, then the first position of each tail.
    pub node_list: Vec<NodeInfo>,
    pub rows: usize,
    pub tops: Tops,
}

/// Values each tail from its last position back and leaves its positions
/// and moves out: only its first position enters the graph, with its value
/// fixed (as `reevaluate_all` does), so the graph holds the rows and no
/// more.
pub(in crate::build) fn prepare_rows(
    mut nodes: KeyMap<Key, NodeAgg>,
    edges: KeyMap<(Key, u16), EdgeAgg>,
    games: &[GameRow],
    tail_of: &[(usize, usize)],
    params: &ValueParams,
    moves_ready: impl FnOnce(MoveRows),
) -> Prepared {
    let heads: Vec<NodeInfo> = tail_of
        .par_iter()
        .filter_map(|&(i, t)| {
            let g = &games[i];
            let keys = g.keys.as_ref()?;
            let moves = moves_from_blob(&g.moves)?;
            let mut chain: Vec<NodeInfo> = keys[t..]
                .iter()
                .map(|&k| node_info(k, &nodes[&k]))
                .collect();
            value_chain(&mut chain, moves[t..].iter().map(|&m| MoveCode(m)), params);
            Some(chain[0])
        })
        .collect();
    for &(i, t) in tail_of {
        if let Some(keys) = &games[i].keys {
            for k in &keys[t..] {
                nodes.remove(k);
            }
        }
    }
    prepare_graph(nodes, Vec::new(), edges, heads, moves_ready)
}

/// The rows of `nodes` and `more` (positions `nodes` does not hold) and
/// `edges` (tails already taken out) and the tails' first positions `heads`,
/// as [`super::load::bulk_load`] writes and values them. (`more` is not added to
/// `nodes`: the table would grow, copying all it holds.)
/// The moves go to `moves_ready` as soon as they are sorted, so that they
/// are written while the rest is prepared.
pub(in crate::build) fn prepare_graph(
    nodes: KeyMap<Key, NodeAgg>,
    more: Vec<(Key, NodeAgg)>,
    mut edges: KeyMap<(Key, u16), EdgeAgg>,
    heads: Vec<NodeInfo>,
    moves_ready: impl FnOnce(MoveRows),
) -> Prepared {
    // The moves within tails are not rows (the move into a tail is).
    edges.retain(|(p, _), _| nodes.contains_key(p));
    let edge_rows = sorted_edges(nodes.iter().chain(more.iter().map(|(k, n)| (k, n))), edges);
    let edge_list: Vec<(Key, MoveCode, Key)> = edge_rows
        .iter()
        .map(|&((p, mv), ref e)| (Key::from_sql(p), MoveCode(mv), e.child))
        .collect();
    let links = parent_links(&edge_rows);
    learnbook_base::peak_memory::trace("moves sorted");
    moves_ready((edge_rows, links));
    // The lists are moved, not encoded here: this thread values the graph
    // next, and the writer encodes each list as it binds it.
    let (unsorted, mut unsorted_tops): (Vec<NodeInfo>, Tops) = nodes
        .into_iter()
        .chain(more)
        .map(|(key, n)| (node_info(key, &n), n.top))
        .unzip();
    // Keys sorted with their places, then the rows taken in that order:
    // sorting the rows themselves moves ten times the bytes.
    let mut order: Vec<(i64, u32)> = unsorted
        .iter()
        .enumerate()
        .map(|(i, n)| (n.key.to_sql(), i as u32))
        .collect();
    order.par_sort_unstable();
    let mut node_list: Vec<NodeInfo> = order
        .par_iter()
        .map(|&(_, i)| unsorted[i as usize])
        .collect();
    let tops: Tops = order
        .iter()
        .map(|&(_, i)| std::mem::take(&mut unsorted_tops[i as usize]))
        .collect();
    drop_apart((unsorted, unsorted_tops, order));
    let rows = node_list.len();
    node_list.extend(heads);
    Prepared {
        edge_list,
        node_list,
        rows,
        tops,
    }
}

/// A node of the graph from its aggregate.
pub(in crate::build) fn node_info(key: Key, n: &NodeAgg) -> NodeInfo {
    NodeInfo {
        expected: n.expected,
        exact: n.exact,
        ..NodeInfo::from_counts(key, Some(n.depth), n.counts)
    }
}

/// For each game that gets a tail: its index in `games` and the ply where
/// the tail starts. A tail is the longest suffix of a game's positions that
/// no other game reaches (one occurrence, so one move each, leading to the
/// next), never its start.
pub(in crate::build) fn find_tails(
    games: &[GameRow],
    nodes: &KeyMap<Key, NodeAgg>,
) -> Vec<(usize, usize)> {
    games
        .par_iter()
        .enumerate()
        .filter(|(_, g)| g.copies == 1)
        .filter_map(|(i, g)| {
            let keys = g.keys.as_ref()?;
            let single = |k: &Key| nodes.get(k).is_some_and(|n| n.counts.total() == 1);
            let shared = keys.iter().rposition(|k| !single(k)).unwrap_or(0);
            (shared + 1 < keys.len()).then_some((i, shared + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::aggregate::tests::{aggregate, key_at};
    use super::*;

    #[test]
    fn moves_come_in_the_tables_order_and_each_position_lists_its_parents() {
        let (agg, games) = aggregate();
        let edge_rows = sorted_edges(agg.nodes.iter(), agg.edges.clone());
        assert_eq!(edge_rows.len(), agg.move_count());
        assert!(edge_rows.windows(2).all(|w| w[0].0 < w[1].0));
        let links = parent_links(&edge_rows);
        assert!(links.windows(2).all(|w| w[0] < w[1]));
        // The transposed position has two parents, every other one.
        let transposed = key_at(&games[0], 4).to_sql();
        let mut several: Vec<i64> = links
            .chunk_by(|a, b| a.0 == b.0)
            .filter(|g| g.len() > 1)
            .map(|g| g[0].0)
            .collect();
        several.dedup();
        assert_eq!(several, [transposed]);
        let parents: Vec<i64> = links
            .iter()
            .filter(|l| l.0 == transposed)
            .map(|l| l.1)
            .collect();
        let mut want = vec![key_at(&games[0], 3).to_sql(), key_at(&games[2], 3).to_sql()];
        want.sort_unstable();
        assert_eq!(parents, want);
    }

    #[test]
    fn a_tail_is_the_end_of_a_game_no_other_reaches() {
        let (agg, games) = aggregate();
        let tails = find_tails(&agg.games, &agg.nodes);
        // Game d leaves the others after 1. e4 e5 (3 positions shared);
        // game c ends in a position game a reaches, so has no tail; a and b
        // end in one position alone each.
        let d = agg.games.iter().position(|g| g.hash == games[3].hash);
        let a = agg.games.iter().position(|g| g.hash == games[0].hash);
        let b = agg.games.iter().position(|g| g.hash == games[1].hash);
        let mut want = vec![(d.expect("d"), 3), (b.expect("b"), 4)];
        want.sort_unstable();
        assert_eq!(tails, want);
        // a's last position is the transposed one: no tail.
        assert!(tails.iter().all(|&(i, _)| Some(i) != a));
        // The tails index lists each tail position with its game's id.
        let entries = tail_entries(&agg.games, &tails);
        let positions: usize = tails
            .iter()
            .map(|&(i, t)| agg.games[i].keys.as_ref().map_or(0, |k| k.len() - t))
            .sum();
        assert_eq!(entries.len(), positions);
        assert!(entries.windows(2).all(|w| w[0] < w[1]));
    }

    /// A journalled build finds each game's tail one game at a time
    /// (`game_tail`): the tail the whole aggregate finds, and its rows
    /// left out of those it counted.
    #[test]
    fn a_game_at_a_time_finds_the_tail_the_whole_aggregate_finds() {
        let (agg, games) = aggregate();
        let tails = find_tails(&agg.games, &agg.nodes);
        let params = ValueParams::default();
        for game in games {
            let hash = game.hash;
            let i = agg.games.iter().position(|g| g.hash == hash).expect("row");
            let want = tails.iter().find(|t| t.0 == i).map(|t| t.1 as u32);
            let plies = game.plies.len();
            let t = game_tail(game, 0, 1, true, |k| agg.nodes.get(k), &params);
            assert_eq!(t.tail, want, "game {i}");
            assert_eq!(t.row.hash, hash);
            if let Some(from) = want {
                assert_eq!(t.keys.len(), plies + 1 - from as usize);
                assert_eq!(t.counted, t.keys, "every tail position was counted");
                assert!(t.head.is_some());
            } else {
                assert!(t.keys.is_empty() && t.head.is_none());
            }
            // Every position was counted: no row to add.
            assert!(t.rows.is_empty());
        }
    }

    #[test]
    fn a_position_row_takes_its_smallest_parent_first() {
        let (agg, games) = aggregate();
        let edge_rows = sorted_edges(agg.nodes.iter(), agg.edges.clone());
        let links = parent_links(&edge_rows);
        let mut g = Graph::new(
            {
                let mut nodes: Vec<NodeInfo> =
                    agg.nodes.iter().map(|(k, n)| node_info(*k, n)).collect();
                nodes.sort_by_key(|n| n.key.to_sql());
                nodes
            },
            edge_rows
                .iter()
                .map(|&((p, mv), ref e)| (Key::from_sql(p), MoveCode(mv), e.child))
                .collect(),
        );
        g.evaluate(&ValueParams::default());
        let tops = vec![TopList::default(); g.nodes.len()];
        let rows = position_rows(&g, g.nodes.len(), &tops, &links);
        assert_eq!(rows.len(), agg.nodes.len());
        let transposed = key_at(&games[0], 4);
        let row = rows
            .iter()
            .find(|r| r.node.key == transposed)
            .expect("the transposed position");
        let first = key_at(&games[0], 3)
            .to_sql()
            .min(key_at(&games[2], 3).to_sql());
        assert_eq!(row.parent, Some(first));
        let start = rows
            .iter()
            .find(|r| r.node.key == games[0].start)
            .expect("the start");
        assert_eq!(start.parent, None);
        assert!(start.best.is_some());
    }
}
