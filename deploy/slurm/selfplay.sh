#!/bin/bash
# Submits a sharded `learnbook selfplay`: a job array of SHARDS tasks, task I
# playing the I-th of SHARDS contiguous slices of the game numbers 0..GAMES-1
# into $WORK/games-I.pgn, then `merge-games` of the files into $PGN (in
# order: the file one unsharded run gives) as a job that waits for every task.
#
#   GAMES=1000 OPENINGS=data/openings-sample.epd NODES=500 deploy/slurm/selfplay.sh
#
# Environment (defaults in brackets): GAMES and OPENINGS (required), PGN
# [games.pgn], SHARDS [4], WORK (shard files and logs) [learnbook-selfplay],
# LEARNBOOK (the binary) [learnbook], CPUS (per task; selfplay
# --concurrency) [1], NODES and SEED [selfplay's own], ARGS (more `selfplay`
# options, e.g. "--weights w.toml") [none].
# Extra arguments go to both sbatch commands (--partition, --account...).
# Prints "shards=ARRAY_JOB_ID merge=MERGE_JOB_ID".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${GAMES:?GAMES: how many games}" "${OPENINGS:?OPENINGS: the opening suite}"
export GAMES OPENINGS PGN="${PGN:-games.pgn}" SHARDS="${SHARDS:-4}" \
  WORK="${WORK:-learnbook-selfplay}" LEARNBOOK="${LEARNBOOK:-learnbook}" \
  NODES="${NODES:-}" SEED="${SEED:-}" ARGS="${ARGS:-}"
mkdir -p "$WORK/logs"
shards=$(sbatch --parsable "$@" --array="0-$((SHARDS - 1))" --cpus-per-task="${CPUS:-1}" \
  --output="$WORK/logs/selfplay-%A_%a.out" --open-mode=append "$here/selfplay-shard.sbatch")
shards=${shards%%;*}
merge=$(sbatch --parsable "$@" --dependency="afterok:$shards" \
  --output="$WORK/logs/selfplay-merge-%j.out" "$here/selfplay-merge.sbatch")
echo "shards=$shards merge=${merge%%;*}"
