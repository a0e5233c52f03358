#!/usr/bin/env bash
# The long fuzzing run (issue item 4): every target of tests/fuzz_*.rs for
# SECS seconds each (default 600), one after the other (the machine is
# shared), from SEED (default: today's date as a number, printed, so a
# failure replays with LEARNBOOK_FUZZ_SEED and LEARNBOOK_FUZZ_CASE).
# Each target prints the inputs it tried, its panics, hangs and failures,
# and every distinct error message; the logs go to OUTDIR.
#
# usage: scripts/fuzz.sh [SECS] [SEED] [OUTDIR] [TARGET...]
#   TARGET: pgn polyglot checkpoint weights uci serve-query abk experience (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-600}
SEED=${2:-$(date +%Y%m%d)}
OUT=${3:-target/fuzz}
shift $(( $# < 3 ? $# : 3 ))
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(pgn polyglot checkpoint weights uci serve-query abk experience)
# The test file of each target (tests/fuzz_FILE.rs).
declare -A FILE=(
  [pgn]=pgn [polyglot]=books [checkpoint]=tune [weights]=tune
  [uci]=uci [serve-query]=serve [abk]=books [experience]=books
)
declare -A TEST=(
  [pgn]=pgn_ingest_survives_random_and_mutated_games
  [polyglot]=polyglot_books_survive_random_and_mutated_entries
  [checkpoint]=checkpoints_survive_random_and_mutated_files
  [weights]=weights_and_parameter_files_survive_random_and_mutated_text
  [uci]=uci_survives_random_and_mutated_command_lines
  [serve-query]=serve_query_survives_random_and_mutated_queries
  [abk]=abk_books_survive_random_and_mutated_entries
  [experience]=experience_files_survive_random_and_mutated_entries
)
mkdir -p "$OUT"
for t in "${TARGETS[@]}"; do echo "--test fuzz_${FILE[$t]}"; done | sort -u | xargs cargo test --release --no-run
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with local changes)'), seed $SEED, $SECS s per target, $(date -u +%Y-%m-%dT%H:%MZ)"
status=0
for t in "${TARGETS[@]}"; do
  log="$OUT/$t.log"
  start=$(date +%s)
  if LEARNBOOK_FUZZ_SECS=$SECS LEARNBOOK_FUZZ_SEED=$SEED RUST_BACKTRACE=0 \
    cargo test --release --test "fuzz_${FILE[$t]}" "${TEST[$t]}" -- --exact --nocapture --test-threads=1 >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
  fi
  echo "$(grep -a -o -m1 "fuzz $t: .*" "$log" || echo "fuzz $t: no summary (see $log)") [$result, $(( $(date +%s) - start )) s wall]"
done
exit $status
