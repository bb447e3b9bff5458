# the second call of 2026-12-07: the three compilation-off configs, then one hybrid probe with time
set -u
CONFIGS="configs/gpu/issue27/tiny-mode-none.yaml configs/gpu/issue27/tiny-mode-none-fdo.yaml configs/gpu/issue27/tiny-mode-none-eagle-k3-v1.yaml" \
  CAPTURE_S=300 MODELS=tiny-nemotron-h PROBE_S=260 LIMIT=580 bash scripts/device/issue27_suite.sh
