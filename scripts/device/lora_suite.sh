#!/usr/bin/env bash
# On the lent H200 (LoRA on the GPU): `cgplan capture --gpu` of the LoRA configs, one engine at a
# time on the GPU through scripts/device/moe_suite.py (every process starts at once, so imports
# and config checks overlap; each waits at vLLM's Worker.init_device for its turn), packed into
# $OUT/lora.tgz as each config finishes: per config the capture report (NAME-vllm.json: the plan,
# what was captured with each graph's num_active_loras, the dispatcher probed without and with one
# active adapter, the comparison), the console output (NAME.out) and the engine's log
# (NAME.err.gz); the suite's timeline.json, suite.log and nvidia-smi.txt.
# No LoRA adapter is needed: vLLM captures with its own dummy adapters.
# usage: bash scripts/device/lora_suite.sh [CONFIG...]   (default: the four configs/gpu/lora/ ones,
#        in priority order: the last ones are left out when time runs out)
# env: OUT, LIMIT (seconds for the whole suite, default 330), PER_RUN (seconds one engine may
#      take, default 110), DEVX (the folder with payload.tar.xz and scripts/dev.sh; default
#      .devx of the calling directory), LORA_WORK (raw files before packing, default /tmp/lora-r)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEVX=${DEVX:-$(pwd)/.devx}
if [ $# -eq 0 ]; then
  set -- configs/gpu/lora/tiny-lora-m1.yaml configs/gpu/lora/tiny-lora-m3-nospec-v1.yaml \
    configs/gpu/lora/tiny-lora-m3-v1.yaml configs/gpu/lora/tiny-lora-m3-nospec-v2.yaml
fi
cd "$ROOT" || exit 2
OUT=${OUT:-/tmp/cgplan-out} LIMIT=${LIMIT:-330} PER_RUN=${PER_RUN:-110} MOE_WORK=${LORA_WORK:-/tmp/lora-r} \
  PACK=lora.tgz DEVX="$DEVX" exec python3 scripts/device/moe_suite.py "$@"
