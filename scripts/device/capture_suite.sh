#!/usr/bin/env bash
# On the lent GPU machine: unpack the vLLM 0.26.0 payload (see ../shared/device/README.md),
# then run `cgplan capture --gpu` on each config given, one engine process each, saving the
# report, the console output and the exit code under $OUT.
# usage: bash scripts/device/capture_suite.sh [--backend vllm|torch] CONFIG...
# A config with tensor_parallel_size N > 1 needs N visible GPUs: the engine core still runs in
# cgplan's process (VLLM_ENABLE_V1_MULTIPROCESSING=0 below), and vLLM's MultiprocExecutor forks
# one worker per rank from it, so the workers carry cgplan's hooks.
# env: OUT (results folder), LIMIT (seconds for the whole suite), EXTRA_ARGS (more capture
# options, e.g. "--instrument timing"), SUFFIX (appended to each result's name)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/cgplan-out}; mkdir -p "$OUT"
BACKEND=vllm
if [ "${1:-}" = "--backend" ]; then BACKEND=$2; shift 2; fi
T0=$(date +%s); LIMIT=${LIMIT:-570}
if [ ! -f /tmp/site/.ok ] && [ -f "$ROOT/.devx/payload.tar.xz" ]; then
  bash "$ROOT/.devx/scripts/dev.sh" setup >/dev/null 2>&1
fi
export PYTHONPATH="$ROOT:/tmp/site" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 \
  DO_NOT_TRACK=1 VLLM_USE_FLASHINFER_SAMPLER=0 PYTHONUNBUFFERED=1 VLLM_ENABLE_V1_MULTIPROCESSING=0
# NVLink multicast stays off for multi-GPU runs (the machine's own settings win).
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} TORCH_SYMM_MEM_DISABLE_MULTICAST=${TORCH_SYMM_MEM_DISABLE_MULTICAST:-1} \
  NVSHMEM_DISABLE_NVLS=${NVSHMEM_DISABLE_NVLS:-1}
for cfg in "$@"; do
  left=$(( LIMIT - ($(date +%s) - T0) ))
  name=$(basename "$cfg" .yaml)-$BACKEND${SUFFIX:-}
  if [ $left -lt 100 ]; then echo "SKIP $name ($left s left)"; continue; fi
  tl=$(( left - 15 )); [ $tl -gt 240 ] && tl=240
  s=$(date +%s)
  timeout -s INT $tl python3 -m cgplan capture --gpu "$cfg" --backend "$BACKEND" -o "$OUT/$name.json" ${EXTRA_ARGS:-} \
    > "$OUT/$name.out" 2> "$OUT/$name.err"
  rc=$?
  echo "$name rc=$rc $(( $(date +%s) - s ))s"
  echo "$rc" > "$OUT/$name.rc"
  tail -n 30 "$OUT/$name.out"
  grep -a -E "Error|error|Traceback" "$OUT/$name.err" | tail -n 8 | cut -c1-300
  gzip -f "$OUT/$name.err"
done
echo "suite done in $(( $(date +%s) - T0 ))s"
