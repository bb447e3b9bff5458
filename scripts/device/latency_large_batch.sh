#!/bin/bash
# On the lent H200 (vLLM 0.26.0 payload, ../shared/device/README.md): decode step time of a dense
# 8B-class model (configs/models/llama-3.1-8b, dummy weights) at 256..1024 requests, max_num_seqs
# 1024, for three engines started at once and timed one at a time:
#   default    FULL_AND_PIECEWISE, vLLM's default ladder (max 512: 520..1024 run compiled, no graph)
#   ladder1024 FULL_AND_PIECEWISE, max_cudagraph_capture_size 1024 (every count a padded FULL graph)
#   eager      enforce_eager
# Each engine: scripts/device/latency_large_batch.py (serving step via LLM.generate, and the
# forward alone). Results in $OUT (6 files): large-{default,ladder1024,eager}.json, logs.tar.gz,
# commands.txt, gpu.txt. scripts/device/LATENCY_RUN.md has the exact `run` call.
# env: OUT, ENGINE_TIMEOUT (s, per engine; default 500, 170 one at a time), MODEL (config folder),
# SERIAL=1 (engines one at a time even on a GPU that holds the three; automatic below 120 GiB),
# DRY_RUN=1 (CPU: fake engines, no payload, no GPU; checks the flow and the packing).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
T0=$(date +%s)
OUT=${OUT:-/tmp/latency-large-out}; mkdir -p "$OUT"
W=/tmp/latency-large-work; SYNC=/tmp/latency-large-sync
rm -rf "$W" "$SYNC"; mkdir -p "$W" "$SYNC"
MODEL=${MODEL:-configs/models/llama-3.1-8b}
PY=${PYTHON:-python3}
if [ "${DRY_RUN:-0}" = 1 ]; then
  "$PY" scripts/device/latency_large_batch.py --dry-run "$W" > "$W/dry-run.log" 2>&1
  echo "dry run rc=$?"
  echo "dry run: $PY scripts/device/latency_large_batch.py --dry-run $W" > "$W/commands.txt"
else
  if [ ! -f /tmp/site/.ok ] && [ "${SKIP_SETUP:-0}" != 1 ]; then
    [ -f .devx/payload.tar.xz ] || { echo "no .devx/payload.tar.xz carried and no /tmp/site: see ../shared/device/README.md"; exit 2; }
    bash .devx/scripts/dev.sh setup
  fi
  export PYTHONPATH=/tmp/site HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 \
    VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 VLLM_USE_FLASHINFER_SAMPLER=0 PYTHONUNBUFFERED=1
  # Three 8B engines at once take ~100 GB (16 GB of weights and 12 GiB of KV cache each, plus
  # activations and graph pools): on a GPU with less than 120 GiB they run one after another, one
  # round each and a shorter timing budget, so that the call stays under 9 minutes.
  MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -1 | tr -d ' ')
  if [ "${MIB:-0}" -ge 122880 ] && [ "${SERIAL:-0}" != 1 ]; then AT_ONCE=3; EXTRA=(--timing-budget-s 75); TL=${ENGINE_TIMEOUT:-500}
  else AT_ONCE=1; EXTRA=(--timing-budget-s 45 --rounds 1); TL=${ENGINE_TIMEOUT:-170}
    echo "GPU memory ${MIB:-?} MiB: engines one at a time"; fi
  i=0; PIDS=()
  for case in default ladder1024 eager; do
    cmd=("$PY" scripts/device/latency_large_batch.py --case "$case" --model "$MODEL" --out "$W"
         --sync-dir "$SYNC" --engines "$AT_ONCE" --max-num-seqs 1024 "${EXTRA[@]}")
    [ "$AT_ONCE" = 1 ] && cmd+=(--barrier-wait-s 1)
    echo "${cmd[*]}" >> "$W/commands.txt"
    VLLM_PORT=$((32000 + 100 * i)) timeout -s INT "$TL" "${cmd[@]}" > "$W/$case.log" 2>&1 &
    PIDS+=($!); i=$((i + 1)); sleep 2
    if [ "$AT_ONCE" = 1 ]; then wait "${PIDS[-1]}"; echo "engine $case rc=$? at +$(( $(date +%s) - T0 ))s"; fi
  done
  if [ "$AT_ONCE" = 3 ]; then
    for p in "${PIDS[@]}"; do wait "$p"; echo "engine pid $p rc=$? at +$(( $(date +%s) - T0 ))s"; done
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$W/gpu.txt" 2>&1
fi
for f in "$W"/*.log; do
  echo "== $f"; grep -a -E "\[lat|Error|error:|Traceback|OutOfMemory" "$f" | grep -v " DEBUG " | tail -30 | cut -c1-220
done
tar czf "$OUT/logs.tar.gz" -C "$W" $(cd "$W" && ls *.log)
cp "$W"/large-*.json "$W/commands.txt" "$OUT/" 2>/dev/null
[ -f "$W/gpu.txt" ] && cp "$W/gpu.txt" "$OUT/"
echo "done in $(( $(date +%s) - T0 ))s"; ls -la "$OUT"
