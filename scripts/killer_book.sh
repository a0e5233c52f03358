#!/usr/bin/env bash
# The "killer book" experiment (issue 4): our engine (the built-in search at
# a fixed node count, so it is deterministic out of book) against Glaurung
# 2.2 at a fixed depth (one thread; Phalanx has no depth limit over xboard),
# colours alternating, from a book of the master games
# to ply 12: once learning every game into the book, once with the book
# left as it is. Prints the learning curve of both runs.
#
# usage: scripts/killer_book.sh OUTDIR [GAMES] [NODES] [DEPTH]
# env: LEARNBOOK (default target/release/learnbook), PGN (the book's games,
#      default ../shared/data/games/master-games.pgn.gz)
set -euo pipefail
cd "$(dirname "$0")/.."
LB=${LEARNBOOK:-target/release/learnbook}
OUT=$1
GAMES=${2:-400}
NODES=${3:-4000}
DEPTH=${4:-6}
mkdir -p "$OUT"
if [ ! -f "$OUT/base.sqlite" ]; then
  "$LB" build --book "$OUT/base.sqlite" --max-ply 12 "${PGN:-../shared/data/games/master-games.pgn.gz}" 2>/dev/null
fi
for mode in learn static; do
  rm -f "$OUT/$mode".sqlite* "$OUT/$mode.pgn"
  cp "$OUT/base.sqlite" "$OUT/$mode.sqlite"
  learn=()
  if [ "$mode" = learn ]; then learn=(--learn "$OUT/$mode.sqlite" --learn-as lb); fi
  start=$(date +%s)
  "$LB" play \
    --engine "name=lb,cmd=builtin,book=$OUT/$mode.sqlite,nodes=$NODES" \
    --engine "name=glaurung,cmd=/usr/games/glaurung,option.Threads=1,depth=$DEPTH" \
    --games "$GAMES" --pgnout "$OUT/$mode.pgn" "${learn[@]}" > "$OUT/$mode.log"
  echo "== $mode ($(( $(date +%s) - start )) s): $(tail -n 2 "$OUT/$mode.log" | tr '\n' ' ')"
  "$LB" report --pgn "$OUT/$mode.pgn" --player lb --window 100
done
"$LB" check --book "$OUT/learn.sqlite"
