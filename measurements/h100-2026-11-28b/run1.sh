#!/usr/bin/env bash
# Call 1 (2026-11-28b, main d0872a3 + scripts/torch_check.sh's TARGETS): (1) weft against
# Hugging Face's own BERT-base and GPT-2 (same weights through ONNX) on CUDA and Vulkan,
# f16, by the rules of 2026-11-28 (the Vulkan attention rule changed; lavapipe in CI has no
# cooperative matrices); (2) the prepared checks of measurements/next: one shared K/V
# tile in attention (`attn-kv.sh`), 64-bit fp32 loads (`even-rows.sh`, `weft-base` = c22f279);
# (3) GPT-2's per-kernel tables on both targets by the rule; (4) ncu on the aligned copies.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
start=$(date +%s)
el() { echo "$1 at $(( $(date +%s) - start )) s"; }
WEFT=$W TARGETS="cuda vulkan" DTYPES=f16 SHAPES="1x128 2x37" timeout 200 bash scripts/torch_check.sh > $OUT/torch-check.txt 2>&1
el "torch check rc=$?"; tail -10 $OUT/torch-check.txt
S="bh=12,s=128,t=128,d=64,causal=0;bh=12,s=128,t=128,d=64,causal=1;bh=96,s=128,t=128,d=64,causal=1;bh=12,s=512,t=512,d=64,causal=1;bh=96,s=512,t=512,d=64,causal=0"
timeout 100 $W sweep --op attention-f16 --target vulkan --shapes "$S" --sample 400 --trials --budget-ms 10 \
  --json $OUT/attn-kv.json > $OUT/attn-kv.txt 2>&1; el "attn-kv rc=$?"
grep -vE "^weft:" $OUT/attn-kv.txt | tail -7
timeout 120 $W model bench zoo:gpt2 --dtype f16 --targets cuda,vulkan --iters 20 > $OUT/gpt2-kernels.txt 2>&1; el "bench rc=$?"
head -12 $OUT/gpt2-kernels.txt
{
for b in base new base new; do
  bin=$W; [ $b = base ] && bin=.dev/bin/weft-base
  timeout 45 $bin sweep --op matmul --target cuda --shapes cubes:2030:2050 --sample 0 --budget-ms 10 \
    --json $OUT/even-$b.json > /tmp/even-$b.txt 2>&1
  echo "$b rc=$?"; grep -E "^m=20" /tmp/even-$b.txt
done
} > $OUT/even-rows.txt 2>&1; el "even rows"
{
for c in al=1 al=0; do
  echo "== $c"
  timeout 40 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    --csv -c 6 $W run --op matmul --shape m=2039,n=2039,k=2039 --config "$c" --target cuda --iters 1 2>&1 | grep -vE '^==PROF==' | tail -n 60
done
} > $OUT/ncu-align.txt 2>&1; el "ncu"
cd $OUT && tar czf even.tgz even-*.json && rm even-*.json
