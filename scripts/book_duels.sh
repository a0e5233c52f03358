#!/usr/bin/env bash
# Issue 42's figures in play: the improved master book against the Polyglot
# reference book and against the book before the issue, one engine playing
# both sides (learnbook duel), weighted against weighted and top against top.
# Each duel's games go to WORK/<name>.pgn (a rerun continues a stopped duel)
# and its report, once the duel has finished, to docs/bench/duels/<name>.json.
#
# usage: scripts/book_duels.sh IMPROVED.sqlite BEFORE.sqlite WORK [PAIRS] [DUEL...]
#   DUEL: polyglot-weighted polyglot-best before-weighted before-best
#         polyglot-weighted-ethereal (default: all, in that order), and
#         polyglot-ceiling (not in the default: Stockfish at 1,000,000 nodes
#         wherever the improved book has a move, `duel --deep-book`)
# env: LEARNBOOK (default target/release/learnbook), SHARED (default ../shared/data),
#      STOCKFISH, ETHEREAL (engine paths), NODES (20000), CONCURRENCY (2),
#      STARTS (the duels' start positions, default SHARED's master games),
#      REPORTS (where finished duels' reports go, default docs/bench/duels)
set -euo pipefail
cd "$(dirname "$0")/.."
IMPROVED=$1
BEFORE=$2
WORK=$3
PAIRS=${4:-1000}
shift $(( $# < 4 ? $# : 4 ))
DUELS=("$@")
[ ${#DUELS[@]} -eq 0 ] && DUELS=(polyglot-weighted polyglot-best before-weighted before-best polyglot-weighted-ethereal)
LB=${LEARNBOOK:-target/release/learnbook}
SHARED=${SHARED:-../shared/data}
SF=${STOCKFISH:-/usr/games/stockfish}
ETH=${ETHEREAL:-/usr/games/ethereal-chess}
NODES=${NODES:-20000}
CONC=${CONCURRENCY:-2}
POLYGLOT=$SHARED/polyglot/master-games-maxply40-mingame3.bin
STARTS=${STARTS:-$SHARED/games/master-games.pgn.gz}
REPORTS=${REPORTS:-docs/bench/duels}
mkdir -p "$WORK" "$REPORTS"
# The books as engines and GUIs read them: Polyglot files, value weights.
[ -f "$WORK/improved.bin" ] || "$LB" export --book "$IMPROVED" --polyglot "$WORK/improved.bin"
[ -f "$WORK/before.bin" ] || "$LB" export --book "$BEFORE" --polyglot "$WORK/before.bin"
echo "commit $(git rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%MZ), $PAIRS pairs, $NODES nodes"
for d in "${DUELS[@]}"; do
  case $d in
    polyglot-*) other=$POLYGLOT ;;
    before-*) other=$WORK/before.bin ;;
    *) echo "unknown duel $d" >&2; exit 2 ;;
  esac
  case $d in
    *-weighted*|*-ceiling) mode=weighted ;;
    *-best) mode=best ;;
  esac
  extra=()
  case $d in
    *-ceiling) extra=(--deep-book 1000000) ;;
  esac
  case $d in
    *-ethereal) limit=(--depth 9); engine="cmd=$ETH,option.Threads=1,option.Hash=16" ;;
    *) limit=(--nodes "$NODES" --jitter 10); engine="cmd=$SF,option.Threads=1,option.Hash=16" ;;
  esac
  echo "== $d"
  "$LB" duel --engine "$engine" --book "$WORK/improved.bin" --book "$other" --mode "$mode" "${extra[@]}" \
    --starts "$STARTS" --pairs "$PAIRS" "${limit[@]}" \
    --concurrency "$CONC" --pgnout "$WORK/$d.pgn" --json > "$WORK/$d.json"
  # Only a finished duel's report replaces the one kept in the repository.
  cp "$WORK/$d.json" "$REPORTS/$d.json"
  cat "$REPORTS/$d.json"
done
