#!/usr/bin/env bash
# fig.sh's BERT-base batch 1 x 512 on Vulkan read 8.19 ms (3.43 ms in the last figure):
# the new binary against the old (24055bd), alternating, on Vulkan and CUDA.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
(cd .dev && tar xJf pack2.tar.xz)
for v in new old new old; do
  W=.dev/bin/weft; [ $v = old ] && W=.dev/bin/weft-old
  echo "bert_base b1 s512 $v: $(timeout 60 $W model bench zoo:bert_base --seq 512 --dtype f16 --targets vulkan --no-kernels 2>&1 | sed -n 3p)"
done 2>&1 | tee $OUT/vulkan-check.txt
