#!/bin/sh
# The night's net (issue 64) in parts, each resumable on any machine:
# self-play data, then training from the journal's checkpoint, then the
# journal brought up to date (docs/bench/net-night/: the checkpoint,
# gzipped weights and Adam's moments, ~300 KB for N = 32; the quantised
# net; the loss plot; a row per part). Data never goes into the
# repository: each part plays its own slice of the night's games, the
# same games on any machine (fixed nodes, a seed, `selfplay --shard`).
#
# Run from the repository root after `cargo build --release`:
#   scripts/net_night.sh WORK [PART]
# PART is the part to play (default: the next one, the journal's rows).
# A part killed anywhere is continued by the same command: selfplay
# resumes its PGN, the trainer its checkpoint in WORK. On a fresh machine
# the part's games are played again from the start (the same games) and
# the training starts again from the journal's checkpoint: the same net.
# Commit the journal after each part; then scripts/net_confirm.sh.
#
# The recipe (docs/NET.md#the-night): the core's default weights on both
# sides, the evaluation SELFPLAY_NET (default none: the hand-crafted one, as
# the night's data was played; `default` plays the embedded net for a
# second generation), at 5,000 nodes a move, openings of noob_3moves (not the
# confirmation's suite) shuffled by seed 64, resign at 1500 cp for 4
# moves, the default draw adjudication; 150,932 games (every opening
# once) in PARTS parts; positions filtered as `net-data` does by default
# (from ply 16, not in check, the move played quiet, no mate, |score| <
# 3000), every 20th game held out; training (768 -> HIDDEN) x 2 -> 1,
# lambda 0 (measured best on the first 2,000 games: docs/NET.md), scale 400, EPOCHS epochs a part of the part's positions and
# their mirror images (`train --mirror`: measured better), batch 4096,
# AdamW, the learning rate LR falling to LR/100 on a cosine within the part.
# Only a part's own data trains it: a part is the same on any machine.
#
# Settings (environment; the defaults are the night's): JOURNAL, LEARNBOOK,
# OPENINGS, THREADS (2), NODES, GAMES, PARTS, SEED, HIDDEN, EPOCHS, LR,
# BATCH, LAMBDA, SELFPLAY_NET.
set -eu

WORK=${1:?usage: scripts/net_night.sh WORK [PART]}
JOURNAL=${JOURNAL:-docs/bench/net-night}
LEARNBOOK=${LEARNBOOK:-target/release/learnbook}
OPENINGS=${OPENINGS:-../shared/data/openings/noob_3moves.epd.gz}
THREADS=${THREADS:-2}
NODES=${NODES:-5000}
GAMES=${GAMES:-150932}
PARTS=${PARTS:-30}
SEED=${SEED:-64}
HIDDEN=${HIDDEN:-32}
EPOCHS=${EPOCHS:-12}
LR=${LR:-0.001}
BATCH=${BATCH:-4096}
LAMBDA=${LAMBDA:-0}
SELFPLAY_NET=${SELFPLAY_NET:-none}

mkdir -p "$WORK" "$JOURNAL"
LB="$(cd "$WORK" && pwd)/learnbook"
# A copy, so that a rebuild does not change the engine within a part.
[ -x "$LB" ] || cp "$LEARNBOOK" "$LB"
ROWS="$JOURNAL/parts.tsv"
[ -e "$ROWS" ] ||
    printf 'part\tbegan (UTC)\tgames\ttraining positions\tvalidation positions\tselfplay wall s\ttrain wall s\ttraining loss\tvalidation loss\n' >"$ROWS"
PART=${2:-$(($(wc -l <"$ROWS") - 1))}
if [ "$PART" -ge "$PARTS" ]; then
    echo "all $PARTS parts are in $ROWS"
    exit 0
fi
began=$(date -u +%Y-%m-%dT%H:%M)
P="$WORK/part-$PART"

t0=$(date +%s)
"$LB" selfplay --pgnout "$P.pgn" --games "$GAMES" --shard "$PART/$PARTS" --nodes "$NODES" \
    --openings "$OPENINGS" --seed "$SEED" --concurrency "$THREADS" --net "$SELFPLAY_NET" \
    --resign movecount=4,score=1500 --data "$P.bin" >"$P.selfplay.txt" 2>>"$P.log"
t1=$(date +%s)

# The part's training: resumed from WORK if it was under way, else a new
# run from the journal's checkpoint (the first part: from random weights).
if [ -e "$P.ckpt.gz" ]; then
    set -- --resume
elif [ -e "$JOURNAL/net.ckpt.gz" ]; then
    set -- --init "$JOURNAL/net.ckpt.gz"
else
    set --
fi
final_lr=$(awk "BEGIN { print $LR / 100 }")
"$LB" train --data "$P.bin" --valid "$P.valid.bin" --out "$P.nnue" --checkpoint "$P.ckpt.gz" \
    --hidden "$HIDDEN" --epochs "$EPOCHS" --lr "$LR" --final-lr "$final_lr" --batch "$BATCH" \
    --lambda "$LAMBDA" --seed "$((SEED + PART))" --threads "$THREADS" --plot "$P.png" --mirror "$@" \
    >"$P.train.txt" 2>>"$P.log"
t2=$(date +%s)

cp "$P.ckpt.gz" "$JOURNAL/net.ckpt.gz.tmp" && mv "$JOURNAL/net.ckpt.gz.tmp" "$JOURNAL/net.ckpt.gz"
cp "$P.nnue" "$JOURNAL/net.nnue"
cp "$P.png" "$JOURNAL/loss.png"
counts=$(sed -n 's/.*: \([0-9]*\) games (.* scored positions: \([0-9]*\) training, \([0-9]*\) validation.*/\1\t\2\t\3/p' "$P.selfplay.txt")
losses=$(sed -n 's/^epoch *[0-9]*: training loss \([0-9.]*\), validation loss \([0-9.a-zA-Z]*\)$/\1\t\2/p' "$P.train.txt" | tail -1)
printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$PART" "$began" "$counts" "$((t1 - t0))" "$((t2 - t1))" "$losses" >>"$ROWS"
echo "part $PART done: $(tail -1 "$ROWS"); commit $JOURNAL"
