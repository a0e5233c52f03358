#!/bin/sh
# The night's tune of the search core (issue 51), in parts, resumable on
# any machine: its progress journal is docs/bench/tune-night/ (the SPSA
# checkpoint, gzipped, the current values, the trajectory plot and a row
# per part).
#
# Run from the repository root after `cargo build --release`:
#   scripts/tune_night.sh WORK [PART]
# WORK holds the running files (a copy of the binary, the checkpoint);
# PART is how long this part tunes (timeout(1) syntax, default 30m): it
# ends with SIGINT, which `tune` obeys after the current iteration, then
# the journal is brought up to date. Run it again to go on; commit the
# journal after each part. A fresh machine (an empty WORK) starts from the
# journal's checkpoint.
#
# The recipe (docs/TUNER.md#the-night): SPSA over the 26 search parameters
# (data/tune/search.toml: c_end about a twentieth of each range, 1 for
# depths and move counts, r_end 0.002) from `default`, OpenBench's
# schedule (alpha 0.602, gamma 0.101, A = N/10, stochastic rounding, c at
# least 0.5), 8 game pairs an iteration, 1,250 iterations (20,000 games)
# at 25,000 nodes a move (about 17 ms of the core on one thread here),
# openings of 8moves_v3, and every 100 iterations a 32-pair match of the
# values then against the start. The confirmation at 10+0.1 plays another
# suite (scripts/tune_confirm.sh).
#
# Settings (environment; the defaults are the night's): JOURNAL, LEARNBOOK,
# OPENINGS, THREADS (2), NODES, ITERATIONS, PAIRS, MATCH_EVERY,
# MATCH_PAIRS, PARAMS, SEED, START (default), NET (none: the hand-crafted
# evaluation; default: the embedded net, `tune --net`), ENGINE (a UCI engine's spec:
# tune its spin options instead, `tune --engine`; PARAMS may then be an
# OpenBench or fishtest file, whose starts are the run's start). Only a
# new run takes NODES..ENGINE; a resume takes them from the checkpoint
# (MATCH_EVERY excepted).
#
# Glaurung 2.2 recovered from a scrambled start (issue 52):
#   JOURNAL=docs/bench/tune-glaurung PARAMS=data/tune/glaurung-scrambled.openbench \
#   NODES=20000 ITERATIONS=600 SEED=52 \
#   ENGINE="cmd=/usr/games/glaurung,option.Threads=1,option.Hash=16,option.OwnBook=false,option.Ponder=false" \
#   scripts/tune_night.sh WORK-GLAURUNG 45m
#
# The search's numbers retuned for the embedded net (issue 64):
#   JOURNAL=docs/bench/tune-net NET=default SEED=64 scripts/tune_night.sh WORK-NET 50m
set -eu
. "$(dirname "$0")/lib/parts.sh"

WORK=${1:?usage: scripts/tune_night.sh WORK [PART]}
PART=${2:-30m}
JOURNAL=${JOURNAL:-docs/bench/tune-night}
LEARNBOOK=${LEARNBOOK:-target/release/learnbook}
OPENINGS=${OPENINGS:-../shared/data/openings/8moves_v3.pgn.gz}
THREADS=${THREADS:-2}
NODES=${NODES:-25000}
ITERATIONS=${ITERATIONS:-1250}
PAIRS=${PAIRS:-8}
MATCH_EVERY=${MATCH_EVERY:-100}
MATCH_PAIRS=${MATCH_PAIRS:-32}
PARAMS=${PARAMS:-data/tune/search.toml}
SEED=${SEED:-51}
START=${START:-default}
ENGINE=${ENGINE:-}
NET=${NET:-none}

mkdir -p "$JOURNAL"
parts_binary "$WORK" "$LEARNBOOK"
CKPT="$WORK/search.ckpt"
parts_restore "$CKPT" "$JOURNAL/search.ckpt.gz"

began=$(date -u +%Y-%m-%dT%H:%M)
t0=$(date +%s)
if [ -e "$CKPT" ]; then
    set -- tune --resume --checkpoint "$CKPT" --out "$WORK/search-tuned.toml" \
        --threads "$THREADS" --match-every "$MATCH_EVERY" --match-pairs "$MATCH_PAIRS"
elif [ -n "$ENGINE" ]; then
    set -- tune --engine "$ENGINE" --params "$PARAMS" --nodes "$NODES" \
        --pairs-per-iteration "$PAIRS" --iterations "$ITERATIONS" --openings "$OPENINGS" \
        --seed "$SEED" --threads "$THREADS" --checkpoint "$CKPT" --out "$WORK/search-tuned.toml" \
        --match-every "$MATCH_EVERY" --match-pairs "$MATCH_PAIRS"
else
    set -- tune --start "$START" --net "$NET" --params "$PARAMS" --nodes "$NODES" \
        --pairs-per-iteration "$PAIRS" --iterations "$ITERATIONS" --openings "$OPENINGS" \
        --seed "$SEED" --threads "$THREADS" --checkpoint "$CKPT" --out "$WORK/search-tuned.toml" \
        --match-every "$MATCH_EVERY" --match-pairs "$MATCH_PAIRS"
fi
# The part's CPU seconds (user + system): machine time, whatever else ran.
# The part ends with SIGINT, which `tune` obeys after the current iteration.
rm -f "$WORK/cpu"
parts_run "$WORK/tune.log" "$PART" -s INT -k 10m -- /usr/bin/time -f '%U %S' -o "$WORK/cpu" "$LB" "$@"
secs=$(($(date +%s) - t0))
cpu=$(awk 'NF == 2 { c = $1 + $2 } END { printf "%.0f", c }' "$WORK/cpu" 2>/dev/null || echo 0)
parts_keep "$CKPT" "$JOURNAL/search.ckpt.gz"
cp "$WORK/search-tuned.toml" "$JOURNAL/search-tuned.toml"
# An engine's tuned values in its parameter file's format, as `setoption`
# lines and as cutechess options (`tune --engine` writes them beside --out).
for f in "$WORK"/search-tuned.toml.*; do
    if [ -e "$f" ]; then cp "$f" "$JOURNAL/"; fi
done
"$LB" tune-report --checkpoint "$CKPT" --plot "$JOURNAL/search-trajectory.png" >"$JOURNAL/summary.txt"
done_now=$(sed -n 's/^\([0-9]*\) iterations, \([0-9]*\) games.*/\1\t\2/p' "$JOURNAL/summary.txt")
[ -e "$JOURNAL/parts.tsv" ] ||
    printf 'began (UTC)\twall s\tcpu s\titerations\tgames\tload (1 min) at the end\n' >"$JOURNAL/parts.tsv"
printf '%s\t%s\t%s\t%s\t%s\n' "$began" "$secs" "$cpu" "$done_now" "$(cut -d' ' -f1 /proc/loadavg)" \
    >>"$JOURNAL/parts.tsv"
echo "part done: $(echo "$done_now" | tr '\t' ' ') (iterations games) in ${secs}s wall, ${cpu}s cpu; commit $JOURNAL"
