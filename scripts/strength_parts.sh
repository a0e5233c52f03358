#!/bin/sh
# A strength match (scripts/strength_match.py) in parts of PART each, its
# games kept in the repository as JOURNAL (.pgn.gz) and read back by the
# next part, on any machine: nothing is played twice.
#
# Run from the repository root after `cargo build --release`:
#   scripts/strength_parts.sh JOURNAL WORK PART GAMES OPPONENT PROTOCOL [OPTIONS...]
# OPTIONS go to strength_match.py (--tc, --concurrency, --opt ...); the
# learnbook binary is copied into WORK once, so a rebuild mid-match does
# not change a side. Example (issue 51, Glaurung 2.2 at 10+0.1):
#   scripts/strength_parts.sh docs/bench/glaurung-10s.pgn.gz WORK 45m 400 glaurung uci \
#       --tc 10+0.1 --concurrency 2 --opt Threads=1
set -eu
. "$(dirname "$0")/lib/parts.sh"

JOURNAL=${1:?usage: scripts/strength_parts.sh JOURNAL WORK PART GAMES OPPONENT PROTOCOL [OPTIONS...]}
WORK=${2:?WORK}
PART=${3:?PART}
GAMES=${4:?GAMES}
OPPONENT=${5:?OPPONENT}
PROTOCOL=${6:?PROTOCOL}
shift 6

parts_binary "$WORK"
PGN="$WORK/$(basename "$JOURNAL" .gz)"
parts_restore "$PGN" "$JOURNAL"
parts_run "$WORK/log.txt" "$PART" -s TERM -k 1m -- python3 "$(dirname "$0")/strength_match.py" \
    "$LB" "$OPPONENT" "$PROTOCOL" "$GAMES" --pgn "$PGN" "$@" >"$WORK/summary.txt"
parts_keep "$PGN" "$JOURNAL"
# The summary without this machine's paths.
[ "$PARTS_STATUS" = 0 ] && sed "s#$WORK/#WORK/#g" "$WORK/summary.txt" >"${JOURNAL%.pgn.gz}.txt"
echo "games so far: $(parts_games "$PGN"); commit $JOURNAL"
