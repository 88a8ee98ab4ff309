#!/usr/bin/env bash
# 2026-11-27i, call 1 (main ac2d7d4 + `rm` = 3 allowed): four questions in one call.
#  A. Why fp32 products whose rows are not 32-byte aligned run 10-20% slower (cubes sweep:
#     k % 8 == 0 at cuBLAS's speed, k % 4 +10%, odd +20%): one config, 2048/2044/2047,
#     Nsight Compute's memory and stall sections; and k steps of 8 against 16 timed.
#  B. A 96-row tile (rm = 3, three blocks a multiprocessor at 168 registers) past 2048,
#     where 17^2 = 289 tiles of 128 overflow the 264 that two a multiprocessor hold.
#  C. GPT-2 at 128/512 tokens, batch 1/8, f16, CUDA, beside PyTorch (the stage tie-break).
#  D. run7 of 27h: the filter by TMA against the gathered filter, ResNet-50 b8 f16.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
start=$(date +%s)
R=wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,g=8,mb=0
t() { timeout 60 $W run --op matmul --shape m=$1,n=$1,k=$1 --config "$2" --target cuda --iters 30 2>&1 | grep -E '^(median|error)' | tr -s ' ' | tr '\n' ' ' | cut -c1-110; }
{
for s in 2048 2044 2047 2040 2041 2000 2001; do for bk in 8 16; do echo "A $s bk=$bk: $(t $s $R,bk=$bk)"; done; done
for s in 2048 2047; do echo "A $s cfg4x4-bk16: $(t $s wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=4,tn=4,bk=16,g=8,mb=0)"; done
} | tee $OUT/A-times.txt
echo "A times at $(( $(date +%s) - start )) s"
for s in 2048 2044 2047; do
  timeout 120 ncu --clock-control none -k regex:matmul -s 3 -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats --section Occupancy \
    --section InstructionStats --metrics l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum \
    $W run --op matmul --shape m=$s,n=$s,k=$s --config $R,bk=8 --target cuda --iters 5 > $OUT/ncu-$s.txt 2>&1
done
echo "A ncu at $(( $(date +%s) - start )) s"
{
for s in 2048 2049 2052 2064 2080 2100 2112 2176 1024 3001; do
  echo "B $s rule: $(timeout 60 $W run --op matmul --shape m=$s,n=$s,k=$s --target cuda --iters 30 2>&1 | grep -E '^(config|median|error)' | tr -s ' ' | tr '\n' ' ' | cut -c1-220)"
  for c in wm=2,wn=2,rm=3,rn=2,lm=4,ln=8,tm=4,tn=4,bk=8,g=8,mb=3 wm=2,wn=2,rm=3,rn=2,lm=4,ln=8,tm=4,tn=4,bk=16,g=8,mb=3 wm=2,wn=2,rm=3,rn=2,lm=4,ln=8,tm=4,tn=4,bk=8,g=8,mb=0 wm=4,wn=2,rm=3,rn=1,lm=4,ln=8,tm=4,tn=4,bk=8,g=8,mb=2 wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0; do
    echo "B $s $c: $(t $s $c)"
  done
done
} | tee $OUT/B-times.txt
echo "B at $(( $(date +%s) - start )) s"
{
for b in 1 8; do for s in 128 512; do
  timeout 120 python3 scripts/torch_models.py --models gpt2 --batch $b --seq $s --dtypes f16 --compile 2>/dev/null >> $OUT/torch-gpt2.jsonl
done; done
echo "torch done at $(( $(date +%s) - start )) s"
mkdir -p $OUT/report && cp docs/report.json $OUT/report/
timeout 200 $W report --no-compile --no-run --out $OUT/report \
  --models zoo:gpt2,zoo:gpt2@8 --model-targets cuda --model-dtypes f16 --model-seq 128,512 \
  --model-iters 20 --baselines $OUT/torch-gpt2.jsonl 2>&1 | tail -3
echo "report done at $(( $(date +%s) - start )) s"
rm -rf $OUT/report/charts
} 2>&1 | tee $OUT/C-gpt2.txt
if [ -x .dev/bin/weft-gather ]; then
for r in 1 2; do for b in gather tma; do
  bin=.dev/bin/weft; [ $b = gather ] && bin=.dev/bin/weft-gather
  echo "resnet50 b8 f16 $b: $(timeout 40 $bin model run zoo:resnet50 --batch 8 --dtype f16 --target cuda 2>&1 | grep -E '^(median|error)' | cut -c1-100 | tr -s ' ' | tr '\n' ' ')"
done; done | tee $OUT/D-tma-filter.txt
for b in gather tma; do
  bin=.dev/bin/weft; [ $b = gather ] && bin=.dev/bin/weft-gather
  timeout 60 $bin model bench zoo:resnet50 --batch 8 --dtype f16 --targets cuda > $OUT/D-bench-$b.txt 2>&1
done
fi
echo "all at $(( $(date +%s) - start )) s"
