#!/usr/bin/env python3
"""The fit of the tensor-core cost model's constants (kernels/src/rule/tensor.rs) on
the H100's fp16 matmul sweeps, and the check on half the shapes (docs/rule-f16.md).
    python3 scripts/rule-f16-fit.py            # fit on all 60 shapes
    python3 scripts/rule-f16-fit.py 0          # fit on the even shapes, check on the odd
The model is the Rust one written over numpy arrays; keep the two alike. The loss is
for the pick: per shape, the speed (as a fraction of the best) of a soft minimum of the
model's estimates over the rule's candidates (plain mma.sync tiles and 4-stage wgmma
tiles), plus 0.3 x the mean squared log error of every estimate. Nelder-Mead, numpy
only. The figures it prints pick among the timed candidates only (an upper bound on
what the rule's pick can do; ops/tests/rule_f16.rs gives the rule's own)."""
import collections, json, math, sys
import numpy as np

SWEEPS = [
    "h100-2026-11-25c/f16-1.json", "h100-2026-11-25e/f16-2.json",
    "h100-2026-11-25b/f16-1-2.json", "h100-2026-11-25b/f16-2-2.json",
]
# Timed first at every shape, and 2-3.5 us faster at tiny shapes than its work explains.
FIRST = "mma=16,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0"
MPS = 132
FIXED = dict(rate_wg=0.5, shared_bw=128.0, dram=1900.0, besides=40.0)
KEYS = ["rate_sync", "gbw", "lat_mem", "lat_step", "epi", "launch", "split_launch", "pbw",
        "copy", "pred"]
START = dict(rate_sync=0.14, gbw=46, lat_mem=130, lat_step=430, epi=0.45, launch=3700,
             split_launch=2500, pbw=16, copy=15, pred=0.5)


def cfg(s):
    return dict((k, int(v)) for k, v in (kv.split("=") for kv in s.split(",")))


def shared(c, bm, bn):
    if c["wg"] > 0:
        return c["st"] * (bm + bn) * 64 * 2 + c["wg"] * 64 * (bn + 4) * 4 + 8 * c["st"] + 2048
    stage = (bm * (c["bk"] + 8) + c["bk"] * (bn + 8)) * 2
    return c["st"] * stage + c["wm"] * c["wn"] * 16 * 20 * 4


def load(root):
    times = collections.OrderedDict()
    for sweep in SWEEPS:
        for r in json.load(open(f"{root}/{sweep}"))["rows"]:
            d = times.setdefault(tuple(cfg(r["shape"]).values()), {})
            for t in r["trials"]:
                if t["config"] != FIRST:
                    d.setdefault(t["config"], []).append(t["ms"] * 1000)
    rows = []
    for si, ((m, n, k), d) in enumerate(times.items()):
        for s, us in d.items():
            c = cfg(s)
            if c["wm"] * c["wn"] > 8:  # 16-warp tiles: never the rule's, spilled
                continue
            bm, bn = c["wm"] * c["fm"] * 16, c["wn"] * c["fn"] * 16
            acc = c["fm"] * bn // 2 if c["wg"] else c["fm"] * c["fn"] * 8
            t = math.exp(sum(map(math.log, us)) / len(us))
            rows.append((si, m, n, k, bm, bn, c["wm"] * c["wn"], c["fm"], c["fn"], c["bk"],
                         c["st"], c["cp"], c["fb"], c["wg"], c.get("sk", 1),
                         shared(c, bm, bn), acc, t))
    a = np.array(rows, dtype=float)
    names = "si m n k bm bn warps fm fn bk st cp fb wg sk smem acc t".split()
    return {nm: a[:, i] for i, nm in enumerate(names)}


def predict(D, P):
    """Microseconds at 1.755 GHz: tensor.rs's estimate."""
    m, n, k, bm, bn, bk = D["m"], D["n"], D["k"], D["bm"], D["bn"], D["bk"]
    sk, wg, warps, fm, fn = D["sk"], D["wg"] > 0, D["warps"], D["fm"], D["fn"]
    threads = warps * 32
    blocks = np.ceil(m / bm) * np.ceil(n / bn) * sk
    kp = np.ceil(k / sk)
    steps = np.ceil(kp / bk)
    regs = D["acc"] + np.where(wg, 0, 4 * (fm + fn) * D["fb"]) + P["besides"]
    res = np.minimum.reduce([np.floor(2048 / threads), np.floor(65536 / (threads * regs)),
                             np.floor(228 * 1024 / (D["smem"] + 1024)), np.full_like(m, 16)])
    res = np.maximum(res, 1)
    busiest = np.ceil(blocks / MPS)
    at = np.maximum(np.minimum(res, busiest), 1)
    rounds = np.ceil(busiest / at)
    tensor = at * bm * bn * bk / 4096 / np.where(wg, P["rate_wg"], P["rate_sync"])
    operands = at * (bm + bn) * bk * 2 / P["gbw"]
    shared_b = warps * (fm + fn) * (bk / 16) * 512 + (bm + bn) * bk * 2
    shared_t = np.where(wg, 0, at * shared_b / P["shared_bw"])
    lanes = lambda L: np.where(L % 8 == 0, 8, np.where(L % 4 == 0, 4, np.where(L % 2 == 0, 2, 1)))
    ragged = 1 + P["pred"] * (kp % bk != 0)
    copies = (bm * bk / lanes(k) + bk * bn / lanes(n)) / 32 * P["copy"] * ragged
    mults = warps * (bk / 16) * (2 * fm * fn + fm + fn)
    issue = np.where(wg, 0, at * (copies + mults) / 4)
    in_flight = np.where(D["cp"] + wg > 0, D["st"] - 1, 1)
    floor = P["lat_step"] + P["lat_mem"] / in_flight
    step = np.maximum.reduce([tensor, operands, shared_t, issue, floor])
    compute = rounds * (steps * step + P["epi"] * at * bm * bn + P["lat_mem"])
    cyc = np.maximum(compute, (m * k + k * n + m * n) * 2 / P["dram"]) + P["launch"]
    cyc += np.where(sk > 1, P["split_launch"] + sk * m * n * 8 / (P["pbw"] * MPS), 0)
    return cyc / 1755.0


def nelder_mead(f, x0, iters, step):
    n = len(x0)
    S = [x0] + [x0 + step * np.eye(n)[i] for i in range(n)]
    F = [f(x) for x in S]
    for _ in range(iters):
        o = np.argsort(F)
        S, F = [S[i] for i in o], [F[i] for i in o]
        c = np.mean(S[:-1], axis=0)
        xr = c + (c - S[-1])
        fr = f(xr)
        if fr < F[0]:
            xe = c + 2 * (c - S[-1])
            fe = f(xe)
            S[-1], F[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < F[-2]:
            S[-1], F[-1] = xr, fr
        else:
            xc = c + 0.5 * (S[-1] - c)
            fc = f(xc)
            if fc < F[-1]:
                S[-1], F[-1] = xc, fc
            else:
                S = [S[0]] + [S[0] + 0.5 * (x - S[0]) for x in S[1:]]
                F = [F[0]] + [f(x) for x in S[1:]]
    i = int(np.argmin(F))
    return S[i]


def main():
    root = __file__.rsplit("/", 1)[0] + "/../measurements"
    D = load(root)
    si = D["si"].astype(int)
    best = np.array([D["t"][si == s].min() for s in range(60)])
    ratio = np.log(best[si] / D["t"])
    plain = (D["fb"] == 1) & (D["cp"] == 0) & (D["wg"] == 0)
    cand = plain | ((D["wg"] > 0) & (D["st"] == 4))
    half = int(sys.argv[1]) if len(sys.argv) > 1 else None
    fit = np.arange(60) if half is None else np.arange(60)[np.arange(60) % 2 == half]
    inside = np.isin(si, fit)

    def params(x):
        return dict(FIXED, **{k: float(np.exp(v)) for k, v in zip(KEYS, x)})

    def loss(x):
        lp = np.log(predict(D, params(x)))
        e = (lp - np.log(D["t"]))[inside]
        mse = np.mean(np.bincount(si[inside], e * e, 60)[fit] / np.bincount(si[inside], None, 60)[fit])
        c = cand & inside
        z, s = -lp[c] / 0.05, si[c]
        zmax = np.full(60, -1e30)
        np.maximum.at(zmax, s, z)
        w = np.exp(z - zmax[s])
        soft = np.bincount(s, w * ratio[c], 60)[fit] / np.bincount(s, w, 60)[fit]
        return float(-np.mean(soft) + 0.3 * mse)

    x = np.log([START[k] for k in KEYS])
    for iters, step in [(3000, 0.3), (3000, 0.1), (2000, 0.03)]:
        x = nelder_mead(loss, x, iters, step)
    P = params(x)
    print(json.dumps({k: round(P[k], 4) for k in KEYS}))
    p = predict(D, P)
    for name, shapes in [("fit", fit), ("other", np.setdiff1d(np.arange(60), fit))]:
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
