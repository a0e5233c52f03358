#!/bin/bash
# Submits a sharded `learnbook build`: a job array of SHARDS tasks, each
# building shard I of the games into $WORK/shard-I.sqlite, then the merge of
# the shards into $BOOK as a job that waits for every task to succeed.
#
#   INPUTS="a.pgn.gz b.pgn.zst" BOOK=book.sqlite deploy/slurm/build.sh [sbatch options]
#
# Environment (defaults in brackets): INPUTS (PGN files, space-separated;
# required), BOOK [book.sqlite], SHARDS [4], WORK (shard books and logs)
# [learnbook-build], LEARNBOOK (the binary) [learnbook], CPUS (per
# task) [1], ARGS (more `build` options, e.g. "--max-ply 30") [none].
# Extra arguments go to both sbatch commands (--partition, --account...).
# Prints "shards=ARRAY_JOB_ID merge=MERGE_JOB_ID".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${INPUTS:?INPUTS: the PGN files to build from}"
export INPUTS BOOK="${BOOK:-book.sqlite}" SHARDS="${SHARDS:-4}" \
  WORK="${WORK:-learnbook-build}" LEARNBOOK="${LEARNBOOK:-learnbook}" ARGS="${ARGS:-}"
mkdir -p "$WORK/logs"
shards=$(sbatch --parsable "$@" --array="0-$((SHARDS - 1))" --cpus-per-task="${CPUS:-1}" \
  --output="$WORK/logs/build-%A_%a.out" --open-mode=append "$here/build-shard.sbatch")
shards=${shards%%;*}
merge=$(sbatch --parsable "$@" --dependency="afterok:$shards" \
  --output="$WORK/logs/build-merge-%j.out" "$here/build-merge.sbatch")
echo "shards=$shards merge=${merge%%;*}"
