# cuBLAS's fp16 matmul (torch.matmul on half tensors: HGEMM with fp32 accumulation) kernel
# times with CUPTI (torch.profiler): the mean device time per call over 50 calls after
# warm-up, in the same run as weft's tuner, which times kernels too.
import torch
from torch.profiler import profile, ProfilerActivity
torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name())
for n in [1024, 2039, 4096]:
    a = torch.rand(n, n, device="cuda", dtype=torch.half)
    b = torch.rand(n, n, device="cuda", dtype=torch.half)
    f = lambda: torch.matmul(a, b)
    for _ in range(20): f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(50): f()
        torch.cuda.synchronize()
    ev = [e for e in prof.key_averages() if e.self_device_time_total > 0]
    total = sum(e.self_device_time_total for e in ev) / 50
    names = "; ".join(e.key[:70] for e in ev)
    print(f"m=n=k={n}: {total:.1f} us per call, {2*n**3/total/1e6:.1f} TFLOP/s [{names}]")
