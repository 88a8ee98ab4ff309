#!/usr/bin/env bash
# Checks weft's kernel time against Nsight Compute's `gpu__time_duration` for a short
# (~5 µs) and a long (~5 ms) kernel, and writes the comparison as markdown, which
# `weft report` puts on the results page (`timing-check.md` beside `results.md`).
#
#   bash scripts/timing-check.sh [WEFT] [OUT_DIR]      # on a machine with CUDA and ncu
#
# weft's time comes from a plain `weft run` (CUDA events around back-to-back runs
# replayed as a graph); ncu's from profiling the same command's launches with
# `--clock-control none`, so the GPU runs at the clocks it runs at without ncu.
set -euo pipefail
weft=${1:-weft}
out=${2:-docs}
tmp=$(mktemp -d)
cases=(
  "vecadd|grid-stride|n=2097152"
  "matmul|template|m=512,n=512,k=512"
  "matmul|template|m=4096,n=4096,k=4096"
)
: > "$tmp/rows"
for c in "${cases[@]}"; do
  IFS='|' read -r op schedule shape <<<"$c"
  "$weft" run --op "$op" --schedule "$schedule" --shape "$shape" --target cuda --iters 200 \
    > "$tmp/run.txt"
  for cache in none all; do
    ncu --clock-control none --cache-control "$cache" --metrics gpu__time_duration.sum \
      --launch-skip 5 --launch-count 30 --csv --print-units base \
      "$weft" run --op "$op" --schedule "$schedule" --shape "$shape" --target cuda --iters 40 \
      > "$tmp/ncu-$cache.csv" 2> "$tmp/ncu.err" || { cat "$tmp/ncu.err" >&2; exit 1; }
  done
  python3 - "$op" "$schedule" "$shape" "$tmp/run.txt" "$tmp/ncu-none.csv" "$tmp/ncu-all.csv" >> "$tmp/rows" <<'PY'
import csv, re, statistics, sys
op, schedule, shape, run, warm_csv, cold_csv = sys.argv[1:]
units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
def seconds(label, text):
    m = re.search(label + r"\s+([0-9.]+) (ns|us|ms|s)\b", text)
    return float(m.group(1)) * units[m.group(2)] if m else None
text = open(run).read()
weft = seconds("median", text)
host = seconds("host", text)
scale = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
def durations(path):
    rows = [r for r in csv.reader(l for l in open(path) if l.startswith('"'))]
    head, body = rows[0], rows[1:]
    name, unit, value = head.index("Metric Name"), head.index("Metric Unit"), head.index("Metric Value")
    return [float(r[value].replace(",", "")) * scale[r[unit]] for r in body if r[name] == "gpu__time_duration.sum"]
warm, cold = durations(warm_csv), durations(cold_csv)
med = statistics.median(warm)
diff = (weft - med) / med
fmt = lambda s: f"{s * 1e6:.2f} µs" if s < 1e-3 else f"{s * 1e3:.3f} ms"
verdict = "within 15%" if abs(diff) <= 0.15 else "**outside 15%**"
print(f"| {op}/{schedule} {shape} | {fmt(weft)} | {fmt(med)} ({len(warm)} launches) | {diff:+.1%} ({verdict}) | {fmt(statistics.median(cold))} | {fmt(host) if host else '-'} |")
PY
done
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
{
  echo "### Kernel time checked against Nsight Compute"
  echo
  echo "On $gpu, $(date -u +'%Y-%m-%d %H:%M UTC'), by \`scripts/timing-check.sh\`: weft's median kernel time (\`weft run --iters 200\`) against the median \`gpu__time_duration\` that \`ncu --clock-control none\` reports for 30 launches of the same kernel. weft times back-to-back runs, so a kernel whose data fits in the GPU's L2 cache (50 MB on an H100) finds it there, as it does in a model where the previous kernel just wrote it; ncu is therefore asked for the same state (\`--cache-control none\`), and its default (L2 flushed before every launch) is shown beside. *host* is what the host sees per run (launch, then wait)."
  echo
  echo "| kernel | weft kernel time | ncu, L2 as left by the previous run | weft vs ncu | ncu, L2 flushed | host (launch + wait) |"
  echo "|---|---:|---:|---:|---:|---:|"
  cat "$tmp/rows"
} > "$out/timing-check.md"
cat "$out/timing-check.md"
