#!/usr/bin/env bash
# On the lent GPU machine (issue 27): the compilation-off and EAGLE-on-V1 checks through
# `cgplan capture --gpu` (configs/gpu/issue27/), then what vLLM itself does with three hybrid or
# attention-free models (scripts/device/hybrid_probe.py: tiny-nemotron-h, tiny-qwen3-next-dense,
# tiny-mamba). Setup as capture_suite.sh. Packs everything into $OUT/issue27.tar.gz plus
# $OUT/issue27-suite.txt (the device returns at most 8 files).
# env: OUT, LIMIT (seconds, default 540), CONFIGS (default configs/gpu/issue27/*.yaml), MODELS (the
# probes, default the three above), CAPTURE_S (the capture part's share, default LIMIT/2), PROBE_S (per
# probe, default 150: a Mamba model's first Triton warm-up alone took 76 s on an H100)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/cgplan-out}; mkdir -p "$OUT"
T0=$(date +%s); LIMIT=${LIMIT:-540}
W=/tmp/issue27; mkdir -p "$W/capture" "$W/hybrid"
if [ ! -f /tmp/site/.ok ] && [ -f "$ROOT/.devx/payload.tar.xz" ]; then
  bash "$ROOT/.devx/scripts/dev.sh" setup >/dev/null 2>&1
fi
S="$OUT/issue27-suite.txt"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 --version; } > "$S" 2>&1
OUT="$W/capture" LIMIT=${CAPTURE_S:-$(( LIMIT / 2 ))} bash "$ROOT/scripts/device/capture_suite.sh" ${CONFIGS:-"$ROOT"/configs/gpu/issue27/*.yaml} \
  2>&1 | tail -n 40 >> "$S"
export PYTHONPATH="$ROOT:/tmp/site" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 \
  DO_NOT_TRACK=1 VLLM_USE_FLASHINFER_SAMPLER=0 PYTHONUNBUFFERED=1 VLLM_ENABLE_V1_MULTIPROCESSING=0
for m in ${MODELS:-tiny-nemotron-h tiny-qwen3-next-dense tiny-mamba}; do
  left=$(( LIMIT - ($(date +%s) - T0) ))
  if [ $left -lt 60 ]; then echo "SKIP $m ($left s left)" | tee -a "$S"; continue; fi
  tl=$(( left - 20 )); [ $tl -gt ${PROBE_S:-150} ] && tl=${PROBE_S:-150}
  s=$(date +%s)
  timeout -s KILL $tl python3 "$ROOT/scripts/device/hybrid_probe.py" --model "$ROOT/configs/models/$m" \
    --out "$W/hybrid/$m.json" > "$W/hybrid/$m.log" 2>&1
  echo "hybrid $m rc=$? $(( $(date +%s) - s ))s" | tee -a "$S"
  grep -a -E "\[probe|Traceback|Error" "$W/hybrid/$m.log" | tail -n 8 | cut -c1-300 | tee -a "$S"
done
tar -C "$W" -czf "$OUT/issue27.tar.gz" capture hybrid
echo "suite done in $(( $(date +%s) - T0 ))s" | tee -a "$S"
