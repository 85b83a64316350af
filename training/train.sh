#!/usr/bin/env bash
# Reproduces models/squares.onnx and models/pockets.onnx from simulator data (not run in CI).
#
#   training/train.sh [WORKDIR]        (default WORKDIR: /var/tmp/tandem-training)
#
# Needs: the `tandem` binary (cargo build --bin tandem), the dreamchess-data meshes, and a Python
# with torch, numpy, pillow, onnx, onnxruntime (PYTHON, default python3). FRAMES (frames per
# generator job, one job per seed 1, 2, …), MINUTES_SQUARES and MINUTES_POCKETS scale the run;
# the defaults are the ones behind the committed models.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK="${1:-/var/tmp/tandem-training}"
PYTHON="${PYTHON:-python3}"
TANDEM="${TANDEM:-${CARGO_TARGET_DIR:-target}/debug/tandem}"
FRAMES="${FRAMES:-300 300 500 500}"
MINUTES_SQUARES="${MINUTES_SQUARES:-48}"
MINUTES_POCKETS="${MINUTES_POCKETS:-44}"
ELEMENTS=/usr/share/games/dreamchess/pieces/elements
mkdir -p "$WORK"

# 1. Training data: classic + built-in sets with procedural variations, tripod/overhead poses.
dirs=()
pids=()
s=0
for n in $FRAMES; do
  s=$((s + 1))
  d="$WORK/train-$s"
  dirs+=("$d")
  [ -s "$d/frames.csv" ] || "$TANDEM" sim dataset --out "$d" --frames "$n" --seed "$s" &
  pids+=($!)
done
# 2. Held-out evaluation sessions: the elements set at the low-side and oblique poses.
[ -s "$WORK/sessions/sessions.csv" ] || "$TANDEM" sim dataset --out "$WORK/sessions" \
  --sessions 8 --positions 4 --seed 99 --pieces "$ELEMENTS" --presets low-side,oblique &
pids+=($!)
for p in "${pids[@]}"; do wait "$p"; done
pids=()

# 3. Train (one thread each: on two shared cores this beats two threads per job), export, check.
"$PYTHON" training/train_squares.py --data "${dirs[@]}" --out models/squares.onnx \
  --checkpoint "$WORK/squares.pt" --width 16 --margin 0.2 --aug 0.8 \
  --minutes "$MINUTES_SQUARES" --eval "$WORK/sessions" > "$WORK/squares.log" 2>&1 &
pids+=($!)
"$PYTHON" training/train_pockets.py --data "${dirs[@]}" --out models/pockets.onnx \
  --checkpoint "$WORK/pockets.pt" --width 12 \
  --minutes "$MINUTES_POCKETS" --eval "$WORK/sessions" > "$WORK/pockets.log" 2>&1 &
pids+=($!)
for p in "${pids[@]}"; do wait "$p"; done
tail -n 40 "$WORK/squares.log" "$WORK/pockets.log"
sha256sum models/squares.onnx models/pockets.onnx
