#!/usr/bin/env python3
"""The fit of the tensor-core cost model's constants for tiles stored into shared memory
element by element (WGSL, MSL: `ELEMENTWISE` in kernels/src/rule/tensor.rs) on the
H100's fp16 matmul sweeps through Vulkan (docs/rule-f16.md, "On Vulkan").
    python3 scripts/rule-f16-vulkan-fit.py        # fit on all 24 shapes
    python3 scripts/rule-f16-vulkan-fit.py 0      # fit on the even shapes, check on the odd
The model is the Rust one written over numpy arrays; keep the two alike. It differs from
the CUDA fit (scripts/rule-f16-fit.py) where WGSL's kernels differ: four-half global loads,
one store a half into the stage, an epilogue that passes every fragment through a
workgroup barrier, and no wgmma. The loss is the CUDA fit's: per shape, the speed (as a
fraction of the best) of a soft minimum of the estimates over the rule's candidates,
plus 0.3 x the mean squared log error of every estimate."""
import collections, importlib.util, json, math, sys
import numpy as np

# The optimiser and the helpers are the CUDA fit's (scripts/rule-f16-fit.py).
_spec = importlib.util.spec_from_file_location("fit", __file__.rsplit("/", 1)[0] + "/rule-f16-fit.py")
_fit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fit)
nelder_mead, cfg = _fit.nelder_mead, _fit.cfg

SWEEPS = ["h100-2026-11-27b/vkall-%d.json" % i for i in range(1, 5)] + [
    "h100-2026-11-27b/vksub-1.json", "h100-2026-11-27b/vksub-2.json"]
MPS = 128  # what wgpu tells the rule: DEFAULT_MULTIPROCESSORS
FIXED = dict(shared_bw=128.0, dram=1900.0, besides=40.0)
KEYS = ["rate", "gbw", "lat_step", "epi_frag", "split_launch", "pbw", "copy", "store", "pred"]
START = dict(rate=0.1, gbw=40, lat_step=600, epi_frag=300, split_launch=4000, pbw=16, copy=15,
             store=2, pred=0.5)


def load(root):
    times = collections.OrderedDict()
    for sweep in SWEEPS:
        for r in json.load(open(f"{root}/{sweep}"))["rows"]:
            d = times.setdefault(tuple(cfg(r["shape"]).values()), {})
            for t in r["trials"]:
                if t["ms"]:
                    d.setdefault(t["config"], []).append(t["ms"] * 1000)
    rows = []
    for si, ((m, n, k), d) in enumerate(times.items()):
        for s, us in d.items():
            c = cfg(s)
            bm, bn = c["wm"] * c["fm"] * 16, c["wn"] * c["fn"] * 16
            stage = (bm * (c["bk"] + 8) + c["bk"] * (bn + 8)) * 2
            smem = c["st"] * stage + c["wm"] * c["wn"] * 16 * 20 * 4
            t = math.exp(sum(map(math.log, us)) / len(us))
            rows.append((si, m, n, k, bm, bn, c["wm"] * c["wn"], c["fm"], c["fn"], c["bk"],
                         c["fb"], c["cc"], c.get("sk", 1), smem, c["fm"] * c["fn"] * 8, t))
    a = np.array(rows, dtype=float)
    names = "si m n k bm bn warps fm fn bk fb cc sk smem acc t".split()
    return {nm: a[:, i] for i, nm in enumerate(names)}, len(times)


def predict(D, P):
    """Microseconds at 1.755 GHz: tensor.rs's estimate with the elementwise constants."""
    m, n, k, bm, bn, bk = D["m"], D["n"], D["k"], D["bm"], D["bn"], D["bk"]
    sk, warps, fm, fn = D["sk"], D["warps"], D["fm"], D["fn"]
    threads = warps * 32
    blocks = np.ceil(m / bm) * np.ceil(n / bn) * sk
    kp = np.ceil(k / sk)
    steps = np.ceil(kp / bk)
    # Loads two k steps ahead (`pf`, absent: 1) hold a second set of staged loads.
    pf = D.get("pf", 1.0)
    regs = D["acc"] + 4 * (fm + fn) * D["fb"] + P["besides"] + (pf - 1) * (bm + bn) * bk / threads / 2
    res = np.minimum.reduce([np.floor(2048 / threads), np.floor(65536 / (threads * regs)),
                             np.floor(228 * 1024 / (D["smem"] + 1024)), np.full_like(m, 16)])
    res = np.maximum(res, 1)
    busiest = np.ceil(blocks / MPS)
    at = np.maximum(np.minimum(res, busiest), 1)
    rounds = np.ceil(busiest / at)
    tensor = at * bm * bn * bk / 4096 / P["rate"]
    operands = at * (bm + bn) * bk * 2 / P["gbw"]
    shared_b = warps * (fm + fn) * (bk / 16) * 512 + (bm + bn) * bk * 2
    shared_t = at * shared_b / P["shared_bw"]
    lanes = lambda L: np.where(L % 4 == 0, 4, np.where(L % 2 == 0, 2, 1))
    ragged = 1 + P["pred"] * (kp % bk != 0)
    copies = ((bm * bk / lanes(k) + bk * bn / lanes(n)) * P["copy"]
              + (bm + bn) * bk * P["store"]) / 32 * ragged
    mults = warps * (bk / 16) * (2 * fm * fn + fm + fn)
    issue = at * (copies + mults) / 4
    # The study of scripts/rule-f16-vulkan-fit-ext.py splits the floor by `pf` and `fb`;
    # without lat_mem and lat_frag it is lat_step alone, as fitted here.
    floor = (np.full_like(m, P["lat_step"]) + P.get("lat_mem", 0.0) / pf
             + P.get("lat_frag", 0.0) * (bk / 16) / D["fb"])
    step = np.maximum.reduce([tensor, operands, shared_t, issue, floor])
    epilogue = P["epi_frag"] * fm * fn
    compute = rounds * (steps * step + epilogue)
    cyc = np.maximum(compute, (m * k + k * n + m * n) * 2 / P["dram"])
    cyc += np.where(sk > 1, P["split_launch"] + sk * m * n * 8 / (P["pbw"] * MPS), 0)
    return cyc / 1755.0


def main():
    root = __file__.rsplit("/", 1)[0] + "/../measurements"
    D, N = load(root)
    si = D["si"].astype(int)
    best = np.array([D["t"][si == s].min() for s in range(N)])
    ratio = np.log(best[si] / D["t"])
    # The rule's candidates: one set of fragments, copies staged through registers.
    cand = (D["fb"] == 1) & (D["cc"] == 0)
    half = int(sys.argv[1]) if len(sys.argv) > 1 else None
    fit = np.arange(N) if half is None else np.arange(N)[np.arange(N) % 2 == half]
    inside = np.isin(si, fit)

    def params(x):
        return dict(FIXED, **{k: float(np.exp(v)) for k, v in zip(KEYS, x)})

    def loss(x):
        lp = np.log(predict(D, params(x)))
        e = (lp - np.log(D["t"]))[inside]
        mse = np.mean(np.bincount(si[inside], e * e, N)[fit] / np.bincount(si[inside], None, N)[fit])
        c = cand & inside
        z, s = -lp[c] / 0.05, si[c]
        zmax = np.full(N, -1e30)
        np.maximum.at(zmax, s, z)
        w = np.exp(z - zmax[s])
        soft = np.bincount(s, w * ratio[c], N)[fit] / np.bincount(s, w, N)[fit]
        return float(-np.mean(soft) + 0.3 * mse)

    x = np.log([START[k] for k in KEYS])
    for iters, step in [(3000, 0.3), (3000, 0.1), (2000, 0.03)]:
        x = nelder_mead(loss, x, iters, step)
    P = params(x)
    print(json.dumps({k: round(P[k], 4) for k in KEYS}))
    p = predict(D, P)
    for name, shapes in [("fit", fit), ("other", np.setdiff1d(np.arange(N), fit))]:
        r = []
        for s in shapes:
            c = np.where((si == s) & cand)[0]
            r.append(best[s] / D["t"][c[np.argmin(p[c])]])
        if r:
            r = np.array(r)
            print(f"{name} shapes: {len(r)}, >= 0.8x at {(r >= 0.8).sum()}, geometric mean "
                  f"{np.exp(np.log(r).mean()):.2f}x, worst {r.min():.2f}x")


if __name__ == "__main__":
    main()
