//! Text for `show`, `stats` and `learn`'s per-game lines.

use std::fmt::Write;

use anyhow::{Context, Result};
use shakmaty::{fen::Fen, uci::UciMove, CastlingMode, Chess, EnPassantMode, Position};

use crate::build::Learned;
use crate::choose::{best_of, choice_of};
use crate::db::{Book, BookMove};
use crate::keys::polyglot_key;
use crate::values::minimax::option_weights;

/// The position given by `--fen` or `--moves` (from the start), or the start.
pub fn position_from(fen: Option<&str>, moves: Option<&str>) -> Result<Chess> {
    let mut pos = match fen {
        Some(f) => {
            let fen: Fen = f.trim().parse().with_context(|| format!("bad FEN {f:?}"))?;
            fen.into_position(CastlingMode::Standard)
                .with_context(|| format!("illegal position {f:?}"))?
        }
        None => Chess::default(),
    };
    for m in moves.unwrap_or("").split_whitespace() {
        let mv = parse_uci(&pos, m)?;
        pos.play_unchecked(mv);
    }
    Ok(pos)
}

/// Parse a UCI move string against a position (for `show --moves`).
pub fn parse_uci(pos: &Chess, text: &str) -> Result<shakmaty::Move> {
    let uci: UciMove = text
        .parse()
        .with_context(|| format!("{text:?} is not a UCI move"))?;
    uci.to_move(pos).with_context(|| {
        format!(
            "{text} is not legal in {}",
            Fen::from_position(pos, EnPassantMode::Legal)
        )
    })
}

pub fn show(book: &Book, pos: &Chess) -> Result<String> {
    let key = polyglot_key(pos);
    let mut s = String::new();
    writeln!(s, "{}", Fen::from_position(pos, EnPassantMode::Legal))?;
    let Some(node) = book.position(key)? else {
        writeln!(s, "key {key}: not in the book")?;
        return Ok(s);
    };
    let c = node.counts;
    writeln!(
        s,
        "key {key}  depth {}  games {} (+{} ={} -{} for White)  value {:+.4}",
        node.depth.map_or("?".to_string(), |d| d.to_string()),
        c.total(),
        c.white,
        c.draws,
        c.black,
        node.value
    )?;
    let moves = book.moves(key)?;
    let params = book.settings.params;
    let best = best_of(&node, &moves, &params);
    let d = params.deviation;
    let choices: Vec<_> = moves.iter().filter_map(choice_of).collect();
    let weights = option_weights(&node, &choices, &params);
    let weight_of = |m: &BookMove| -> String {
        match weights.iter().find(|w| w.0 == Some(m.mv)) {
            Some(w) => format!("{:.1}%", 100.0 * w.1),
            None if m.child_games == 0 => m.weight.map_or("-".into(), |w| w.to_string()),
            None => "0".into(),
        }
    };
    // The number the choice ranks a move by; the value alone does not
    // decide (a move with more games and players behind it can outrank one
    // valued a little higher).
    let points = node.points();
    let score_of = |m: &BookMove| choice_of(m).and_then(|c| c.ranking_score(points, &params));
    writeln!(
        s,
        "  {:<7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7}",
        "move", "games", "white", "draws", "black", "value", "score", "weight"
    )?;
    let mut rows: Vec<_> = moves.iter().collect();
    rows.sort_by(|a, b| {
        let key = |m: &BookMove| (score_of(m).unwrap_or(-9.0), m.q.unwrap_or(-2.0));
        let (ka, kb) = (key(a), key(b));
        kb.0.total_cmp(&ka.0)
            .then(kb.1.total_cmp(&ka.1))
            .then(b.counts.total().cmp(&a.counts.total()))
    });
    for m in rows {
        let mark = if Some(m.mv) == best { "*" } else { " " };
        let mut san =
            m.mv.to_move(pos)
                .map(|mv| shakmaty::san::San::from_move(pos, mv).to_string())
                .unwrap_or_else(|| m.uci.clone());
        // `grow`'s moves: searched, never played in a game.
        if m.engine {
            san.push('~');
        }
        writeln!(
            s,
            "{mark} {:<7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7}",
            san,
            m.counts.total(),
            m.counts.white,
            m.counts.draws,
            m.counts.black,
            m.q.map_or("-".to_string(), |q| format!("{q:+.4}")),
            score_of(m).map_or("-".to_string(), |x| format!("{x:+.4}")),
            weight_of(m)
        )?;
    }
    if let Some(a) = book.analysis(key)? {
        writeln!(
            s,
            "  analysis: score {} (depth {}){}  [{} {}]",
            format_cp(a.score),
            a.depth,
            match (
                a.interior,
                a.deviation,
                a.dev_move.and_then(|m| m.to_move(pos))
            ) {
                (true, Some(d), Some(m)) => format!(
                    ", best move outside the book {} {} (depth {})",
                    shakmaty::san::San::from_move(pos, m),
                    format_cp(d),
                    a.dev_depth.unwrap_or(0)
                ),
                (true, _, _) => ", every legal move is a book move".to_string(),
                _ => String::new(),
            },
            a.engine,
            a.budget
        )?;
    }
    if best.is_none() && moves.iter().any(|m| m.child_games > 0 || m.child_engine) {
        match node.deviation {
            Some(Some(dv)) => writeln!(
                s,
                "  (best: leave the book; the best move outside it, {dv:+.4}, scores higher)"
            )?,
            _ => writeln!(
                s,
                "  (best: leave the book; no move beats the deviation value {d:+.2})"
            )?,
        }
    } else if let Some(w) = weights.iter().find(|w| w.0.is_none()) {
        writeln!(
            s,
            "  (weighted leaves the book {:.1}% of the time)",
            100.0 * w.1
        )?;
    }
    let top_value = moves
        .iter()
        .filter_map(|m| m.q)
        .fold(f64::NEG_INFINITY, f64::max);
    let chosen = moves.iter().find(|m| Some(m.mv) == best);
    if chosen.is_some_and(|m| m.q.is_some_and(|q| q < top_value)) {
        writeln!(
            s,
            "  (* has the highest score, not the highest value: score = value - {} / sqrt(games + 1) \
             + {} ln(share of the mover's points), docs/FORMULA.md)",
            params.evidence_penalty, params.popularity
        )?;
    }
    if moves.iter().any(|m| m.engine) {
        writeln!(s, "  (~: an engine move added by grow, no game played it)")?;
    }
    Ok(s)
}

/// A search score as engines print it: pawns with a sign, or mate in N.
pub fn format_cp(cp: i32) -> String {
    if cp.abs() >= 20_000 {
        let plies = 30_000 - cp.abs();
        format!("{}M{}", if cp > 0 { "+" } else { "-" }, (plies + 1) / 2)
    } else {
        format!("{:+.2}", f64::from(cp) / 100.0)
    }
}

pub fn stats(book: &Book) -> Result<String> {
    let t = book.totals()?;
    let p = book.settings.params;
    let mut s = String::new();
    writeln!(s, "book          {}", book.path.display())?;
    writeln!(
        s,
        "games         {} (1-0 {}, 1/2 {}, 0-1 {}, * {})",
        t.games, t.white_wins, t.draws, t.black_wins, t.unknown
    )?;
    if t.copies != t.games {
        writeln!(s, "              {} counted, with duplicates", t.copies)?;
    }
    writeln!(
        s,
        "positions     {} ({} of them in single-game tails)",
        t.positions, t.tail_positions
    )?;
    writeln!(
        s,
        "moves         {} ({} seen in a single game)",
        t.moves, t.single_game_moves
    )?;
    let engine = book.engine_moves()?;
    if engine > 0 {
        writeln!(
            s,
            "engine moves  {engine} (added by grow, no game played them)"
        )?;
    }
    writeln!(
        s,
        "max ply       {} (deepest stored position: {})",
        book.settings.max_ply, t.max_depth
    )?;
    writeln!(
        s,
        "value params  prior_games K={} deviation D={} evidence_penalty Z={}",
        p.prior_games, p.deviation, p.evidence_penalty
    )?;
    if let Some(root) = book.position(polyglot_key(&Chess::default()))? {
        writeln!(s, "root value    {:+.4} (White's view)", root.value)?;
    }
    Ok(s)
}

/// One line per learned game, with the choices that changed. Positions that
/// had no book move before (new or leaf positions) are only counted.
pub fn learned_line(l: &Learned) -> String {
    let changed: Vec<_> = l.choices.iter().filter(|c| c.before.is_some()).collect();
    let extended = l.choices.len() - changed.len();
    let mut s = format!(
        "{} - {} {}: {} positions re-evaluated",
        l.white, l.black, l.result, l.recomputed
    );
    match changed.len() {
        0 => s.push_str(", no book choice changed"),
        n => {
            let _ = write!(
                s,
                ", {n} book choice{} changed",
                if n == 1 { "" } else { "s" }
            );
        }
    }
    if extended > 0 {
        let _ = write!(
            s,
            ", {extended} position{} gained a book move",
            if extended == 1 { "" } else { "s" }
        );
    }
    for c in changed {
        let after = c
            .after
            .map_or("(leave the book)".to_string(), |m| m.to_string());
        let before = c.before.map_or(String::new(), |m| m.to_string());
        let _ = write!(s, "\n  ply {} {}: {before} -> {after}", c.depth, c.key);
    }
    s
}
