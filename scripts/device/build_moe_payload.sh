#!/bin/bash
# Build the MoE/MLA kernels that vLLM 0.26.0 needs on the lent H200 (issue 16 item 2), as a small
# second archive next to the dense payload of ../shared/device/ (.devx/payload.tar.xz, 41 MiB),
# which leaves out exactly three libraries: _moe_C_stable_libtorch (fused-MoE align/topk/sum
# kernels), _flashmla_C and _flashmla_extension_C. This script downloads the same vLLM wheel,
# cuts those three to sm_90 cubins (fatbin_compact.py), then drops the Marlin MoE fatbins from
# _moe_C (prune_fatbins.py: 18.4 MB of quantised-checkpoint kernels that bf16 dummy weights never
# launch), and packs the three into EXTRA (about 2 MB with xz -9). Run on a machine with PyPI
# access, never on the device (it has no network):
#
#   bash scripts/device/build_moe_payload.sh /tmp/moe-build .devx/payload-moe-extra.tar.xz [FATBIN_DIR]
#
# FATBIN_DIR holds fatbin_compact.py (default: ../shared/device/scripts next to the checkout).
# The device call carries both archives (`carry: [".devx/payload.tar.xz", ".devx/scripts",
# ".devx/moe-16"]` with EXTRA inside the snapshot folder; base 42.9 MB + extra 2.0 MB + the
# snapshot 1.3 MB + tracked files 11.6 MB = 58 MB of the 64 MiB), and scripts/device/moe_suite.py
# unpacks the base with dev.sh setup and then EXTRA over /tmp/site/vllm.
# History: the first build (2026-12-01, one archive with everything) came out at 62 MiB, over the
# limit with the working tree; the split + pruning was built and checked on the CPU side (the
# fatbins kept: moe_align_sum, topk_softmax, topk_softplus_sqrt, moe_wna16, grouped_topk,
# moe_permute_unpermute x2, dsv3_router_gemm x3), not yet loaded on the device.
set -euo pipefail
W=${1:?workdir}; OUTF=${2:?output .tar.xz}; FATBIN_DIR=${3:-}
LIMIT_MIB=${LIMIT_MIB:-8}
case $OUTF in /*) ;; *) OUTF="$PWD/$OUTF" ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -z "$FATBIN_DIR" ]; then FATBIN_DIR=$(cd "$HERE/../../../shared/device/scripts" 2>/dev/null && pwd || true); fi
test -f "$FATBIN_DIR/fatbin_compact.py" || { echo "fatbin_compact.py not found; pass FATBIN_DIR" >&2; exit 2; }
mkdir -p "$W"/site
command -v zstd >/dev/null || { echo "zstd is needed (prune_fatbins.py reads the compressed cubins)" >&2; exit 2; }
cd "$W"
PLAT=""
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
  manylinux1_x86_64 manylinux_2_24_x86_64 manylinux_2_26_x86_64 manylinux_2_31_x86_64 \
  manylinux_2_34_x86_64 manylinux_2_35_x86_64; do PLAT="$PLAT --platform $p"; done
DL="python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $PLAT"
# 1. the vLLM wheel (the dense payload's; its import-time deps are in the dense payload already)
$DL -d . vllm==0.26.0
# 2. the three libraries the dense payload leaves out
cd site
unzip -q -o ../vllm-0.26.0-*.whl 'vllm/_moe_C_stable_libtorch.abi3.so' 'vllm/_flashmla_C.abi3.so' \
  'vllm/_flashmla_extension_C.abi3.so'
# 3. sm_90 cubins only; then the Marlin MoE fatbins (PTX sm_80, cubins sm_75/sm_120) out of _moe_C
for so in vllm/_moe_C_stable_libtorch.abi3.so vllm/_flashmla_C.abi3.so vllm/_flashmla_extension_C.abi3.so; do
  python3 "$FATBIN_DIR/fatbin_compact.py" "$so" "$so.new" 90
  mv "$so.new" "$so"
done
python3 "$HERE/prune_fatbins.py" vllm/_moe_C_stable_libtorch.abi3.so vllm/_moe_C.pruned marlin Marlin
mv vllm/_moe_C.pruned vllm/_moe_C_stable_libtorch.abi3.so
tar -cf - vllm/_moe_C_stable_libtorch.abi3.so vllm/_flashmla_C.abi3.so vllm/_flashmla_extension_C.abi3.so \
  | xz -T2 -9 > "$OUTF"
size_kib=$(( $(stat -c %s "$OUTF") / 1024 ))
echo "$OUTF: ${size_kib} KiB (limit ${LIMIT_MIB} MiB)"
test "$size_kib" -le $(( LIMIT_MIB * 1024 )) || { echo "MoE archive too large for the device call" >&2; exit 1; }
