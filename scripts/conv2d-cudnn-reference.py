# cuDNN fp32 (TF32 off) conv2d NCHW kernel times with CUPTI (torch.profiler), same process
# timing as weft's: the median-free mean device time per call over 50 calls after warm-up.
import torch, sys
from torch.profiler import profile, ProfilerActivity
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
shapes = [(1,64,224,64),(1,128,122,128),(1,128,128,128),(1,64,56,64),(1,64,64,32),(1,64,112,128)]
print(torch.__version__, torch.backends.cudnn.version(), torch.cuda.get_device_name())
for (n,c,size,k) in shapes:
    x = torch.randn(n,c,size,size,device="cuda"); w = torch.randn(k,c,3,3,device="cuda"); b = torch.randn(k, device="cuda")
    for name, f in [("conv", lambda: torch.nn.functional.conv2d(x,w,padding=1)),
                    ("conv+bias+relu", lambda: torch.relu(torch.nn.functional.conv2d(x,w,b,padding=1)))]:
        for _ in range(10): f()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(50): f()
            torch.cuda.synchronize()
        total = sum(e.device_time_total for e in prof.key_averages() if e.device_time_total > 0 and e.key != "" and not e.key.startswith("cudaLaunch")) 
        kernels = sum(e.self_device_time_total for e in prof.key_averages())
        print(f"n={n},c={c},h={size},w={size},k={k} {name}: {kernels/50:.1f} us per call (CUPTI kernel time)")
