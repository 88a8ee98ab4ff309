"""cuBLAS (through PyTorch) on the testbed's shapes, fp16, kernel time: 50 back-to-back
calls captured in a CUDA graph, median of 15 replays. Rows: the product alone, and
linear + tanh-GELU (two kernels, what eager PyTorch runs)."""
import torch

torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True


def graph_time(fn, reps=50):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    ts = []
    for _ in range(15):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / reps)
    return sorted(ts)[len(ts) // 2]


for m, n, k in [(4096, 3072, 768), (4096, 2304, 768), (4096, 768, 3072), (1024, 3072, 768)]:
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    w = torch.randn(n, k, device="cuda", dtype=torch.float16) * 0.1
    bias = torch.randn(n, device="cuda", dtype=torch.float16)
    mm = graph_time(lambda: torch.matmul(x, w.t()))
    lin = graph_time(lambda: torch.nn.functional.linear(x, w, bias))
    gelu = graph_time(lambda: torch.nn.functional.gelu(torch.nn.functional.linear(x, w, bias), approximate="tanh"))
    tf = 2 * m * n * k / (mm * 1e-6) / 1e12
    print(f"torch m n k = {m} {n} {k}: matmul {mm:.2f} us ({tf:.0f} TFLOP/s), linear+bias {lin:.2f} us, linear+gelu {gelu:.2f} us")
