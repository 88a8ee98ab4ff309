#!/usr/bin/env bash
# Call 4 of 2026-11-29 (eighth session): this session's first fixes, checked and timed.
# weft-base = 9c63772 (siblings, average pools, depthwise template over the batch), weft = 0b955d6 (+
# depthwise filters [R, S, 1, C] beside NHWC). Right: scripts/corpus.py on cuda f16 against ONNX Runtime.
# Fast: each model's cuda f16 median with weft-base and weft alternated (two rounds).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; .dev/bin/weft-base --version; } > $OUT/version4.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
( python3 scripts/speed.py --weft $W --jobs 8 --batch 8 --no-torch --weft-targets cuda:f16 --dry-run \
    --models efficientnet_b0,mobilenet_v2,inception_v3,convnext_tiny,regnet_y_400mf --work /tmp/b8 > /tmp/prep8.txt 2>&1
  python3 scripts/speed.py --weft $W --jobs 8 --batch 1 --no-torch --weft-targets cuda:f16 --dry-run \
    --models efficientnet_b0,mobilenet_v2,bert_base,distilbert,convnext_tiny,regnet_y_400mf --work /tmp/b1 > /tmp/prep1.txt 2>&1 ) &
timeout 200 python3 scripts/corpus.py --weft $W --targets cuda:f16,cuda:f32 --exports torchscript:17 \
  --models tv_mobilenet_v2,tv_efficientnet_b0,tv_inception_v3,tv_convnext_tiny,hf_bert,hf_distilbert \
  --jobs 12 --weft-timeout 100 --json $OUT/corpus4.json --doc $OUT/corpus4.md > /tmp/corpus-log.txt 2>&1
echo "corpus rc=$? $(( $(date +%s) - T0 )) s"; grep -v Warning /tmp/corpus-log.txt | tail -3 | cut -c1-300
wait; echo "prepared $(( $(date +%s) - T0 )) s"
{
for round in 1 2; do
  for f in /tmp/b1/efficientnet_b0 /tmp/b1/mobilenet_v2 /tmp/b1/bert_base /tmp/b1/distilbert /tmp/b1/convnext_tiny /tmp/b1/regnet_y_400mf \
           /tmp/b8/efficientnet_b0 /tmp/b8/mobilenet_v2 /tmp/b8/inception_v3 /tmp/b8/convnext_tiny /tmp/b8/regnet_y_400mf; do
    [ $(( $(date +%s) - T0 )) -gt 500 ] && break 2
    for bin in weft-base weft; do
      echo "$f $bin round $round: $(timeout 60 .dev/bin/$bin model run $f/model.onnx --target cuda --dtype f16 --inputs $f/in --no-check --iters 20 2>&1 | grep -E '^median' | tr -s ' ')"
    done
  done
done
} > $OUT/ab4.txt 2>&1
cat $OUT/ab4.txt
echo "done $(( $(date +%s) - T0 )) s"
