# PyTorch's depthwise conv2d (fp32, NCHW, groups = C, padding (k-1)/2) kernel times with
# CUPTI (torch.profiler): the mean device time per call over 100 calls after warm-up, in
# the same run as weft's tuner, which times kernels too.
import torch
from torch.profiler import profile, ProfilerActivity
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
# (b, c, h, w, k, stride): seed 000's shape, MobileNetV2's depthwise layers.
shapes = [(3,4,16,32,7,1),(1,32,112,112,3,1),(1,144,56,56,3,1),(1,192,28,28,3,1),
          (1,384,14,14,3,1),(1,960,7,7,3,1),(8,144,56,56,3,1),(1,144,56,56,3,2),(1,192,28,28,3,2)]
print(torch.__version__, torch.backends.cudnn.version(), torch.cuda.get_device_name())
for (b,c,h,w,k,s) in shapes:
    x = torch.randn(b,c,h,w,device="cuda"); wt = torch.randn(c,1,k,k,device="cuda")
    f = lambda: torch.nn.functional.conv2d(x, wt, stride=s, padding=(k-1)//2, groups=c)
    for _ in range(20): f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(100): f()
        torch.cuda.synchronize()
    ev = [e for e in prof.key_averages() if e.self_device_time_total > 0]
    total = sum(e.self_device_time_total for e in ev)
    names = "; ".join(e.key[:60] for e in ev)
    oh, ow = (h + 2*((k-1)//2) - k)//s + 1, (w + 2*((k-1)//2) - k)//s + 1
    mb = 4*(b*c*(h*w + oh*ow) + c*k*k) / 1e6
    print(f"b={b},c={c},h={h},w={w},k={k},stride={s}: {total/100:.2f} us per call (CUPTI kernel time; {mb:.2f} MB moved once) [{names}]")
