#!/usr/bin/env bash
# weft against Hugging Face's own BERT-base and GPT-2 (random weights, through ONNX) on CUDA
# (and Vulkan where TARGETS names it), fp32 and fp16: scripts/torch_check.py says what is compared and the tolerances.
#
# Run from the repository root on a machine with an NVIDIA GPU, torch, transformers, onnx and
# onnxruntime:
#
#     scripts/torch_check.sh
#     WEFT=target/release/weft MODELS=gpt2 SHAPES="2x37" scripts/torch_check.sh
#
# WEFT     the weft binary (default .dev/bin/weft)
# PYTHON   the Python (default python3)
# MODELS   space-separated, of bert_base gpt2 (default both)
# SHAPES   space-separated BATCHxSEQ (default "1x128 2x37")
# DTYPES   space-separated, of f32 f16 (default both)
# TARGETS  space-separated weft targets (default cuda; "cuda vulkan" checks both)
# TC_ROOT  where each case's folder goes (default /tmp/tc; each run of a case starts afresh)
#
# Everything goes to stdout. A failing case does not stop the others; the exit status is 1 if
# any step of any case failed, with a summary at the end.
set -u
exec 2>&1

WEFT="${WEFT:-.dev/bin/weft}"
PYTHON="${PYTHON:-python3}"
MODELS="${MODELS:-bert_base gpt2}"
SHAPES="${SHAPES:-1x128 2x37}"
DTYPES="${DTYPES:-f32 f16}"
TARGETS="${TARGETS:-cuda}"
ROOT="${TC_ROOT:-/tmp/tc}"
CHECK="$(dirname "$0")/torch_check.py"

if [ ! -x "$WEFT" ]; then
    echo "weft binary not found or not executable: $WEFT (set WEFT=...)"
    exit 2
fi

status=0
summary=()
for model in $MODELS; do
    for shape in $SHAPES; do
        B="${shape%x*}"
        S="${shape#*x}"
        case_="$model-$B-$S"
        dir="$ROOT/$case_"
        echo
        echo "======== $case_: prepare"
        rm -rf "$dir"
        if ! "$PYTHON" "$CHECK" prepare --model "$model" --batch "$B" --seq "$S" --out "$dir"; then
            echo "FAIL $case_: prepare"
            summary+=("FAIL $case_ prepare")
            status=1
            continue
        fi
        for target in $TARGETS; do
        for dt in $DTYPES; do
            echo
            echo "======== $case_: weft $target $dt"
            out="$dir/weft_${target}_$dt"
            if ! "$WEFT" model run "$dir/model.onnx" --target "$target" --dtype "$dt" \
                --inputs "$dir/inputs" --save "$out" --iters 3 --no-check; then
                echo "FAIL $case_ $target $dt: weft model run exited non-zero"
                summary+=("FAIL $case_ $target $dt (weft run)")
                status=1
                continue
            fi
            if "$PYTHON" "$CHECK" compare --dir "$dir" --weft-out "$out" --dtype "$dt"; then
                summary+=("pass $case_ $target $dt")
            else
                summary+=("FAIL $case_ $target $dt (compare)")
                status=1
            fi
        done
        done
    done
done

echo
echo "======== summary"
for line in "${summary[@]}"; do
    echo "$line"
done
exit $status
