#!/usr/bin/env bash
# Call 7 (2026-11-28d): call 6's per-layer times again, new rule first this time, then
# the old; and the new rule's pick at the 14x14 3x3 layer by `weft run` alone (call 5's
# whole-space sweep timed that config 13.9 us, call 6's rule sweep 23.0).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
rm -rf .dev/bin; tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
for b in new old; do
  w=.dev/bin/weft; [ $b = old ] && w=.dev/bin/weft-old
  timeout 100 $w sweep --op conv2d-f16 --target vulkan --shapes resnet50 --sample 0 --budget-ms 5 \
    --json $OUT/rule2-$b.json > $OUT/rule2-$b.txt 2>&1
  echo "rule $b rc=$? at $(( $(date +%s) - start )) s"
done
S=n=1,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1
for i in 1 2; do
  .dev/bin/weft run --op conv2d-f16 --shape $S --target vulkan --iters 100 2>&1 | grep -E "^(config|median|error)"
  .dev/bin/weft run --op conv2d-f16 --shape $S --target vulkan --iters 100 --config wm=2,wn=4,fm=1,fn=2,bk=32,fb=1,pf=2,sk=8 2>&1 | grep -E "^(config|median|error)"
done 2>&1 | tee $OUT/run-14.txt
