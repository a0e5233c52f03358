#!/usr/bin/env python3
"""Hossa's failure, replayed through the CLI: 200 games that White loses,
with every first move in turn, learned 25 at a time into a book built from
data/master-sample.pgn.gz; prints the root's value and choice after each 25.

Usage: scripts/hossa_demo.py [LEARNBOOK_BINARY] (needs python-chess)
"""
import os
import random
import re
import subprocess
import sys
import tempfile

import chess
import chess.pgn

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
lb = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "release", "learnbook")
tmp = tempfile.mkdtemp()
book = os.path.join(tmp, "book.sqlite")
subprocess.run([lb, "build", "--book", book, os.path.join(ROOT, "data", "master-sample.pgn.gz")], check=True, capture_output=True)

random.seed(7)
first = list(chess.Board().legal_moves)
games = []
for i in range(200):
    board, game = chess.Board(), chess.pgn.Game()
    game.headers.update(White="learnbook", Black="stronger", Round=str(i + 1), Result="0-1")
    node, move = game, first[i % len(first)]
    for ply in range(12):
        if ply:
            legal = list(board.legal_moves)
            if not legal:
                break
            move = random.choice(legal)
        node = node.add_variation(move)
        board.push(move)
    games.append(str(game))

for k in range(0, 200, 25):
    batch = os.path.join(tmp, "batch.pgn")
    with open(batch, "w") as f:
        f.write("\n\n".join(games[k:k + 25]) + "\n")
    subprocess.run([lb, "learn", "--quiet", "--book", book, batch], check=True, capture_output=True)
    show = subprocess.run([lb, "show", "--book", book], check=True, capture_output=True, text=True).stdout
    value = re.search(r"value ([+-][0-9.]+)", show).group(1)
    choice = next((l for l in show.splitlines() if l.startswith("*")), "(leave the book)")
    print(f"after {k + 25:3d} losses: root value {value}; choice: {' '.join(choice.split()[1:3])} games")
