#!/bin/bash
# Issue 29 item 5: how much a newer vLLM release needs carried to the lent GPU, compacted as the 0.26.0
# payload is (.devx/scripts/build_payload.sh: sm_90 code only, the kernels a dense model on Hopper does
# not load left out, xz). Run HERE (PyPI access; ~15 min, mostly xz). Writes sizes.json to OUTDIR.
# usage: bash scripts/device/newer_release_sizes.sh WORKDIR OUTDIR [VLLM_VERSION=0.32.0 TORCH=2.13.0 TRITON=3.7.1]
# A step whose output is already in WORKDIR is not redone.
set -euo pipefail
W=${1:?workdir}; O=${2:?outdir}; V=${3:-0.32.0}; T=${4:-2.13.0}; TR=${5:-3.7.1}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
COMPACT=$ROOT/.devx/scripts/fatbin_compact.py   # ../shared/device/scripts/fatbin_compact.py, copied by the .devx set-up
mkdir -p "$W" "$O"; cd "$W"
PLAT="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
DL="python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 $PLAT -d ."
ls torch-$T-*.whl >/dev/null 2>&1 || $DL "torch==$T"
ls triton-$TR-*.whl >/dev/null 2>&1 || $DL "triton==$TR"
ls vllm-$V-*.whl >/dev/null 2>&1 || $DL "vllm==$V"
if [ ! -f torch-compact.tar.xz ]; then
  rm -rf site && mkdir site && (cd site && unzip -q ../torch-$T-*.whl -x 'torch/include/*' 'torch/testing/*' 'torch/bin/*' 'torch/share/*'
    for so in torch/lib/libtorch_cuda.so torch/lib/libtorch_cuda_linalg.so; do python3 "$COMPACT" $so $so.new 90 && mv $so.new $so; done)
  tar -cf - -C site torch | xz -T2 -6 > torch-compact.tar.xz
fi
if [ ! -f triton.tar.xz ]; then
  rm -rf tsite && mkdir tsite && (cd tsite && unzip -q ../triton-$TR-*.whl)
  tar -cf - -C tsite . | xz -T2 -6 > triton.tar.xz
fi
if [ ! -f vllm-compact.tar.xz ]; then
  rm -rf vsite && mkdir vsite && (cd vsite && unzip -q ../vllm-$V-*.whl -x 'vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so' 'vllm/vllm-rs' \
    'vllm/third_party/deep_gemm/*' 'vllm/third_party/fmha_sm100/*' 'vllm/_moe_C_stable_libtorch.abi3.so' \
    'vllm/_flashmla_C.abi3.so' 'vllm/_flashmla_extension_C.abi3.so' 'vllm/_qutlass_C.abi3.so' \
    'vllm/entrypoints/serve/instrumentator/static/*' 'vllm/_deepselect_C.abi3.so' 'vllm/_flashkda_C.abi3.so' || true
    python3 "$COMPACT" vllm/_C_stable_libtorch.abi3.so vllm/_C.new 90 && mv vllm/_C.new vllm/_C_stable_libtorch.abi3.so
    find . -name __pycache__ -prune -exec rm -rf {} +)
  tar -cf - -C vsite . | xz -T2 -6 > vllm-compact.tar.xz
fi
python3 - "$W" "$O/sizes.json" "$V" "$T" "$TR" <<'PY'
import glob, json, os, sys, zipfile
w, out, v, t, tr = sys.argv[1:]
def size(p): return os.path.getsize(glob.glob(os.path.join(w, p))[0])
def meta(whl):
    z = zipfile.ZipFile(glob.glob(os.path.join(w, whl))[0])
    name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    return [r.split(":", 1)[1].strip() for r in z.read(name).decode().splitlines()
            if r.startswith("Requires-Dist:") and "extra ==" not in r]
MIB = 1 << 20
parts = {"torch": size("torch-compact.tar.xz"), "triton": size("triton.tar.xz"), "vllm": size("vllm-compact.tar.xz")}
doc = {
    "kind": "cgplan-newer-release-sizes", "schema_version": 1,
    "command": f"bash scripts/device/newer_release_sizes.sh WORKDIR OUTDIR {v} {t} {tr}",
    "vllm": v, "torch": t, "triton": tr,
    "wheel_bytes": {"torch": size(f"torch-{t}-*.whl"), "triton": size(f"triton-{tr}-*.whl"), "vllm": size(f"vllm-{v}-*.whl")},
    "compacted_xz_bytes": parts,
    "compacted_xz_mib_total": round(sum(parts.values()) / MIB, 1),
    "torch_cuda_requires": [r for r in meta(f"torch-{t}-*.whl") if "cuda" in r or "nvidia" in r or "triton" in r],
    "vllm_pins": [r for r in meta(f"vllm-{v}-*.whl") if r.startswith(("torch", "transformers", "triton", "flashinfer"))],
}
json.dump(doc, open(out, "w"), indent=1); print(json.dumps(doc, indent=1))
PY
