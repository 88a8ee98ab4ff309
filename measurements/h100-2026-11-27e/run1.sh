#!/usr/bin/env bash
# 2026-11-27e, call 1 (HEAD edf6f9a binaries): (1) every GPU check again after the fp16
# k-test change (workloads on CUDA+Vulkan vs float64, hand-built kernels, models vs ONNX
# Runtime); (2) issue 26's last conv miss, 1x1 1024->512 at 14² (5.8 vs cuDNN 5.2 us):
# ncu per kernel of weft's tuned split config and its neighbours, cuDNN's kernels by the
# profiler; (3) the fp32 rule's fit data again on the untested kernels at 20 shapes
# around the rule's three misses (every rule tile and split, --trials).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
D=measurements/h100-2026-11-27e
start=$(date +%s)
{
for t in .dev/checks/handmade-* .dev/checks/workloads-* .dev/checks/models-*; do
  echo "== $t"
  WEFT_REQUIRE=cuda,vulkan timeout 170 "$t" --test-threads=1 2>&1 | tail -n 6
  echo "exit ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s"
done
} > $OUT/checks.txt 2>&1
grep -E "^(==|exit|test result)" $OUT/checks.txt
S=n=1,c=1024,h=14,w=14,k=512,r=1,s=1,stride=1,pad=0
T=mma=16,wm=2,wn=2,fm=4,fn=2,bk=32,g=8,vec=8,cp=1,st=4,fb=1,cc=0,wg=0
{
for c in "$T,sk=8" "$T,sk=4" "$T,sk=2" "mma=16,wm=2,wn=2,fm=1,fn=2,bk=64,g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0"; do
  echo "== $c"
  timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes.sum \
    --csv .dev/bin/weft run --op conv2d-f16 --shape $S --config "$c" --target cuda --iters 3 2>&1 | grep -vE '^==PROF==' | tail -n 40
  .dev/bin/weft run --op conv2d-f16 --shape $S --config "$c" --target cuda --iters 200 2>&1 | grep -E 'median|error'
done
} > $OUT/ncu-conv.txt 2>&1
echo "ncu done at $(( $(date +%s) - start )) s"
timeout 60 python3 $D/cudnn_1x1.py > $OUT/cudnn-1x1.txt 2>&1; cat $OUT/cudnn-1x1.txt
FIT="m=509,n=509,k=509;m=333,n=555,k=777;m=257,n=257,k=257;m=512,n=512,k=512;m=196,n=1024,k=256;m=196,n=256,k=1024;m=196,n=256,k=2304;m=197,n=768,k=3072;m=197,n=768,k=768;m=128,n=768,k=3072;m=128,n=768,k=768;m=784,n=128,k=512;m=784,n=128,k=1152;m=3136,n=64,k=256;m=49,n=512,k=4608;m=64,n=4096,k=1024;m=128,n=128,k=16384;m=2048,n=2048,k=32;m=32,n=4096,k=1024;m=256,n=256,k=8192"
timeout 330 .dev/bin/weft sweep --op matmul --shapes "$FIT" --target cuda --sample 1000 --only bk=16,lm=4,mb=0 --trials --budget-ms 10 \
  --json $OUT/fit.json > $OUT/fit.txt 2>&1; echo "fit rc=$? at $(( $(date +%s) - start )) s"
tail -3 $OUT/fit.txt
