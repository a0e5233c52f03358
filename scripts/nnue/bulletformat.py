#!/usr/bin/env python3
"""An independent reader of learnbook's training data (bullet's ChessBoard
layout, documented in docs/NET.md and src/tune/net/data.rs), written from
the documented layout only.

    bulletformat.py dump DATA.bin [N]     print the first N positions
    bulletformat.py check DATA.bin EXPECTED.txt
        EXPECTED.txt: one line per record, "FEN | white_score | white_result"
        (white_result 1, 0.5 or 0); checks each record against python-chess
        (the board as the side to move sees it is python-chess's
        board.mirror() when Black is to move). Exit 1 on any difference.
"""
import struct
import sys

RECORD = struct.Struct("<Q16shBBB3s")  # 32 bytes
assert RECORD.size == 32


def decode(raw):
    occ, pcs, score, result, ksq, opp_ksq, _extra = RECORD.unpack(raw)
    pieces = []
    i = 0
    for sq in range(64):
        if occ >> sq & 1:
            nib = pcs[i // 2] >> (4 * (i % 2)) & 15
            pieces.append((sq, nib))
            i += 1
    return pieces, score, result, ksq, opp_ksq


def board_fen(pieces):
    cells = {sq: nib for sq, nib in pieces}
    rows = []
    for rank in range(7, -1, -1):
        row, empty = "", 0
        for f in range(8):
            nib = cells.get(rank * 8 + f)
            if nib is None:
                empty += 1
                continue
            if empty:
                row += str(empty)
                empty = 0
            c = "PNBRQK"[nib & 7]
            row += c if nib & 8 == 0 else c.lower()
        rows.append(row + (str(empty) if empty else ""))
    return "/".join(rows)


def records(path):
    data = open(path, "rb").read()
    if len(data) % 32:
        sys.exit(f"{path}: {len(data)} bytes is not a multiple of 32")
    for k in range(0, len(data), 32):
        yield decode(data[k : k + 32])


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "dump":
        n = int(sys.argv[3]) if len(sys.argv) > 3 else 10
        for k, (pieces, score, result, ksq, opp) in enumerate(records(sys.argv[2])):
            if k >= n:
                break
            print(f"{board_fen(pieces)} | score {score} | result {result / 2} | ksq {ksq} opp_ksq {opp}")
        return
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        import chess

        lines = [l for l in open(sys.argv[3]) if l.strip()]
        recs = list(records(sys.argv[2]))
        if len(recs) != len(lines):
            sys.exit(f"{len(recs)} records, {len(lines)} expected")
        bad = 0
        for (pieces, score, result, ksq, opp), line in zip(recs, lines):
            fen, wscore, wresult = [x.strip() for x in line.split("|")]
            board = chess.Board(fen)
            stm_white = board.turn == chess.WHITE
            view = board if stm_white else board.mirror()
            want = (
                view.board_fen(),
                int(wscore) if stm_white else -int(wscore),
                round(2 * (float(wresult) if stm_white else 1 - float(wresult))),
                view.king(chess.WHITE),
                chess.square_mirror(view.king(chess.BLACK)),
            )
            have = (board_fen(pieces), score, result, ksq, opp)
            if have != want:
                bad += 1
                print(f"{fen}: decoded {have}, python-chess says {want}")
        print(f"{len(recs)} records, {bad} differences")
        sys.exit(1 if bad else 0)
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
