#!/usr/bin/env python3
"""learnbook serve against lichess's own client and schema.

berserk (lichess's Python API client) reads /masters for POSITIONS
positions: those along the first games of the PGN (read with
python-chess), asked by `play` from the start and, every third one, by
`fen` alone. Every answer is validated against lichess's OpenAPI schema
(OpeningExplorerMasters.yaml, $refs resolved) with OpenAPI 3.1 semantics,
and checked against python-chess: each move is legal, its SAN is
python-chess's, the `fen` learnbook adds is the position asked. The games
named in the answers (and the ids given with --ids) are fetched as PGN
through berserk's get_otb_master_game (/master/pgn/ID) and as
/masters/pgn/ID, and read back with python-chess. A bad query must be
refused with a 400 and a JSON error.

usage: explorer_compat.py BASE_URL GAMES.pgn[.gz] SPEC_DIR [--positions N] [--ids ID,ID...]
Prints one summary line: "positions: N, games: M, schema errors: E";
exits 1 on any failure.
"""

import argparse
import copy
import gzip
import io
import json
import os
import sys

import berserk
import chess
import chess.pgn
import requests
import yaml
from openapi_schema_validator import OAS31Validator

# The copy of lichess's specs lacks this one file; it is this enum upstream.
GAME_COLOR = {"type": "string", "enum": ["white", "black"]}


def load_schema(path, seen=()):
    """A schema file with every relative $ref inlined (no cycles here)."""
    with open(path) as f:
        node = yaml.safe_load(f)
    return resolve(node, os.path.dirname(path), seen + (os.path.abspath(path),))


def resolve(node, base, seen):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            target = os.path.normpath(os.path.join(base, ref))
            if os.path.basename(target) == "GameColor.yaml" and not os.path.exists(target):
                return copy.deepcopy(GAME_COLOR)
            if os.path.abspath(target) in seen:
                raise ValueError(f"$ref cycle at {target}")
            return load_schema(target, seen)
        return {k: resolve(v, base, seen) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve(v, base, seen) for v in node]
    return node


def positions_of(pgn_path, n):
    """Up to n distinct move lines (UCI lists) along the games, in order."""
    opener = gzip.open if pgn_path.endswith(".gz") else open
    out, seen = [], set()
    with opener(pgn_path, "rt", encoding="utf-8", errors="replace") as f:
        while len(out) < n:
            game = chess.pgn.read_game(f)
            if game is None:
                break
            board = game.board()
            line = []
            if board.fen() not in seen:
                seen.add(board.fen())
                out.append(list(line))
            for mv in game.mainline_moves():
                if len(line) >= 16 or len(out) >= n:
                    break
                board.push(mv)
                line.append(mv.uci())
                key = board.fen()
                if key not in seen:
                    seen.add(key)
                    out.append(list(line))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base_url")
    ap.add_argument("pgn")
    ap.add_argument("spec_dir")
    ap.add_argument("--positions", type=int, default=200)
    ap.add_argument("--ids", default="")
    args = ap.parse_args()

    schema = load_schema(os.path.join(args.spec_dir, "schemas", "OpeningExplorerMasters.yaml"))
    validator = OAS31Validator(schema)
    session = requests.Session()
    client = berserk.Client(session=session, explorer_url=args.base_url.rstrip("/"))
    failures = []
    schema_errors = 0
    game_ids = [i for i in args.ids.split(",") if i]

    lines = positions_of(args.pgn, args.positions)
    if len(lines) < args.positions:
        failures.append(f"only {len(lines)} positions in {args.pgn}")
    for i, line in enumerate(lines):
        board = chess.Board()
        for u in line:
            board.push_uci(u)
        try:
            if i % 3 == 2:
                res = client.opening_explorer.get_masters_games(
                    position=board.fen(), moves=20, top_games=i % 16
                )
            else:
                res = client.opening_explorer.get_masters_games(play=line or None)
        except Exception as e:  # noqa: BLE001 - any failure is reported
            failures.append(f"{line}: berserk failed: {e}")
            continue
        errors = list(validator.iter_errors(res))
        if errors:
            schema_errors += len(errors)
            failures.append(f"{line}: schema: {errors[0].message} at {list(errors[0].path)}")
        # learnbook writes the en passant square wherever a pseudo-legal
        # capture exists (as Polyglot keys hash it): python-chess's "xfen".
        if res.get("fen") != board.fen(en_passant="xfen"):
            failures.append(f"{line}: fen {res.get('fen')!r}, expected {board.fen(en_passant='xfen')!r}")
        for m in res.get("moves", []):
            try:
                mv = chess.Move.from_uci(m["uci"])
            except ValueError:
                failures.append(f"{line}: move {m['uci']!r} is not UCI")
                continue
            if mv not in board.legal_moves:
                failures.append(f"{line}: move {m['uci']} is not legal")
                continue
            if m["san"] != board.san(mv):
                failures.append(f"{line}: {m['uci']} as {m['san']!r}, python-chess says {board.san(mv)!r}")
            if m.get("game"):
                game_ids.append(m["game"]["id"])
        for g in res.get("topGames", []):
            game_ids.append(g["id"])
            if chess.Move.from_uci(g["uci"]) not in board.legal_moves:
                failures.append(f"{line}: top game move {g['uci']} is not legal")

    # A refusal is a 400 with a JSON error, as berserk sees it.
    try:
        client.opening_explorer.get_masters_games(position="not a fen")
        failures.append("a bad fen was not refused")
    except berserk.exceptions.ResponseError as e:
        body = e.response.json() if e.response is not None else {}
        if e.status_code != 400 or "fen" not in body.get("error", ""):
            failures.append(f"a bad fen: {e.status_code} {body}")

    games = 0
    for gid in sorted(set(game_ids))[:40]:
        try:
            text = client.opening_explorer.get_otb_master_game(gid)
        except Exception as e:  # noqa: BLE001
            failures.append(f"game {gid}: berserk failed: {e}")
            continue
        r = session.get(args.base_url.rstrip("/") + f"/masters/pgn/{gid}")
        if r.status_code != 200 or r.text != text:
            failures.append(f"game {gid}: /masters/pgn differs from /master/pgn ({r.status_code})")
        if not r.headers.get("content-type", "").startswith("application/x-chess-pgn"):
            failures.append(f"game {gid}: content-type {r.headers.get('content-type')}")
        game = chess.pgn.read_game(io.StringIO(text))
        if game is None or game.errors:
            failures.append(f"game {gid}: python-chess cannot read it: {game and game.errors}")
            continue
        if not list(game.mainline_moves()):
            failures.append(f"game {gid}: no moves")
        if game.headers.get("Result") not in ("1-0", "0-1", "1/2-1/2", "*"):
            failures.append(f"game {gid}: result {game.headers.get('Result')!r}")
        games += 1
    if game_ids and games == 0:
        failures.append("no game could be read")

    print(f"positions: {len(lines)}, games: {games}, schema errors: {schema_errors}")
    for f in failures[:30]:
        print("FAILED", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
