#!/usr/bin/env python3
"""Strength of `learnbook uci` against a real engine, measured with python-chess.

usage: strength_match.py LEARNBOOK OPPONENT PROTOCOL GAMES [--tc 10+0.1]
                         [--concurrency 2] [--openings FILE.pgn.gz] [--seed N]
                         [--pgn OUT.pgn] [--opt NAME=VALUE ...]

Use --opt Threads=1 for engines that default to several threads (Glaurung
2.2 defaults to 2), so both sides search on one core.

PROTOCOL is uci or xboard. Openings are drawn (seeded) from an opening suite
PGN; each opening is played twice with colours swapped. Clocks are kept by
this script (a side that oversteps loses on time). With --pgn the match is
resumable: each game is appended (flushed) with its number in the Round tag,
and a rerun of the same command plays only the games not in the file yet. Prints wins/draws/losses
from learnbook's side, the score, and the Elo difference with its 95% error
bars (normal approximation over per-game scores).
"""
import argparse
import concurrent.futures
import gzip
import io
import math
import random
import shlex
import sys
import threading
import time

import chess
import chess.engine
import chess.pgn

MAX_PLIES = 500


def openings(path, count, seed):
    games = []
    with gzip.open(path, "rt", errors="replace") if path.endswith(".gz") else open(path) as f:
        while True:
            g = chess.pgn.read_game(f)
            if g is None:
                break
            games.append([m for m in g.mainline_moves()])
    rng = random.Random(seed)
    rng.shuffle(games)
    return games[:count]


def start(cmd, protocol):
    argv = shlex.split(cmd)
    if protocol == "uci":
        return chess.engine.SimpleEngine.popen_uci(argv)
    return chess.engine.SimpleEngine.popen_xboard(argv)


def play_game(ours, theirs, opening, ours_white, base, inc):
    board = chess.Board()
    for m in opening:
        board.push(m)
    clocks = {chess.WHITE: base, chess.BLACK: base}
    white, black = (ours, theirs) if ours_white else (theirs, ours)
    engines = {chess.WHITE: white, chess.BLACK: black}
    for e in (ours, theirs):
        try:
            pass
        except Exception:
            pass
    termination = None
    while termination is None:
        if board.is_game_over(claim_draw=True):
            break
        if board.ply() >= MAX_PLIES:
            termination = ("1/2-1/2", "ply limit")
            break
        side = board.turn
        limit = chess.engine.Limit(white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK],
                                   white_inc=inc, black_inc=inc)
        t0 = time.monotonic()
        try:
            result = engines[side].play(board, limit)
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError) as err:
            termination = ("0-1" if side == chess.WHITE else "1-0", f"engine error: {err}")
            break
        clocks[side] -= time.monotonic() - t0
        if clocks[side] < 0:
            termination = ("0-1" if side == chess.WHITE else "1-0", "time forfeit")
            break
        clocks[side] += inc
        if result.resigned:
            termination = ("0-1" if side == chess.WHITE else "1-0", "resignation")
            break
        if result.move is None or result.move not in board.legal_moves:
            termination = ("0-1" if side == chess.WHITE else "1-0", f"illegal move {result.move}")
            break
        board.push(result.move)
    if termination is None:
        termination = (board.outcome(claim_draw=True).result(), "rules")
    res, why = termination
    if res == "1/2-1/2":
        score = 0.5
    else:
        score = 1.0 if (res == "1-0") == ours_white else 0.0
    return score, res, why, board


def elo(score):
    score = min(max(score, 1e-6), 1 - 1e-6)
    return -400 * math.log10(1 / score - 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("learnbook")
    ap.add_argument("opponent")
    ap.add_argument("protocol", choices=["uci", "xboard"])
    ap.add_argument("games", type=int)
    ap.add_argument("--tc", default="10+0.1")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--openings", default="../shared/data/openings/8moves_v3.pgn.gz")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pgn")
    ap.add_argument("--opt", action="append", default=[],
                    help="NAME=VALUE option for the opponent (UCI), e.g. Threads=1")
    args = ap.parse_args()
    opts = dict(o.split("=", 1) for o in args.opt)
    base, inc = (float(x) for x in args.tc.split("+"))
    pairs = openings(args.openings, (args.games + 1) // 2, args.seed)
    jobs = [(pairs[i // 2], i % 2 == 0) for i in range(args.games)]

    local = threading.local()
    all_engines = []
    lock = threading.Lock()

    def engines():
        if not hasattr(local, "pair"):
            ours = start(f"{args.learnbook} uci", "uci")
            theirs = start(args.opponent, args.protocol)
            if opts:
                theirs.configure(opts)
            local.pair = (ours, theirs)
            with lock:
                all_engines.extend(local.pair)
        return local.pair

    results = []
    done = {}
    if args.pgn:
        try:
            with open(args.pgn, errors="replace") as f:
                while (g := chess.pgn.read_game(f)) is not None:
                    rnd, res = g.headers.get("Round", ""), g.headers.get("Result", "*")
                    if not rnd.isdigit() or res == "*":
                        continue
                    ours_white = g.headers.get("White") == "learnbook"
                    done[int(rnd) - 1] = 0.5 if res == "1/2-1/2" else float((res == "1-0") == ours_white)
        except FileNotFoundError:
            pass
        if done:
            print(f"{args.pgn}: {len(done)} games already played, resuming", flush=True)
    results.extend(done[i] for i in sorted(done) if i < len(jobs))
    pgn_out = open(args.pgn, "a") if args.pgn else None

    def run(job):
        idx, (opening, ours_white) = job
        ours, theirs = engines()
        return idx, ours_white, play_game(ours, theirs, opening, ours_white, base, inc)

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
        todo = [(i, j) for i, j in enumerate(jobs) if i not in done]
        for idx, ours_white, (score, res, why, board) in pool.map(run, todo):
            results.append(score)
            w = sum(1 for s in results if s == 1.0)
            d = sum(1 for s in results if s == 0.5)
            lo = sum(1 for s in results if s == 0.0)
            print(f"game {idx + 1}: learnbook {'white' if ours_white else 'black'} {res} ({why}); "
                  f"running +{w} ={d} -{lo}", flush=True)
            if pgn_out:
                game = chess.pgn.Game.from_board(board)
                game.headers["White"] = "learnbook" if ours_white else args.opponent
                game.headers["Black"] = args.opponent if ours_white else "learnbook"
                game.headers["Round"] = str(idx + 1)
                game.headers["Result"] = res
                game.headers["Termination"] = why
                print(game, file=pgn_out, end="\n\n", flush=True)
    for e in all_engines:
        try:
            e.quit()
        except Exception:
            pass
    n = len(results)
    mean = sum(results) / n
    var = sum((s - mean) ** 2 for s in results) / n
    se = math.sqrt(var / n)
    lo, hi = mean - 1.96 * se, mean + 1.96 * se
    w = results.count(1.0)
    d = results.count(0.5)
    l = results.count(0.0)
    print(f"learnbook vs {args.opponent} at {args.tc}: {n} games, +{w} ={d} -{l}, "
          f"score {100 * mean:.1f}%, Elo {elo(mean):+.0f} "
          f"(95%: {elo(lo):+.0f} .. {elo(hi):+.0f}), {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
