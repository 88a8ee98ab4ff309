#!/usr/bin/env bash
# Call 17 (tenth session, experiment, not on main): the queries' rotary stored by a kernel of its own
# (WEFT_EXP_Q=1, a local build of 98cc25b with that switch) against main's rule (=0), Llama-shaped b1 and b8.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 100 python3 scripts/speed.py --dry-run --no-torch --batch 8 --jobs 2 --models llama_shaped --json $OUT/exp8.json > /tmp/exp8.txt 2>&1 &
timeout 100 python3 scripts/speed.py --dry-run --no-torch --batch 1 --jobs 2 --work /tmp/ws1 --models llama_shaped --json $OUT/exp1.json > /tmp/exp1.txt 2>&1 &
wait; echo "export $(( $(date +%s) - T0 )) s"
for spec in "/tmp/ws1/llama_shaped/model.onnx b1" "/tmp/weft-speed/llama_shaped/model.onnx b8"; do set -- $spec
  for q in 0 1 0 1; do echo "$2 q=$q $(WEFT_EXP_Q=$q timeout 40 $W model bench $1 --targets cuda --dtype f16 --no-kernels --iters 20 2>&1 | grep -E '^cuda' | cut -c1-100)"; done
done | tee $OUT/ab17.txt
WEFT_EXP_Q=1 timeout 40 $W model bench /tmp/weft-speed/llama_shaped/model.onnx --targets cuda --dtype f16 --iters 20 > $OUT/bench8-q1.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s"
