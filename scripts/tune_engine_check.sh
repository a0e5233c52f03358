#!/bin/sh
# A tuned UCI engine against another set of its options (issue 52: the
# Glaurung tune's values against its scrambled start, and against its own
# defaults): `learnbook play` of two processes of the engine, on openings
# the tune never saw (pairs, colours swapped), in parts, resumable on any
# machine: the games are kept in the journal (JOURNAL/NAME.pgn.gz) and
# read back, not played again.
#
# Run from the repository root after `cargo build --release`:
#   scripts/tune_engine_check.sh WORK PART NAME CANDIDATE BASELINE
# CANDIDATE and BASELINE are files of `setoption name X value V` lines (a
# tune writes one beside --out: `tuned.toml.uci`; an empty file, or
# /dev/null, is the engine's defaults); an OpenBench or fishtest file
# (`.openbench`, `.fishtest`) gives its start values. PART as in
# tune_night.sh. Settings (environment): JOURNAL (docs/bench/tune-glaurung),
# LEARNBOOK, ENGINE (the spec both sides share), LIMIT (`--nodes 20000`,
# or e.g. `--tc 2+0.02`), GAMES (1000), OPENINGS, SEED (52), CONCURRENCY (2).
#
# The Glaurung checks:
#   scripts/tune_engine_check.sh WORK 45m tuned-vs-scrambled \
#       docs/bench/tune-glaurung/search-tuned.toml.uci data/tune/glaurung-scrambled.openbench
#   scripts/tune_engine_check.sh WORK 45m tuned-vs-defaults \
#       docs/bench/tune-glaurung/search-tuned.toml.uci /dev/null
set -eu
. "$(dirname "$0")/lib/parts.sh"

WORK=${1:?usage: scripts/tune_engine_check.sh WORK PART NAME CANDIDATE BASELINE}
PART=${2:?PART}
NAME=${3:?NAME}
CANDIDATE=${4:?CANDIDATE}
BASELINE=${5:?BASELINE}
JOURNAL=${JOURNAL:-docs/bench/tune-glaurung}
LEARNBOOK=${LEARNBOOK:-target/release/learnbook}
ENGINE=${ENGINE:-cmd=/usr/games/glaurung,option.Threads=1,option.Hash=16,option.OwnBook=false,option.Ponder=false}
LIMIT=${LIMIT:---nodes 20000}
GAMES=${GAMES:-1000}
OPENINGS=${OPENINGS:-../shared/data/openings/8mvs_big_+80_+109.epd.gz}
SEED=${SEED:-52}
CONCURRENCY=${CONCURRENCY:-2}

# The spec's `,option.X=V` of a file's values.
options() {
    case $1 in
    *.openbench) awk -F', *' 'NF >= 3 { printf ",option.%s=%s", $1, $3 }' "$1" ;;
    *.fishtest) awk -F', *' 'NF >= 2 { printf ",option.%s=%s", $1, $2 }' "$1" ;;
    *) sed -n 's/^setoption name \(.*\) value \(.*\)$/,option.\1=\2/p' "$1" | tr -d '\n' ;;
    esac
}

mkdir -p "$JOURNAL"
parts_binary "$WORK" "$LEARNBOOK"
PGN="$WORK/$NAME.pgn"
parts_restore "$PGN" "$JOURNAL/$NAME.pgn.gz"
first=${NAME%%-vs-*}
second=${NAME##*-vs-}
# shellcheck disable=SC2086 # LIMIT is two words
parts_run "$WORK/$NAME.log" "$PART" --foreground -s TERM -k 2m -- "$LB" play \
    --engine "name=$first,$ENGINE$(options "$CANDIDATE")" \
    --engine "name=$second,$ENGINE$(options "$BASELINE")" \
    $LIMIT --games "$GAMES" --concurrency "$CONCURRENCY" --openings "$OPENINGS" \
    --random --seed "$SEED" --repeat \
    --pgnout "$PGN" >"$WORK/$NAME.txt"
parts_keep "$PGN" "$JOURNAL/$NAME.pgn.gz"
[ "$PARTS_STATUS" = 0 ] && cp "$WORK/$NAME.txt" "$JOURNAL/$NAME.txt"
echo "games so far: $(parts_games "$PGN"); commit $JOURNAL"
