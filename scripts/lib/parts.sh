# A long job in resumable parts (sourced by scripts/tune_night.sh,
# tune_confirm.sh, tune_engine_check.sh and strength_parts.sh; POSIX sh).
#
# A part: the learnbook binary copied into WORK once (a rebuild does not
# change a side mid-run), the job's file restored from its journal (a .gz
# kept in the repository) unless WORK has it, the job run under timeout(1)
# for PART, then the file gzipped back into the journal. The next part, on
# this machine or on a fresh one, goes on from there: nothing is done twice.
#
#   . scripts/lib/parts.sh
#   parts_binary WORK [BINARY]        sets LB, WORK's copy of BINARY
#                                     (default $LEARNBOOK or target/release/learnbook)
#   parts_restore FILE JOURNAL.gz     FILE from the journal if FILE is absent
#   parts_run LOG PART TIMEOUT-OPTIONS... -- COMMAND...
#                                     COMMAND under `timeout TIMEOUT-OPTIONS PART`,
#                                     its stderr appended to LOG (stdout as the caller
#                                     sends it); sets PARTS_STATUS: 0 (finished), 124
#                                     or 130 (stopped at the part's end); any other
#                                     status: LOG's tail on stderr and exit with it
#   parts_keep FILE JOURNAL.gz        FILE gzipped into the journal (written beside,
#                                     renamed into place)
#   parts_games PGN                   the number of games in PGN

parts_binary() {
    mkdir -p "$1"
    LB="$(cd "$1" && pwd)/learnbook"
    [ -x "$LB" ] || cp "${2:-${LEARNBOOK:-target/release/learnbook}}" "$LB"
}

parts_restore() {
    if [ ! -e "$1" ] && [ -e "$2" ]; then
        gzip -dc "$2" >"$1"
    fi
}

parts_run() {
    parts_log=$1
    parts_part=$2
    shift 2
    parts_options=
    while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
        parts_options="$parts_options $1"
        shift
    done
    shift
    PARTS_STATUS=0
    # shellcheck disable=SC2086 # the options are words
    timeout $parts_options "$parts_part" "$@" 2>>"$parts_log" || PARTS_STATUS=$?
    case $PARTS_STATUS in
    0 | 124 | 130) ;;
    *)
        tail -5 "$parts_log" >&2
        echo "the part failed ($PARTS_STATUS)" >&2
        exit "$PARTS_STATUS"
        ;;
    esac
}

parts_keep() {
    gzip -9nc "$1" >"$2.tmp"
    mv "$2.tmp" "$2"
}

parts_games() {
    grep -c '^\[Result' "$1"
}
