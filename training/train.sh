#!/usr/bin/env bash
# Reproduces models/squares.onnx and models/pockets.onnx from simulator data (not run in CI).
#
#   training/train.sh [WORKDIR]        (default WORKDIR: /var/tmp/tandem-training)
#
# Needs: the `tandem` binary (cargo build --bin tandem), the dreamchess-data meshes, and a Python
# with torch, numpy, pillow, onnx, onnxruntime (PYTHON, default python3). FRAMES, MINUTES_SQUARES,
# MINUTES_POCKETS and JOBS scale the run; defaults are the ones behind the committed models.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK="${1:-/var/tmp/tandem-training}"
PYTHON="${PYTHON:-python3}"
TANDEM="${TANDEM:-${CARGO_TARGET_DIR:-target}/debug/tandem}"
FRAMES="${FRAMES:-400}"          # frames per generator job
JOBS="${JOBS:-4}"                 # generator jobs (seeds 1..JOBS)
MINUTES_SQUARES="${MINUTES_SQUARES:-45}"
MINUTES_POCKETS="${MINUTES_POCKETS:-40}"
ELEMENTS=/usr/share/games/dreamchess/pieces/elements
mkdir -p "$WORK"

# 1. Training data: classic + built-in sets with procedural variations, tripod/overhead poses.
dirs=()
for s in $(seq 1 "$JOBS"); do
  d="$WORK/train-$s"
  dirs+=("$d")
  [ -s "$d/squares.u8" ] || "$TANDEM" sim dataset --out "$d" --frames "$FRAMES" --seed "$s" &
done
# 2. Held-out evaluation sessions: the elements set at the low-side and oblique poses.
[ -s "$WORK/sessions/sessions.csv" ] || "$TANDEM" sim dataset --out "$WORK/sessions" \
  --sessions 8 --positions 4 --seed 99 --pieces "$ELEMENTS" --presets low-side,oblique &
wait

# 3. Train (one thread each: on two shared cores this beats two threads per job), export, check.
"$PYTHON" training/train_squares.py --data "${dirs[@]}" --out models/squares.onnx \
  --minutes "$MINUTES_SQUARES" --eval "$WORK/sessions" > "$WORK/squares.log" 2>&1 &
"$PYTHON" training/train_pockets.py --data "${dirs[@]}" --out models/pockets.onnx \
  --minutes "$MINUTES_POCKETS" --eval "$WORK/sessions" > "$WORK/pockets.log" 2>&1 &
wait
rm -f models/squares.onnx.pt models/pockets.onnx.pt
tail -n 40 "$WORK/squares.log" "$WORK/pockets.log"
sha256sum models/squares.onnx models/pockets.onnx
