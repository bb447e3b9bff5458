#!/usr/bin/env bash
# On the lent GPU machine: rehearse the capture faults for real (see capture_suite.sh for setup).
# Each run injects one fault half-way through capture with CGPLAN_FAULT_AT_GRAPH=N:KIND
# (a real SIGINT/SIGTERM delivered to the process, or the GPU filled so the next graph OOMs)
# and keeps the report, console output and exit code under $OUT.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/cgplan-out}; mkdir -p "$OUT"
if [ ! -f /tmp/site/.ok ] && [ -f "$ROOT/.devx/payload.tar.xz" ]; then
  bash "$ROOT/.devx/scripts/dev.sh" setup >/dev/null 2>&1
fi
export PYTHONPATH="$ROOT:/tmp/site" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 \
  DO_NOT_TRACK=1 VLLM_USE_FLASHINFER_SAMPLER=0 PYTHONUNBUFFERED=1 VLLM_ENABLE_V1_MULTIPROCESSING=0
run() {  # name config fault [backend]
  local name=$1 cfg=$2 fault=$3 backend=${4:-vllm}
  echo "previous report" > "$OUT/$name.json"
  s=$(date +%s)
  CGPLAN_FAULT_AT_GRAPH=$fault timeout -s KILL 200 python3 -m cgplan capture --gpu "$cfg" --backend "$backend" \
    -o "$OUT/$name.json" > "$OUT/$name.out" 2> "$OUT/$name.err"
  rc=$?
  echo "$name fault=$fault rc=$rc $(( $(date +%s) - s ))s :: $(tail -n 1 "$OUT/$name.err")"
  echo "$rc" > "$OUT/$name.rc"
  python3 -c "import json,sys; d=json.load(open('$OUT/$name.json')); print('   report:', d['status'], '|', d['failure'], '| graphs kept:', len(d['measured']['graphs']))"
}
run sigint-tiny configs/gpu/tiny-nospec.yaml 8:SIGINT
run sigterm-tiny configs/gpu/tiny-nospec.yaml 8:SIGTERM
run oom-eagle configs/gpu/tiny-eagle-k16.yaml 20:OOM
run oom-torch-8b configs/gpu/llama8b-mns256.yaml 30:OOM torch
