#!/usr/bin/env bash
# (1) Issue 26 item 2: the fp16 rule's new tensor-core cost model, untuned, at the 60
#     `mixed` shapes on CUDA (its times are set against the tuned bests of the 48-config
#     sweeps h100-2026-11-25c/f16-1.json and -25e/f16-2.json, same GPU model); the space's
#     first config, which read fast when timed first in those sweeps, timed here second
#     (after the rule's) as a fixed config.
# (2) The same rule on Vulkan at the six shapes of wgsl-ab.sh (tuned there, same call
#     family).
# (3) Issue 28 item 3: 16-byte f16 copies on Vulkan (vec=8), old writer (eight scalar
#     loads) against new (two vec4<f16> loads), beside the vec=4 config they extend.
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
FIRST="first:mma=16,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0"
timeout 300 .dev/bin/weft sweep --op matmul-f16 --target cuda --shapes mixed --sample 0 --fixed "$FIRST" \
  --json $OUT/rule-cuda.json > $OUT/rule-cuda.txt 2>&1; echo "rule cuda rc=$? at $(( $(date +%s) - start )) s"; tail -3 $OUT/rule-cuda.txt
S="m=128,n=2304,k=768;m=128,n=768,k=768;m=128,n=3072,k=768;m=128,n=768,k=3072;m=1024,n=1024,k=1024;m=4096,n=4096,k=4096"
timeout 100 .dev/bin/weft sweep --op matmul-f16 --target vulkan --shapes "$S" --sample 0 \
  --json $OUT/rule-vulkan.json > $OUT/rule-vulkan.txt 2>&1; echo "rule vulkan rc=$? at $(( $(date +%s) - start )) s"; tail -8 $OUT/rule-vulkan.txt
for c in "m=1024,n=1024,k=1024 mma=16,wm=2,wn=4,fm=2,fn=2,bk=32,g=8,cp=0,st=2,fb=2,cc=0,wg=0" \
         "m=128,n=3072,k=768 mma=16,wm=4,wn=2,fm=1,fn=2,bk=64,g=8,cp=0,st=2,fb=1,cc=0,wg=0" \
         "m=4096,n=4096,k=4096 mma=16,wm=2,wn=4,fm=4,fn=4,bk=16,g=8,cp=0,st=2,fb=1,cc=0,wg=0"; do
  set -- $c
  for b in weft-old weft; do for v in 4 8; do
    t=$(timeout 60 .dev/bin/$b run --op matmul-f16 --shape $1 --target vulkan --config $2,vec=$v --iters 50 2>&1 | grep -E "median|error" | tr '\n' ' ')
    echo "$1 vec=$v $b: $t"
  done; done
done | tee $OUT/vec8.txt
echo "done at $(( $(date +%s) - start )) s"
