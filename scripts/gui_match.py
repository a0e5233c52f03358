#!/usr/bin/env python3
"""A match between a learning engine and an opponent, played through
python-chess exactly as a GUI plays it, to measure book learning (issue 63).

usage: gui_match.py --learner CMD --opponent CMD --games N --pgn OUT.pgn
                    [--learner-limit nodes=20000|depth=6|movetime=100|tc=10+0.1]
                    [--opponent-limit ...] [--learner-option NAME=VALUE ...]
                    [--opponent-option ...] [--max-plies 400] [--report OUT.json]
       gui_match.py --pgn OUT.pgn --summary-only [--report OUT.json]

Each engine is started once and kept loaded for the whole match; every game
is `ucinewgame`, then `position startpos moves ...` and `go` for each move
(python-chess's play() with one `game` object a game). Colours alternate by
game number, the learner White in the odd games. A game ends by the rules
(checkmate, stalemate, insufficient material, 75 moves, fivefold, and a
threefold repetition or fifty-move draw on the board), by adjudication as cutechess-cli
adjudicates (a win when both engines' scores are 1000 cp or more for the
same side for 4 consecutive moves each; a draw when, after ply 80, 16
consecutive plies have scores within 10 cp), or at --max-plies (result `*`).

Each game is appended to OUT.pgn as it ends. A rerun of the same command
resumes: it counts the games already in OUT.pgn and plays on from the next
game number (the engines' book has learned the earlier games anyway). The
JSON report (default: OUT.pgn's name with .json; `-` for standard output) is
computed from all the games in OUT.pgn. Each move's time from `go` to
`bestmove` goes to OUT.moves.tsv (game, ply, role, book, ms; `book` is 1
when the engine said `info string book move`), and the report gives each
side's p50 and p99 of book moves, of searched moves and, apart, of its
first move of each game (which includes `ucinewgame` and `isready`). An engine that
dies or sends an illegal move stops the match with exit code 1; the games
so far stay.
"""
import argparse
import json
import logging
import os
import shlex
import sys
import time

import chess
import chess.engine
import chess.pgn

RESIGN_CP = 1000
RESIGN_MOVES = 4
DRAW_AFTER_PLY = 80
DRAW_CP = 10
DRAW_PLIES = 16  # 8 moves each: a learner's own rule (8 searches) sees it too
MATE_CP = 100_000


class MatchError(Exception):
    """The match cannot go on: the message says why."""


def parse_limit(text):
    """`nodes=N`, `depth=N`, `movetime=MS` or `tc=BASE+INC` (seconds), or
    several joined by commas; returns (fixed Limit arguments, clock or None)."""
    fixed, clock = {}, None
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        try:
            if not sep:
                raise ValueError
            if key in ("nodes", "depth"):
                fixed[key] = int(value)
            elif key == "movetime":
                fixed["time"] = int(value) / 1000
            elif key == "tc":
                base, _, inc = value.partition("+")
                clock = (float(base), float(inc or 0))
            else:
                raise ValueError
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"bad limit {part!r}: use nodes=N, depth=N, movetime=MS or tc=BASE+INC") from None
    return fixed, clock


def parse_option(text):
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"bad option {text!r}: use NAME=VALUE")
    return name, value


class Player:
    """One engine process, kept for every game of the match."""

    def __init__(self, role, cmd, limit, options):
        self.role, self.cmd = role, cmd
        self.fixed, self.clock = limit
        try:
            self.engine = chess.engine.SimpleEngine.popen_uci(shlex.split(cmd))
        except (OSError, chess.engine.EngineError, chess.engine.EngineTerminatedError) as err:
            raise MatchError(f"the {role} ({cmd}) did not start as a UCI engine: {err}") from None
        self.name = self.engine.id.get("name", cmd)
        if options:
            try:
                self.engine.configure(dict(options))
            except (chess.engine.EngineError, chess.engine.EngineTerminatedError) as err:
                self.quit()
                raise MatchError(f"the {role} ({self.name}) refused its options: {err}") from None

    def quit(self):
        try:
            self.engine.quit()
        except Exception:  # already dead: nothing to wait for
            pass


def white_cp(result):
    """The engine's score after its move, in centipawns from White's side,
    or None when it sent none."""
    score = result.info.get("score")
    return None if score is None else score.white().score(mate_score=MATE_CP)


def adjudicate(scores, board):
    """cutechess-cli's adjudication from the scores so far (White's side,
    one entry a ply, the mover's): a (result, comment) or None."""
    by_side = [scores[0::2], scores[1::2]]  # White's moves, Black's moves
    if all(len(s) >= RESIGN_MOVES for s in by_side):
        for sign, result, side in ((1, "1-0", "White"), (-1, "0-1", "Black")):
            if all(cp is not None and sign * cp >= RESIGN_CP
                   for s in by_side for cp in s[-RESIGN_MOVES:]):
                return result, (f"adjudicated: both engines at {RESIGN_CP} cp or more "
                                f"for {side} for {RESIGN_MOVES} moves")
    if board.ply() >= DRAW_AFTER_PLY + DRAW_PLIES:
        last = scores[-DRAW_PLIES:]
        if all(cp is not None and abs(cp) <= DRAW_CP for cp in last):
            return "1/2-1/2", (f"adjudicated: {DRAW_PLIES} plies within {DRAW_CP} cp "
                               f"after ply {DRAW_AFTER_PLY}")
    return None


def play_game(number, white, black, max_plies, timings=None):
    """Plays game `number`; its board, result, Termination tag and comment.
    Each move's time from `go` to `bestmove` is appended to `timings` as
    (game, ply, role, book, ms), `book` when the engine said "book move"."""
    board = chess.Board()
    game = object()  # one per game: python-chess sends ucinewgame when it changes
    clocks = {side: p.clock[0] if p.clock else None
              for side, p in ((chess.WHITE, white), (chess.BLACK, black))}
    scores = []
    while True:
        outcome = board.outcome()
        if outcome is not None:
            return board, outcome.result(), "normal", outcome.termination.name.lower()
        # A threefold repetition or the fifty-move rule on the board (not a
        # claim one move ahead, which the engines could not see).
        if board.is_repetition(3):
            return board, "1/2-1/2", "normal", "threefold_repetition"
        if board.is_fifty_moves():
            return board, "1/2-1/2", "normal", "fifty_moves"
        verdict = adjudicate(scores, board)
        if verdict is not None:
            return board, verdict[0], "adjudicated", verdict[1]
        if board.ply() >= max_plies:
            return board, "*", "unterminated", f"stopped at {max_plies} plies"
        side = board.turn
        player = white if side == chess.WHITE else black
        args = dict(player.fixed)
        if player.clock:
            args.update(white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK],
                        white_inc=white.clock[1] if white.clock else None,
                        black_inc=black.clock[1] if black.clock else None)
        started = time.monotonic()
        try:
            result = player.engine.play(board, chess.engine.Limit(**args), game=game,
                                        info=chess.engine.INFO_SCORE)
        except chess.engine.EngineTerminatedError as err:
            raise MatchError(f"game {number}, ply {board.ply() + 1}: the {player.role} "
                             f"({player.name}) died: {err}") from None
        except chess.engine.EngineError as err:
            raise MatchError(f"game {number}, ply {board.ply() + 1}: the {player.role} "
                             f"({player.name}) sent a bad or illegal move: {err}") from None
        if result.move is None or result.move not in board.legal_moves:
            raise MatchError(f"game {number}, ply {board.ply() + 1}: the {player.role} "
                             f"({player.name}) played no legal move ({result.move}) in "
                             f"{board.fen()}")
        if player.clock:
            clocks[side] -= time.monotonic() - started
            if clocks[side] < 0:
                loser = "White" if side == chess.WHITE else "Black"
                return (board, "0-1" if side == chess.WHITE else "1-0", "time forfeit",
                        f"{loser} lost on time")
            clocks[side] += player.clock[1]
        if timings is not None:
            book = "book move" in str(result.info.get("string", ""))
            timings.append((number, board.ply() + 1, player.role, int(book),
                            1000 * (time.monotonic() - started)))
        board.push(result.move)
        scores.append(white_cp(result))


def read_games(path):
    """Every game in the PGN at `path` (none when it does not exist)."""
    games = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            while (g := chess.pgn.read_game(f)) is not None:
                games.append(g)
    except FileNotFoundError:
        pass
    return games


def tally(rows):
    """Wins, draws, losses, unfinished and score of the learner's rows
    (points a game: 1, 0.5, 0 or None for `*`)."""
    finished = [p for p in rows if p is not None]
    return {
        "games": len(rows),
        "wins": finished.count(1.0),
        "draws": finished.count(0.5),
        "losses": finished.count(0.0),
        "unfinished": len(rows) - len(finished),
        "score": sum(finished) / len(finished) if finished else None,
    }


def timings_path(pgn):
    """The side file of each move's time: OUT.pgn's name with .moves.tsv."""
    return os.path.splitext(pgn)[0] + ".moves.tsv"


def percentile(sorted_values, fraction):
    """The nearest-rank percentile of a sorted, non-empty list."""
    rank = max(1, -(-len(sorted_values) * fraction // 1))
    return sorted_values[int(rank) - 1]


def latency(path, games):
    """Each role's move times (ms, from `go` to `bestmove`) over the first
    `games` games: book moves and searched moves apart, and each side's
    first move of a game apart from both, since python-chess sends
    `ucinewgame` and waits for `readyok` inside it (a learner learns the
    last game there, off the clock of a GUI that waits for `readyok`):
    count, p50, p99, max. A game replayed after a resume counts its last
    rows."""
    rows = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                parts = line.split("\t")
                if len(parts) != 5 or not parts[0].isdigit() or int(parts[0]) > games:
                    continue
                try:
                    rows[(int(parts[0]), int(parts[1]), parts[2])] = (parts[3] == "1",
                                                                      float(parts[4]))
                except ValueError:
                    continue
    except FileNotFoundError:
        return None
    first_ply = {}
    for game, ply, role in rows:
        first_ply[(game, role)] = min(ply, first_ply.get((game, role), ply))
    out = {}
    for (game, ply, role), (book, ms) in rows.items():
        kind = "first" if first_ply[(game, role)] == ply else "book" if book else "searched"
        out.setdefault(role, {"book": [], "searched": [], "first": []})[kind].append(ms)
    for role, kinds in out.items():
        for kind, values in kinds.items():
            values.sort()
            kinds[kind] = {"moves": len(values)} if not values else {
                "moves": len(values), "p50": round(percentile(values, 0.5), 2),
                "p99": round(percentile(values, 0.99), 2), "max": round(values[-1], 2)}
    return out


def report(path):
    """The report of every game in the PGN at `path`; game N is the Nth in
    the file and the learner is White in the odd ones."""
    games = read_games(path)
    rows, losses, terminations, seen_losses = [], 0, {}, set()
    repeated = 0
    for number, g in enumerate(games, 1):
        learner_white = number % 2 == 1
        rnd = g.headers.get("Round", "")
        if rnd.isdigit() and int(rnd) != number:
            print(f"{path}: game {number} has Round {rnd}; counted as game {number}",
                  file=sys.stderr)
        result = g.headers.get("Result", "*")
        if result == "1/2-1/2":
            points = 0.5
        elif result in ("1-0", "0-1"):
            points = 1.0 if (result == "1-0") == learner_white else 0.0
        else:
            points = None
        rows.append(points)
        why = g.headers.get("Termination", "?")
        terminations[why] = terminations.get(why, 0) + 1
        if points == 0.0:
            losses += 1
            moves = tuple(m.uci() for m in g.mainline_moves())
            if moves in seen_losses:
                repeated += 1
            seen_losses.add(moves)
    window = 100 if len(rows) >= 400 else max(1, len(rows) // 4) if rows else 0
    first = dict(tally(rows[:window]), first_game=1 if rows else None, last_game=window or None)
    last = dict(tally(rows[len(rows) - window:] if window else []),
                first_game=len(rows) - window + 1 if rows else None, last_game=len(rows) or None)
    learner = games[0].headers.get("White", "?") if games else None
    opponent = games[0].headers.get("Black", "?") if games else None
    out = {"pgn": path, "learner": learner, "opponent": opponent}
    out.update(tally(rows))
    out.update({"window": window, "first": first, "last": last,
                "repeated_losses": repeated, "terminations": terminations})
    times = latency(timings_path(path), len(games))
    if times is not None:
        out["move_ms"] = times
    return out


def summary_line(r):
    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}%"
    return (f"{r['learner']} vs {r['opponent']}: {r['games']} games, +{r['wins']} ={r['draws']} "
            f"-{r['losses']}" + (f" *{r['unfinished']}" if r["unfinished"] else "")
            + f", score {pct(r['score'])}; first {r['first']['games']} {pct(r['first']['score'])}, "
            f"last {r['last']['games']} {pct(r['last']['score'])}; "
            f"{r['repeated_losses']} of {r['losses']} losses repeat an earlier loss"
            + "".join(f"; {role} book moves p50 {t['book']['p50']} ms p99 {t['book']['p99']} ms"
                      for role, t in sorted(r.get("move_ms", {}).items())
                      if t["book"]["moves"]))


def write_report(r, dest):
    text = json.dumps(r, indent=2) + "\n"
    if dest == "-":
        sys.stdout.write(text)
    else:
        with open(dest, "w", encoding="utf-8") as f:
            f.write(text)


def run_match(args):
    already = len(read_games(args.pgn))
    if already >= args.games:
        print(f"{args.pgn}: {already} games already, nothing to play", flush=True)
        return
    if already:
        print(f"{args.pgn}: {already} games already, resuming at game {already + 1}", flush=True)
    learner = Player("learner", args.learner, args.learner_limit, args.learner_option)
    try:
        opponent = Player("opponent", args.opponent, args.opponent_limit or args.learner_limit,
                          args.opponent_option)
    except MatchError:
        learner.quit()
        raise
    points = []
    try:
        with open(args.pgn, "a", encoding="utf-8") as out:
            for number in range(already + 1, args.games + 1):
                learner_white = number % 2 == 1
                white, black = (learner, opponent) if learner_white else (opponent, learner)
                timings = []
                board, result, termination, comment = play_game(number, white, black,
                                                                args.max_plies, timings)
                game = chess.pgn.Game.from_board(board)
                game.headers["Event"] = "gui_match"
                game.headers["Round"] = str(number)
                game.headers["White"] = white.name
                game.headers["Black"] = black.name
                game.headers["Result"] = result
                game.headers["Termination"] = termination
                game.end().comment = comment
                out.write(str(game) + "\n\n")
                out.flush()
                os.fsync(out.fileno())
                with open(timings_path(args.pgn), "a", encoding="utf-8") as tf:
                    tf.writelines(f"{g}\t{ply}\t{role}\t{book}\t{ms:.3f}\n"
                                  for g, ply, role, book, ms in timings)
                if result == "1/2-1/2":
                    points.append(0.5)
                elif result != "*":
                    points.append(1.0 if (result == "1-0") == learner_white else 0.0)
                print(f"game {number}: {white.name} - {black.name} {result} ({comment}, "
                      f"{board.ply()} plies); this run, learner +{points.count(1.0)} "
                      f"={points.count(0.5)} -{points.count(0.0)}", flush=True)
    finally:
        # quit lets the learner learn its last game, as when a GUI closes it
        learner.quit()
        opponent.quit()


def main():
    ap = argparse.ArgumentParser(
        description="A match between a learning engine and an opponent through python-chess, "
                    "as a GUI plays it (ucinewgame, position startpos moves ..., go), game by "
                    "game into a resumable PGN, with a JSON report of the learner's results.",
        epilog="Limits: nodes=N, depth=N, movetime=MS or tc=BASE+INC (seconds, clocks kept by "
               "this script; a side that oversteps loses on time), or several joined by "
               "commas. Adjudication as cutechess-cli: a win when both engines score 1000 cp "
               "or more for one side for 4 moves each; a draw after ply 80 when 16 plies in a "
               "row score within 10 cp.")
    ap.add_argument("--learner", metavar="CMD",
                    help="the learning engine's command line, e.g. "
                         "'target/release/learnbook uci --book b.sqlite --learn'; "
                         "White in game 1 and every odd game")
    ap.add_argument("--opponent", metavar="CMD", help="the opponent's command line")
    ap.add_argument("--games", type=int, metavar="N",
                    help="games in the match in all (those already in --pgn count)")
    ap.add_argument("--pgn", required=True, metavar="OUT.pgn",
                    help="the games, appended one by one; an existing file is resumed")
    ap.add_argument("--learner-limit", type=parse_limit, default=parse_limit("nodes=20000"),
                    metavar="LIMIT", help="the learner's limit a move (default nodes=20000)")
    ap.add_argument("--opponent-limit", type=parse_limit, metavar="LIMIT",
                    help="the opponent's limit a move (default: the learner's)")
    ap.add_argument("--learner-option", type=parse_option, action="append", default=[],
                    metavar="NAME=VALUE", help="a UCI option for the learner (repeatable)")
    ap.add_argument("--opponent-option", type=parse_option, action="append", default=[],
                    metavar="NAME=VALUE",
                    help="a UCI option for the opponent (repeatable), e.g. Threads=1")
    ap.add_argument("--max-plies", type=int, default=400, metavar="N",
                    help="a game not over after N plies is stopped with result * (default 400)")
    ap.add_argument("--report", metavar="OUT.json",
                    help="where the JSON report goes (default: --pgn with .json; - for stdout)")
    ap.add_argument("--log", metavar="FILE",
                    help="append every line sent to and received from the engines to FILE "
                         "(python-chess's engine log), e.g. to look for errors they reported")
    ap.add_argument("--summary-only", action="store_true",
                    help="play nothing: the report of the games in --pgn")
    args = ap.parse_args()
    if args.log:
        handler = logging.FileHandler(args.log, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        engine_log = logging.getLogger("chess.engine")
        engine_log.addHandler(handler)
        engine_log.setLevel(logging.DEBUG)
    dest = args.report or os.path.splitext(args.pgn)[0] + ".json"
    if args.summary_only:
        if not os.path.exists(args.pgn):
            sys.exit(f"gui_match.py: {args.pgn} does not exist")
    else:
        missing = [f"--{n}" for n in ("learner", "opponent", "games")
                   if getattr(args, n) is None]
        if missing:
            ap.error(f"{', '.join(missing)} needed (or --summary-only)")
        if args.games < 1 or args.max_plies < 1:
            ap.error("--games and --max-plies must be at least 1")
        try:
            run_match(args)
        except MatchError as err:
            print(f"gui_match.py: {err}; the games before it are in {args.pgn}",
                  file=sys.stderr)
            sys.exit(1)
        except KeyboardInterrupt:
            print(f"gui_match.py: interrupted; the finished games are in {args.pgn}",
                  file=sys.stderr)
            sys.exit(130)
    r = report(args.pgn)
    write_report(r, dest)
    print(summary_line(r), flush=True)


if __name__ == "__main__":
    main()
