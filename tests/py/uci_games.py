#!/usr/bin/env python3
"""Drive `learnbook uci` with python-chess's chess.engine, as GUIs do.

usage: uci_games.py LEARNBOOK_BINARY OPPONENT [GAMES_PER_PAIRING] [BASE_SECONDS] [INC_SECONDS] [NODES]

Plays learnbook against itself and against OPPONENT (a UCI engine such as
/usr/games/glaurung) at BASE+INC with real clocks, checking that every
move is legal, no side loses on time and no engine dies. With NODES, those
games are played at NODES a move instead (their verdict does not depend on
how busy the machine is), and one more game of learnbook against itself,
of at most CLOCK_PLIES plies, is played at BASE+INC: a clock generous
enough that only an engine ignoring it loses on time. Before them,
checks that `stop` during an infinite search is answered with a legal
move, and prints the worst latency of five (a figure for BENCHMARKS.md,
whose target is 50 ms; not a limit here: a loaded machine is slower).
Exits non-zero with the reason on any failure.
"""
import sys
import time

import chess
import chess.engine

MAX_PLIES = 400
CLOCK_PLIES = 60


def play(white, black, base, inc, label, ours=None, nodes=None, max_plies=MAX_PLIES):
    """ours: the learnbook engines in this game; a fault of any other engine
    (an opponent overstepping its clock) ends the game but fails nothing."""
    ours = ours if ours is not None else {white, black}
    board = chess.Board()
    clocks = {chess.WHITE: base, chess.BLACK: base}
    engines = {chess.WHITE: white, chess.BLACK: black}
    while not board.is_game_over(claim_draw=True) and board.ply() < max_plies:
        side = board.turn
        if nodes is not None:
            limit = chess.engine.Limit(nodes=nodes)
        else:
            limit = chess.engine.Limit(
                white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK],
                white_inc=inc, black_inc=inc)
        t0 = time.monotonic()
        result = engines[side].play(board, limit)
        used = time.monotonic() - t0 if nodes is None else 0.0
        clocks[side] -= used
        if clocks[side] < 0:
            who = 'white' if side else 'black'
            msg = f"{label}: {who} lost on time at ply {board.ply()} ({-clocks[side]:.3f} s over)"
            if engines[side] in ours:
                sys.exit(msg)
            print(msg + " (the opponent, not learnbook)")
            return "0-1" if side else "1-0"
        clocks[side] += inc
        if result.move is None or result.move not in board.legal_moves:
            sys.exit(f"{label}: illegal move {result.move} at ply {board.ply()} in {board.fen()}")
        board.push(result.move)
    outcome = board.outcome(claim_draw=True)
    res = outcome.result() if outcome else "1/2-1/2 (ply limit)"
    if nodes is not None:
        print(f"{label}: {res} in {board.ply()} plies at {nodes} nodes a move")
    else:
        print(f"{label}: {res} in {board.ply()} plies; clocks left "
              f"white {clocks[chess.WHITE]:.2f} s, black {clocks[chess.BLACK]:.2f} s")
    return res


def check_stop(engine):
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    worst = 0.0
    for _ in range(5):
        with engine.analysis(board) as analysis:
            time.sleep(0.3)
            t0 = time.monotonic()
            analysis.stop()
            best = analysis.wait()
            elapsed = time.monotonic() - t0
        if best.move is None or best.move not in board.legal_moves:
            sys.exit(f"stop: no legal bestmove ({best.move})")
        worst = max(worst, elapsed)
    print(f"stop answered within {worst * 1000:.1f} ms (worst of 5)")


def main():
    binary, opponent = sys.argv[1], sys.argv[2]
    games = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    base = float(sys.argv[4]) if len(sys.argv) > 4 else 5.0
    inc = float(sys.argv[5]) if len(sys.argv) > 5 else 0.05
    nodes = int(sys.argv[6]) if len(sys.argv) > 6 else None
    ours = chess.engine.SimpleEngine.popen_uci([binary, "uci"])
    ours2 = chess.engine.SimpleEngine.popen_uci([binary, "uci"])
    other = chess.engine.SimpleEngine.popen_uci([opponent])
    if "Threads" in other.options:
        other.configure({"Threads": 1})  # one search thread each: no oversubscribed cores
    try:
        if ours.id.get("name", "").split()[0] != "learnbook":
            sys.exit(f"unexpected engine name {ours.id}")
        if "Hash" not in ours.options or "pawn_mg" not in ours.options:
            sys.exit("missing UCI options Hash / pawn_mg")
        # Move Overhead covers the driver's own latency (python-chess, pipes,
        # a loaded CI machine), as cutechess users set it.
        for e in (ours, ours2):
            e.configure({"Hash": 32, "Move Overhead": 150})
        check_stop(ours)
        for g in range(games):
            play(ours, ours2, base, inc, f"self-play game {g + 1}", nodes=nodes)
        for g in range(games):
            play(ours, other, base, inc, f"learnbook-{opponent.split('/')[-1]} game {g + 1}", {ours},
                 nodes=nodes)
            play(other, ours, base, inc, f"{opponent.split('/')[-1]}-learnbook game {g + 1}", {ours},
                 nodes=nodes)
        if nodes is not None:
            play(ours, ours2, base, inc, "self-play on the clock", max_plies=CLOCK_PLIES)
        for name, e in (("learnbook", ours), ("learnbook (2)", ours2), ("opponent", other)):
            if e.protocol.returncode.done():
                sys.exit(f"{name} exited during the games")
    finally:
        for e in (ours, ours2, other):
            try:
                e.quit()
            except Exception:
                pass
    print("ok")


if __name__ == "__main__":
    main()
