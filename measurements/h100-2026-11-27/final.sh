#!/usr/bin/env bash
# The last check on the GPU, from the final code's release binaries (packed as
# .dev/pack.tar.xz: the working tree's size limit): every workload on every backend against
# float64, every hand-built kernel (tanh_approx among them) on CUDA and Vulkan against the
# interpreter, the zoo and exported transformers against ONNX Runtime with CUDA and Vulkan
# required; the zoo models at batch 8 (the new wgmma tiles) against float64; then weft
# against Hugging Face's BertModel and GPT2Model (PyTorch), batch 8 added in f16.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export XDG_RUNTIME_DIR=/tmp WEFT_REQUIRE=cuda,vulkan
(cd .dev && tar xJf pack.tar.xz)
start=$(date +%s)
{
for t in .dev/checks/handmade-* .dev/checks/workloads-* .dev/checks/models-*; do
  echo "== $t"
  timeout 200 "$t" --test-threads=1 2>&1 | tail -n 12
  echo "exit ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s"
done
for m in gpt2 bert_base; do
  echo "$m b8 s128: $(timeout 120 .dev/bin/weft model run zoo:$m --batch 8 --seq 128 --dtype f16 --target cuda 2>&1 | grep -E '^(median|error)|vs ' | tr '\n' ' ')"
done
timeout 250 bash scripts/torch_check.sh > $OUT/torch_check.txt 2>&1
echo "torch_check exit $?"
MODELS="bert_base gpt2" SHAPES="8x128" DTYPES=f16 timeout 100 bash scripts/torch_check.sh > $OUT/torch_check_b8.txt 2>&1
echo "torch_check b8 exit $?"
grep -hE "^(pass|FAIL|fail)" $OUT/torch_check.txt $OUT/torch_check_b8.txt
grep -h "last_hidden_state  vs torch fp32" $OUT/torch_check_b8.txt
echo "done at $(( $(date +%s) - start )) s"
} 2>&1 | tee $OUT/final.txt
