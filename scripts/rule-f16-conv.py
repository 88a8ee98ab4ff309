#!/usr/bin/env python3
"""The tensor-core cost model (kernels/src/rule/tensor.rs) at convolution shapes:
how the stated rule's picks score on the H100's conv2d-f16 sweeps (ResNet-50 at batch 8
and batch 1, 2026-11-27g, every sampled config's time) beside the 60 `mixed` matmul
shapes the model was fitted on, and what the changes tried do to all three
(docs/rule-f16.md, "Convolutions at batch 8 (2026-11-27g)").
    python3 scripts/rule-f16-conv.py              # the score table of the model as it is
    python3 scripts/rule-f16-conv.py picks        # every shape's pick, measured, predicted
    python3 scripts/rule-f16-conv.py explain      # the estimates at the b8 3x3 convolutions
    python3 scripts/rule-f16-conv.py variants     # the changes tried: scores, moved picks
    python3 scripts/rule-f16-conv.py grid         # three of their constants over a grid
The model is tensor.rs's estimate over numpy arrays, as it is today (wgmma epilogues once
a round, the staging tile over the stages); keep the two alike. A convolution is the
implicit GEMM m = n*p*q, n = k, k = r*s*c, over views (no wgmma). The rule's candidates
are generated as matmul_f16::rule_config offers them (the plain mma.sync tiles of at most
8 warps and their splits as rule::split_factors weighs them; on sm_90a, at matmuls, the
wgmma tiles of 3 or 4 stages up to 128x128), so the pick is the rule's own; a shape's
score is the best timed config's time over the pick's, where the pick was timed (else
the shape is counted as untimed: only a GPU can say). For the model as it is the picks
are the Rust rule's (ops/tests/rule_f16.rs gives the same matmul figures; at the
convolutions every pick is the sweep's own rule config). numpy only."""
import collections, itertools, json, math, sys
import numpy as np

MPS = 132
# The 60 `mixed` shapes: the sweeps ops/tests/rule_f16.rs reads; the first four are the
# ones the constants were fitted on (tensor.rs).
MATMUL = [
    "h100-2026-11-25c/f16-1.json", "h100-2026-11-25e/f16-2.json",
    "h100-2026-11-25b/f16-1-2.json", "h100-2026-11-25b/f16-2-2.json",
    "h100-2026-11-26d/f16-wgmma-splits-1.json", "h100-2026-11-26d/f16-wgmma-splits-2.json",
    "h100-2026-11-27/f16-mixed.json", "h100-2026-11-27b/deep-f16.json",
]
CONV_B8 = ["h100-2026-11-27g/conv-b8.json"]
CONV_B1 = ["h100-2026-11-27g/conv-b1.json"]

# tensor.rs's NATIVE constants before the change, and the hardware's.
CURRENT = dict(rate_sync=0.143, rate_wg=0.5, shared_bw=128.0, gbw=45.8, copy=14.7,
               pred=0.555, lat_step=431.0, lat_mem=131.0, epi=0.4535, dram=1900.0,
               launch=3700.0, split_launch=2530.0, pbw_sync=15.6, pbw_wg=15.6,
               besides=40.0, split_copy=0.0, window_step=0.0, split_epi=1.0)
# The changes tried (docs/rule-f16.md, "Convolutions at batch 8"), none kept:
# - window_step: cycles a k step over a window of several taps (r*s > 1) adds to the
#   step's floor (working out the tap, testing the padding);
# - pbw_sync: the partial sums' bytes a cycle per multiprocessor for mma.sync splits
#   (the wgmma splits' kept at 15.6);
# - split_copy: the copies' extra cost, as a fraction, in a split's parts (the part's
#   view of k on every load);
# - split_epi: the epilogue's cost in a split's parts, as a fraction (f32 partials).
VARIANTS = [
    ("window 150", dict(window_step=150.0)),
    ("window 200", dict(window_step=200.0)),
    ("window 300", dict(window_step=300.0)),
    ("splits", dict(pbw_sync=45.0, split_copy=0.5)),
    ("window 300 + splits", dict(window_step=300.0, pbw_sync=45.0, split_copy=0.5)),
    ("split epilogue 0.5", dict(split_epi=0.5)),
    ("split epi. 0.5 + pbw 30", dict(split_epi=0.5, pbw_sync=30.0, split_copy=0.5)),
]

SPLIT_FACTORS = [2, 4, 8, 16, 32, 64]
WARPS = [[2, 2], [2, 4], [4, 2], [4, 4]]
FRAGS = [[2, 2], [2, 4], [4, 2], [4, 4], [1, 2], [8, 4], [3, 4]]


def cfg(s):
    return dict((k, int(v)) for k, v in (kv.split("=") for kv in s.split(",")))


def text(c):
    keys = "mma wm wn fm fn bk g vec cp st fb cc wg".split()
    s = ",".join(f"{k}={c[k]}" for k in keys)
    return s + (f",sk={c['sk']}" if c.get("sk", 1) > 1 else "")


def rule_tiles():
    """The tiles matmul_f16::rule_config weighs on an H100 (sm_90a): the plain mma.sync
    variant of each tile of the space (space.rs) with at most 8 warps, then the wgmma
    tiles of 3 and 4 stages up to 128x128 (at matmuls only)."""
    sync, wgmma = [], []
    for (wm, wn), (fm, fn), bk in itertools.product(WARPS, FRAGS, [32, 64]):
        threads = wm * wn * 32
        bm = wm * fm * 16
        if threads > 256 or [fm, fn] == [8, 4]:  # 8x4: 256 accumulators, never fits
            continue
        rows_per_pass = threads * 8 // bk
        if bm % min(rows_per_pass, bm) != 0:  # space::loads_in_whole_passes
            continue
        sync.append(dict(mma=16, wm=wm, wn=wn, fm=fm, fn=fn, bk=bk, g=8, vec=8, cp=0, st=2,
                         fb=1, cc=0, wg=0))
    for wg, fm, fn, st in itertools.product([1, 2], [1, 2], [4, 8, 16], [3, 4]):
        if (wg * 64 * fm) * (fn * 16) <= 128 * 128:
            wgmma.append(dict(mma=16, wm=4 * wg, wn=1, fm=fm, fn=fn, bk=64, g=8, vec=8, cp=0,
                              st=st, fb=1, cc=0, wg=wg))
    return sync, wgmma


def shared(c, bm, bn):
    """F16Params::shared_bytes."""
    if c["wg"] > 0:
        ring = c["st"] * (bm + bn) * 64 * 2
        staging = c["wg"] * 64 * (bn + 4) * 4
        return (ring if staging <= ring else ring + staging) + 8 * c["st"] + 2048
    stage = (bm * (c["bk"] + 8) + c["bk"] * (bn + 8)) * 2
    return c["st"] * stage + c["wm"] * c["wn"] * 16 * 20 * 4


def gemm(shape):
    """A sweep's shape as (m, n, k) and its filter's taps (0 for a matmul)."""
    d = cfg(shape)
    if "m" in d:
        return (d["m"], d["n"], d["k"]), 0
    p = (d["h"] + 2 * d["pad"] - d["r"]) // d["stride"] + 1
    q = (d["w"] + 2 * d["pad"] - d["s"]) // d["stride"] + 1
    return (d["n"] * p * q, d["k"], d["r"] * d["s"] * d["c"]), d["r"] * d["s"]


def times_of(root, sweeps):
    """Each shape's timed configs, µs (the geometric mean where several sweeps timed
    one), as ops/tests/common/sweeps.rs reads them."""
    times = collections.OrderedDict()
    for sweep in sweeps:
        for r in json.load(open(f"{root}/{sweep}"))["rows"]:
            d = times.setdefault(r["shape"], {})
            for t in (r.get("trials") or [r["tuned"]]) + [r["rule"]]:
                if t.get("config") and t.get("ms") is not None:
                    d.setdefault(t["config"], []).append(t["ms"] * 1000)
    return collections.OrderedDict(
        (s, {c: math.exp(sum(map(math.log, us)) / len(us)) for c, us in d.items()})
        for s, d in times.items())


def rows_of(root, sweeps):
    """The rule's candidates at every shape (tile and split), with their times where
    timed (nan where not), and each shape's best timed config."""
    sync, wgmma = rule_tiles()
    times = times_of(root, sweeps)
    rows, shapes, best = [], [], []
    for si, (shape, d) in enumerate(times.items()):
        (m, n, k), taps = gemm(shape)
        shapes.append(shape)
        best.append(min(d.values()))
        tiles = list(sync)
        if taps == 0 and m >= 32 and n % 8 == 0 and k % 8 == 0:
            tiles += wgmma
        for order, c in enumerate(tiles):
            bm, bn = c["wm"] * c["fm"] * 16, c["wn"] * c["fn"] * 16
            splits = [1]
            if bm * bn >= 32 * 64 and (c["wg"] > 0 or c["bk"] == 32):
                ntiles = math.ceil(m / bm) * math.ceil(n / bn)
                splits += [s for s in SPLIT_FACTORS
                           if ntiles < 128 and ntiles * s <= 512 and k >= s * 128]
            for sk in splits:
                c2 = dict(c, sk=sk)
                acc = c["fm"] * bn // 2 if c["wg"] else c["fm"] * c["fn"] * 8
                rows.append((si, m, n, k, bm, bn, c["wm"] * c["wn"], c["fm"], c["fn"],
                             c["bk"], c["st"], c["wg"], sk, shared(c, bm, bn), acc,
                             d.get(text(c2), float("nan")), order, c["wm"], c["wn"], taps))
    names = "si m n k bm bn warps fm fn bk st wg sk smem acc t order wm wn taps".split()
    a = np.array(rows, dtype=float)
    D = {nm: a[:, i] for i, nm in enumerate(names)}
    D["shapes"], D["best"] = shapes, np.array(best)
    return D


def predict(D, P):
    """Microseconds at 1.755 GHz: tensor.rs's estimate of the rule's plain tiles (one
    set of fragments, register-staged copies) and 3-4 stage wgmma tiles."""
    m, n, k, bm, bn, bk = D["m"], D["n"], D["k"], D["bm"], D["bn"], D["bk"]
    sk, wg, warps, fm, fn = D["sk"], D["wg"] > 0, D["warps"], D["fm"], D["fn"]
    threads = warps * 32
    blocks = np.ceil(m / bm) * np.ceil(n / bn) * sk
    kp = np.ceil(k / sk)
    steps = np.ceil(kp / bk)
    regs = D["acc"] + np.where(wg, 0, 4 * (fm + fn)) + P["besides"]
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
    split_copy = 1 + P["split_copy"] * (sk > 1)
    copies = (bm * bk / lanes(k) + bk * bn / lanes(n)) / 32 * P["copy"] * ragged * split_copy
    mults = warps * (bk / 16) * (2 * fm * fn + fm + fn)
    issue = np.where(wg, 0, at * (copies + mults) / 4)
    in_flight = np.where(wg, D["st"] - 1, 1)
    window = np.where(wg | (D["taps"] <= 1), 0, P["window_step"])
    floor = P["lat_step"] + P["lat_mem"] / in_flight + window
    step = np.maximum.reduce([tensor, operands, shared_t, issue, floor])
    epi_blocks = np.where(wg, 1, at)
    epilogue = P["epi"] * epi_blocks * bm * bn * np.where(~wg & (sk > 1), P["split_epi"], 1)
    compute = rounds * (steps * step + epilogue + P["lat_mem"])
    cyc = np.maximum(compute, (m * k + k * n + m * n) * 2 / P["dram"]) + P["launch"]
    pbw = np.where(wg, P["pbw_wg"], P["pbw_sync"])
    cyc += np.where(sk > 1, P["split_launch"] + sk * m * n * 8 / (pbw * MPS), 0)
    return cyc / 1755.0


def order(D, p, c):
    """`c` sorted as rule::fastest ranks: rounded cycles, then fewer parts, the smaller
    tile, fewer threads, fewer rows, the space's order."""
    return c[np.lexsort((D["order"][c], D["bm"][c], D["warps"][c], D["bm"][c] * D["bn"][c],
                         D["sk"][c], np.round(p[c] * 1755)))]


def picks(D, P):
    """Per shape: the pick's row and its speed as a fraction of the best timed (nan
    where the pick was not timed)."""
    p = predict(D, P)
    out = []
    for s in range(len(D["shapes"])):
        pick = order(D, p, np.where(D["si"] == s)[0])[0]
        out.append((pick, D["best"][s] / D["t"][pick]))
    return out


def figure(ratios):
    r = np.array([x for x in ratios if not np.isnan(x)])
    return (f"{len(r):5d} {(r >= 0.8).sum():5d} {(r >= 0.9).sum():5d} "
            f"{np.exp(np.log(r).mean()):6.3f} {r.min():6.3f}")


def describe(D, i):
    c = lambda f: int(D[f][i])
    wg = " wgmma st" + str(c("st")) if c("wg") else ""
    return f"{c('bm')}x{c('bn')} w{c('wm')}x{c('wn')} f{c('fm')}x{c('fn')} bk{c('bk')}{wg} sk{c('sk')}"


def main():
    root = __file__.rsplit("/", 1)[0] + "/../measurements"
    sets = [("conv b8 (8)", rows_of(root, CONV_B8)), ("conv b1 (23)", rows_of(root, CONV_B1)),
            ("matmul, 8 sweeps (60)", rows_of(root, MATMUL)),
            ("matmul, fit's 4 (60)", rows_of(root, MATMUL[:4]))]
    arg = sys.argv[1] if len(sys.argv) > 1 else ""
    if arg == "picks":
        for name, D in sets:
            p = predict(D, CURRENT)
            for s, (a, ra) in enumerate(picks(D, CURRENT)):
                print(f"{name} {D['shapes'][s]}: {describe(D, a)}: {D['t'][a]:.2f} us "
                      f"(predicted {p[a]:.2f}) {ra:.2f}; best timed {D['best'][s]:.2f}")
        return
    if arg == "explain":
        D = sets[0][1]
        extra = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
        for name, P in [("as it is", CURRENT)] + ([("with " + sys.argv[2], dict(CURRENT, **extra))] if extra else []):
            p = predict(D, P)
            print(f"##### {name}")
            for s, shape in enumerate(D["shapes"]):
                rows = np.where(D["si"] == s)[0]
                if D["taps"][rows[0]] <= 1:
                    continue
                ranked = order(D, p, rows)
                print(f"== {shape} (m n k = {int(D['m'][rows[0]])} {int(D['n'][rows[0]])} "
                      f"{int(D['k'][rows[0]])}), best timed {D['best'][s]:.2f} us; the model's "
                      "first 5, then the timed candidates, fastest first: measured, predicted")
                timed = rows[~np.isnan(D["t"][rows])]
                for i in list(ranked[:5]) + list(timed[np.argsort(D["t"][timed])]):
                    print(f"   {describe(D, i):<30} {D['t'][i]:6.2f} {p[i]:6.2f}")
        return
    if arg == "variants":
        print(f"{'variant':<26}" + "".join(f"{n:<33}" for n, _ in sets))
        print(f"{'':<26}" + "timed  >=.8  >=.9    geo  worst    " * len(sets))
        for name, v in [("before", {})] + VARIANTS:
            P = dict(CURRENT, **v)
            print(f"{name:<26}" + "   ".join(figure([r for _, r in picks(D, P)]) for _, D in sets))
            for sname, D in sets[:3]:
                p = predict(D, P)
                for s, ((a, ra), (b, rb)) in enumerate(zip(picks(D, CURRENT), picks(D, P))):
                    if a != b:
                        got = f"{D['t'][b]:.2f} us, {rb:.2f}" if not np.isnan(rb) else "not timed"
                        print(f"    {sname} {D['shapes'][s]}: {describe(D, a)} ({ra:.2f}) -> "
                              f"{describe(D, b)} (predicted {p[b]:.2f} us; {got})")
        return
    if arg == "grid":
        for ws, sc, pb in itertools.product([0, 150, 300, 450], [0, 0.5, 1], [15.6, 30, 45, 60]):
            P = dict(CURRENT, window_step=ws, split_copy=sc, pbw_sync=pb)
            print(f"window_step {ws:3d} split_copy {sc:3.1f} pbw_sync {pb:4.1f} | " + " | ".join(
                figure([r for _, r in picks(D, P)]) for _, D in sets))
        return
    print(f"{'data':<24}timed  >=.8  >=.9    geo  worst")
    for name, D in sets:
        print(f"{name:<24}{figure([r for _, r in picks(D, CURRENT)])}")


if __name__ == "__main__":
    main()
