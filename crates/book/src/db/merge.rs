//! `merge`: books built separately (shards) added into one.
//!
//! Rows go from SQLite to SQLite (`ATTACH`, `INSERT ... SELECT ... ON
//! CONFLICT`), in key order, so memory stays SQLite's page cache whatever
//! the books' size; only the final re-evaluation loads the tree. Counts,
//! rating expectations and games add; a game found in two books counts once
//! (its path is taken out of the later book's counts, walked through its
//! stored moves), or every time with `allow_duplicates`, as `build` counts
//! them. Parent links and values are then recomputed from the whole, the way
//! a one-pass build makes them, so merging the parts gives the same book.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use rusqlite::{params, OptionalExtension, Transaction};

use super::analysis::ANALYSIS_COLUMNS;
use super::book::Book;
use super::codec::{hash_from_sql, moves_from_blob};
use super::graph::reevaluate_all;
use super::tail_index::{add as add_entries, for_each_bucket, key_range, prefix, read_bucket};
use super::tails::{expand, materialize_keys, read_tail_game_in, tail_node, write_rows};
use super::top_games::{merge_top, top_from_blob};
use super::values::{reevaluate_by_depth, GRAPH_BYTES_PER_POSITION};
use shakmaty::fen::Fen;

use crate::keys::Key;
use crate::pgn::game::GameResult;
use crate::values::minimax::ValueParams;

/// What one added book brought.
#[derive(Clone, Debug, Default)]
pub struct MergedShard {
    pub positions: u64,
    pub moves: u64,
    pub games: u64,
    /// Its games already in the book (counted once unless duplicates are allowed).
    pub duplicates: u64,
}

/// Counts taken out of the book again: the path of a game counted twice.
#[derive(Default)]
struct Correction {
    /// White wins, draws, black wins, expected points (thousandths).
    nodes: HashMap<Key, [i64; 4]>,
    /// White wins, draws, black wins, the mover's rating sum and rated games.
    edges: HashMap<(Key, u16), [i64; 5]>,
    /// The shard's ids of those games: their tails are not added.
    games: HashSet<i64>,
}

impl Book {
    /// Adds the book at `shard` (its settings must equal this book's). Values
    /// and parent links are left as they were: call [`Book::finish_merge`]
    /// after the last shard.
    pub fn merge_book(&mut self, shard: &Path, allow_duplicates: bool) -> Result<MergedShard> {
        let other = Book::open(shard)?;
        same_settings(self, &other)?;

        if other.explorer_partial()? {
            self.mark_explorer_partial()?;
        }
        // Everything in the file itself, so the attached copy sees it all.
        other.checkpoint()?;
        drop(other);
        let name = shard
            .to_str()
            .ok_or_else(|| anyhow!("{}: the path is not UTF-8", shard.display()))?;
        self.conn
            .execute("ATTACH DATABASE ?1 AS shard", [name])
            .with_context(|| format!("cannot open {}", shard.display()))?;
        let merged = self.merge_attached(shard, allow_duplicates);
        // Detached whatever happened, so the next shard can be attached.
        let detached = self.conn.execute_batch("DETACH DATABASE shard");
        let merged = merged.with_context(|| format!("merging {}", shard.display()))?;
        detached?;
        Ok(merged)
    }

    fn merge_attached(&mut self, shard: &Path, allow_duplicates: bool) -> Result<MergedShard> {
        let tx = self.conn.transaction()?;
        let mut merged = MergedShard::default();
        let fix = if allow_duplicates {
            Correction::default()
        } else {
            duplicate_paths(&tx, shard, &mut merged)?
        };
        // A position of a tail here that the shard has as a row is one that
        // more games reach: a row from now on.
        let hit = shard_rows_in_tails(&tx)?;
        materialize_keys(&tx, &self.settings.params, hit)?;
        // Top lists of positions both books have are joined once the
        // counts are final; the others are copied with their rows. Their
        // keys wait in a temporary table: SQLite's pages, not this heap.
        tx.execute_batch(
            "DROP TABLE IF EXISTS temp.merge_tops;
             CREATE TEMP TABLE merge_tops(key INTEGER PRIMARY KEY);
             INSERT INTO temp.merge_tops
               SELECT s.key FROM shard.positions s JOIN main.positions m ON m.key = s.key
               WHERE s.top IS NOT NULL;",
        )?;
        merged.positions = tx.execute(
            "INSERT INTO main.positions(key, depth, white, draws, black, exact, expected, top)
             SELECT key, depth, white, draws, black, exact, expected, top FROM shard.positions WHERE true
             ON CONFLICT(key) DO UPDATE SET
               depth = CASE WHEN depth IS NULL OR excluded.depth < depth THEN excluded.depth ELSE depth END,
               white = white + excluded.white, draws = draws + excluded.draws, black = black + excluded.black,
               expected = expected + excluded.expected,
               exact = coalesce(exact, excluded.exact)",
            [],
        )? as u64;
        merged.moves = tx.execute(
            "INSERT INTO main.moves(parent, move, uci, child, white, draws, black, weight, rating_sum, rated, grown)
             SELECT parent, move, uci, child, white, draws, black, weight, rating_sum, rated, grown FROM shard.moves WHERE true
             ON CONFLICT(parent, move) DO UPDATE SET
               child = coalesce(child, excluded.child),
               white = white + excluded.white, draws = draws + excluded.draws, black = black + excluded.black,
               rating_sum = rating_sum + excluded.rating_sum, rated = rated + excluded.rated,
               weight = coalesce(weight, excluded.weight), grown = max(grown, excluded.grown)",
            [],
        )? as u64;
        let copies = if allow_duplicates {
            "copies + excluded.copies"
        } else {
            "copies"
        };
        tx.execute(
            "INSERT OR IGNORE INTO main.sources(name) SELECT name FROM shard.sources ORDER BY id",
            [],
        )?;
        merged.games = tx.execute(
            &format!(
                "INSERT INTO main.games(hash, source, white, black, result, plies, start, copies, moves, expected, tail,
                   white_elo, black_elo, date, event, site, round, fen, rest)
                 SELECT g.hash, (SELECT m.id FROM main.sources m JOIN shard.sources s ON s.name = m.name WHERE s.id = g.source),
                   g.white, g.black, g.result, g.plies, g.start, g.copies, g.moves, g.expected, g.tail,
                   g.white_elo, g.black_elo, g.date, g.event, g.site, g.round, g.fen, g.rest
                 FROM shard.games g WHERE true ORDER BY g.id
                 ON CONFLICT(hash) DO UPDATE SET copies = {copies}"
            ),
            [],
        )? as u64;
        merge_tails(&tx, &self.settings.params, &fix.games)?;
        // Search scores: where both books analysed a position, the first
        // stays, unless only the other's was expanded by `grow` (its engine
        // moves come with it).
        tx.execute(
            &format!(
                "INSERT INTO main.analysis({ANALYSIS_COLUMNS}) SELECT {ANALYSIS_COLUMNS} FROM shard.analysis WHERE true
                 ON CONFLICT(key) DO UPDATE SET score = excluded.score, depth = excluded.depth,
                   interior = excluded.interior, deviation = excluded.deviation, dev_move = excluded.dev_move,
                   dev_depth = excluded.dev_depth, book_moves = excluded.book_moves, engine = excluded.engine,
                   budget = excluded.budget, grown = excluded.grown
                 WHERE grown IS NULL AND excluded.grown IS NOT NULL"
            ),
            [],
        )?;
        {
            let mut node = tx.prepare(
                "UPDATE main.positions SET white = white - ?2, draws = draws - ?3, black = black - ?4,
                 expected = expected - ?5 WHERE key = ?1",
            )?;
            for (key, c) in &fix.nodes {
                node.execute(params![key, c[0], c[1], c[2], c[3]])?;
            }
            let mut edge = tx.prepare(
                "UPDATE main.moves SET white = white - ?3, draws = draws - ?4, black = black - ?5,
                   rating_sum = rating_sum - ?6, rated = rated - ?7
                 WHERE parent = ?1 AND move = ?2",
            )?;
            for ((key, mv), c) in &fix.edges {
                edge.execute(params![key, mv, c[0], c[1], c[2], c[3], c[4]])?;
            }
        }
        {
            let mut tops = tx.prepare(
                "SELECT t.key, s.top FROM temp.merge_tops t JOIN shard.positions s ON s.key = t.key",
            )?;
            let mut rows = tops.query([])?;
            while let Some(r) = rows.next()? {
                let blob: Vec<u8> = r.get(1)?;
                let shard_top = top_from_blob(&blob).unwrap_or_default();
                merge_top(&tx, r.get(0)?, &shard_top.entries())?;
            }
        }
        tx.execute_batch("DROP TABLE temp.merge_tops")?;
        tx.commit()?;
        Ok(merged)
    }

    /// After the last [`Book::merge_book`]: parent links recomputed from the
    /// moves (a position's `parent` is its smallest parent key, and a
    /// position with two or more parents has them all in `parents`, as
    /// `build` writes them), then every value and choice: in memory when
    /// the graph fits in `memory`, else depth by depth through SQLite (the
    /// positions sorted in runs in `temp_dir` named from `prefix`). Returns
    /// whether the values were computed by depth.
    pub fn finish_merge(&mut self, memory: u64, temp_dir: &Path, prefix: &str) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let min_games = self.settings.min_games;
        if min_games > 1 {
            // As `build --min-games` prunes its aggregate; engine moves stay
            // where their position does.
            tx.execute(
                "DELETE FROM moves WHERE white + draws + black < ?1 AND NOT (grown = 1 AND white + draws + black = 0)",
                [min_games],
            )?;
            tx.execute(
                "DELETE FROM positions WHERE white + draws + black < ?1
                   AND key NOT IN (SELECT child FROM moves WHERE grown = 1 AND child IS NOT NULL)",
                [min_games],
            )?;
            // Then what hung from a position dropped: its moves, and the
            // positions only they led to, level by level.
            loop {
                let moves = tx.execute(
                    "DELETE FROM moves WHERE parent NOT IN (SELECT key FROM positions)",
                    [],
                )?;
                let positions = tx.execute(
                    "DELETE FROM positions WHERE white + draws + black = 0
                       AND key NOT IN (SELECT child FROM moves WHERE grown = 1 AND child IS NOT NULL)",
                    [],
                )?;
                if moves + positions == 0 {
                    break;
                }
            }
            tx.execute(
                "DELETE FROM analysis WHERE key NOT IN (SELECT key FROM positions)",
                [],
            )?;
            // Tail positions have one game each.
            tx.execute_batch(
                "DELETE FROM tail_index; UPDATE games SET tail = NULL WHERE tail IS NOT NULL;",
            )?;
        }
        tx.execute_batch(
            "DELETE FROM parents;
             UPDATE positions SET parent = NULL WHERE parent IS NOT NULL;
             UPDATE positions SET parent = l.parent
               FROM (SELECT child, min(parent) AS parent FROM moves WHERE child IS NOT NULL GROUP BY child) AS l
               WHERE l.child = positions.key;
             INSERT INTO parents(child, parent)
               SELECT DISTINCT child, parent FROM moves WHERE child IN
                 (SELECT child FROM moves WHERE child IS NOT NULL GROUP BY child HAVING count(DISTINCT parent) > 1);",
        )?;
        // Every game may end in a tail, whose first position the graph
        // holds beside the rows (games are numbered from 1: a cheap bound).
        let (positions, games): (i64, Option<i64>) = tx.query_row(
            "SELECT (SELECT count(*) FROM positions), (SELECT max(id) FROM games)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let graph = (positions + games.unwrap_or(0)).max(0) as u64 * GRAPH_BYTES_PER_POSITION;
        let by_depth = graph > memory / 2;
        if by_depth {
            reevaluate_by_depth(&tx, &self.settings.params, memory, (temp_dir, prefix))?;
        } else {
            reevaluate_all(&tx, &self.settings.params)?;
        }
        tx.commit()?;
        Ok(by_depth)
    }
}

/// The shard's positions (rows) under a prefix that this book's tails index
/// lists: candidates, which `materialize_keys` replays to tell. A position
/// of a tail here that the shard has as a row is one more games reach.
fn shard_rows_in_tails(tx: &Transaction<'_>) -> Result<Vec<Key>> {
    let mut rows = tx.prepare("SELECT key FROM shard.positions WHERE key BETWEEN ?1 AND ?2")?;
    let mut hit = Vec::new();
    for_each_bucket(tx, "main", |bucket, entries| {
        let mut keys = rows.query(key_range(bucket))?;
        while let Some(r) = keys.next()? {
            let key: Key = r.get(0)?;
            if entries.binary_search_by_key(&prefix(key), |e| e.0).is_ok() {
                hit.push(key);
            }
        }
        Ok(())
    })?;
    Ok(hit)
}

/// Refuses a shard whose settings differ: its counts would mean something else.
fn same_settings(book: &Book, shard: &Book) -> Result<()> {
    let (a, b) = (&book.settings, &shard.settings);
    if b.min_games > 1 {
        bail!(
            "{} was built with --min-games {}: what it dropped cannot be added back; merge the \
             books built without it (merge --min-games prunes the result)",
            shard.path.display(),
            b.min_games
        );
    }
    let mut diffs = Vec::new();
    if a.max_ply != b.max_ply {
        diffs.push(format!("max-ply {} against {}", b.max_ply, a.max_ply));
    }
    let (p, q) = (&a.params, &b.params);
    for (name, x, y) in [
        ("prior-games", p.prior_games, q.prior_games),
        ("deviation", p.deviation, q.deviation),
        ("evidence-penalty", p.evidence_penalty, q.evidence_penalty),
        ("popularity", p.popularity, q.popularity),
        ("search-games", p.search_games, q.search_games),
        ("engine-margin", p.engine_margin, q.engine_margin),
    ] {
        if x.to_bits() != y.to_bits() {
            diffs.push(format!("{name} {y} against {x}"));
        }
    }
    if !diffs.is_empty() {
        bail!(
            "{} was built with other settings than {} ({}): books merge only when built alike",
            shard.path.display(),
            book.path.display(),
            diffs.join(", ")
        );
    }
    Ok(())
}

/// The games of the attached shard already in the book, and the counts their
/// paths add a second time.
fn duplicate_paths(
    tx: &Transaction<'_>,
    shard: &Path,
    merged: &mut MergedShard,
) -> Result<Correction> {
    let mut fix = Correction::default();
    let mut games = tx.prepare(
        "SELECT s.hash, s.result, s.moves, s.start, s.expected, s.copies, s.id, s.tail,
           s.white_elo, s.black_elo, s.fen
         FROM shard.games s JOIN main.games m ON m.hash = s.hash",
    )?;
    let mut child_of =
        tx.prepare("SELECT child FROM shard.moves WHERE parent = ?1 AND move = ?2")?;
    let mut rows = games.query([])?;
    while let Some(r) = rows.next()? {
        merged.duplicates += 1;
        let hash = hash_from_sql(r.get(0)?);
        let result: String = r.get(1)?;
        let moves: Option<Vec<u8>> = r.get(2)?;
        let start: Key = r.get(3)?;
        let expected: Option<i64> = r.get(4)?;
        let copies: i64 = r.get(5)?;
        fix.games.insert(r.get(6)?);
        // Its positions from this ply on are a tail, not rows of the shard.
        let tail: Option<u32> = r.get(7)?;
        let elo: [Option<u32>; 2] = [r.get(8)?, r.get(9)?];
        let fen: Option<String> = r.get(10)?;
        // The side to move first: White, or the FEN's.
        let black_first = fen
            .and_then(|f| f.parse::<Fen>().ok())
            .is_some_and(|f| f.as_setup().turn.is_black());
        let unusable = |why: &str| {
            anyhow!(
                "{}: game {hash:016x} is in both books, and {why}; rebuild this book with this learnbook",
                shard.display()
            )
        };
        let c = GameResult::parse(&result)
            .ok_or_else(|| unusable(&format!("its result '{result}' is unknown")))?
            .counts();
        let (Some(moves), Some(expected)) = (moves, expected) else {
            return Err(unusable(
                "its moves were not stored (an older learnbook built it)",
            ));
        };
        let moves = moves_from_blob(&moves).ok_or_else(|| unusable("its moves are damaged"))?;
        let add = |n: &mut [i64; 4]| {
            n[0] += copies * i64::from(c.white);
            n[1] += copies * i64::from(c.draws);
            n[2] += copies * i64::from(c.black);
            n[3] += copies * expected;
        };
        add(fix.nodes.entry(start).or_default());
        let mut key = start;
        for (i, mv) in moves.into_iter().enumerate() {
            let e = fix.edges.entry((key, mv)).or_default();
            e[0] += copies * i64::from(c.white);
            e[1] += copies * i64::from(c.draws);
            e[2] += copies * i64::from(c.black);
            if let Some(r) = elo[(i + usize::from(black_first)) % 2] {
                e[3] += copies * i64::from(r);
                e[4] += copies;
            }
            if tail.is_some_and(|t| i + 1 >= t as usize) {
                break;
            }
            let child: Option<Key> = child_of
                .query_row(params![key, mv], |r| r.get(0))
                .optional()?
                .flatten();
            key = child.ok_or_else(|| unusable("its path is not in the book"))?;
            add(fix.nodes.entry(key).or_default());
        }
    }
    Ok(fix)
}

/// The shard's single-game tails, after its rows and games were added: a
/// tail position that this book already has (as a row, or in a tail of
/// its own) is reached by two games, so both tails become rows up to there
/// and the shard's game adds its counts; the rest of every shard tail is
/// listed under the game's id here. `skip`: the shard's games that were
/// already here (their tails are this book's).
fn merge_tails(tx: &Transaction<'_>, params: &ValueParams, skip: &HashSet<i64>) -> Result<()> {
    let no_scores = |_: Key| Ok((None, None));
    // Candidates by key prefix (a row's here, or listed here), then each
    // game replayed to tell.
    let mut candidates: Vec<i64> = Vec::new();
    {
        let mut rows = tx.prepare("SELECT key FROM main.positions WHERE key BETWEEN ?1 AND ?2")?;
        for_each_bucket(tx, "shard", |bucket, entries| {
            let mut taken: Vec<i64> = rows
                .query_map(key_range(bucket), |r| r.get::<_, Key>(0))?
                .map(|k| k.map(prefix))
                .collect::<rusqlite::Result<_>>()?;
            taken.extend(read_bucket(tx, "main", bucket)?.iter().map(|e| e.0));
            taken.sort_unstable();
            candidates.extend(
                entries
                    .iter()
                    .filter(|e| taken.binary_search(&e.0).is_ok())
                    .map(|e| e.1),
            );
            Ok(())
        })?;
    }
    candidates.sort_unstable();
    candidates.dedup();
    let mut is_row = tx.prepare("SELECT 1 FROM main.positions WHERE key = ?1")?;
    // Values do not matter here: `finish_merge` computes them all. A hit
    // is kept as its game and extent, and expanded again to be written:
    // the expansions of many games would not fit the memory budget.
    let expand_game = |id: i64| expand(&read_tail_game_in(tx, "shard", id)?, params, no_scores);
    let mut hits: Vec<(i64, usize)> = Vec::new();
    let mut shared: Vec<Key> = Vec::new();
    for id in candidates.into_iter().filter(|id| !skip.contains(id)) {
        let exp = expand_game(id)?;
        let mut upto = None;
        for (i, n) in exp.nodes.iter().enumerate() {
            if is_row.exists([n.key])? || tail_node(tx, n.key, params)?.is_some() {
                upto = Some(i);
                shared.push(n.key);
            }
        }
        if let Some(upto) = upto {
            hits.push((id, upto));
        }
    }
    materialize_keys(tx, params, shared)?;
    // The shard's entries, under the games' ids here: the ids joined once,
    // in order, into a temporary table (SQLite's pages, not this heap).
    tx.execute_batch(
        "DROP TABLE IF EXISTS temp.merge_ids;
         CREATE TEMP TABLE merge_ids(shard INTEGER PRIMARY KEY, main INTEGER NOT NULL);
         INSERT INTO temp.merge_ids
           SELECT s.id, m.id FROM shard.games s JOIN main.games m ON m.hash = s.hash
           WHERE s.tail IS NOT NULL ORDER BY s.id;",
    )?;
    let mut main_id = tx.prepare("SELECT main FROM temp.merge_ids WHERE shard = ?1")?;
    for_each_bucket(tx, "shard", |_, entries| {
        let mut listed = Vec::with_capacity(entries.len());
        for (p, game) in entries {
            if skip.contains(&game) {
                continue;
            }
            let id: i64 = main_id
                .query_row([game], |r| r.get(0))
                .optional()?
                .ok_or_else(|| {
                    anyhow!(
                        "the shard's tails index names game {game}, which has no tail (a damaged book)"
                    )
                })?;
            listed.push((p, id));
        }
        add_entries(tx, listed)
    })?;
    let mut set_tail = tx.prepare("UPDATE main.games SET tail = ?2 WHERE id = ?1")?;
    for (game, upto) in hits {
        let exp = expand_game(game)?;
        let id: i64 = main_id.query_row([game], |r| r.get(0))?;
        write_rows(tx, &exp, id, upto, true)?;
        set_tail.execute(params![id, exp.rest_after(upto)])?;
    }
    drop((main_id, set_tail));
    tx.execute_batch("DROP TABLE temp.merge_ids")?;
    Ok(())
}
