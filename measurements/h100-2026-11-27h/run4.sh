#!/usr/bin/env bash
# 2026-11-27h, call 4: why ResNet-50 b8 f16 got slower as a whole (750 -> 770 us) while
# its kernels timed alone got faster (sum 692 -> 663 us). Hypothesis: consecutive kernels
# with different shared-memory needs (the wgmma kernels take 51-76 KB dynamic, the
# others <= 48 KB) make the multiprocessors change their L1/shared carveout between
# kernels. Old (main 1679310) and new, each with a runtime switch that sets one
# preferred carveout (`WEFT_CARVEOUT`, percent) on every function; alternating.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
{
for m in "resnet50 --batch 8" "inception_v3"; do
  for r in 1 2; do for c in "" 100; do for b in old new; do
    bin=.dev/bin/weft-new-c; [ $b = old ] && bin=.dev/bin/weft-old-c
    echo "$m f16 $b carveout=${c:-none}: $(WEFT_CARVEOUT=$c timeout 60 $bin model run zoo:$m --dtype f16 --target cuda 2>&1 | grep -E '^(median|error)' | cut -c1-60 | tr -s ' ' | tr '\n' ' ')"
  done; done; done
done
} > $OUT/carveout.txt 2>&1; cat $OUT/carveout.txt
echo "at $(( $(date +%s) - start )) s"
WEFT_CARVEOUT=100 timeout 60 .dev/bin/weft-new-c model bench zoo:resnet50 --batch 8 --dtype f16 --targets cuda > $OUT/bench-resnet50b8-new-c100.txt 2>&1
echo "at $(( $(date +%s) - start )) s"
