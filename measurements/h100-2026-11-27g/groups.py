#!/usr/bin/env python3
"""Per kernel group sums of two `weft model bench` outputs (old, new): attention, layer
norms, softmax and row reductions, products, the rest. usage: groups.py OLD NEW"""
import re, sys

def parse(f):
    out, cur = {}, None
    for line in open(f):
        m = re.match(r"per kernel on (\w+)", line)
        if m:
            cur = m.group(1); out[cur] = []; continue
        if cur and re.match(r"\s*\d+\s", line):
            t = re.search(r"([\d.]+) (us|ms)\s+[\d.]+%\s*$", line)
            if not t:
                continue
            v = float(t.group(1)) * (1000 if t.group(2) == 'ms' else 1)
            g = 'other'
            for key, name in [('attention template', 'attention'), ('layer norm template', 'layer norm'),
                              ('softmax template', 'softmax'), ('sum template', 'rows'), ('mean template', 'rows'),
                              ('max template', 'rows'), ('matmul', 'products')]:
                if key in line:
                    g = name; break
            out[cur].append((g, v))
    return out

o, n = parse(sys.argv[1]), parse(sys.argv[2])
print(f"{'target':8} {'group':11} {'kernels':>7} {'old us':>9} {'new us':>9} {'each old':>9} {'each new':>9} {'new/old':>8}")
for t in o:
    for g in ['attention', 'layer norm', 'softmax', 'rows', 'products', 'other']:
        a = [v for gg, v in o[t] if gg == g]; b = [v for gg, v in n[t] if gg == g]
        if not a:
            continue
        print(f"{t:8} {g:11} {len(a):7} {sum(a):9.1f} {sum(b):9.1f} {sum(a)/len(a):9.2f} {sum(b)/max(1,len(b)):9.2f} {sum(b)/sum(a):8.3f}")
