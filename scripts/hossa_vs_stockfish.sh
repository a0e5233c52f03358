#!/usr/bin/env bash
# Hossa's failure, with a real opponent (issue 4): our engine plays only
# White against Stockfish, learning every game into a book built from the
# master games; every 25 games, the book's first-move choice and root value.
#
# usage: scripts/hossa_vs_stockfish.sh OUTDIR [GAMES] [NODES] [SF_DEPTH]
# env: LEARNBOOK (default target/release/learnbook), STOCKFISH, PGN (the
#      book's games, default ../shared/data/games/master-games.pgn.gz)
set -euo pipefail
cd "$(dirname "$0")/.."
LB=${LEARNBOOK:-target/release/learnbook}
OUT=$1
GAMES=${2:-200}
NODES=${3:-5000}
SF_DEPTH=${4:-12}
STOCKFISH=${STOCKFISH:-/usr/games/stockfish}
mkdir -p "$OUT"
rm -f "$OUT"/hossa.sqlite* "$OUT/hossa.pgn"
"$LB" build --book "$OUT/hossa.sqlite" --max-ply 12 "${PGN:-../shared/data/games/master-games.pgn.gz}" 2>/dev/null
"$LB" show --book "$OUT/hossa.sqlite" | head -n 4
played=0
while [ "$played" -lt "$GAMES" ]; do
  "$LB" play \
    --engine "name=lb,cmd=builtin,book=$OUT/hossa.sqlite,nodes=$NODES" \
    --engine "name=stockfish,cmd=$STOCKFISH,option.Threads=1,depth=$SF_DEPTH" \
    --noswap --games 25 --pgnout "$OUT/hossa.pgn" \
    --learn "$OUT/hossa.sqlite" --learn-as lb > "$OUT/last.log"
  played=$((played + 25))
  score=$(grep " vs stockfish: " "$OUT/last.log" | cut -d, -f2)
  choice=$("$LB" choose --book "$OUT/hossa.sqlite" --mode best || true)
  root=$("$LB" show --book "$OUT/hossa.sqlite" | grep -m1 -i "value" || true)
  echo "after $played games (last 25:$score): choice $choice; $root"
done
"$LB" check --book "$OUT/hossa.sqlite"
