#!/usr/bin/env bash
# The session's last check on the GPU, from df55790's release binaries: every workload on
# every backend against float64 (attention's two stages and exp2 on CUDA, the shared-memory
# form on Vulkan), the zoo and exported transformers against ONNX Runtime with CUDA and
# Vulkan required, then weft against Hugging Face's BertModel and GPT2Model (PyTorch).
export WEFT_REQUIRE=cuda,vulkan
start=$(date +%s)
{
for t in .dev/checks/workloads-* .dev/checks/models-*; do
  echo "== $t"
  timeout 200 "$t" --test-threads=1 2>&1 | tail -n 15
  echo "exit ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s"
done
timeout 280 bash scripts/torch_check.sh > $OUT/torch_check.txt 2>&1
echo "torch_check exit $?"; tail -14 $OUT/torch_check.txt
echo "done at $(( $(date +%s) - start )) s"
} 2>&1 | tee $OUT/final.txt
