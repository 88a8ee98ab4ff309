#!/usr/bin/env python3
"""The runtime-checks table of docs/results.md from the JSON of scripts/bounds-figures.sh:
per op x schedule x shape, CUDA and Vulkan checked / proven / unchecked kernel times, the
cost of the checks (checked / proven) and proven against unchecked.
    python3 scripts/bounds-table.py measurements/bounds-2026-11-23/*.json"""
import json, sys

T = ["cuda", "vulkan -checks=checked", "vulkan", "vulkan -checks=unchecked"]
rows, order = {}, []
for path in sys.argv[1:]:
    for r in json.load(open(path))["rows"]:
        if r["kind"] != "weft":
            continue
        key = (r["op"], r["schedule"], r["shape"])
        if key not in rows:
            rows[key] = {}
            order.append(key)
        rows[key][r["target"]] = r

def ms(r):
    return r["median_ms"] if r and r["status"] == "ok" and r["median_ms"] else None

def fmt(v):
    if v is None:
        return "-"
    return f"{v * 1e3:.1f} µs" if v < 1 else f"{v:.3f} ms"

print("| op | schedule | shape | cuda | vulkan checked | vulkan proven | vulkan unchecked | checked / proven | proven / unchecked | bounds |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
worst, within, total, unproven = 0.0, 0, 0, []
for key in order:
    t = rows[key]
    c, k, p, u = (ms(t.get(x)) for x in T)
    ratio = lambda a, b: f"{a / b:.2f}×" if a and b else "-"
    bounds = (t.get("vulkan") or {}).get("bounds") or "-"
    if p and u:
        total += 1
        d = p / u
        worst = max(worst, d)
        within += d <= 1.05
    if bounds not in ("off (proven)", "-"):
        unproven.append(key)
    print(f"| {key[0]} | {key[1]} | {key[2]} | {fmt(c)} | {fmt(k)} | {fmt(p)} | {fmt(u)} | {ratio(k, p)} | {ratio(p, u)} | {bounds} |")
print()
print(f"{within} of {total} rows: proven within 5% of unchecked; largest proven/unchecked {worst:.2f}×; "
      f"{len(unproven)} rows unproven: {unproven}")
