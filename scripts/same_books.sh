#!/bin/bash
# The same books row for row (issue 53): two learnbook binaries build,
# merge, import, reevaluate and export the same inputs; every table of
# every book and every exported file is compared. Run from the repository
# root: scripts/same_books.sh OLD NEW WORK (exit 0 only if all are equal).
set -u
OLD=$1; NEW=$2; W=$3
MASTER=${MASTER:-../shared/data/games/master-games.pgn.gz}
SAMPLE=data/master-sample.pgn.gz
for side in old new; do
  B=$OLD; [ $side = new ] && B=$NEW
  d=$W/$side; rm -rf "$d"; mkdir -p "$d"
  "$B" build --book $d/master.sqlite $MASTER > /dev/null
  "$B" build --memory 64M --book $d/master64.sqlite $MASTER > /dev/null
  "$B" build --shard 0/2 --book $d/s0.sqlite $MASTER > /dev/null
  "$B" build --shard 1/2 --book $d/s1.sqlite $MASTER > /dev/null
  "$B" merge --book $d/merged.sqlite $d/s0.sqlite $d/s1.sqlite > /dev/null
  "$B" build --book $d/sample.sqlite $SAMPLE > /dev/null
  for f in bin abk exp pgn; do "$B" export --book $d/master.sqlite --out $d/x.$f --min-games 3 > /dev/null; done
  "$B" export --book $d/sample.sqlite --out $d/s.abk > /dev/null
  # Both import the same file: the old binary's export.
  cp $d/sample.sqlite $d/imported.sqlite
  "$B" import --book $d/imported.sqlite --in $W/old/x.bin > /dev/null
done
status=0
for db in master master64 s0 s1 merged sample imported; do
  for t in $(sqlite3 $W/old/$db.sqlite "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"); do
    a=$(sqlite3 $W/old/$db.sqlite "SELECT * FROM \"$t\"" | sort | md5sum)
    b=$(sqlite3 $W/new/$db.sqlite "SELECT * FROM \"$t\"" | sort | md5sum)
    n=$(sqlite3 $W/old/$db.sqlite "SELECT count(*) FROM \"$t\"")
    if [ "$a" = "$b" ]; then echo "same  $db.$t ($n rows)"; else echo "DIFF  $db.$t"; status=1; fi
  done
done
for f in x.bin x.abk x.exp x.pgn s.abk; do
  if cmp -s $W/old/$f $W/new/$f; then echo "same  $f ($(stat -c %s $W/old/$f) bytes)"; else echo "DIFF  $f"; status=1; fi
done
exit $status
