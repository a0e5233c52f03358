#!/usr/bin/env python3
"""Writes tests/corpus/: malformed PGN cases mixed with valid games.

Valid games are real master games from data/master-sample.pgn.gz with
White renamed "Valid-NN"; every malformed case has White "Bad-<case>".
tests/malformed.rs states what each file must yield.

usage: scripts/make_malformed_corpus.py [OUTDIR] (default tests/corpus;
tests/malformed.rs checks that the script writes the corpus as committed)
"""
import sys
import gzip
import os
import re

ROOT = os.path.join(os.path.dirname(__file__), "..")
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "corpus")
os.makedirs(OUT, exist_ok=True)

sample = gzip.open(os.path.join(ROOT, "data", "master-sample.pgn.gz"), "rb").read()
starts = [m.start() for m in re.finditer(rb"(?m)^\[Event ", sample)] + [len(sample)]
master = [sample[starts[i]:starts[i + 1]].strip() + b"\n\n" for i in range(len(starts) - 1)]
counter = [0]


def valid():
    """The next master game, renamed Valid-NN."""
    counter[0] += 1
    g = master[counter[0] * 7]
    return re.sub(rb'\[White "[^"]*"\]', b'[White "Valid-%02d"]' % counter[0], g, count=1)


def bad(case, movetext, tags=b""):
    return (b'[Event "corpus"]\n[White "Bad-' + case + b'"]\n[Black "x"]\n' + tags + b"\n" + movetext + b"\n\n")


def write(name, parts):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(b"".join(parts))


R = b'[Result "*"]\n'
write("mixed.pgn", [
    valid(),
    bad(b"illegal-move", b"1. e4 e5 2. Ke3 Nc6 *", R),
    valid(),
    bad(b"ambiguous-san", b"1. d4 d5 2. Nf3 Nf6 3. Nd2 *", R),
    bad(b"move-after-mate", b"1. f3 e5 2. g4 Qh4# 3. a3 0-1", b'[Result "0-1"]\n'),
    valid(),
    bad(b"castling-through-check", b"1. O-O *", R + b'[SetUp "1"]\n[FEN "r3k2r/8/8/8/8/8/5r2/R3K2R w KQkq - 0 1"]\n'),
    bad(b"promotion-without-piece", b"1. e8 *", R + b'[SetUp "1"]\n[FEN "8/4P3/8/8/8/8/k7/4K3 w - - 0 1"]\n'),
    valid(),
    bad(b"null-move", b"1. e4 -- 2. d4 *", R),
    bad(b"missing-result", b"1. e4 e5 2. Nf3 Nc6"),
    valid(),
    bad(b"unknown-result-tag", b"1. e4 e5", b'[Result "abandoned"]\n'),
    bad(b"atomic", b"1. e4 d5 2. exd5 *", R + b'[Variant "Atomic"]\n'),
    valid(),
    bad(b"chess960-tagged", b"9. Nb4 O-O *",
        R + b'[Variant "Chess960"]\n[SetUp "1"]\n[FEN "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"]\n'),
    bad(b"chess960-untagged", b"1. e4 *",
        R + b'[SetUp "1"]\n[FEN "rkrbbnnq/pppppppp/8/8/8/8/PPPPPPPP/RKRBBNNQ w KQkq - 0 1"]\n'),
    valid(),
    bad(b"bad-fen", b"1. e4 *", R + b'[SetUp "1"]\n[FEN "this is not a position"]\n'),
    bad(b"two-white-kings", b"1. Ke2 *", R + b'[SetUp "1"]\n[FEN "4k3/8/8/8/8/8/8/K3K3 w - - 0 1"]\n'),
    valid(),
    bad(b"no-moves", b"1-0", b'[Result "1-0"]\n'),
    bad(b"illegal-after-variations", b"1. e4 (1. d4 d5 (1... Nf6)) e5 2. Nf3 (2. f4) Nc6 3. Bb5 a6 4. Bxc6 Bxc6 *", R),
    valid(),
    bad(b"lowercase-piece", b"1. e4 e5 2. nf3 Nc6 *", R),
    valid(),
    # pgn-reader drops tokens it cannot read without a trace (what remains,
    # 1. e4 e5, is legal); learnbook finds them and skips the game.
    bad(b"junk-bytes", b"1. e4 \x00\x01\xfe\xff\x7f e5 2. Qxx9 *", R),
    bad(b"unparseable-san", b"1. e4 e5 2. Qh5 Kx 1-0", b'[Result "1-0"]\n'),
    bad(b"glued-moves", b"1. e4 e5 2. Nf3Nc6 3. Bb5 a6 *", R),
    valid(),
    valid(),  # written twice below: the copy is a duplicate
])
# The duplicate: the last valid game again.
with open(os.path.join(OUT, "mixed.pgn"), "ab") as f:
    g = master[counter[0] * 7]
    f.write(re.sub(rb'\[White "[^"]*"\]', b'[White "Valid-%02d"]' % counter[0], g, count=1))
    f.write(valid())

# Annotated but valid: NAGs, comments everywhere, nested variations, odd move numbers.
nested = b"(" * 2000 + b"1. d4" + b")" * 2000
write("annotated.pgn", [
    b'[Event "corpus"]\n[White "Valid-annotated"]\n[Black "x"]\n[Result "1-0"]\n\n'
    b"{start} 1. e4 $1 {a comment} e5!? 2. Nf3 $14 (2. f4 exf4 {gambit} (2... d5)) 2... Nc6 "
    b"3. Bb5 a6 4. Ba4 {more} ; rest of line comment\n Nf6 5. O-O 1-0\n\n",
    b'[Event "corpus"]\n[White "Valid-nested"]\n[Black "x"]\n[Result "1/2-1/2"]\n\n1. e4 ' + nested + b" e5 1/2-1/2\n\n",
    valid(),
])

# CRLF line endings and a byte order mark: valid.
crlf = b"\xef\xbb\xbf" + (valid() + valid()).replace(b"\n", b"\r\n")
write("bom-crlf.pgn", [crlf])

# Latin-1 (not UTF-8) names: valid, stored lossily.
write("latin1.pgn", [
    b'[Event "corpus"]\n[White "Valid-latin1 M\xfcller"]\n[Black "Bj\xf6rk"]\n[Result "0-1"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n',
    valid(),
])

write("empty.pgn", [])
write("whitespace.pgn", [b"\n\n   \r\n\t\n"])

# A file that ends in the middle of a game.
write("truncated.pgn", [valid(), valid()[:-200]])

# Garbage bytes between games.
junk = bytes((i * 37 + 11) % 256 for i in range(600))
write("garbage.pgn", [valid(), junk, b"\n\n", valid()])

# A gzip stream cut short: the games before the cut are still used.
whole = gzip.compress(b"".join(valid() for _ in range(40)), mtime=0)  # no date: the same bytes each run
with open(os.path.join(OUT, "cut.pgn.gz"), "wb") as f:
    f.write(whole[: len(whole) * 2 // 3])
print("valid games written:", counter[0])
