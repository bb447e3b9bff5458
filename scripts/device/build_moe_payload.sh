#!/bin/bash
# Build a payload that runs vLLM 0.26.0 with its MoE and MLA kernels on the lent H200 (#16 item 2).
# Like ../shared/device/scripts/build_payload.sh (the dense payload), but it KEEPS the MoE
# (_moe_C_stable_libtorch) and FlashMLA (_flashmla_C, _flashmla_extension_C) libraries and cuts
# every kept CUDA library to sm_90 cubins with fatbin_compact.py, so that DeepSeek-V3-like
# (MLA + MoE + MTP), Qwen3-MoE-like and GLM-like shapes can be captured with dummy weights.
# Run on a machine with PyPI access, never on the device (it has no network):
#
#   bash scripts/device/build_moe_payload.sh /tmp/moe-build .devx/payload-moe.tar.xz [FATBIN_DIR]
#
# FATBIN_DIR holds fatbin_compact.py (default: ../shared/device/scripts next to the checkout;
# pass it explicitly from elsewhere). The device call carries the result like the dense payload
# (`carry: [".devx/payload-moe.tar.xz", ".devx/scripts", ".devx/models"]`, 64 MiB in all with the
# tracked files): the script fails when the archive is over LIMIT_MIB (default 56 MiB).
# Status: built once here (2026-12-01, ~20 min on a loaded 2-core machine), never run on the device:
# the archive came out at 62 MiB (the dense one is 41 MiB), over the limit: _moe_C keeps 19.4 MB of
# live sm_90 cubins (from 40.1 MB), FlashMLA 0.3 MB. Next step: drop the quantised (Marlin/GPTQ/AWQ)
# MoE fatbins, which bf16 dummy weights never reach, or carry the MoE library in a second archive.
set -euo pipefail
W=${1:?workdir}; OUTF=${2:?output .tar.xz}; FATBIN_DIR=${3:-}
LIMIT_MIB=${LIMIT_MIB:-56}
case $OUTF in /*) ;; *) OUTF="$PWD/$OUTF" ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -z "$FATBIN_DIR" ]; then FATBIN_DIR=$(cd "$HERE/../../../shared/device/scripts" 2>/dev/null && pwd || true); fi
test -f "$FATBIN_DIR/fatbin_compact.py" || { echo "fatbin_compact.py not found; pass FATBIN_DIR" >&2; exit 2; }
mkdir -p "$W"/wheels "$W"/site
cd "$W"
PLAT=""
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
  manylinux1_x86_64 manylinux_2_24_x86_64 manylinux_2_26_x86_64 manylinux_2_31_x86_64 \
  manylinux_2_34_x86_64 manylinux_2_35_x86_64; do PLAT="$PLAT --platform $p"; done
DL="python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $PLAT"
# 1. vLLM (pins torch==2.11.0, the device's torch) and the import-time deps the image lacks
#    (the dense payload's list; MoE/MLA import nothing more at 0.26.0's module level)
$DL -d . vllm==0.26.0
$DL -d wheels pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  msgspec==0.23.0 pyzmq==27.3.0 pybase64==1.5.1 cbor2==6.3.0 cachetools==8.0.2 \
  openai-harmony==0.0.8 openai==3.57.0 httpx2==2.16.2 sniffio==1.3.1 llguidance==1.9.1 xgrammar==0.2.9 \
  apache-tvm-ffi==0.1.15.post2 "fastapi==0.136.3" starlette==1.10.0 partial-json-parser==0.2.1.1.post7
# 2. unpack without what no capture here loads: FA2 (FA3 on sm_90), the Rust frontend, deep_gemm
#    (fp8 block GEMMs: dummy bf16 weights do not reach it), fmha_sm100 (SM10x), qutlass, tool parsers
cd site
unzip -q ../vllm-0.26.0-*.whl -x 'vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so' 'vllm/vllm-rs' \
  'vllm/third_party/deep_gemm/*' 'vllm/third_party/fmha_sm100/*' 'vllm/_qutlass_C.abi3.so' \
  'vllm/_rust_tool_parser.abi3.so' 'vllm/entrypoints/serve/instrumentator/static/*'
: > vllm-0.26.0.dist-info/RECORD
# 3. sm_90 cubins only, in every kept kernel library
for so in vllm/_C_stable_libtorch.abi3.so vllm/_moe_C_stable_libtorch.abi3.so \
  vllm/_flashmla_C.abi3.so vllm/_flashmla_extension_C.abi3.so; do
  if [ -f "$so" ]; then
    python3 "$FATBIN_DIR/fatbin_compact.py" "$so" "$so.new" 90
    mv "$so.new" "$so"
  fi
done
for w in ../wheels/*.whl; do unzip -q -o "$w"; done
cd ..
find site -name __pycache__ -prune -exec rm -rf {} +
tar -cf - site | xz -T2 -9 > "$OUTF"
size_mib=$(( $(stat -c %s "$OUTF") / 1048576 ))
echo "$OUTF: ${size_mib} MiB (limit ${LIMIT_MIB} MiB)"
test "$size_mib" -le "$LIMIT_MIB" || { echo "payload too large for the device call" >&2; exit 1; }
