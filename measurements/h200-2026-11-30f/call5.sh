# Call 5: the products ConvNeXt-tiny runs at batch 8 (op alone, no epilogue): the stated rule's config,
# the best of 32 tuned configs and cuBLAS, at each; the classifiers' skinny products at 8 rows (gemv-f16,
# 1000 columns of 2048 and 768) the same way. What it asks: how far the rule is from the tuned best where
# the rule gives few blocks (ConvNeXt's down-projections: 75 and 84 blocks), and what the GELU epilogue
# costs at stage 1 (the model ran 29.6 µs).
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
TIMEOUT=420 bash scripts/device-run.sh sweep convnext-products --op matmul-f16 --target cuda --sample 32 --budget-ms 4 \
  --shapes "m=25088,n=384,k=96;m=25088,n=96,k=384;m=6272,n=768,k=192;m=6272,n=192,k=768;m=1568,n=1536,k=384;m=1568,n=384,k=1536;m=392,n=3072,k=768;m=392,n=768,k=3072"
TIMEOUT=120 bash scripts/device-run.sh sweep classifiers --op gemv-f16 --target cuda --sample 24 --budget-ms 4 \
  --shapes "m=8,n=1000,k=2048;m=8,n=1000,k=768;m=8,n=1000,k=1280"
ls -la $OUT; tail -30 $OUT/convnext-products.txt; tail -12 $OUT/classifiers.txt
