#!/usr/bin/env python3
"""python-chess's UCI features through `learnbook uci --engine INNER --book
BOOK`, as a GUI uses them; prints what it saw as JSON.

usage: uci_adapter.py LEARNBOOK BOOK INNER

The JSON: {"id_name", "options" (names), "book_move", "searched_move",
"ponder", "multipv_lines", "infinite_best", "stop_ms" (from `stop` to
`bestmove`, for the record: tests do not judge time)}.
"""
import json
import sys
import time

import chess
import chess.engine


def main():
    learnbook, book, inner = sys.argv[1:4]
    engine = chess.engine.SimpleEngine.popen_uci(
        [learnbook, "uci", "--engine", inner, "--book", book]
    )
    out = {"id_name": engine.id.get("name"), "options": sorted(engine.options)}
    engine.configure({"Hash": 16, "BookMode": "best"})
    # The start position is in every book.
    out["book_move"] = engine.play(chess.Board(), chess.engine.Limit(nodes=5000)).move.uci()
    # Out of the book: the inner engine searches, and ponders.
    board = chess.Board()
    for m in ["a2a3", "a7a6", "h2h3", "h7h6"]:
        board.push_uci(m)
    r = engine.play(board, chess.engine.Limit(nodes=20000), ponder=True)
    out["searched_move"] = r.move.uci()
    out["ponder"] = r.ponder.uci() if r.ponder else None
    board.push(r.move)
    if r.ponder:
        board.push(r.ponder)
    # The pondered move played: ponderhit, then the answer.
    r = engine.play(board, chess.engine.Limit(nodes=20000))
    out["after_ponder"] = r.move.uci() if r.move else None
    infos = engine.analyse(board, chess.engine.Limit(nodes=20000), multipv=3)
    out["multipv_lines"] = len(infos)
    with engine.analysis(board) as analysis:
        for info in analysis:
            if info.get("depth", 0) >= 5:
                break
        t = time.monotonic()
        analysis.stop()
        best = analysis.wait()
        out["stop_ms"] = (time.monotonic() - t) * 1000
        out["infinite_best"] = best.move.uci() if best.move else None
    engine.quit()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
