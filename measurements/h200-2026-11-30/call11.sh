#!/usr/bin/env bash
# Call 11 (tenth session): the K rotary stored before the GQA broadcast (bin/weft) against main
# (bin/weft-base, 0672228) on the Llama-shaped decoder at batch 1 and 8; checks; then sweeps of the
# depthwise 7x7s of ConvNeXt-tiny and ResNet-50's 1x1s at batch 8 beside cuDNN.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft; B=.dev/bin/weft-base
mkdir -p /tmp/o
{ $W --version; $B --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > /tmp/o/version11.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 120 python3 scripts/speed.py --dry-run --no-torch --batch 8 --jobs 2 --models llama_shaped \
  --json /tmp/o/exp8.json > /tmp/o/exp8.txt 2>&1 &
timeout 120 python3 scripts/speed.py --dry-run --no-torch --batch 1 --jobs 2 --work /tmp/ws1 --models llama_shaped \
  --json /tmp/o/exp1.json > /tmp/o/exp1.txt 2>&1 &
wait
echo "export $(( $(date +%s) - T0 )) s"
L8=/tmp/weft-speed/llama_shaped/model.onnx; L1=/tmp/ws1/llama_shaped/model.onnx
for r in 1 2; do for bin in weft-base weft; do for spec in "$L1 b1" "$L8 b8"; do set -- $spec
  echo "$r $bin $2 $(timeout 60 .dev/bin/$bin model bench $1 --targets cuda --dtype f16 --no-kernels --iters 20 2>&1 | grep -E '^cuda' | cut -c1-100)"
done; done; done | tee /tmp/o/ab11.txt
echo "ab $(( $(date +%s) - T0 )) s"
timeout 60 $W model bench $L8 --targets cuda --dtype f16 --iters 20 > /tmp/o/bench8-llama.txt 2>&1
timeout 60 $W model bench $L1 --targets cuda --dtype f16 --iters 20 > /tmp/o/bench1-llama.txt 2>&1
for f in $L1 $L8; do echo "$f $(timeout 90 $W model run $f --target cuda --dtype f16 2>&1 | grep -iE '^error|wrong|check' | head -3 | tr '\n' ' ')"; done | tee /tmp/o/checks11.txt
timeout 60 $W model generate zoo:llama --layers 2 --hidden 256 --heads 8 --kv-heads 2 --intermediate 512 --vocab 1000 \
  --target cuda --dtype f32 --prompt-tokens 12 --new-tokens 6 --check 2>&1 | tail -4 | tee -a /tmp/o/checks11.txt
echo "checks $(( $(date +%s) - T0 )) s"
timeout 150 $W sweep --op depthwise-conv2d-f16 --target cuda --sample 40 --budget-ms 4 \
  --shapes "b=8,c=96,h=56,w=56,k=7,stride=1;b=8,c=192,h=28,w=28,k=7,stride=1;b=8,c=384,h=14,w=14,k=7,stride=1;b=8,c=768,h=7,w=7,k=7,stride=1" \
  --json /tmp/o/dw-b8.json > /tmp/o/dw-b8.txt 2>&1
echo "dw $(( $(date +%s) - T0 )) s"; tail -8 /tmp/o/dw-b8.txt
timeout 150 $W sweep --op conv2d-f16 --target cuda --sample 32 --budget-ms 4 \
  --shapes "n=8,c=1024,h=14,w=14,k=256,r=1,s=1,stride=1,pad=0;n=8,c=256,h=14,w=14,k=1024,r=1,s=1,stride=1,pad=0;n=8,c=2048,h=7,w=7,k=512,r=1,s=1,stride=1,pad=0;n=8,c=512,h=7,w=7,k=2048,r=1,s=1,stride=1,pad=0" \
  --json /tmp/o/c1x1-b8.json > /tmp/o/c1x1-b8.txt 2>&1
echo "1x1 $(( $(date +%s) - T0 )) s"; tail -8 /tmp/o/c1x1-b8.txt
tar czf $OUT/call11.tgz -C /tmp o
echo "done $(( $(date +%s) - T0 )) s"
