# Part of call 4 (sourced): data for two rows GPT-2 at 512 tokens misses by. Causal
# attention: at 12 heads of 512 (96 blocks of 64 rows) the last query tile's block does
# every key step while the first does one; the rule's pick was timed non-causal. The
# products of GPT-2 at 512 tokens, MLP-out (512x768x3072) taking a split in 2 plus a
# summing kernel. Every config sampled, its time kept.
timeout 200 .dev/bin/weft sweep --op attention-f16 --target cuda --sample 140 --budget-ms 10 --trials \
  --shapes "bh=12,s=512,t=512,d=64,causal=1;bh=12,s=512,t=512,d=64,causal=0;bh=96,s=128,t=128,d=64,causal=1;bh=12,s=2048,t=2048,d=64,causal=1" \
  --json $OUT/attn-causal.json > $OUT/attn-causal.txt 2>&1
echo "attention sweep rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/attn-causal.txt | tail -8
timeout 150 .dev/bin/weft sweep --op matmul-f16 --target cuda --sample 160 --budget-ms 10 --trials \
  --shapes "m=512,n=768,k=3072;m=512,n=2304,k=768;m=512,n=3072,k=768;m=512,n=768,k=768" \
  --json $OUT/gpt2-512-products.json > $OUT/gpt2-512-products.txt 2>&1
echo "products sweep rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/gpt2-512-products.txt | tail -8
