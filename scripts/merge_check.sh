#!/usr/bin/env bash
# Issue 12, "merge is exact": the master games split into PARTS files, each
# built into its own book (two builds at a time, with GNU parallel's poorer
# cousin xargs -P), merged, and compared with one build of all the games,
# table by table with EXCEPT both ways. Prints the times.
#   scripts/merge_check.sh OUTDIR [PARTS] [LEARNBOOK]
# env: PGN (default ../shared/data/games/master-games.pgn.gz)
set -euo pipefail
out=${1:?usage: merge_check.sh OUTDIR [PARTS] [LEARNBOOK]}
parts=${2:-4}
lb=${3:-target/release/learnbook}
pgn=${PGN:-../shared/data/games/master-games.pgn.gz}
mkdir -p "$out"
rm -f "$out"/part*.pgn "$out"/*.sqlite*
# Split at game starts (bytes: the names are not all UTF-8).
python3 - "$pgn" "$out" "$parts" <<'PY'
import gzip, re, sys
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = gzip.open(src).read()
starts = ([0] if data.startswith(b'[Event ') else []) + [m.start() + 1 for m in re.finditer(rb'\n\[Event ', data)]
starts.append(len(data))
games = len(starts) - 1
for p in range(n):
    a, b = starts[p * games // n], starts[(p + 1) * games // n]
    open(f"{out}/part{p}.pgn", "wb").write(data[a:b])
print(f"{games} games in {n} parts")
PY
t() { /usr/bin/time -f "%e s %M KB" "$@"; }
echo "== one build of all the games"
t "$lb" build --book "$out/one.sqlite" "$pgn" 2>&1 | tail -2
echo "== $parts builds, two at a time"
start=$(date +%s.%N)
ls "$out"/part*.pgn | xargs -P 2 -I{} sh -c "$lb build --book {}.sqlite {} >/dev/null 2>&1"
echo "parts built in $(echo "$(date +%s.%N) - $start" | bc) s"
echo "== merge"
t "$lb" merge --book "$out/merged.sqlite" "$out"/part*.pgn.sqlite 2>&1 | tail -3
echo "== differences (rows in one book and not the other, both ways)"
for table in positions moves parents "games:hash, white, black, result, plies, start, copies, moves, expected, tail"; do
  name=${table%%:*}; cols="*"; [ "$name" != "$table" ] && cols=${table#*:}
  sqlite3 "$out/one.sqlite" "ATTACH '$out/merged.sqlite' AS m;
    SELECT '$name', (SELECT count(*) FROM (SELECT $cols FROM main.$name EXCEPT SELECT $cols FROM m.$name)),
                    (SELECT count(*) FROM (SELECT $cols FROM m.$name EXCEPT SELECT $cols FROM main.$name)),
                    (SELECT count(*) FROM main.$name);"
done
"$lb" check --book "$out/merged.sqlite" | tail -1
