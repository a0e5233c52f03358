#!/bin/bash
# Submits a sharded `learnbook improve`: a job array of SHARDS tasks, each
# running the plan on the positions of $BOOK its shard owns (by position
# key) for at most TIME, into the journal folder $JOURNAL (the book is only
# read), then a job that waits for every task to succeed and stores the
# whole journal in $BOOK. Run it again (same JOURNAL) to continue a plan a
# night did not finish: what the journal holds is not searched again.
#
#   BOOK=book.sqlite ENGINE="cmd=stockfish,option.Threads=1" TIME=8h deploy/slurm/improve.sh
#
# Environment (defaults in brackets): BOOK (required), ENGINE (required),
# SHARDS [4], WORK (logs) [learnbook-improve], JOURNAL [$WORK/journal],
# LEARNBOOK (the binary) [learnbook], CPUS (per task; improve --threads)
# [1], TIME [none: the whole plan], PLAN [improve's own], ARGS (more
# `improve` options) [none]. Extra arguments go to both sbatch commands
# (--partition, --account, --time...). Prints "shards=ARRAY_JOB_ID merge=MERGE_JOB_ID".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${BOOK:?BOOK: the book to improve}" "${ENGINE:?ENGINE: the analysing engine}"
export BOOK ENGINE SHARDS="${SHARDS:-4}" WORK="${WORK:-learnbook-improve}" \
  LEARNBOOK="${LEARNBOOK:-learnbook}" TIME="${TIME:-}" PLAN="${PLAN:-}" ARGS="${ARGS:-}"
export JOURNAL="${JOURNAL:-$WORK/journal}"
mkdir -p "$WORK/logs" "$JOURNAL"
shards=$(sbatch --parsable "$@" --array="0-$((SHARDS - 1))" --cpus-per-task="${CPUS:-1}" \
  --output="$WORK/logs/improve-%A_%a.out" --open-mode=append "$here/improve-shard.sbatch")
shards=${shards%%;*}
merge=$(sbatch --parsable "$@" --dependency="afterok:$shards" \
  --output="$WORK/logs/improve-merge-%j.out" "$here/improve-merge.sbatch")
echo "shards=$shards merge=${merge%%;*}"
