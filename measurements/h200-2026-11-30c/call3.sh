#!/usr/bin/env bash
# Call 3 (twelfth session): what a skinny product does before its wait (WEFT_PREFETCH: 0 nothing placed,
# wait = the wait alone with the kernel before triggering, 1 = every 16-byte piece prefetched, sectors = one
# prefetch a 32-byte sector), TinyLlama-shaped fp16 decode at batch 1, prompt 128: 4 layers, the four
# alternated twice; one layer's gate/up under ncu (time, DRAM bytes) for 0, 1 and sectors; then the best
# of the four against 0 at 22 layers; the float64 reference's ids with it.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
for r in 1 2; do for v in 0 wait 1 sectors; do
  WEFT_PREFETCH=$v timeout 60 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 --prompt-tokens 128 \
    --new-tokens 16 --iters 20 > /tmp/g4-$v-$r.txt 2>&1
  echo "l4 $v r$r $(grep -E '^decode step .*device' /tmp/g4-$v-$r.txt)"
done; done | tee -a $OUT/runs.txt
BEST=$(grep '^l4 ' $OUT/runs.txt | awk '$2!="0"{s[$2]+=$6;n[$2]++} END{for(k in s) print s[k]/n[k], k}' | sort -n | head -1 | awk '{print $2}')
echo "best lead at 4 layers: $BEST ($(( $(date +%s) - T0 )) s)" | tee -a $OUT/runs.txt
for v in 0 1 sectors; do
  WEFT_PREFETCH=$v timeout 90 ncu --clock-control none -k regex:layers_1_mlp_gate -c 3 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum \
    $W model generate zoo:llama --layers 2 --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 2 --iters 1 > /tmp/ncu-$v.txt 2>&1
  echo "== ncu gate/up WEFT_PREFETCH=$v"; grep -E "k0[0-9]+_model|gpu__time|dram__|lts__" /tmp/ncu-$v.txt | tail -10
done | tee -a $OUT/runs.txt
echo "ncu $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
WEFT_PREFETCH=$BEST timeout 60 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 \
  --intermediate 512 --vocab 1000 --target cuda --dtype f32 --batch 3 --prompt-tokens 40 --new-tokens 8 --iters 1 --check 2>&1 \
  | grep -E "^check" | sed "s/^/$BEST f32 b3 /" | tee -a $OUT/runs.txt
for v in $BEST 0; do
  K=$([ "$v" = 0 ] || echo --kernels)
  WEFT_PREFETCH=$v timeout 150 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
    --new-tokens 32 --iters 20 $K > $OUT/gen22-$v.txt 2>&1
  echo "l22 $v $(grep -E '^decode step .*device' $OUT/gen22-$v.txt)"
done | tee -a $OUT/runs.txt
echo "done $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
