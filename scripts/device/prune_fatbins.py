"""Replace the CUDA fatbins of an ELF .so whose kernels a run never launches with a tiny placeholder.

usage: python3 prune_fatbins.py SRC DST WORD [WORD...]

For issue 16's MoE payload: vLLM 0.26.0's `_moe_C_stable_libtorch.abi3.so`, already cut to sm_90 by
../shared/device/scripts/fatbin_compact.py, still holds 18.4 MB of Marlin MoE kernels (PTX for
sm_80, cubins for sm_75/sm_120), which only quantised (GPTQ/AWQ/FP4) checkpoints reach; bf16 dummy
weights take the Triton fused-MoE path, which calls the align/topk/sum kernels kept here.
A fatbin is dropped when its (zstd-compressed) entries mention any WORD. Its bytes are replaced by
the smallest sm_90 cubin entry of the library (a valid module of another translation unit), so the
runtime still registers and loads it; the dropped kernels' host stubs then find no image and a
launch of one fails with "invalid device function" instead of running. The ELF layout is unchanged
(sizes and offsets stay, the rest is zeroed), as in fatbin_compact.py.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

MAGIC = 0xBA55ED50


def section(data: bytes, name: str) -> tuple[int, int]:
    e_shoff = struct.unpack_from("<Q", data, 0x28)[0]
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def sh(i: int) -> tuple[int, ...]:
        return struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize)

    strtab = sh(e_shstrndx)
    for i in range(e_shnum):
        s = sh(i)
        nm_off = strtab[4] + s[0]
        if data[nm_off : data.index(b"\0", nm_off)].decode() == name:
            return s[4], s[5]
    raise KeyError(name)


def walk(
    data: bytes, off: int, size: int
) -> list[tuple[int, int, int, list[tuple[int, int, int, int, int]]]]:
    pos, end, out = off, off + size, []
    while pos + 16 <= end:
        magic, _ver, hsz, fsz = struct.unpack_from("<IHHQ", data, pos)
        if magic != MAGIC:
            pos += 8
            continue
        entries, p = [], pos + hsz
        while p < pos + hsz + fsz:
            kind, _unk, ehsz, esz = struct.unpack_from("<HHIQ", data, p)
            if ehsz == 0:
                break  # zeroed tail left by fatbin_compact.py
            arch = struct.unpack_from("<I", data, p + 28)[0]
            entries.append((p, kind, ehsz, esz, arch))
            p += ehsz + esz
        out.append((pos, hsz, fsz, entries))
        pos = (pos + hsz + fsz + 7) & ~7
    return out


def payload_text(data: bytes, p: int, ehsz: int, esz: int) -> bytes:
    body = bytes(data[p + ehsz : p + ehsz + esz])
    if body[:4] == b"\x28\xb5\x2f\xfd":  # zstd frame
        return subprocess.run(["zstd", "-dcq"], input=body, capture_output=True, check=False).stdout
    return body


def main() -> None:
    src, dst, words = sys.argv[1], sys.argv[2], [w.encode() for w in sys.argv[3:]]
    data = bytearray(Path(src).read_bytes())
    off, size = section(data, ".nv_fatbin")
    fbs = walk(data, off, size)
    cubins = [
        (esz + ehsz, p)
        for (_, _, _, es) in fbs
        for (p, kind, ehsz, esz, arch) in es
        if kind == 2 and arch == 90
    ]
    if not cubins:
        sys.exit(f"{src}: no sm_90 cubin to use as the placeholder")
    n, p = min(cubins)
    placeholder = bytes(data[p : p + n])
    before = after = dropped = 0
    for i, (pos, hsz, fsz, entries) in enumerate(fbs):
        before += fsz
        live = sum(ehsz + esz for (_, _, ehsz, esz, _) in entries)
        if any(any(w in payload_text(data, p, ehsz, esz) for w in words) for (p, _, ehsz, esz, _) in entries):
            start = pos + hsz
            data[start : start + fsz] = placeholder + b"\0" * (fsz - len(placeholder))
            struct.pack_into("<Q", data, pos + 8, len(placeholder))
            after += len(placeholder)
            dropped += 1
            print(f"  fatbin {i}: {live} bytes dropped (placeholder {len(placeholder)} bytes)")
        else:
            after += live
    Path(dst).write_bytes(data)
    print(
        f"{src}: {len(fbs)} fatbins, {dropped} replaced; live entries {before} -> {after} bytes; wrote {dst}"
    )


if __name__ == "__main__":
    main()
