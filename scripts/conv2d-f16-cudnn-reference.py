# cuDNN's fp16 convolution in NHWC (PyTorch channels_last half tensors, fp32 accumulation)
# kernel times with CUPTI (torch.profiler): the mean device time per call over 50 calls
# after warm-up, in the same run as weft's tuner, which times kernels too. Conv alone and
# conv + bias + ReLU (PyTorch runs the bias in cuDNN's conv and the ReLU as a kernel).
import torch
from torch.profiler import profile, ProfilerActivity
torch.backends.cudnn.benchmark = True
print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.get_device_name())
shapes = [(1,64,224,64),(1,128,122,128),(1,128,128,128),(1,64,56,64),(1,64,64,32),(1,64,112,128),
          (8,64,56,64),(32,128,28,128)]
for (n,c,size,k) in shapes:
    cl = torch.channels_last
    x = torch.rand(n,c,size,size,device="cuda",dtype=torch.half).to(memory_format=cl)
    w = torch.rand(k,c,3,3,device="cuda",dtype=torch.half).to(memory_format=cl)
    b = torch.rand(k,device="cuda",dtype=torch.half)
    for name, f in [("conv", lambda: torch.nn.functional.conv2d(x,w,padding=1)),
                    ("conv+bias+relu", lambda: torch.relu(torch.nn.functional.conv2d(x,w,b,padding=1)))]:
        for _ in range(20): f()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(50): f()
            torch.cuda.synchronize()
        ev = [e for e in prof.key_averages() if e.self_device_time_total > 0]
        t = sum(e.self_device_time_total for e in ev) / 50
        flops = 2*n*k*size*size*c*9
        names = "; ".join(e.key[:60] for e in ev)
        print(f"n={n},c={c},h={size},w={size},k={k} {name}: {t:.1f} us per call, {flops/t/1e6:.1f} TFLOP/s [{names}]")
