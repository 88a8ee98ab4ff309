# Call 4: issue 59 at batch 8 after this session's three changes (1×1 convolutions as stored
# products, NHWC global pools of several images in two reductions, the depthwise template's
# register windows at 3×3/5×5 stride 1 over several images): all 15 corpus models, one
# speed.py --hold run (PyTorch and weft in this call); then weft against ONNX Runtime on the
# models whose new paths it takes (batch 8 exports of that run).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version4.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 400 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 8 --hold --hold-timeout 260 \
  --weft-targets cuda:f16 --json $OUT/corpus-b8.json > $OUT/corpus-b8.txt 2>&1
echo "b8 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b8.json ] || mv $OUT/corpus-b8.json.partial $OUT/corpus-b8.json 2>/dev/null
grep -E '^(\| [a-z]|Geometric)' $OUT/corpus-b8.txt | cut -c1-200
ls /tmp/weft-speed/ > $OUT/work.txt 2>&1
for m in efficientnet_b0 mobilenet_v2 densenet121 regnet_y_400mf; do
  d=/tmp/weft-speed/$m
  echo "== check $m b8"; timeout 60 $W model check $d/model.onnx --inputs $d/in --target cuda --dtype f16 2>&1 | tail -3
done > $OUT/check4.txt 2>&1
cat $OUT/check4.txt
echo "all $(( $(date +%s) - T0 )) s"
