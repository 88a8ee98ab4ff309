"""Writes a records file that forces one fp16 matmul config on every product anchor of
BERT-base / GPT-2 at `rows` = batch x tokens (the four shapes both models have), so that
`weft model bench` times the model with that tile everywhere.

    python3 force.py ROWS[,ROWS...] CONFIG OUT.json
"""
import json
import sys
import time

rows = [int(r) for r in sys.argv[1].split(",")]
config = sys.argv[2]
records = []
for m in rows:
    for n, k in [(2304, 768), (768, 768), (3072, 768), (768, 3072)]:
        records.append({
            "op": "model-anchor", "schedule": "matmul_f16",
            "shape": f"m={m},n={n},k={k} gemm stored", "dtype": "float16",
            "target": "cuda", "device": "NVIDIA H100 80GB HBM3 (sm_90)",
            "weft_version": "0.1.0", "config": config + ",splits=1", "time_us": 1.0,
            "reference_us": None, "space": 1, "timed": 1, "tuning_seconds": 0.0,
            "unix_time": int(time.time()),
        })
json.dump(records, open(sys.argv[3], "w"), indent=1)
