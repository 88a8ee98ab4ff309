#!/usr/bin/env bash
# The attention template on Vulkan (scores through shared memory: cooperative matrices
# are opaque there): the whole space tuned at BERT's and GPT-2's shapes (12 and 96 heads
# of 128 and 512 tokens, head size 64; causal for GPT-2), beside the rule's pick run
# alone; (attn-vk2.txt) two configs in one pass and in two (`tp`), the space with them.
# Run on the GPU machine from the repository root (carry .gl, .dev).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
for s in "bh=12,s=128,t=128,d=64,causal=0" "bh=12,s=512,t=512,d=64,causal=0" \
         "bh=96,s=128,t=128,d=64,causal=0" "bh=96,s=512,t=512,d=64,causal=0" \
         "bh=12,s=512,t=512,d=64,causal=1" "bh=96,s=512,t=512,d=64,causal=1"; do
  echo "== $s"
  timeout 60 .dev/bin/weft run --op attention-f16 --shape $s --target vulkan --iters 50 2>&1 | grep -E "config|rule|median|error" | head -6
  for tp in 0 1; do for c in "bq=64,bkv=16,w=4" "bq=32,bkv=64,w=2"; do
    t=$(timeout 30 .dev/bin/weft run --op attention-f16 --shape $s --target vulkan --config mma=16,$c,cs=0,rg=0,st=1,tp=$tp --iters 50 2>&1 | grep -E "^(median|error)" | tr "\n" " " | cut -c1-120)
    echo "  tp=$tp $c: $t"
  done; done
  timeout 120 .dev/bin/weft tune --op attention-f16 --shape $s --target vulkan --no-save 2>&1 | grep -vE "^weft: tune"
  echo "at $(( $(date +%s) - start )) s"
done 2>&1 | tee $OUT/attn-vk2.txt
