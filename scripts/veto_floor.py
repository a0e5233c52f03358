#!/usr/bin/env python3
"""Could an engine's searches improve a book's choices by vetoing them?

Reads the CSV of `learnbook bench book-quality --csv` (the book's move and
the judge's verdicts at each position) and, for every position, asks ENGINE
(UCI, python-chess) for its best move and for its score of the book's move
(`searchmoves`); the judge (Stockfish, one thread, the same nodes as the
bench; $JUDGE or stockfish) scores the engine's move where the CSV does not. Prints, for
thresholds T, the mean loss of "the book's move unless the engine finds it
at least T cp worse than its own". T = infinity is the book alone.

Usage: scripts/veto_floor.py VERDICTS.csv ENGINE_CMD (nodes N | time MS) [JUDGE_NODES]
"""
import csv
import os
import shutil
import sys

import chess
import chess.engine

path, cmd, kind, amount = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
judge_nodes = int(sys.argv[5]) if len(sys.argv) > 5 else 200000
limit = chess.engine.Limit(nodes=amount) if kind == "nodes" else chess.engine.Limit(time=amount / 1000)
engine = chess.engine.SimpleEngine.popen_uci(cmd.split())
# Debian puts Stockfish in /usr/games, not always on PATH.
judge = chess.engine.SimpleEngine.popen_uci(
    os.environ.get("JUDGE") or shutil.which("stockfish") or "/usr/games/stockfish"
)
judge.configure({"Threads": 1})


def cp(info, board):
    return info["score"].pov(board.turn).score(mate_score=30000)


rows = []
for r in csv.DictReader(open(path)):
    book_move, book_loss = r["learnbook best move"], r["learnbook best loss"]
    if not book_move or not book_loss:
        continue
    board = chess.Board(r["fen"])
    # game=object(): a new game each search, a cleared hash, as the bench's searches.
    whole = engine.analyse(board, limit, game=object())
    best = whole["pv"][0]
    gap = 0
    if best.uci() != book_move:
        alone = engine.analyse(board, limit, root_moves=[chess.Move.from_uci(book_move)], game=object())
        gap = cp(whole, board) - cp(alone, board)
    if best.uci() == r["judge_best"]:
        engine_loss = 0
    else:
        info = judge.analyse(board, chess.engine.Limit(nodes=judge_nodes), root_moves=[best], game=object())
        engine_loss = max(0, int(r["judge_cp"]) - cp(info, board))
    rows.append((int(book_loss), engine_loss, gap))
engine.quit()
judge.quit()

n = len(rows)
print(f"{n} positions; the engine's own move: {sum(r[1] for r in rows) / n:.2f} cp")
for t in [20, 30, 50, 75, 100, 150, None]:
    losses = [e if t is not None and g >= t else b for b, e, g in rows]
    name = "inf" if t is None else str(t)
    switched = sum(1 for _, _, g in rows if t is not None and g >= t)
    print(f"T={name:>4}: mean {sum(losses) / n:5.2f} cp, >=50 cp {sum(l >= 50 for l in losses)}, "
          f">=100 cp {sum(l >= 100 for l in losses)}, switched {switched}")
print(f"the better of the two at each position: {sum(min(b, e) for b, e, _ in rows) / n:.2f} cp")
