"""Which kernel cuBLAS runs for fp32 products at the shapes weft misses (torch.matmul, TF32 off),
and its time as the profiler records it: the tile and stage counts are in the names."""
import torch
from torch.profiler import profile, ProfilerActivity

torch.backends.cuda.matmul.allow_tf32 = False
shapes = [(1021, 1021, 1021), (999, 1001, 997), (1024, 1024, 1024), (509, 509, 509), (2039, 2039, 2039),
          (2048, 2048, 2048), (4096, 4096, 4096), (1000, 1000, 1000), (128, 50257, 768), (4095, 4097, 63),
          (2048, 512, 2048), (128, 2304, 768)]
for m, n, k in shapes:
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    for _ in range(5):
        a @ b
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            a @ b
        torch.cuda.synchronize()
    ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    names = {}
    for e in ev:
        names.setdefault(e.name, []).append(e.device_time)
    for name, ts in names.items():
        ts.sort()
        print(f"m={m},n={n},k={k}  {len(ts)}x  median {ts[len(ts)//2]:.1f} us  {name[:160]}")
