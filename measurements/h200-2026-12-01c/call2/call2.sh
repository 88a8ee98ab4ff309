#!/usr/bin/env bash
# Call 2 (eighteenth session): SASS of Vulkan's implicit GEMM at Inception-v3's b8 5x5 (the model's config), beside the same
# product over stored operands and the same conv on CUDA; the NVIDIA shader cache of each kept apart.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
CF="mma=16,wm=4,wn=2,fm=1,fn=2,bk=32,g=8,vec=4,cp=0,st=2,fb=1,cc=0,wg=0,pf=2"
S55="n=8,c=48,h=35,w=35,k=64,r=5,s=5,stride=1,pad=2"
one() { name=$1; shift; rm -rf /tmp/nvc-$name; mkdir -p /tmp/nvc-$name; echo "== $name $*"
  __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=/tmp/nvc-$name __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 timeout 60 $W "$@" 2>&1 | grep -E "^(config|median|error|check)|rule|ok|wrong" | head -6
  tar czf $OUT/nvc-$name.tgz -C /tmp nvc-$name; }
{
one conv55 run --op conv2d-f16 --target vulkan --shape "$S55" --config "$CF"
one conv55nopf run --op conv2d-f16 --target vulkan --shape "$S55" --config "${CF%,pf=2}"
one mm55 run --op matmul-f16 --target vulkan --shape "m=9800,n=64,k=1200" --config "$CF"
one conv55rule run --op conv2d-f16 --target vulkan --shape "$S55"
echo "done $(( $(date +%s) - T0 )) s"
} > $OUT/runs.txt 2>&1
cat $OUT/runs.txt
