#!/usr/bin/env bash
# Issue 28's conv row after the tuner fix: the fp16 NHWC implicit-GEMM convolution tuned
# on CUDA and on Vulkan (each for itself, 64 configs of its space) at six ResNet-50 layers
# (batch 1): 3x3 64->64 @56, 1x1 256->64 @56, 3x3 128->128 @28, 3x3 256->256 @14,
# 1x1 1024->256 @14, 3x3 512->512 @7.
export WEFT_RECORDS=/tmp/conv-records.json
W=.dev/bin/weft
start=$(date +%s)
for s in n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1 n=1,c=256,h=56,w=56,k=64,r=1,s=1,pad=0 \
         n=1,c=128,h=28,w=28,k=128,r=3,s=3,pad=1 n=1,c=256,h=14,w=14,k=256,r=3,s=3,pad=1 \
         n=1,c=1024,h=14,w=14,k=256,r=1,s=1,pad=0 n=1,c=512,h=7,w=7,k=512,r=3,s=3,pad=1; do
  for t in cuda vulkan; do
    f=$OUT/conv-$t-$(echo $s | tr ',=' '_-').txt
    timeout 80 $W tune --op conv2d-f16 --shape $s --target $t --sample 64 > $f 2>&1
    echo "$s $t rc=$? best $(grep -m1 -E '^ *1 ' $f | grep -oE '[0-9.]+ (us|ms)' | head -1) $(grep -m1 -E '^ *1 ' $f | awk '{print $2}')"
  done
done | tee $OUT/convs.txt
