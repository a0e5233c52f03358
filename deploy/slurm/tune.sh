#!/bin/bash
# Submits one round of an SPSA tune (`learnbook tune`) as Slurm jobs: a job
# array of SHARDS tasks, task I playing the game pairs p of the checkpoint's
# next iteration with p % SHARDS == I (`tune-shard`, into $WORK/parts), then
# a coordinator job that waits for every task, steps the values as `tune`
# does (`tune-step`: $CHECKPOINT and $OUT rewritten) and, while iterations
# remain, runs this script again for the next round. A new run's checkpoint
# is written first, from TUNE_ARGS (`tune --prepare`, here on the submitting
# machine); an existing one is continued from the round it is at.
#
#   TUNE_ARGS="--start default --params data/tune/search.toml --nodes 25000 \
#     --pairs-per-iteration 16 --iterations 1000 --openings /shared/8moves_v3.pgn.gz --seed 1" \
#     SHARDS=8 WORK=/shared/tune-search deploy/slurm/tune.sh --partition=batch
#
# Environment (defaults in brackets): TUNE_ARGS (the options of `learnbook
# tune` but --checkpoint and --out; required for a new run, ignored when the
# checkpoint exists) [none], SHARDS [4], WORK (parts, logs) [learnbook-tune],
# CHECKPOINT [$WORK/tune.ckpt], OUT (the current values) [$WORK/tuned.toml],
# LEARNBOOK (the binary) [learnbook], CPUS (per task; tune-shard --threads)
# [1]. Extra arguments go to both sbatch commands, of this round and of every
# next one (kept in $WORK/sbatch-args). Prints "shards=ARRAY_JOB_ID step=STEP_JOB_ID".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export SHARDS="${SHARDS:-4}" WORK="${WORK:-learnbook-tune}" LEARNBOOK="${LEARNBOOK:-learnbook}" \
  CPUS="${CPUS:-1}" TUNE_SLURM="$here"
export CHECKPOINT="${CHECKPOINT:-$WORK/tune.ckpt}" OUT="${OUT:-$WORK/tuned.toml}"
mkdir -p "$WORK/logs" "$WORK/parts" "$WORK/rounds"
if [ ! -e "$CHECKPOINT" ]; then
  : "${TUNE_ARGS:?TUNE_ARGS: the options of learnbook tune, for a new run}"
  if [ -n "$(ls -A "$WORK/parts")" ]; then
    echo "$WORK/parts holds another run's parts: give the new run its own WORK" >&2
    exit 2
  fi
  rm -rf "$WORK/rounds" && mkdir -p "$WORK/rounds"
  read -ra targs <<<"$TUNE_ARGS"
  "$LEARNBOOK" tune "${targs[@]}" --checkpoint "$CHECKPOINT" --out "$OUT" --prepare >&2
fi
# The extra sbatch arguments, for the rounds the coordinator submits.
: >"$WORK/sbatch-args"
for a in "$@"; do printf '%s\0' "$a" >>"$WORK/sbatch-args"; done
shards=$(sbatch --parsable "$@" --array="0-$((SHARDS - 1))" --cpus-per-task="$CPUS" \
  --output="$WORK/logs/tune-%A_%a.out" --open-mode=append "$here/tune-shard.sbatch")
shards=${shards%%;*}
step=$(sbatch --parsable "$@" --dependency="afterok:$shards" \
  --output="$WORK/logs/tune-step-%j.out" "$here/tune-step.sbatch")
echo "shards=$shards step=${step%%;*}"
