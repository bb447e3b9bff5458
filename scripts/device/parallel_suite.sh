#!/usr/bin/env bash
# On a lent machine with several GPUs: run one capture_suite.sh stream per GPU at once, each
# stream pinned to its GPU with CUDA_VISIBLE_DEVICES (cgplan maps that to NVML's numbering),
# then pack every result into $OUT/run.tgz (the device tool returns few files).
# usage: bash scripts/device/parallel_suite.sh "CONFIG..." "CONFIG..." ...   (one quoted list per GPU)
# env: OUT, LIMIT (seconds for each stream), EXTRA_ARGS, SUFFIX as for capture_suite.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/cgplan-out}; mkdir -p "$OUT/runs"
if [ ! -f /tmp/site/.ok ] && [ -f "$ROOT/.devx/payload.tar.xz" ]; then
  bash "$ROOT/.devx/scripts/dev.sh" setup >/dev/null 2>&1
fi
nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv > "$OUT/runs/gpus.csv" 2>&1
gpu=0
for list in "$@"; do
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$gpu OUT="$OUT/runs" bash "$ROOT/scripts/device/capture_suite.sh" $list \
    > "$OUT/runs/stream-gpu$gpu.log" 2>&1 &
  gpu=$((gpu + 1))
done
wait
cat "$OUT"/runs/stream-gpu*.log
tar -C "$OUT" -czf "$OUT/run.tgz" runs && rm -rf "$OUT/runs"
