# cuDNN's fp16 NHWC convolution at ResNet-50's 14² layers with 1024 input channels
# (batch 1, 1x1): each kernel it launches, with its mean device time (torch.profiler,
# 100 calls after warm-up, cudnn.benchmark on), to set beside weft's kernels.
import torch
from torch.profiler import profile, ProfilerActivity
torch.backends.cudnn.benchmark = True
print(torch.__version__, torch.backends.cudnn.version(), torch.cuda.get_device_name())
for k in (256, 512):
    cl = torch.channels_last
    x = torch.rand(1, 1024, 14, 14, device="cuda", dtype=torch.half).to(memory_format=cl)
    w = torch.rand(k, 1024, 1, 1, device="cuda", dtype=torch.half).to(memory_format=cl)
    f = lambda: torch.nn.functional.conv2d(x, w)
    for _ in range(30): f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(100): f()
        torch.cuda.synchronize()
    ev = [e for e in prof.key_averages() if e.self_device_time_total > 0]
    print(f"1x1 1024->{k} @14²: {sum(e.self_device_time_total for e in ev)/100:.2f} us per call")
    for e in ev:
        print(f"   {e.self_device_time_total/e.count:7.2f} us x{e.count/100:.0f}  {e.key[:140]}")
