#!/usr/bin/env bash
# On the lent H200, in a call after fleet_suite.sh while the machine is still warm (vLLM already
# unpacked in /tmp/site): the same six configs through a one-GPU local Ray cluster (issue 19),
# `cgplan capture --gpu CONFIG... --ray auto`, each config a Ray task with one GPU, in turn.
# Ray comes from the stripped archive scripts/device/build_ray_payload.sh makes (carry it).
# Results: $OUT/ray19.tgz (the reports, the aggregate, the command's output, Ray's start log).
# usage: RAY_TAR=.devx/ray.tar.xz bash scripts/device/ray_suite.sh
# env: OUT, LIMIT (seconds for the whole suite), RAY_TAR, RAY_SITE (where it is unpacked), FLEET
# (configs), BACKEND (vllm; fake to try the script off the GPU), DEVX (vLLM payload folder)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/cgplan-out}; R=$OUT/r; mkdir -p "$R"
T0=$(date +%s); LIMIT=${LIMIT:-560}
FLEET=${FLEET:-"configs/gpu/med-llama-mns256.yaml configs/gpu/tiny-nospec.yaml configs/gpu/tiny-eagle-k16.yaml configs/gpu/tiny-eagle-k16-max544.yaml configs/gpu/tiny-ngram-k16.yaml configs/gpu/tiny-ngram-dyn.yaml"}
RAY_TAR=${RAY_TAR:-$(pwd)/.devx/ray.tar.xz}; RAY_TAR=$(cd "$(dirname "$RAY_TAR")" && pwd)/$(basename "$RAY_TAR")
DEVX=${DEVX:-$(pwd)/.devx}; RAY_SITE=${RAY_SITE:-/tmp/ray-site}; BACKEND=${BACKEND:-vllm}
if [ ! -f /tmp/site/.ok ] && [ -f "$DEVX/payload.tar.xz" ]; then
  bash "$DEVX/scripts/dev.sh" setup >/dev/null 2>&1   # a fresh machine: unpack vLLM first
fi
if [ ! -f "$RAY_SITE/.ok" ]; then
  mkdir -p "$RAY_SITE" && xz -T0 -dc "$RAY_TAR" | tar -xf - -C "$RAY_SITE" --strip-components=1 \
    && touch "$RAY_SITE/.ok"
fi
export PYTHONPATH="$ROOT:/tmp/site:$RAY_SITE" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 \
  DO_NOT_TRACK=1 VLLM_USE_FLASHINFER_SAMPLER=0 PYTHONUNBUFFERED=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 \
  RAY_USAGE_STATS_ENABLED=0
cd "$ROOT"
echo "ray unpacked after $(( $(date +%s) - T0 ))s: $(du -sh "$RAY_SITE" | cut -f1)"
python3 -m ray.scripts.scripts start --head --num-gpus 1 --include-dashboard=false \
  --disable-usage-stats > "$R/ray_start.log" 2>&1
rc=$?; echo "ray start rc=$rc"; tail -n 5 "$R/ray_start.log"
if [ $rc -eq 0 ]; then
  s=$(date +%s)
  # shellcheck disable=SC2086
  timeout -s INT $(( LIMIT - ($(date +%s) - T0) - 25 )) python3 -m cgplan capture --gpu $FLEET --backend "$BACKEND" \
    --ray auto --out-dir "$R/ray-fleet" > "$R/ray-fleet.out" 2> "$R/ray-fleet.err"
  echo "ray fleet rc=$? $(( $(date +%s) - s ))s"; cat "$R/ray-fleet.out"; tail -n 12 "$R/ray-fleet.err"
  python3 -m ray.scripts.scripts stop > "$R/ray_stop.log" 2>&1
fi
for f in "$R"/ray-fleet/*.log; do [ -f "$f" ] && gzip -f "$f"; done
tar -C "$R" -czf "$OUT/ray19.tgz" . && rm -rf "$R"
echo "ray suite done in $(( $(date +%s) - T0 ))s"
