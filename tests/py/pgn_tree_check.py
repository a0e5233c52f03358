#!/usr/bin/env python3
"""python-chess's reading of a PGN export of a book, against the Polyglot
export of the same book with the same options.

Usage: pgn_tree_check.py BOOK.pgn BOOK.bin MAX_PLY tree|lines

From the .bin alone (python-chess's reader, its legality checks and its
Zobrist keys), breadth first from the start to MAX_PLY: every position
reached before the limit, at its smallest ply, with its entries; the edges
(position, move) of those positions; the lines they make, E - P (E the
edges, P the positions other than the start that have an entry: each is
continued by exactly one move into it, every other move ends a line).

From the PGN (python-chess's reader): every move, every variation; the
lines (tree: the leaves of the variation tree; lines: the games); the edges
written; the order of each position's moves against the .bin's.

Prints `key: value` lines, then one line per move comment that carries
counts: `C parent child games white draws black` (Zobrist keys, unsigned),
and one per comment with an analysis: `A parent child depth score engine`
(the engine's name last: it may hold spaces).
"""
import re
import sys

import chess
import chess.pgn
import chess.polyglot
from chess.polyglot import zobrist_hash

pgn_path, bin_path, max_ply, layout = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

# The .bin's view.
book_moves = {}
edges = set()
e_count = 0
continued = 0
with chess.polyglot.open_reader(bin_path) as reader:
    root = chess.Board()
    seen = {zobrist_hash(root)}
    level = [root]
    for ply in range(max_ply):
        nxt = []
        for board in level:
            key = zobrist_hash(board)
            moves = [e.move for e in reader.find_all(board)]
            book_moves[key] = moves
            if moves and ply > 0:
                continued += 1
            for m in moves:
                edges.add((key, m.uci()))
                e_count += 1
                child = board.copy(stack=False)
                child.push(m)
                ck = zobrist_hash(child)
                if ck not in seen:
                    seen.add(ck)
                    nxt.append(child)
        level = nxt
print(f"expected lines: {e_count - continued}")
print(f"bin edges: {len(edges)}")

# The analysis: an engine's name (spaces allowed, no comma), depth, score.
ANALYSIS = re.compile(r",\s+([^,;]+?)\s+d(\d+)\s+([+-](?:\d+\.\d+|M\d+))(?:;|$)")
COUNTS = re.compile(r"^(\d+)\s+games?,\s+\+(\d+)\s+=(\d+)\s+-(\d+)")
stats = {"errors": 0, "games": 0, "lines": 0, "deepest": 0, "order": 0, "repeated": 0}
written = set()
comments = []
analyses = []


def visit(node, board, ply, in_tree):
    """Every move below `node` (the position `board`, at `ply`)."""
    children = node.variations
    if ply > 0 and not children and in_tree:
        stats["lines"] += 1
    if children and in_tree:
        key = zobrist_hash(board)
        if [v.move for v in children] != book_moves.get(key):
            stats["order"] += 1
    for v in children:
        key = zobrist_hash(board)
        edge = (key, v.move.uci())
        if edge in written and in_tree:
            stats["repeated"] += 1
        written.add(edge)
        board.push(v.move)
        stats["deepest"] = max(stats["deepest"], ply + 1)
        m = COUNTS.match(v.comment)
        if m:
            comments.append((key, zobrist_hash(board)) + tuple(int(x) for x in m.groups()))
        a = ANALYSIS.search(" ".join(v.comment.split()))
        if a:
            engine, depth, score = a.groups()
            analyses.append((key, zobrist_hash(board), depth, score, engine))
        visit(v, board, ply + 1, in_tree)
        board.pop()


with open(pgn_path, encoding="utf-8") as f:
    while True:
        game = chess.pgn.read_game(f)
        if game is None:
            break
        stats["games"] += 1
        stats["errors"] += len(game.errors)
        for e in game.errors:
            print(f"error: {e}")
        if layout == "lines":
            stats["lines"] += 1
            if len(game.variations) > 1 or any(len(n.variations) > 1 for n in game.mainline()):
                stats["order"] += 1
        visit(game, game.board(), 0, layout == "tree")

for k, v in stats.items():
    print(f"{k}: {v}")
print(f"missing edges: {len(edges - written)}")
print(f"extra edges: {len(written - edges)}")
for c in comments:
    print("C " + " ".join(str(x) for x in c))
for a in analyses:
    print("A " + " ".join(str(x) for x in a))
