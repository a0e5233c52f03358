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

JOURNAL=${1:?usage: scripts/strength_parts.sh JOURNAL WORK PART GAMES OPPONENT PROTOCOL [OPTIONS...]}
WORK=${2:?WORK}
PART=${3:?PART}
GAMES=${4:?GAMES}
OPPONENT=${5:?OPPONENT}
PROTOCOL=${6:?PROTOCOL}
shift 6

mkdir -p "$WORK"
LB="$(cd "$WORK" && pwd)/learnbook"
[ -x "$LB" ] || cp "${LEARNBOOK:-target/release/learnbook}" "$LB"
PGN="$WORK/$(basename "$JOURNAL" .gz)"
if [ ! -e "$PGN" ] && [ -e "$JOURNAL" ]; then
    gzip -dc "$JOURNAL" >"$PGN"
fi
status=0
timeout -s TERM -k 1m "$PART" python3 scripts/strength_match.py "$LB" "$OPPONENT" "$PROTOCOL" "$GAMES" \
    --pgn "$PGN" "$@" >"$WORK/summary.txt" 2>>"$WORK/log.txt" || status=$?
case $status in 0 | 124) ;; *) tail -5 "$WORK/log.txt" >&2; exit "$status" ;; esac
gzip -9nc "$PGN" >"$JOURNAL.tmp"
mv "$JOURNAL.tmp" "$JOURNAL"
# The summary without this machine's paths.
[ "$status" = 0 ] && sed "s#$WORK/#WORK/#g" "$WORK/summary.txt" >"${JOURNAL%.pgn.gz}.txt"
echo "games so far: $(grep -c '^\[Result' "$PGN"); commit $JOURNAL"
