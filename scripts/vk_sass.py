#!/usr/bin/env python3
"""The SASS NVIDIA's Vulkan driver compiled weft's WGSL into, read from its shader cache.

wgpu hands the driver SPIR-V (naga's, from weft's WGSL); the driver compiles it to the
GPU's machine code and, with its shader disk cache on, keeps the result in files under
`__GL_SHADER_DISK_CACHE_PATH`. Nsight Compute does not profile Vulkan compute, so this
is the way to see what a Vulkan kernel runs: which loads became `LDSM`, whether the f16
stores were merged, what robust buffer access added, how the loop was unrolled.

On the GPU machine, run the kernels with the cache on and kept, then bring the folder
back:

    export __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=/tmp/nvc \\
           __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1
    weft run --op matmul-f16 --shape m=1024,n=3072,k=768 --target vulkan
    tar czf $OUT/nvcache.tgz -C /tmp nvc

Here (or there), disassemble every pipeline the cache holds:

    python3 scripts/vk_sass.py /tmp/nvc --out /tmp/sass [--arch SM90]

Each cached pipeline becomes `NNN.sass` in `--out` (NNN: its order in the cache file,
which is the order the process compiled them), and one line per pipeline is printed:
its instruction count and how many of the instructions that matter for a GEMM-like
kernel it has. The cache names no kernel; tell pipelines apart by order and by their
instruction mix.

Needs: a zstd decoder (Python 3.14's `compression.zstd`, else PyPI `zstandard`) and
`nvdisasm` (CUDA's, on PATH or `--nvdisasm`; PyPI `nvidia-cuda-nvdisasm` has one).

The layout read here is the driver's, undocumented, as seen on driver 580-series
caches (2026-11-28): cache files `*.bin` hold zstd frames; a pipeline's frame holds an
object whose magic `NVuc` is followed by a section table (word 2: the section count;
from word 8, eight 32-bit words a section: type, length, offset from the magic). The
section of type 1 is the machine code.
"""

import argparse
import collections
import glob
import os
import re
import shutil
import struct
import subprocess
import sys

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CODE_SECTION = 1
COUNTED = ["HMMA", "LDSM", "LDS", "STS", "LDG", "STG", "BAR", "LDL", "STL", "BRA"]


def zstd_decoder():
    """A function decompressing one zstd frame from the start of a byte string."""
    try:
        from compression import zstd  # Python 3.14

        def decode(data):
            d = zstd.ZstdDecompressor()
            return d.decompress(data)

        return decode
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        sys.exit("vk_sass: needs a zstd decoder: Python 3.14, or `pip install zstandard`")

    def decode(data):
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)

    return decode


def find_nvdisasm(given):
    if given:
        return given
    on_path = shutil.which("nvdisasm")
    if on_path:
        return on_path
    for root in sys.path:
        candidate = os.path.join(root, "nvidia", "cu13", "bin", "nvdisasm")
        if os.path.exists(candidate):
            return candidate
    sys.exit("vk_sass: no nvdisasm (CUDA's; or `pip install nvidia-cuda-nvdisasm`; or --nvdisasm)")


def code_sections(blob):
    """The machine-code sections of the `NVuc` objects in `blob`."""
    out = []
    start = 0
    while True:
        base = blob.find(b"NVuc", start)
        if base < 0 or base + 32 > len(blob):
            return out
        word = lambda i: struct.unpack_from("<I", blob, base + 4 * i)[0]
        count = word(2) & 0xFFFF
        if base + 4 * (8 + 8 * count) > len(blob):
            return out
        for s in range(count):
            kind, length, offset = word(8 + 8 * s), word(9 + 8 * s), word(10 + 8 * s)
            if kind == CODE_SECTION and base + offset + length <= len(blob) and length:
                out.append(blob[base + offset : base + offset + length])
        start = base + 4


def histogram(sass):
    ops = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
        if m:
            ops[m.group(1)] += 1
    return ops


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cache", help="the folder __GL_SHADER_DISK_CACHE_PATH pointed at")
    ap.add_argument("--out", required=True, help="where the .sass files go")
    ap.add_argument("--arch", default="SM90", help="nvdisasm's --binary (default SM90)")
    ap.add_argument("--nvdisasm", help="the nvdisasm to run")
    args = ap.parse_args()
    decode = zstd_decoder()
    nvdisasm = find_nvdisasm(args.nvdisasm)
    files = sorted(glob.glob(os.path.join(args.cache, "**", "*.bin"), recursive=True))
    if not files:
        sys.exit(f"vk_sass: no *.bin under {args.cache}: was the disk cache on and kept?")
    os.makedirs(args.out, exist_ok=True)
    n = 0
    for path in files:
        data = open(path, "rb").read()
        for frame in re.finditer(re.escape(ZSTD_MAGIC), data):
            try:
                blob = decode(data[frame.start() :])
            except Exception:
                continue  # the magic's bytes inside something else
            for code in code_sections(blob):
                raw = os.path.join(args.out, f"{n:03d}.bin")
                with open(raw, "wb") as f:
                    f.write(code)
                run = subprocess.run(
                    [nvdisasm, "--binary", args.arch, raw], capture_output=True, text=True
                )
                if run.returncode != 0:
                    print(f"{n:03d}: nvdisasm failed: {run.stderr.strip()[:200]}")
                    n += 1
                    continue
                with open(os.path.join(args.out, f"{n:03d}.sass"), "w") as f:
                    f.write(run.stdout)
                ops = histogram(run.stdout)
                counts = " ".join(f"{k}={ops[k]}" for k in COUNTED if ops[k])
                print(f"{n:03d}: {sum(ops.values())} instructions  {counts}")
                n += 1
    if n == 0:
        sys.exit("vk_sass: the cache held no machine-code sections this script can read")


if __name__ == "__main__":
    main()
