#!/bin/sh
# The net's confirmation (issue 64): a net against the hand-crafted
# evaluation (`uci --net none`, the side named `default`: it was the default
# before the net) at 10+0.1, both sides `learnbook uci` processes
# (one thread, 16 MB hash), on openings the data never saw (the UHO-style
# suite, pairs with colours swapped), an SPRT [0, 10] reported where it
# decides, and on to GAMES. In parts, resumable on any machine: the games
# played are kept in the journal (docs/bench/net-night/confirm-NAME.pgn.gz)
# and read back, not played again.
#
# Run from the repository root after `cargo build --release`:
#   scripts/net_confirm.sh WORK [PART] [NET]
# NET defaults to the journal's net.nnue; PART is timeout(1)'s syntax
# (default 45m). Settings (environment): JOURNAL, LEARNBOOK, GAMES (1000),
# TC (10+0.1), OPENINGS, SEED (64), CONCURRENCY (2).
set -eu

WORK=${1:?usage: scripts/net_confirm.sh WORK [PART] [NET]}
PART=${2:-45m}
JOURNAL=${JOURNAL:-docs/bench/net-night}
NET=${3:-$JOURNAL/net.nnue}
LEARNBOOK=${LEARNBOOK:-target/release/learnbook}
GAMES=${GAMES:-1000}
TC=${TC:-10+0.1}
OPENINGS=${OPENINGS:-../shared/data/openings/8mvs_big_+80_+109.epd.gz}
SEED=${SEED:-64}
CONCURRENCY=${CONCURRENCY:-2}

mkdir -p "$WORK"
LB="$(cd "$WORK" && pwd)/learnbook"
[ -x "$LB" ] || cp "$LEARNBOOK" "$LB"
# The net is copied too: the journal's net.nnue changes with every part.
hash=$(sha256sum "$NET" | cut -c1-12)
name=net-$hash-vs-default
cp "$NET" "$WORK/$name.nnue"
PGN="$WORK/$name.pgn"
if [ ! -e "$PGN" ] && [ -e "$JOURNAL/confirm-$name.pgn.gz" ]; then
    gzip -dc "$JOURNAL/confirm-$name.pgn.gz" >"$PGN"
fi
status=0
timeout --foreground -s TERM -k 2m "$PART" "$LB" play \
    --engine "name=net-$hash,cmd=$LB uci --net $WORK/$name.nnue,option.Hash=16" \
    --engine "name=default,cmd=$LB uci --net none,option.Hash=16" \
    --tc "$TC" --games "$GAMES" --concurrency "$CONCURRENCY" --openings "$OPENINGS" \
    --random --seed "$SEED" --repeat --sprt elo0=0,elo1=10 --sprt-play-on \
    --pgnout "$PGN" >"$WORK/$name.txt" 2>>"$WORK/$name.log" || status=$?
case $status in 0 | 124 | 130) ;; *) tail -5 "$WORK/$name.log" >&2; exit "$status" ;; esac
gzip -9nc "$PGN" >"$JOURNAL/confirm-$name.pgn.gz.tmp"
mv "$JOURNAL/confirm-$name.pgn.gz.tmp" "$JOURNAL/confirm-$name.pgn.gz"
[ "$status" = 0 ] && cp "$WORK/$name.txt" "$JOURNAL/confirm-$name.txt"
echo "games so far: $(grep -c '^\[Result' "$PGN"); commit $JOURNAL"
