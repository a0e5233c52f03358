#!/bin/sh
# The night's confirmation (issue 51): the tuned values against the start
# at 10+0.1, both sides `learnbook uci` processes (one thread, 16 MB hash),
# on openings the tuning never saw (the UHO-style suite, pairs with colours
# swapped), an SPRT [0, 5] reported where it decides, and on to GAMES
# (raise GAMES and run more parts while the SPRT has not decided: the
# openings' order does not depend on it).
# In parts, resumable on any machine: the games played are kept in the
# journal (docs/bench/tune-night/confirm.pgn.gz) and read back, not played
# again.
#
# Run from the repository root after `cargo build --release`:
#   scripts/tune_confirm.sh WORK [PART] [CANDIDATE] [BASELINE]
# CANDIDATE and BASELINE are weights files (default: the journal's
# candidate.toml and baseline.toml: the tuned values when the tune ended,
# and the start of the run). PART as in tune_night.sh (default 45m).
# Settings (environment): JOURNAL, LEARNBOOK, GAMES (1000), TC (10+0.1),
# OPENINGS, SEED (51), CONCURRENCY (2).
set -eu

WORK=${1:?usage: scripts/tune_confirm.sh WORK [PART] [CANDIDATE] [BASELINE]}
PART=${2:-45m}
JOURNAL=${JOURNAL:-docs/bench/tune-night}
CANDIDATE=${3:-$JOURNAL/candidate.toml}
BASELINE=${4:-$JOURNAL/baseline.toml}
LEARNBOOK=${LEARNBOOK:-target/release/learnbook}
GAMES=${GAMES:-1000}
TC=${TC:-10+0.1}
OPENINGS=${OPENINGS:-../shared/data/openings/8mvs_big_+80_+109.epd.gz}
SEED=${SEED:-51}
CONCURRENCY=${CONCURRENCY:-2}

mkdir -p "$WORK"
LB="$(cd "$WORK" && pwd)/learnbook"
[ -x "$LB" ] || cp "$LEARNBOOK" "$LB"
name=$(basename "$CANDIDATE" .toml)-vs-$(basename "$BASELINE" .toml)
PGN="$WORK/$name.pgn"
if [ ! -e "$PGN" ] && [ -e "$JOURNAL/$name.pgn.gz" ]; then
    gzip -dc "$JOURNAL/$name.pgn.gz" >"$PGN"
fi
cand=$(cd "$(dirname "$CANDIDATE")" && pwd)/$(basename "$CANDIDATE")
base=$(cd "$(dirname "$BASELINE")" && pwd)/$(basename "$BASELINE")
status=0
# Only `play` gets the signal (--foreground): its engines see their input
# close and quit, so no game in progress is written as a fault.
timeout --foreground -s TERM -k 2m "$PART" "$LB" play \
    --engine "name=$(basename "$CANDIDATE" .toml),cmd=$LB uci,option.WeightsFile=$cand,option.Hash=16" \
    --engine "name=$(basename "$BASELINE" .toml),cmd=$LB uci,option.WeightsFile=$base,option.Hash=16" \
    --tc "$TC" --games "$GAMES" --concurrency "$CONCURRENCY" --openings "$OPENINGS" \
    --random --seed "$SEED" --repeat --sprt elo0=0,elo1=5 --sprt-play-on \
    --pgnout "$PGN" >"$WORK/$name.txt" 2>>"$WORK/$name.log" || status=$?
case $status in 0 | 124 | 130) ;; *) tail -5 "$WORK/$name.log" >&2; exit "$status" ;; esac
gzip -9nc "$PGN" >"$JOURNAL/$name.pgn.gz.tmp"
mv "$JOURNAL/$name.pgn.gz.tmp" "$JOURNAL/$name.pgn.gz"
[ "$status" = 0 ] && cp "$WORK/$name.txt" "$JOURNAL/$name.txt"
echo "games so far: $(grep -c '^\[Result' "$PGN"); commit $JOURNAL"
