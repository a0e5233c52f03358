#!/usr/bin/env python3
"""python-chess's view of a Polyglot book along random walks.

Usage: polyglot_moves.py BOOK.bin POSITIONS SEED

Walks from the start position, moving by python-chess's weighted choice
(restarting when the book has no move), and prints for each position
visited one line: FEN, a tab, then the book's entries as uci:weight,
comma-separated, in python-chess's order.
"""
import random
import sys

import chess
import chess.polyglot

path, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
board = chess.Board()
with chess.polyglot.open_reader(path) as reader:
    for _ in range(count):
        entries = list(reader.find_all(board))
        if not entries:
            board = chess.Board()
            entries = list(reader.find_all(board))
        print(board.fen() + "\t" + ",".join(f"{e.move.uci()}:{e.weight}" for e in entries))
        total = sum(e.weight for e in entries)
        if total == 0:
            board = chess.Board()
            continue
        x = rng.randrange(total)
        for e in entries:
            if x < e.weight:
                board.push(e.move)
                break
            x -= e.weight
