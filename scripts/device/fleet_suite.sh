#!/usr/bin/env bash
# On the lent H200 (issue 19; issue 18 item 3), in one call:
#  1. one `cgplan capture --gpu CONFIG...` over six configs, in turn on the one GPU, with its
#     per-config reports, logs and aggregate (fleet.json/.md/.html) under $OUT/r/fleet;
#  2. the hook-overhead pairs on the same config, alternately with `--instrument timing`
#     (capture_model timed, no per-graph hooks) and with the full hooks, the order swapped every
#     other pair (timing,full / full,timing, ...). PAIR_METHOD=engine (default): one engine,
#     vLLM's capture_model re-run for every cycle (scripts/device/hook_pairs.py), results in
#     $OUT/hook_pairs.json; PAIR_METHOD=process: one engine process per run, reports under
#     $OUT/r/overhead.
# The fleet is packed into $OUT/fleet19.tgz as soon as it is done, so a call cut short by its
# time limit still brings it back.
# usage: bash scripts/device/fleet_suite.sh   (from the repository root or a snapshot of it)
# env: OUT, LIMIT (seconds for the whole suite), FLEET_LIMIT (the fleet command; default LIMIT - 200),
# PREV_FLEET (a folder of reports of an earlier call: the fleet resumes from them), PAIRS (last
# pair, default 5), START_PAIR (default 1; process method only), PAIR_CONFIG, PAIR_METHOD,
# FLEET (configs, or none)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/cgplan-out}; R=$OUT/r; mkdir -p "$R/overhead"
T0=$(date +%s); LIMIT=${LIMIT:-575}; PAIRS=${PAIRS:-5}; BACKEND=${BACKEND:-vllm}
PAIR_CONFIG=${PAIR_CONFIG:-configs/gpu/med-llama-mns256.yaml}
FLEET=${FLEET:-"configs/gpu/med-llama-mns256.yaml configs/gpu/tiny-nospec.yaml configs/gpu/tiny-eagle-k16.yaml configs/gpu/tiny-eagle-k16-max544.yaml configs/gpu/tiny-ngram-k16.yaml configs/gpu/tiny-ngram-dyn.yaml"}
DEVX=${DEVX:-$(pwd)/.devx}
# Relative paths are the caller's: resolve them before the cd below (a relative PREV_FLEET was
# lost that way on 2026-12-01).
if [ -n "${PREV_FLEET:-}" ]; then PREV_FLEET=$(cd "$PREV_FLEET" && pwd) || exit 2; fi
if [ ! -f /tmp/site/.ok ] && [ -f "$DEVX/payload.tar.xz" ]; then
  bash "$DEVX/scripts/dev.sh" setup >/dev/null 2>&1
fi
export PYTHONPATH="$ROOT:/tmp/site" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 \
  DO_NOT_TRACK=1 VLLM_USE_FLASHINFER_SAMPLER=0 PYTHONUNBUFFERED=1 VLLM_ENABLE_V1_MULTIPROCESSING=0
cd "$ROOT"
nvidia-smi --query-gpu=index,name,driver_version,memory.used,memory.total --format=csv > "$R/gpus.csv" 2>&1
el() { echo $(( $(date +%s) - T0 )); }

# 1. the fleet, in turn on the one GPU (PREV_FLEET: reports of an earlier call, to resume from)
if [ "$FLEET" != none ]; then
if [ -n "${PREV_FLEET:-}" ]; then mkdir -p "$R/fleet"; cp "$PREV_FLEET"/*.json "$R/fleet/"; fi
s=$(date +%s)
# shellcheck disable=SC2086
timeout -s INT "${FLEET_LIMIT:-$(( LIMIT - 200 ))}" python3 -m cgplan capture --gpu $FLEET --backend "$BACKEND" --out-dir "$R/fleet" \
  > "$R/fleet.out" 2> "$R/fleet.err"
echo "fleet rc=$? $(( $(date +%s) - s ))s"; cat "$R/fleet.out"; tail -n 12 "$R/fleet.err"
for f in "$R"/fleet/*.log; do [ -f "$f" ] && gzip -f "$f"; done
tar -C "$R" -czf "$OUT/fleet19.tgz" fleet fleet.out fleet.err gpus.csv
fi

# 2. overhead pairs (a pair is started only if two runs as long as the longest so far still fit)
name=$(basename "$PAIR_CONFIG" .yaml); longest=45
if [ "${PAIR_METHOD:-engine}" = engine ]; then
  left=$(( LIMIT - $(el) ))
  if [ $left -lt 75 ]; then echo "SKIP hook pairs ($left s left)"; else
    s=$(date +%s)
    timeout -s INT $(( left - 5 )) python3 scripts/device/hook_pairs.py "$PAIR_CONFIG" --pairs "$PAIRS" \
      --out "$OUT/hook_pairs.json" --deadline-s $(( left - 12 )) > "$OUT/hook_pairs.log" 2>&1
    echo "hook pairs rc=$? $(( $(date +%s) - s ))s"; grep -E "^(engine|cycle|summary|error)" "$OUT/hook_pairs.log"
    gzip -f "$OUT/hook_pairs.log"
  fi
  PAIRS=0  # the per-process loop below is not run
fi
for i in $(seq "${START_PAIR:-1}" "$PAIRS"); do
  if [ $(( LIMIT - $(el) )) -lt $(( 2 * longest + 10 )) ]; then echo "SKIP pair $i ($(( LIMIT - $(el) )) s left)"; break; fi
  if [ $(( i % 2 )) -eq 1 ]; then order="timing full"; else order="full timing"; fi
  for mode in $order; do
    s=$(date +%s)
    timeout -s INT 150 python3 -m cgplan capture --gpu "$PAIR_CONFIG" --backend "$BACKEND" --instrument "$mode" \
      -o "$R/overhead/$name-$mode$i.json" > "$R/overhead/$name-$mode$i.out" 2> "$R/overhead/$name-$mode$i.err"
    rc=$?; d=$(( $(date +%s) - s )); [ $d -gt $longest ] && longest=$d
    echo "pair $i $mode rc=$rc ${d}s"; gzip -f "$R/overhead/$name-$mode$i.err"
  done
done
python3 - "$R/overhead" <<'PY'
import glob, json, statistics, sys
runs = {}
for p in sorted(glob.glob(sys.argv[1] + "/*.json")):
    d = json.load(open(p)); m = d["measured"]; stem = p.rsplit("/", 1)[1][:-5]
    mode = "timing" if "-timing" in stem else "full"; i = int(stem.rsplit(mode, 1)[1])
    runs.setdefault(i, {})[mode] = (m.get("capture_wall_s"), m.get("instrumentation_s"), len(m["graphs"]))
ratios = []
for i, r in sorted(runs.items()):
    if "timing" in r and "full" in r and r["timing"][0] and r["full"][0]:
        ratios.append(r["full"][0] / r["timing"][0])
        print(f"pair {i}: timing {r['timing'][0]:.3f} s, full {r['full'][0]:.3f} s "
              f"(hooks' own time {r['full'][1]} s, {r['full'][2]} graphs) ratio {ratios[-1]:.4f}")
if ratios:
    print(f"median of per-pair ratios: {statistics.median(ratios):.4f} over {len(ratios)} pairs")
PY
if ls "$R"/overhead/*.json >/dev/null 2>&1; then tar -C "$R" -czf "$OUT/overhead19.tgz" overhead; fi
rm -rf "$R"
echo "suite done in $(el)s"
