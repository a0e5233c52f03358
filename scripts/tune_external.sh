#!/bin/sh
# SPSA through an external engine against the in-process tuner (issue 13,
# item 4): `learnbook uci --net none` (the hand-crafted evaluation, whose
# weights these are) tuned by `learnbook tune --engine` from the
# scrambled start (data/tune/scrambled.toml as UCI options), with the same
# games budget, seed, openings and parameters as an in-process run from the
# same start; then both trajectories on one plot, which weights end on the
# same side of their start in both runs, and an SPRT of the tuned options
# against the scrambled start, both played as `learnbook uci` processes.
#
# Run from the repository root after `cargo build --release`:
#   scripts/tune_external.sh
# Settings (environment): LEARNBOOK (binary; copied to $OUT so a rebuild
# does not change it mid-run; remove $OUT/learnbook to take a newer one),
# OUT (directory, default tune-external), ITERATIONS (625), PAIRS (16 pairs = 32 games per iteration), THREADS (2),
# NODES (2000), OPENINGS (../shared/data/openings/8moves_v3.pgn.gz),
# SPRT_OPENINGS (../shared/data/openings/noob_3moves.epd.gz), GAMES (2000,
# the SPRT match's most).
# Either run resumes from its checkpoint if the script is run again.
set -eu

LEARNBOOK=${LEARNBOOK:-target/release/learnbook}
OUT=${OUT:-tune-external}
ITERATIONS=${ITERATIONS:-625}
PAIRS=${PAIRS:-16}
THREADS=${THREADS:-2}
NODES=${NODES:-2000}
OPENINGS=${OPENINGS:-../shared/data/openings/8moves_v3.pgn.gz}
SPRT_OPENINGS=${SPRT_OPENINGS:-../shared/data/openings/noob_3moves.epd.gz}
GAMES=${GAMES:-2000}
START=data/tune/scrambled.toml
PARAMS=data/tune/material-mobility.toml

mkdir -p "$OUT"
LB="$(cd "$OUT" && pwd)/learnbook"
[ -x "$LB" ] || cp "$LEARNBOOK" "$LB"

# tune NAME ARGS...: a new run, or the resume of an unfinished one.
tune() {
    name=$1
    shift
    if [ -e "$OUT/$name.ckpt" ]; then
        "$LB" tune --resume --checkpoint "$OUT/$name.ckpt" --out "$OUT/$name.toml" --threads "$THREADS"
    else
        "$LB" tune "$@" --start "$START" --params "$PARAMS" --out "$OUT/$name.toml" \
            --nodes "$NODES" --pairs-per-iteration "$PAIRS" --iterations "$ITERATIONS" \
            --openings "$OPENINGS" --threads "$THREADS" --seed 1 --checkpoint "$OUT/$name.ckpt"
    fi
}

# The weights file as option.X=V pairs: how the engine takes it.
as_options() {
    grep -v '^#' "$1" | grep '=' | sed 's/ *#.*//; s/ *= */=/; s/^/option./' | paste -sd, -
}

echo "== in-process run"
start=$(date +%s)
tune inproc
echo "in-process wall: $(( $(date +%s) - start )) s"

echo "== external run: --engine \"cmd=$LB uci --net none\""
start=$(date +%s)
tune external --engine "cmd=$LB uci --net none"
echo "external wall: $(( $(date +%s) - start )) s"

echo "== both trajectories"
"$LB" tune-report --checkpoint "$OUT/external.ckpt" --compare "$OUT/inproc.ckpt" \
    --plot "$OUT/both.png" --csv "$OUT/external.csv"

echo "== tuned options against the scrambled start, both as learnbook uci"
tuned=$(grep '^# as an engine: ' "$OUT/external.toml" | sed 's/^# as an engine: //')
"$LB" play --engine "name=tuned,$tuned" \
    --engine "name=start,cmd=$LB uci --net none,$(as_options "$START")" \
    --nodes 5000 --openings "$SPRT_OPENINGS" --random --seed 7 --repeat \
    --games "$GAMES" --concurrency "$THREADS" --sprt elo0=0,elo1=10,alpha=0.05,beta=0.05 \
    --draw movenumber=34,movecount=8,score=20 --resign movecount=3,score=400
