# Call 1: where the five corpus models below torch.compile at batch 8 lose, kernel by kernel:
# weft's per-kernel tables (`weft model bench`, cuda f16) beside Inductor's (scripts/torch_kernels.py).
set -x
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
M=resnet50,inception_v3,efficientnet_b0,resnext50_32x4d,convnext_tiny
TIMEOUT=200 bash scripts/device-run.sh run b8-export python3 scripts/speed.py --dry-run --no-torch \
  --batch 8 --models $M --json $OUT/b8-export.json > $OUT/export.txt 2>&1
for m in resnext50_32x4d efficientnet_b0 convnext_tiny resnet50 inception_v3; do
  timeout 100 .dev/bin/weft model bench /tmp/weft-speed/$m/model.onnx --targets cuda --dtype f16 > $OUT/bench8-$m.txt 2>&1
done
for m in resnext50_32x4d efficientnet_b0 convnext_tiny resnet50 inception_v3; do
  timeout 250 python3 scripts/torch_kernels.py --models $m --batch 8 --out $OUT --lock /tmp/prof.lock > $OUT/torch-$m.log 2>&1 &
done
wait
ls -la $OUT
