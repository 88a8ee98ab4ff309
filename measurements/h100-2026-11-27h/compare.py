"""wgmma over views (27h) against the mma.sync configs (27g's sweeps of 96/64 configs) and
cuDNN, per shape: python3 compare.py (run from this folder)."""
import json


def load(path):
    return {r["shape"]: r for r in json.load(open(path))["rows"]}


def short(config):
    keep = ("wm", "fm", "fn", "st", "wg", "sk")
    return ",".join(p for p in config.split(",") if p.split("=")[0] in keep)


for b, old in [("b8", "../h100-2026-11-27g/conv-b8.json"), ("b1", "../h100-2026-11-27g/conv-b1.json")]:
    g = load(old)
    w = [load(f"conv-{b}-wg{i}.json") for i in (1, 2)] + [load(f"conv-{b}-split.json")]
    print(f"{b}: shape | mma.sync tuned (27g) | best wgmma unsplit | best wgmma split | cuDNN (27h) | best wgmma / mma.sync speed")
    for s, r in g.items():
        trials = [t for x in w for t in x[s]["trials"] if "wg=0" not in t["config"]]
        unsplit = min((t for t in trials if "sk=" not in t["config"]), key=lambda t: t["ms"])
        split = min((t for t in trials if "sk=" in t["config"]), key=lambda t: t["ms"], default=None)
        best = min([unsplit] + ([split] if split else []), key=lambda t: t["ms"])
        old_best = r["tuned"]["ms"]
        ref = w[-1][s]["reference_ms"]
        sp = f"{split['ms']*1e3:.1f} [{short(split['config'])}]" if split else "-"
        print(f"{s} | {old_best*1e3:.1f} [{short(r['tuned']['config'])}] | {unsplit['ms']*1e3:.1f} [{short(unsplit['config'])}] | {sp} | {ref*1e3:.1f} | {old_best/best['ms']:.2f}x")
