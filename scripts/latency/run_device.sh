#!/bin/bash
# On the lent H200: run one set of latency engines (scripts/latency/measure_step.py) in parallel
# start-up, serialised timing; pack the raw results into $OUT/latency-SET.tar.gz.
# usage (repository root of a checkout carrying .devx/{payload.tar.xz,scripts,models,latency-17}):
#   bash .devx/latency-17/scripts/latency/run_device.sh call1|call2|call3|call4|call5
# or, from the tracked tree (its scripts/latency and configs/models) with only .devx/{payload.tar.xz,scripts}:
#   LATENCY_ROOT=. bash scripts/latency/run_device.sh h100a|h100b
# h100a / h100b are calls 1 and 2 split for an 80 GB card (their engines start together, so their weights
# share the card: call 1's 118 GB and call 2's 86 GB do not fit); the 32B and the 14B + EAGLE are left out.
# call4 (run 2026-12-01, benchmarks/results/h200/latency/call4) and call5 (not run) time only the widest batch, six rounds
# spread over the run, for the engines whose widest batch was timed once, first (calls 1 and 2).
set -u
SET=$1
D=${LATENCY_ROOT:-.devx/latency-17}; M=$D/configs/models
bash .devx/scripts/dev.sh setup
export PYTHONPATH=/tmp/site HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 \
  VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 VLLM_USE_FLASHINFER_SAMPLER=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/latency-out}; R=$OUT/raw; SYNC=/tmp/l17sync-$SET
rm -rf "$SYNC" "$R"; mkdir -p "$SYNC" "$R"
# name|model|draft|k|max_num_seqs|max_capture|timing_budget_s
EXTRA_FLAGS=()
case $SET in
  call1) ENGINES=(
    "tiny-eagle-k16-mns32-max544|$M/tiny-llama-v512|$M/tiny-eagle|16|32|544|40"
    "med-llama-mns256|$M/med-llama|||256||40"
    "llama-3.2-3b-mns256|$M/llama-3.2-3b|||256||45"
    "llama-3.1-8b-mns256|$M/llama-3.1-8b|||256||50"
    "qwen2.5-14b-mns256|$M/qwen2.5-14b|||256||55"
    "qwen2.5-32b-mns256|$M/qwen2.5-32b|||256||70") ;;
  call3) ENGINES=(
    "tiny-eagle-k16-mns32-max544|$M/tiny-llama-v512|$M/tiny-eagle|16|32|544|20"
    "llama-3.1-8b-mns256|$M/llama-3.1-8b|||256||25"
    "med-llama-mns256|$M/med-llama|||256||20") ;;
  call2) ENGINES=(
    "llama-3.1-8b-eagle-k16-mns32-max544|$M/llama-3.1-8b|$M/llama-3.1-8b-eagle|16|32|544|60"
    "llama-3.2-3b-eagle-k3-mns64|$M/llama-3.2-3b|$M/llama-3.2-3b-eagle|3|64||50"
    "qwen2.5-14b-eagle-k3-mns128|$M/qwen2.5-14b|$M/qwen2.5-14b-eagle|3|128||60"
    "mistral-nemo-12b-mns256|$M/mistral-nemo-12b|||256||60"
    "qwen3-4b-mns256|$M/qwen3-4b|||256||50") ;;
  call4) EXTRA_FLAGS=(--only-widest --widest-repeats 6 --pause-s 2); ENGINES=(
    "llama-3.2-3b-mns256|$M/llama-3.2-3b|||256||30"
    "qwen2.5-14b-mns256|$M/qwen2.5-14b|||256||30"
    "qwen2.5-32b-mns256|$M/qwen2.5-32b|||256||40") ;;
  h100a) ENGINES=(
    "tiny-eagle-k16-mns32-max544|$M/tiny-llama-v512|$M/tiny-eagle|16|32|544|40"
    "med-llama-mns256|$M/med-llama|||256||40"
    "llama-3.2-3b-mns256|$M/llama-3.2-3b|||256||45"
    "llama-3.1-8b-mns256|$M/llama-3.1-8b|||256||50"
    "qwen2.5-14b-mns256|$M/qwen2.5-14b|||256||55") ;;
  h100b) ENGINES=(
    "llama-3.1-8b-eagle-k16-mns32-max544|$M/llama-3.1-8b|$M/llama-3.1-8b-eagle|16|32|544|60"
    "llama-3.2-3b-eagle-k3-mns64|$M/llama-3.2-3b|$M/llama-3.2-3b-eagle|3|64||50"
    "mistral-nemo-12b-mns256|$M/mistral-nemo-12b|||256||60"
    "qwen3-4b-mns256|$M/qwen3-4b|||256||50") ;;
  call5) EXTRA_FLAGS=(--only-widest --widest-repeats 6 --pause-s 2); ENGINES=(
    "llama-3.1-8b-eagle-k16-mns32-max544|$M/llama-3.1-8b|$M/llama-3.1-8b-eagle|16|32|544|30"
    "llama-3.2-3b-eagle-k3-mns64|$M/llama-3.2-3b|$M/llama-3.2-3b-eagle|3|64||30"
    "qwen2.5-14b-eagle-k3-mns128|$M/qwen2.5-14b|$M/qwen2.5-14b-eagle|3|128||30"
    "mistral-nemo-12b-mns256|$M/mistral-nemo-12b|||256||30"
    "qwen3-4b-mns256|$M/qwen3-4b|||256||30") ;;
esac
N=${#ENGINES[@]}; i=0; PIDS=()
for e in "${ENGINES[@]}"; do
  IFS='|' read -r name model draft k s mc tb <<< "$e"
  extra=(); [ -n "$draft" ] && extra+=(--draft "$draft" --k "$k"); [ -n "$mc" ] && extra+=(--max-capture "$mc")
  cmd=(python3 $D/scripts/latency/measure_step.py --name "$name" --model "$model" --max-num-seqs "$s"
       --out "$R" --sync-dir "$SYNC" --engines "$N" --timing-budget-s "$tb" --reps 20 --point-budget-s 1.5 "${extra[@]}" "${EXTRA_FLAGS[@]}")
  echo "${cmd[*]}" >> "$R/commands.txt"
  VLLM_PORT=$((31000 + 100 * i)) timeout ${ENGINE_TIMEOUT:-555} "${cmd[@]}" > "$R/$name.log" 2>&1 &
  PIDS+=($!); i=$((i + 1)); sleep 2
done
for p in "${PIDS[@]}"; do wait "$p"; echo "engine pid $p rc=$?"; done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$R/gpu.txt" 2>&1
for f in "$R"/*.log; do echo "== $f"; grep -a -E "\[lat|Error|error:|Traceback|OutOfMemory" "$f" | grep -v " DEBUG " | tail -12 | cut -c1-220; done
gzip -9 "$R"/*.log
tar czf "$OUT/latency-$SET.tar.gz" -C "$R" .
ls -la "$R" "$OUT"
