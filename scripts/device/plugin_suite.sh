#!/usr/bin/env bash
# On the lent GPU machine: cgplan's vLLM general plugin in a real engine (issue 34).
# Setup as capture_suite.sh (the vLLM 0.26.0 payload from ../shared/device/ under .devx/). The
# plugin reaches vLLM the way an installed wheel's does: through importlib.metadata's entry
# points. The wheel's metadata is written from pyproject.toml's own table into a dist-info folder
# on the path (no build backend is needed on the machine); cgplan's code is this checkout's.
# Runs: v1 (VLLM_USE_V2_MODEL_RUNNER=0: the gap, the counters, the overhead paired in one engine),
# then v2 (0.26.0's default runner for a dense Llama: the gap and the counters), each in its own
# process, then the gpu-marked test (tests/gpu/test_plugin_gpu.py, V1) if time is left. Writes under $OUT (7 files): plugin-v1.log, plugin-v1-result.json,
# plugin-v1-counters.json, plugin-v1-metrics.txt, plugin-v2.log, plugin-v2-result.json, suite.txt.
# env: OUT, LIMIT (seconds, default 420), PAIRS (overhead pairs, default 12), SITE (where vLLM is:
# /tmp/site, the payload; a CPU dry run points it at a fake)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/cgplan-out}; mkdir -p "$OUT"
T0=$(date +%s); LIMIT=${LIMIT:-420}
if [ ! -f /tmp/site/.ok ] && [ -f "$ROOT/.devx/payload.tar.xz" ]; then
  bash "$ROOT/.devx/scripts/dev.sh" setup >/dev/null 2>&1
fi
EP=/tmp/cgplan-ep
python3 - "$ROOT" "$EP" <<'PY' || exit 1
import pathlib, re, sys, tomllib
root, ep = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
table = tomllib.loads((root / "pyproject.toml").read_text())["project"]["entry-points"]
version = re.search(r'__version__ = "([^"]+)"', (root / "cgplan/__init__.py").read_text()).group(1)
d = ep / f"cgplan-{version}.dist-info"
d.mkdir(parents=True, exist_ok=True)
(d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: cgplan\nVersion: {version}\n")
lines = [f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) for group, eps in table.items()]
(d / "entry_points.txt").write_text("\n".join(lines))
print("entry points:", (d / "entry_points.txt").read_text().strip().replace("\n", " | "))
PY
export PYTHONPATH="$ROOT:$EP:${SITE:-/tmp/site}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 \
  DO_NOT_TRACK=1 VLLM_USE_FLASHINFER_SAMPLER=0 PYTHONUNBUFFERED=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 \
  CGPLAN_PLUGIN=1 CGPLAN_PLUGIN_SUMMARY_STEPS=${CGPLAN_PLUGIN_SUMMARY_STEPS:-100}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 --version; } > "$OUT/suite.txt" 2>&1
for name in v1 v2; do
  left=$(( LIMIT - ($(date +%s) - T0) ))
  if [ $left -lt 100 ]; then echo "SKIP plugin-$name ($left s left)" | tee -a "$OUT/suite.txt"; continue; fi
  tl=$(( left - 10 )); [ $tl -gt 260 ] && tl=260
  pairs=0; [ $name = v1 ] && pairs=${PAIRS:-12}
  s=$(date +%s)
  VLLM_USE_V2_MODEL_RUNNER=$([ $name = v2 ] && echo 1 || echo 0) CGPLAN_PLUGIN_COUNTERS="/tmp/cgplan-plugin-$name-counters.json" \
    timeout -s KILL $tl python3 "$ROOT/scripts/device/plugin_drive.py" "plugin-$name" "$OUT" --overhead-pairs $pairs \
    > "$OUT/plugin-$name.log" 2>&1
  rc=$?
  echo "plugin-$name rc=$rc $(( $(date +%s) - s ))s" | tee -a "$OUT/suite.txt"
  grep -a -F "[cgplan]" "$OUT/plugin-$name.log" | cut -c1-400 | tail -n 14
  grep -a -E "Traceback|Error" "$OUT/plugin-$name.log" | tail -n 5 | cut -c1-300
done
# the gpu-marked test (V1; V2 ran above), if the time allows: its pass/fail line goes to suite.txt
left=$(( LIMIT - ($(date +%s) - T0) ))
if [ $left -ge 150 ]; then
  s=$(date +%s)
  timeout -s KILL $(( left - 20 )) python3 -m pytest -p no:cacheprovider -q -m gpu tests/gpu/test_plugin_gpu.py -k v1 \
    2>&1 | tail -n 5 | tee -a "$OUT/suite.txt"
  echo "gpu test $(( $(date +%s) - s ))s" | tee -a "$OUT/suite.txt"
else
  echo "SKIP the gpu test ($left s left)" | tee -a "$OUT/suite.txt"
fi
# 7 files: v2's counters and metrics text are in its result.json (counts) and v1's suffice
rm -f "$OUT/plugin-v2-counters.json" "$OUT/plugin-v2-metrics.txt"
python3 -c "import json,sys; d=json.load(open('$OUT/plugin-v1-result.json')); print(json.dumps(d.get('overhead'), indent=1)[:1500])" 2>/dev/null
echo "suite done in $(( $(date +%s) - T0 ))s" | tee -a "$OUT/suite.txt"
