#!/usr/bin/env python3
"""A misbehaving UCI engine for the runner's fault tests (not a chess engine).

usage: fake_engine.py crash|hang|illegal|garbage|stale-multipv|no-searchmoves

It answers the handshake like a UCI engine, plays legal moves (the first
legal move, via python-chess) for two moves, then misbehaves on its third
`go`: crash exits, hang never answers, illegal sends an illegal move,
garbage sends noise and no move. stale-multipv offers MultiPV and, under
MultiPV > 1, reports its second line with the move of its first, as an
engine stopped in an iteration that reordered its lines does.
no-searchmoves ignores `searchmoves`, as Ethereal 12 does.
"""
import sys

import chess

mode = sys.argv[1]
board = chess.Board()
gos = 0
multipv = 1


def say(s):
    print(s, flush=True)


for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    cmd = words[0]
    if cmd == "uci":
        say("id name fake-" + mode)
        if mode == "stale-multipv":
            say("option name MultiPV type spin default 1 min 1 max 500")
        say("uciok")
    elif cmd == "setoption" and words[2:3] == ["MultiPV"]:
        multipv = int(words[4])
    elif cmd == "isready":
        say("readyok")
    elif cmd == "position":
        if words[1] == "startpos":
            board = chess.Board()
            rest = words[2:]
        else:
            board = chess.Board(" ".join(words[2:8]))
            rest = words[8:]
        if rest and rest[0] == "moves":
            for m in rest[1:]:
                board.push_uci(m)
    elif cmd == "go":
        gos += 1
        if gos >= 3:
            if mode == "crash":
                sys.exit(3)
            if mode == "hang":
                continue
            if mode == "illegal":
                say("bestmove a1a8")
                continue
            if mode == "garbage":
                say("\x00\x01 zzz ### not uci at all")
                say("bestmove")
                continue
        # The first legal move, of those given by searchmoves if any.
        allowed = words[words.index("searchmoves") + 1:] if "searchmoves" in words else []
        if mode == "no-searchmoves":
            allowed = []
        legal = [m.uci() for m in board.legal_moves]
        if mode == "stale-multipv" and multipv > 1:
            moves = [m for m in legal if not allowed or m in allowed]
            lines = [moves[0]] + moves[: multipv - 1]
            for k, m in enumerate(lines[:multipv], start=1):
                say("info multipv %d depth 1 score cp %d pv %s" % (k, -k, m))
            say("bestmove " + moves[0])
            continue
        say("info depth 1 score cp 0")
        say("bestmove " + next((m for m in legal if not allowed or m in allowed), legal[0]))
    elif cmd == "quit":
        break
