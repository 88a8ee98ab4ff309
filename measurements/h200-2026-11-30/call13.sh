#!/usr/bin/env bash
# Call 13 (tenth session): ConvNeXt-tiny A/B at batch 1 and 8, bin/weft (depthwise template by outputs;
# the NHWC rule's window in registers first on CUDA; the K rotary before the GQA broadcast) against
# bin/weft-base (main, 0672228); per-kernel table; weft against ONNX Runtime (weft model check) on the
# batch-8 ConvNeXt and Llama-shaped exports, and against float64 at batch 1.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft; B=.dev/bin/weft-base
mkdir -p /tmp/o
{ $W --version; $B --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > /tmp/o/version13.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 120 python3 scripts/speed.py --dry-run --no-torch --batch 8 --jobs 4 --models convnext_tiny,llama_shaped \
  --json /tmp/o/exp8.json > /tmp/o/exp8.txt 2>&1 &
timeout 120 python3 scripts/speed.py --dry-run --no-torch --batch 1 --jobs 2 --work /tmp/ws1 --models convnext_tiny \
  --json /tmp/o/exp1.json > /tmp/o/exp1.txt 2>&1 &
wait
echo "export $(( $(date +%s) - T0 )) s"
C8=/tmp/weft-speed/convnext_tiny/model.onnx; C1=/tmp/ws1/convnext_tiny/model.onnx; L8=/tmp/weft-speed/llama_shaped/model.onnx
for r in 1 2; do for bin in weft-base weft; do for spec in "$C1 b1" "$C8 b8"; do set -- $spec
  echo "$r $bin $2 $(timeout 60 .dev/bin/$bin model bench $1 --targets cuda --dtype f16 --no-kernels --iters 20 2>&1 | grep -E '^cuda' | cut -c1-100)"
done; done; done | tee /tmp/o/ab13.txt
echo "ab $(( $(date +%s) - T0 )) s"
timeout 60 $W model bench $C8 --targets cuda --dtype f16 --iters 20 > /tmp/o/bench8-convnext.txt 2>&1
timeout 60 $W model bench $C1 --targets cuda --dtype f16 --iters 20 > /tmp/o/bench1-convnext.txt 2>&1
( timeout 150 $W model check $C8 --target cuda --dtype f16 > /tmp/o/check-c8.txt 2>&1; echo "rc=$?" >> /tmp/o/check-c8.txt ) &
( timeout 200 $W model check $L8 --target cuda --dtype f16 > /tmp/o/check-l8.txt 2>&1; echo "rc=$?" >> /tmp/o/check-l8.txt ) &
( timeout 150 $W model run $C1 --target cuda --dtype f16 > /tmp/o/run-c1.txt 2>&1; echo "rc=$?" >> /tmp/o/run-c1.txt ) &
wait
for f in check-c8 check-l8 run-c1; do echo "== $f"; grep -iE "error|agree|differ|rc=|check" /tmp/o/$f.txt | head -6 | cut -c1-250; done
echo "checks $(( $(date +%s) - T0 )) s"
tar czf $OUT/call13.tgz -C /tmp o
echo "done $(( $(date +%s) - T0 )) s"
