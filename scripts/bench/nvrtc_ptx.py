"""CUDA C -> PTX through NVRTC (the PyPI wheel `nvidia-cuda-nvrtc`), no GPU needed.

With the wheels `nvidia-cuda-nvcc` (ptxas), `nvidia-cuda-nvdisasm` and
`nvidia-cuda-cuobjdump` on PATH, a weft kernel's registers and SASS on a machine
without a GPU (what `docs/tensor-cores-perf.md` §8 used):

    weft emit --op matmul-f16 --shape m=4096,n=4096,k=4096 --config ... \
        --target "cuda -arch=sm_90" > k.cu
    python3 scripts/bench/nvrtc_ptx.py k.cu k.ptx          # LD_LIBRARY_PATH: libnvrtc.so.13
    ptxas -v -arch=sm_90 k.ptx -o k.cubin && cuobjdump -sass k.cubin
"""
import ctypes
import sys

nvrtc = ctypes.CDLL("libnvrtc.so.13")
src = open(sys.argv[1], "rb").read()
prog = ctypes.c_void_p()
if nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src, b"kernel.cu", 0, None, None) != 0:
    sys.exit("nvrtcCreateProgram failed")
opts = [b"--gpu-architecture=compute_90", b"-default-device", b"--std=c++17"]
opts += [a.encode() for a in sys.argv[3:]]
status = nvrtc.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
size = ctypes.c_size_t()
nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
log = ctypes.create_string_buffer(size.value)
nvrtc.nvrtcGetProgramLog(prog, log)
if log.value.strip():
    print(log.value.decode(), file=sys.stderr)
if status != 0:
    sys.exit(f"NVRTC failed ({status})")
nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(size))
ptx = ctypes.create_string_buffer(size.value)
nvrtc.nvrtcGetPTX(prog, ptx)
open(sys.argv[2], "wb").write(ptx.value)
