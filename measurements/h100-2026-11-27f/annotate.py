#!/usr/bin/env python3
"""Marks the weft model rows of a report.json that were measured with no tuning records
(`"tuned": 0`) before `weft report` recorded it itself: the transformer rows of
2026-11-27e call 5 (`h100-2026-11-27e/`, 13:20-13:23 UTC) and the CNN rows of
2026-11-27f call 3 (15:43-15:45 UTC), both run with WEFT_RECORDS=/tmp/none.json
(an absent file: every anchor by the stated rule). Their anchor counts were not recorded
and stay absent. Rows of other calls are left alone.

    python3 measurements/h100-2026-11-27f/annotate.py docs/report.json
"""
import json
import os
import sys

CALLS = [
    (("zoo:bert_base", "zoo:gpt2"), 1795785600, 1795785800),
    (("zoo:resnet50", "zoo:inception_v3", "zoo:mobilenet_v2"), 1795794200, 1795794300),
]

path = sys.argv[1]
d = json.load(open(path))
marked = 0
for r in d["models"]:
    if r["engine"] != "weft" or "tuned" in r:
        continue
    if any(r["model"] in models and lo <= r["unix_time"] <= hi for models, lo, hi in CALLS):
        r["tuned"] = 0
        marked += 1
tmp = path + ".tmp"
with open(tmp, "w") as f:
    json.dump(d, f, indent=2)
    f.write("\n")
os.replace(tmp, path)
print(f"marked {marked} rows of {path}", file=sys.stderr)
