#!/bin/bash
# Submits a sharded `learnbook analyze`: a job array of SHARDS tasks, each
# searching the positions of $BOOK its shard owns (by position key) into
# $WORK/analysis-I.sqlite (the book is only read), then the merge of the
# analysis files into $BOOK as a job that waits for every task to succeed.
#
#   BOOK=book.sqlite NODES=2000 deploy/slurm/analyze.sh [sbatch options]
#
# Environment (defaults in brackets): BOOK (required), SHARDS [4], WORK
# (analysis files and logs) [learnbook-analyze], LEARNBOOK (the binary)
# [learnbook], CPUS (per task; analyze --threads) [1], NODES and
# MIN_GAMES [analyze's own], ARGS (more `analyze` options) [none].
# Extra arguments go to both sbatch commands (--partition, --account...).
# Prints "shards=ARRAY_JOB_ID merge=MERGE_JOB_ID".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${BOOK:?BOOK: the book to analyse}"
export BOOK SHARDS="${SHARDS:-4}" WORK="${WORK:-learnbook-analyze}" \
  LEARNBOOK="${LEARNBOOK:-learnbook}" NODES="${NODES:-}" MIN_GAMES="${MIN_GAMES:-}" ARGS="${ARGS:-}"
mkdir -p "$WORK/logs"
shards=$(sbatch --parsable "$@" --array="0-$((SHARDS - 1))" --cpus-per-task="${CPUS:-1}" \
  --output="$WORK/logs/analyze-%A_%a.out" --open-mode=append "$here/analyze-shard.sbatch")
shards=${shards%%;*}
merge=$(sbatch --parsable "$@" --dependency="afterok:$shards" \
  --output="$WORK/logs/analyze-merge-%j.out" "$here/analyze-merge.sbatch")
echo "shards=$shards merge=${merge%%;*}"
