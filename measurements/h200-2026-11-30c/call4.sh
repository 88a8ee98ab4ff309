#!/usr/bin/env bash
# Call 4 (twelfth session): the skinny products' configs by shape in the decode step (WEFT_GEMV with
# selectors), TinyLlama-shaped fp16, batch 1, prompt 128: 4 layers, each run one product family under
# another config (gate/up n=11264; down n=2048,k=5632; q/k/v n=2560 and o n=2048,k=2048 together), the
# rule's twice; then 22 layers with the best of each family where it beat the rule's by more than 1 us.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
c() { echo "threads=$1,nt=$2,unroll=$3,shuffle=32"; }
run4() { # family, selector config
  WEFT_GEMV="$2" timeout 60 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 --prompt-tokens 128 \
    --new-tokens 16 --iters 20 > /tmp/g.txt 2>&1
  echo "$1 $(grep -E '^decode step .*device' /tmp/g.txt | awk '{print $3}') ${2:-rule}"
}
{
run4 base ""
for t in "1024 8 4" "512 4 8" "256 4 8" "512 2 8" "1024 8 8"; do run4 gate "n=11264:$(c $t)"; done
run4 base ""
for t in "1024 2 8" "512 2 8" "1024 4 8"; do run4 down "n=2048,k=5632:$(c $t)"; done
for t in "1024 2 4" "512 2 8"; do run4 qo "n=2560:$(c $t);n=2048,k=2048:$(c $t)"; done
run4 base ""
} | tee -a $OUT/runs.txt
echo "l4 $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
BASE=$(awk '$1=="base"{s+=$2;n++} END{print s/n}' $OUT/runs.txt)
PICK=""
for f in gate down qo; do
  best=$(awk -v f=$f -v b=$BASE '$1==f && $2 < b - 1.0 {print $2, $3}' $OUT/runs.txt | sort -n | head -1 | cut -d' ' -f2)
  [ -n "$best" ] && PICK="$PICK;$best"
done
PICK=${PICK#;}
echo "base $BASE us; picked: ${PICK:-none}" | tee -a $OUT/runs.txt
if [ -n "$PICK" ]; then
  WEFT_GEMV="$PICK" timeout 60 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 \
    --intermediate 512 --vocab 1000 --target cuda --dtype f16 --prompt-tokens 40 --new-tokens 8 --iters 1 --check 2>&1 \
    | grep -E "^check" | tee -a $OUT/runs.txt
  WEFT_GEMV="$PICK" timeout 150 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
    --new-tokens 32 --iters 20 --kernels > $OUT/gen22-pick.txt 2>&1
  echo "l22 picked $(grep -E '^decode step .*device' $OUT/gen22-pick.txt)" | tee -a $OUT/runs.txt
fi
echo "done $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
