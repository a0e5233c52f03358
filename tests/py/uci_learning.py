#!/usr/bin/env python3
"""Plays `learnbook uci --book BOOK --learn` game by game through python-chess,
as a GUI plays an engine (ucinewgame, position startpos moves ..., go), and
prints what was played and what the book learned, as JSON.

usage: uci_learning.py LEARNBOOK BOOK OPPONENT GAMES LIMIT

OPPONENT: a UCI engine's command, or `learner` for a second
`learnbook uci --book BOOK --learn` learning into the same book. LIMIT:
`nodes=N` or `depth=N`, for both sides. Colours alternate, the learner
White first; a game stops at 300 plies (then it has no result). The JSON:
{"games": [{"result", "plies", "by_rule", "moves"}...],
 "learned": [{"result", "plies"}...], "errors": [lines with "locked"]}.
"""
import json
import logging
import sqlite3
import sys

import chess
import chess.engine

MAX_PLIES = 300


class Lines(logging.Handler):
    """Every line an engine sent that python-chess did not expect."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def main():
    learnbook, book, opponent, games, limit = sys.argv[1:6]
    kind, value = limit.split("=")
    lim = chess.engine.Limit(**{kind: int(value)})
    lines = Lines()
    logging.getLogger("chess.engine").addHandler(lines)
    logging.getLogger("chess.engine").setLevel(logging.DEBUG)
    learner_cmd = [learnbook, "uci", "--book", book, "--learn"]
    learner = chess.engine.SimpleEngine.popen_uci(learner_cmd)
    if opponent == "learner":
        other = chess.engine.SimpleEngine.popen_uci(learner_cmd)
    else:
        other = chess.engine.SimpleEngine.popen_uci(opponent.split())
    played = []
    for i in range(int(games)):
        white, black = (learner, other) if i % 2 == 0 else (other, learner)
        board = chess.Board()
        game = object()
        while not board.is_game_over(claim_draw=True) and board.ply() < MAX_PLIES:
            engine = white if board.turn == chess.WHITE else black
            result = engine.play(board, lim, game=game)
            if result.move is None or result.move not in board.legal_moves:
                sys.exit(f"game {i + 1}: no legal move ({result.move}) at ply {board.ply()}")
            board.push(result.move)
        outcome = board.outcome(claim_draw=True)
        played.append({
            "result": outcome.result() if outcome else "*",
            "plies": board.ply(),
            "by_rule": outcome is not None,
            "moves": [m.uci() for m in board.move_stack],
        })
    learner.quit()
    other.quit()
    db = sqlite3.connect(book)
    learned = [
        {"result": r, "plies": p}
        for r, p in db.execute(
            "SELECT result, plies FROM games WHERE source = "
            "(SELECT id FROM sources WHERE name = 'learnbook uci') ORDER BY id")
    ]
    errors = [l for l in lines.lines if "database is locked" in l or "could not be written" in l]
    print(json.dumps({"games": played, "learned": learned, "errors": errors}))


if __name__ == "__main__":
    main()
