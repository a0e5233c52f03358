#!/usr/bin/env python3
"""Independent check of a Polyglot book with python-chess.

Usage: verify_polyglot.py BOOK.bin PGN [MAX_PLY]

Replays every game of PGN (plain or .gz) to MAX_PLY with python-chess and
records each position under python-chess's own Polyglot key. Then every raw
entry of BOOK.bin must: have a key of a recorded position, decode to a legal
move there, and come in key order; and chess.polyglot's reader must return
as many entries for the position as the raw file holds for the key.
Prints one summary line; exits 1 on any failure.
"""
import gzip
import struct
import sys
from collections import Counter

import chess
import chess.pgn
import chess.polyglot


def positions(pgn_path, max_ply):
    opener = gzip.open if pgn_path.endswith(".gz") else open
    boards = {}
    with opener(pgn_path, "rt", encoding="latin-1") as f:
        while True:
            game = chess.pgn.read_game(f)
            if game is None:
                break
            board = game.board()
            boards.setdefault(chess.polyglot.zobrist_hash(board), board.copy(stack=False))
            for ply, move in enumerate(game.mainline_moves()):
                if ply >= max_ply:
                    break
                board.push(move)
                boards.setdefault(chess.polyglot.zobrist_hash(board), board.copy(stack=False))
    return boards


def decode(raw, board):
    """A raw Polyglot move as a python-chess move in `board`."""
    to_sq, from_sq, promo = raw & 63, (raw >> 6) & 63, (raw >> 12) & 7
    promotion = [None, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN][promo] if promo <= 4 else None
    piece = board.piece_at(from_sq)
    target = board.piece_at(to_sq)
    # Castling is stored as king takes own rook.
    if piece and piece.piece_type == chess.KING and target and target.color == piece.color and target.piece_type == chess.ROOK:
        to_sq = chess.square(6 if chess.square_file(to_sq) > chess.square_file(from_sq) else 2, chess.square_rank(from_sq))
    return chess.Move(from_sq, to_sq, promotion)


def main():
    book, pgn = sys.argv[1], sys.argv[2]
    max_ply = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    data = open(book, "rb").read()
    if len(data) % 16:
        print(f"size {len(data)} is not a multiple of 16")
        return 1
    entries = [struct.unpack(">QHHI", data[i:i + 16]) for i in range(0, len(data), 16)]
    boards = positions(pgn, max_ply)
    unknown = illegal = unsorted = 0
    per_key = Counter()
    for i, (key, raw, weight, learn) in enumerate(entries):
        per_key[key] += 1
        if i and entries[i - 1][0] > key:
            unsorted += 1
        board = boards.get(key)
        if board is None:
            unknown += 1
            continue
        if decode(raw, board) not in board.legal_moves:
            illegal += 1
    reader_mismatch = 0
    with chess.polyglot.open_reader(book) as reader:
        for key, n in per_key.items():
            board = boards.get(key)
            if board is not None and len(list(reader.find_all(board))) != n:
                reader_mismatch += 1
    print(f"entries: {len(entries)}, positions: {len(per_key)}, illegal: {illegal}, "
          f"unknown keys: {unknown}, unsorted: {unsorted}, reader mismatches: {reader_mismatch}")
    return 1 if (illegal or unknown or unsorted or reader_mismatch or not entries) else 0


if __name__ == "__main__":
    sys.exit(main())
