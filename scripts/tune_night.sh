#!/bin/sh
# The night's tune of the search core (issue 51), in parts, resumable on
# any machine: its progress journal is docs/bench/tune-night/ (the SPSA
# checkpoint, gzipped, the current values and a row per part).
#
# Run from the repository root after `cargo build --release`:
#   scripts/tune_night.sh WORK [PART]
# WORK holds the running files (the binary, the checkpoint); PART is how
# long this part tunes (timeout(1) syntax, default 30m): it ends with
# SIGINT, which `tune` obeys after the current iteration, then the journal
# is brought up to date. Run it again to go on; commit the journal after
# each part. A fresh machine starts from the journal's checkpoint.
#
# The recipe (docs/TUNER.md#the-night): SPSA over the 26 search parameters
# (data/tune/search.toml, c_end about a twentieth of each range, r_end
# 0.002) from `default`, OpenBench's schedule (alpha 0.602, gamma 0.101,
# A = N/10, stochastic rounding, c >= 0.5), 8 game pairs an iteration,
# 1,250 iterations (20,000 games) at 25,000 nodes a move (about 17 ms of
# the core on one thread here), openings of 8moves_v3. The confirmation
# at 10+0.1 uses another suite (scripts/tune_confirm.sh).
set -eu

WORK=${1:?usage: scripts/tune_night.sh WORK [PART]}
PART=${2:-30m}
JOURNAL=docs/bench/tune-night
LEARNBOOK=${LEARNBOOK:-target/release/learnbook}
OPENINGS=${OPENINGS:-../shared/data/openings/8moves_v3.pgn.gz}
THREADS=${THREADS:-2}

mkdir -p "$WORK" "$JOURNAL"
LB="$(cd "$WORK" && pwd)/learnbook"
# A copy, so that a rebuild does not change the engine between parts.
[ -x "$LB" ] || cp "$LEARNBOOK" "$LB"
CKPT="$WORK/search.ckpt"
if [ ! -e "$CKPT" ] && [ -e "$JOURNAL/search.ckpt.gz" ]; then
    gzip -dc "$JOURNAL/search.ckpt.gz" >"$CKPT"
fi

began=$(date -u +%Y-%m-%dT%H:%M)
t0=$(date +%s)
status=0
if [ -e "$CKPT" ]; then
    timeout -s INT -k 10m "$PART" "$LB" tune --resume --checkpoint "$CKPT" \
        --out "$WORK/search-tuned.toml" --threads "$THREADS" || status=$?
else
    timeout -s INT -k 10m "$PART" "$LB" tune --start default --params data/tune/search.toml \
        --nodes 25000 --pairs-per-iteration 8 --iterations 1250 --openings "$OPENINGS" \
        --seed 51 --threads "$THREADS" --checkpoint "$CKPT" --out "$WORK/search-tuned.toml" || status=$?
fi
# 0: finished; 130: stopped by the part's end (SIGINT); anything else failed.
case $status in 0 | 130) ;; *) echo "tune failed ($status)" >&2; exit "$status" ;; esac
secs=$(($(date +%s) - t0))
gzip -9nc "$CKPT" >"$JOURNAL/search.ckpt.gz.tmp" && mv "$JOURNAL/search.ckpt.gz.tmp" "$JOURNAL/search.ckpt.gz"
cp "$WORK/search-tuned.toml" "$JOURNAL/search-tuned.toml"
"$LB" tune-report --checkpoint "$CKPT" --plot "$JOURNAL/search-trajectory.png" >"$JOURNAL/summary.txt"
iteration=$(sed -n 's/^\([0-9]*\) iterations, \([0-9]*\) games.*/\1 \2/p' "$JOURNAL/summary.txt")
[ -e "$JOURNAL/parts.tsv" ] || printf 'began\tseconds\titerations_games_after\thost_load\n' >"$JOURNAL/parts.tsv"
printf '%s\t%s\t%s\t%s\n' "$began" "$secs" "$iteration" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$JOURNAL/parts.tsv"
echo "part done: $iteration (iterations games) in ${secs}s; commit $JOURNAL"
