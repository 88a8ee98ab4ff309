#!/usr/bin/env bash
# BERT-base at batch 1, sequence 512 read 5.98 and 7.93 ms on Vulkan in models-vk.sh (and
# 8.19 ms in yesterday's figure) but 2.155 ms twice in b1-512-vk.sh. The same sequence
# of processes as models-vk.sh, with the SM clock sampled every 50 ms (call 1); then
# (call 2) with the driver's shader disk cache off, so that every process compiles its
# pipelines afresh, as on a machine that never ran the model: __GL_SHADER_DISK_CACHE=0.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,pstate,clocks_throttle_reasons.active \
  --format=csv -lms 50 > $OUT/smi.csv 2>&1 &
smi=$!
t0=$(date +%s%N)
stamp() { echo "$(( ($(date +%s%N) - t0) / 1000000 )) ms: $*"; }
RUNS=${RUNS:-"1,128,20,--no-kernels 1,512,20,--no-kernels 1,512,20,--no-kernels 1,512,10, 8,128,20,--no-kernels 1,512,20,--no-kernels"}
for run in $RUNS; do
  run=${run//,/ }
  set -- $run
  stamp "start b$1/$2 iters $3 $4"
  t=$(timeout 120 .dev/bin/weft model bench zoo:bert_base --dtype f16 --targets vulkan --batch $1 --seq $2 \
      --iters $3 $4 2>&1 | grep -E "^vulkan" | awk '{print $(NF-5), $(NF-4), "min", $(NF-3), $(NF-2)}')
  stamp "end b$1/$2: $t"
done | tee $OUT/slow-512.txt
kill $smi
