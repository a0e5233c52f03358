#!/usr/bin/env python3
"""Switch `learnbook uci`'s evaluation through python-chess, as a GUI does.

usage: uci_evalfile.py LEARNBOOK_BINARY NET_FILE BAD_FILE

A GUI shows the option EvalFile with its default (the embedded net's name)
and sets it with `setoption`. At a fixed node count a search is
deterministic, so each choice is recognised by the search it gives,
compared with engines started with the same choice on the command line:
`none` searches as `--net none` does, NET_FILE (a copy of the embedded
net) as the default, the embedded net's name as the default again; a
BAD_FILE is refused with an info string and the net in use kept.
Exits non-zero with the reason on any failure.
"""
import sys

import chess
import chess.engine

NODES = 3000
FEN = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"


def fail(msg):
    sys.exit(msg)


def search(engine):
    """The search's last line at NODES, from a new game (a fresh hash)."""
    info = engine.analyse(chess.Board(FEN), chess.engine.Limit(nodes=NODES), game=object())
    return (info.get("score"), tuple(info.get("pv", [])), info.get("nodes"))


def main():
    binary, net_file, bad_file = sys.argv[1:4]
    default = chess.engine.SimpleEngine.popen_uci([binary, "uci"], timeout=60)
    hand = chess.engine.SimpleEngine.popen_uci([binary, "uci", "--net", "none"], timeout=60)
    switched = chess.engine.SimpleEngine.popen_uci([binary, "uci"], timeout=60)
    try:
        option = switched.options.get("EvalFile")
        if option is None:
            fail("no EvalFile option")
        embedded_name = option.default
        if not embedded_name or embedded_name in ("none", "<empty>"):
            fail(f"EvalFile's default is not the embedded net: {embedded_name!r}")
        with_default = search(default)
        with_hand = search(hand)
        if with_default == with_hand:
            fail("the net and the hand-crafted evaluation searched alike: nothing to tell apart")
        steps = [("none", with_hand), (net_file, with_default), ("none", with_hand),
                 (embedded_name, with_default)]
        for value, expected in steps:
            switched.configure({"EvalFile": value})
            got = search(switched)
            if got != expected:
                fail(f"EvalFile {value}: searched {got}, expected {expected}")
        # A bad file: refused (the info string is tests/net.rs's check), the
        # embedded net set last still evaluates.
        switched.configure({"EvalFile": bad_file})
        got = search(switched)
        if got != with_default:
            fail(f"after a bad EvalFile the search changed: {got}, expected {with_default}")
        print(f"EvalFile default {embedded_name}; none, a file, the name and a bad file "
              f"gave the expected searches at {NODES} nodes")
    finally:
        for e in (default, hand, switched):
            e.quit()


if __name__ == "__main__":
    main()
