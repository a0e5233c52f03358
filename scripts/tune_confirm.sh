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
# OPENINGS, SEED (51), CONCURRENCY (2), NET (none: the hand-crafted
# evaluation the tuner plays with; default for the embedded net).
set -eu
. "$(dirname "$0")/lib/parts.sh"

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
NET=${NET:-none}

parts_binary "$WORK" "$LEARNBOOK"
name=$(basename "$CANDIDATE" .toml)-vs-$(basename "$BASELINE" .toml)
PGN="$WORK/$name.pgn"
parts_restore "$PGN" "$JOURNAL/$name.pgn.gz"
cand=$(cd "$(dirname "$CANDIDATE")" && pwd)/$(basename "$CANDIDATE")
base=$(cd "$(dirname "$BASELINE")" && pwd)/$(basename "$BASELINE")
# Only `play` gets the signal (--foreground): its engines see their input
# close and quit, so no game in progress is written as a fault.
parts_run "$WORK/$name.log" "$PART" --foreground -s TERM -k 2m -- "$LB" play \
    --engine "name=$(basename "$CANDIDATE" .toml),cmd=$LB uci --net $NET,option.WeightsFile=$cand,option.Hash=16" \
    --engine "name=$(basename "$BASELINE" .toml),cmd=$LB uci --net $NET,option.WeightsFile=$base,option.Hash=16" \
    --tc "$TC" --games "$GAMES" --concurrency "$CONCURRENCY" --openings "$OPENINGS" \
    --random --seed "$SEED" --repeat --sprt elo0=0,elo1=5 --sprt-play-on \
    --pgnout "$PGN" >"$WORK/$name.txt"
parts_keep "$PGN" "$JOURNAL/$name.pgn.gz"
[ "$PARTS_STATUS" = 0 ] && cp "$WORK/$name.txt" "$JOURNAL/$name.txt"
echo "games so far: $(parts_games "$PGN"); commit $JOURNAL"
