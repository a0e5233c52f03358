//! `build`'s aggregate written into a book through the store's bulk writer
//! (`db::bulk`): into an empty one in key order ([`bulk_load`];
//! [`bulk_load_games`] for a build that journals its games; [`write_part`]
//! and [`write_games`] for one written in parts), or added to a book
//! ([`merge`]). Here the order of the work and its threads: the rows and
//! the graph are made (`graph`) and valued on one core while the writer
//! inserts what is ready on another. Every SQL statement is the writer's.

use anyhow::{anyhow, Result};
use rayon::prelude::*;

use super::aggregate::{prune, Aggregate};
use super::graph::{
    drop_apart, find_tails, for_each_tail_batch, parent_links, position_rows, prepare_graph,
    prepare_rows, sorted_edges, tail_entries, Links, MoveRows, Tops,
};
use crate::db::bulk::input::{EdgeAgg, GameRow, NodeAgg};
use crate::db::bulk::parts::PartsWriter;
use crate::db::bulk::write::{sync_data, BulkTx};
use crate::db::tail_index::prefix;
use crate::db::Book;
use crate::journal::GamesInOrder;
use crate::keys::{Key, KeySet};
use crate::pgn::game::Counts;
use crate::sort::PairSorter;
use crate::values::minimax::Graph;

/// Writes aggregated games into an empty book in key order, with values.
pub(super) fn bulk_load(book: &mut Book, agg: Aggregate) -> Result<()> {
    let mut agg = agg;
    let games = agg.games_in_id_order();
    let Aggregate {
        nodes,
        edges,
        sources,
        tails,
        ..
    } = agg;
    let params = book.settings.params;
    let (nodes, edges) = prune(nodes, edges, book.settings.min_games);
    // Game ids are their rank in this order (the table is empty).
    let tail_of = if tails && book.settings.min_games <= 1 {
        find_tails(&games, &nodes)
    } else {
        Vec::new()
    };
    let mut tail_ply: Vec<Option<u32>> = vec![None; games.len()];
    for &(i, t) in &tail_of {
        tail_ply[i] = Some(t as u32);
    }

    let tx = book.bulk_tx()?;
    // The rows and the graph are prepared on another core while the
    // games and tails are inserted, and valued there while the moves
    // are (values do not depend on the rows written first).
    let (g, (rows, tops), links) = std::thread::scope(|scope| -> Result<_> {
        let (games, tail_of) = (&games, &tail_of);
        let (send_listed, recv_listed) = std::sync::mpsc::channel();
        let (send, recv) = std::sync::mpsc::channel();
        let worker = scope.spawn(move || {
            let _ = send_listed.send(tail_entries(games, tail_of));
            let p = prepare_rows(nodes, edges, games, tail_of, &params, |m| {
                let _ = send.send(m);
            });
            learnbook_base::peak_memory::trace("graph prepared");
            let mut g = Graph::new(p.node_list, p.edge_list);
            g.fixed = p.rows;
            g.evaluate(&params);
            learnbook_base::peak_memory::trace("graph valued");
            (g, p.rows, p.tops)
        });
        let source_ids = tx.source_ids(&sources)?;
        let rows: Vec<(i64, &GameRow, Option<u32>, i64)> = games
            .iter()
            .zip(&tail_ply)
            .enumerate()
            .map(|(i, (g, t))| (i as i64 + 1, g, *t, source_ids[g.source as usize]))
            .collect();
        tx.insert_game_rows(&rows)?;
        let Ok(listed) = recv_listed.recv() else {
            return Err(anyhow!("the thread preparing the rows panicked"));
        };
        tx.write_tail_index(&listed)?;
        moves_then_graph(&tx, &recv, worker)
    })?;
    tx.insert_positions(&position_rows(&g, rows, &tops, &links))?;
    learnbook_base::peak_memory::trace("positions written");
    tx.commit()?;
    drop_apart((g, tops, links));
    Ok(())
}

/// Writes into an empty book the games of a build too large to hold
/// them all (see `book::spill`), the same book [`bulk_load`]
/// writes with every count. `agg` holds the exact counts of every
/// position that two games may reach (every position of a game that
/// cannot have a tail), and of the moves out of them, and no game rows;
/// `games` are the games in id order (by source name, then hash), each
/// with its source's index in `sources` and its copies; `tail_entries`
/// sorts the tails index's entries within its own memory limit.
///
/// Games are read and their tails valued on every core, a batch ahead
/// of this thread's inserts; the graph is valued while the tails index
/// and the moves are written.
pub(super) fn bulk_load_games(
    book: &mut Book,
    agg: Aggregate,
    sources: &[String],
    games: GamesInOrder<'_>,
    mut tail_entries: PairSorter,
) -> Result<()> {
    let Aggregate {
        nodes,
        edges,
        tails,
        ..
    } = agg;
    let params = book.settings.params;
    let (mut nodes, edges) = prune(nodes, edges, book.settings.min_games);
    let tails = tails && book.settings.min_games <= 1;
    let tx = book.bulk_tx()?;
    let source_ids = tx.source_ids(sources)?;
    let mut heads = Vec::new();
    let mut counted_tail_keys = Vec::new();
    let mut uncounted_rows = Vec::new();
    let nodes_ref = &nodes;
    let lookup = |k: &Key| nodes_ref.get(k);
    for_each_tail_batch(games, tails, lookup, &params, |batch, written| {
        tx.insert_game_tails(batch, written, &source_ids)?;
        for (i, t) in batch.iter().enumerate() {
            let id = written + i as i64 + 1;
            for &k in &t.keys {
                tail_entries.push((prefix(k), id))?;
            }
            heads.extend(t.head);
            counted_tail_keys.extend_from_slice(&t.counted);
            uncounted_rows.extend_from_slice(&t.rows);
        }
        Ok(())
    })?;
    tx.commit()?;
    learnbook_base::peak_memory::trace("games and tails written");
    for k in counted_tail_keys {
        nodes.remove(&k);
    }
    let path = book.path.clone();
    // The rows are prepared and valued on another core while the tails
    // index and then the moves are written (moves need no values).
    let (g, (rows, tops), links) = std::thread::scope(|scope| -> Result<_> {
        let (send, recv) = std::sync::mpsc::channel();
        let worker = scope.spawn(move || {
            let p = prepare_graph(nodes, uncounted_rows, edges, heads, |m| {
                let _ = send.send(m);
            });
            learnbook_base::peak_memory::trace("graph prepared");
            let mut g = Graph::new(p.node_list, p.edge_list);
            g.fixed = p.rows;
            g.evaluate(&params);
            learnbook_base::peak_memory::trace("graph valued");
            (g, p.rows, p.tops)
        });
        let tx = book.bulk_tx()?;
        tx.write_sorted_tail_index(tail_entries)?;
        learnbook_base::peak_memory::trace("tails index written");
        let Ok((edge_rows, links)) = recv.recv() else {
            return Err(anyhow!("the thread preparing the rows panicked"));
        };
        tx.insert_move_rows(&edge_rows, &links)?;
        tx.commit()?;
        learnbook_base::peak_memory::trace("moves written");
        // The pages so far go to the disk while the values are made:
        // the sync that ends the build then waits for the rest only
        // (its errors are that sync's to report).
        let path = &path;
        scope.spawn(move || sync_data(path));
        let (g, rows, tops) = worker
            .join()
            .map_err(|_| anyhow!("the evaluation thread panicked"))?;
        Ok((g, (rows, tops), links))
    })?;
    let tx = book.bulk_tx()?;
    tx.insert_positions(&position_rows(&g, rows, &tops, &links))?;
    learnbook_base::peak_memory::trace("positions written");
    tx.commit()?;
    drop_apart((g, tops, links));
    Ok(())
}

/// Adds aggregated games to a non-empty book, then re-evaluates fully.
pub(super) fn merge(book: &mut Book, agg: Aggregate) -> Result<()> {
    let mut agg = agg;
    let games = agg.games_in_id_order();
    let Aggregate {
        nodes,
        edges,
        sources,
        ..
    } = agg;
    // Rows in key order: the B-trees are walked once, not at random.
    let edge_rows = sorted_edges(nodes.iter(), edges);
    let mut node_rows: Vec<(i64, NodeAgg)> =
        nodes.into_iter().map(|(k, n)| (k.to_sql(), n)).collect();
    node_rows.par_sort_unstable_by_key(|&(k, _)| k);
    let links = parent_links(&edge_rows);
    book.merge_rows(games, sources, node_rows, edge_rows, links)
}

/// The moves written as soon as the thread preparing the rows sends them
/// (they need no values), then its valued graph and its number of rows.
fn moves_then_graph(
    tx: &BulkTx<'_>,
    recv: &std::sync::mpsc::Receiver<MoveRows>,
    worker: std::thread::ScopedJoinHandle<'_, (Graph, usize, Tops)>,
) -> Result<(Graph, (usize, Tops), Links)> {
    let Ok((edge_rows, links)) = recv.recv() else {
        return Err(anyhow!("the thread preparing the rows panicked"));
    };
    tx.insert_move_rows(&edge_rows, &links)?;
    learnbook_base::peak_memory::trace("moves written");
    let (g, rows, tops) = worker
        .join()
        .map_err(|_| anyhow!("the evaluation thread panicked"))?;
    Ok((g, (rows, tops), links))
}

/// Writes the rows of one key range: `agg` holds the exact counts of its
/// positions that two games may reach, `untailed` those of them a game
/// without a tail reaches. A position one game reaches once is left to
/// [`write_games`], which finds whether it is in a tail.
pub(super) fn write_part(
    w: &mut PartsWriter<'_>,
    agg: Aggregate,
    untailed: &KeySet<Key>,
) -> Result<()> {
    let Aggregate { nodes, edges, .. } = agg;
    let (mut nodes, edges) = prune(nodes, edges, w.min_games());
    nodes.retain(|k, n| n.counts.total() > 1 || untailed.contains(k));
    w.keep_row_keys(nodes.keys().map(|k| k.0));
    // References, not copies: the counts are most of the memory.
    let mut rows: Vec<(Key, &NodeAgg)> = nodes.iter().map(|(k, n)| (*k, n)).collect();
    rows.par_sort_unstable_by_key(|(k, _)| k.to_sql());
    let mut moves: Vec<((i64, u16), EdgeAgg)> = rows
        .iter()
        .filter_map(|(k, n)| n.first.map(|(mv, e)| ((k.to_sql(), mv), e)))
        .chain(
            edges
                .into_iter()
                .filter(|((p, _), _)| nodes.contains_key(p))
                .map(|((p, mv), e)| ((p.to_sql(), mv), e)),
        )
        .collect();
    moves.par_sort_unstable_by_key(|&(k, _)| k);
    w.add_rows(&rows, &moves)
}

/// Writes the games in id order, after every key range: their rows, their
/// tails and the tails' index, the positions before a tail that the
/// game alone reaches, and each tail's first position (for the values).
pub(super) fn write_games(
    w: &mut PartsWriter<'_>,
    sources: &[String],
    games: GamesInOrder<'_>,
    mut tail_entries: PairSorter,
) -> Result<()> {
    let params = w.params();
    let tails = w.min_games() <= 1;
    let source_ids = w.source_ids(sources)?;
    let rows = w.take_row_keys();
    // What a row looks like to `game_tail`: a position two games reach.
    let shared = NodeAgg {
        counts: Counts {
            white: 1,
            draws: 1,
            black: 0,
        },
        ..NodeAgg::default()
    };
    let lookup = |k: &Key| rows.contains(k).then_some(&shared);
    for_each_tail_batch(games, tails, lookup, &params, |batch, written| {
        w.insert_game_tails(batch, written, &source_ids)?;
        let mut alone: Vec<(Key, NodeAgg)> = Vec::new();
        for (i, t) in batch.iter().enumerate() {
            let id = written + i as i64 + 1;
            for &k in &t.keys {
                tail_entries.push((prefix(k), id))?;
            }
            if let Some(h) = &t.head {
                w.add_head(h)?;
            }
            alone.extend(t.rows.iter().cloned());
        }
        alone.sort_unstable_by_key(|(k, _)| k.to_sql());
        let moves: Vec<((i64, u16), EdgeAgg)> = alone
            .iter()
            .filter_map(|(k, n)| n.first.map(|(mv, e)| ((k.to_sql(), mv), e)))
            .collect();
        let alone: Vec<(Key, &NodeAgg)> = alone.iter().map(|(k, n)| (*k, n)).collect();
        w.add_rows(&alone, &moves)
    })?;
    w.write_tail_index(tail_entries)
}
