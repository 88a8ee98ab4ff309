#!/usr/bin/env python3
"""Rewrites ops/tests/data/h100-matmul-rule-tiles.csv (the fp32 rule's fit data) with the
shapes re-measured on the kernels with untested loads (2026-11-27e): each shape of the
sweeps given loses every row it had (times of the kernels that tested each load, not
comparable) and takes the sweeps' trials instead, in us, the rule's pick included; a
config two sweeps timed takes their geometric mean. The other shapes' rows stay as they
are. Usage, from the repository root:

    python3 scripts/rule-csv.py SWEEP.json... < OLD.csv > NEW.csv
"""
import json
import math
import sys


def shape_key(text):
    d = dict(kv.split("=") for kv in text.split(","))
    return int(d["m"]), int(d["n"]), int(d["k"])


def main():
    new = {}  # (m, n, k) -> {config: [us]}
    for path in sys.argv[1:]:
        for row in json.load(open(path))["rows"]:
            times = new.setdefault(shape_key(row["shape"]), {})
            timed = list(row.get("trials") or [])
            if not any(t["config"] == row["rule"]["config"] for t in timed):
                timed.append(row["rule"])
            for t in timed:
                if t.get("ms") is not None:
                    times.setdefault(t["config"], []).append(t["ms"] * 1000.0)
    comments, body = [], []
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line.startswith("#") or line.startswith("m,n,k"):
            comments.append(line)
            continue
        head = line.split(',"')[0]
        if tuple(map(int, head.split(","))) not in new:
            body.append(line)
    out = sys.stdout
    for line in comments:
        print(line, file=out)
    for line in body:
        print(line, file=out)
    for (m, n, k), times in new.items():
        for config, us in times.items():
            mean = math.exp(sum(map(math.log, us)) / len(us))
            print(f'{m},{n},{k},"{config}",{mean:.3f}', file=out)


main()
