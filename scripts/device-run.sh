#!/usr/bin/env bash
# One call on the GPU machine: prepare it, then run one job whose files go to $OUT (the
# folder the device tool brings back). Every dated folder of measurements/ came from
# calls of this shape; what varied between them are this script's arguments
# (measurements/README.md maps them). Run from the repository root:
#
#   OUT=... bash scripts/device-run.sh JOB [ARG...]
#
# The machine is prepared first, every time:
#   - the Vulkan loader packed as .gl/*.deb is installed where present, and NVIDIA's ICD
#     is used where the driver has one (VK_DRIVER_FILES);
#   - .dev/pack.tar.xz is unpacked into .dev (bin/weft and any other binary a job names,
#     e.g. bin/weft-base; checks/ with the GPU test binaries); FRESH=1 unpacks it again
#     over an earlier call's;
#   - WEFT_RECORDS defaults to /tmp/none.json, a file that does not exist: every op and
#     anchor by its stated rule. Set it to time with tuning records.
# W names the weft binary (default .dev/bin/weft), TIMEOUT a job's limit in seconds
# (default 300), SMI=1 logs the GPU's clocks every 50 ms to $OUT/smi.csv during the job.
#
# Jobs:
#   setup                      prepare only
#   checks [NAME]              every GPU test binary in .dev/checks (hand-built kernels,
#                              workloads, models against ONNX Runtime), CUDA and Vulkan
#                              required, one test at a time -> NAME.txt (default checks)
#   transformers [OPTION...]   the transformer rows of docs/results.md: PyTorch (eager, one
#                              CUDA graph, torch.compile), then one `weft report` call over
#                              BERT-base and GPT-2 at batch 1 and 8, 128 and 512 tokens, f16,
#                              on a copy of docs/report.json -> torch-report.jsonl,
#                              report.json, results.md, fig.txt
#   cnns [OPTION...]           the CNN rows: ResNet-50 (batch 1 and 8), Inception-v3 and
#                              MobileNetV2, f32 and f16, the same way -> torch-cnn.jsonl,
#                              report.json, results.md, cnn-fig.txt
#       OPTION: --targets LIST (default cuda,vulkan), --records FILE (weft's model
#       records, else by the rule), --no-torch (weft's rows alone)
#   corpus weft BATCH [MODELS] issue 59's corpus, weft's four columns (cuda and vulkan, f16
#                              and f32) alone: scripts/speed.py --no-torch (the workers
#                              build and export on the CPU; one `weft model run` per model,
#                              target and dtype, one at a time) -> corpus-bBATCH-weft.json,
#                              corpus-bBATCH-weft.txt
#   corpus torch BATCH [MODELS] the same models' PyTorch columns alone (eager, one CUDA
#                              graph, torch.compile, Inductor in one graph): speed.py
#                              --no-weft, no ONNX export -> corpus-bBATCH-torch.json, .txt;
#                              HOLD=1: --hold (every model compiled at once, then timed
#                              one at a time: all 15 in one call, untried on the GPU)
#       MODELS: comma-separated corpus names, or `a`, `b`, `c` (five models each: the
#       first five CNNs, the other five, the transformers); default all. LIMIT: seconds
#       (default 540); a call cut short keeps the models it finished (the .partial file
#       becomes the .json), and a later call with MODELS takes the rest. For a check
#       on a machine without a GPU: COLUMNS (weft's columns, default
#       cuda:f16,cuda:f32,vulkan:f16,vulkan:f32), ZOO (the zoo rows' target and sizes,
#       default `--model-targets cuda --model-seq 128 --model-iters 20`), ZOO_MODELS
#       (default the five architectures), DRY=1 (speed.py --dry-run: build and export
#       on the CPU, time nothing).
#   corpus zoo                 the zoo side of issue 59's zoo-against-export check: weft
#                              report --models over zoo:bert_base, gpt2 (sequence 128),
#                              resnet50, mobilenet_v2, inception_v3 at batch 1, cuda f16
#                              (what the check reads) -> zoo-report.json, zoo.txt
#   sweep NAME ARG...          weft sweep ARG... --json NAME.json > NAME.txt
#   ab NAME BINS ARG...        weft ARG... with each binary of BINS in turn (names under
#                              .dev/bin, comma-separated, repeats alternate them:
#                              weft-base,weft,weft-base,weft), a line each with its median,
#                              error and replay lines, appended to NAME.txt
#   run NAME COMMAND...        any command -> NAME.txt, with its exit status
#
# Several jobs in one device call: one line each, `bash scripts/device-run.sh ... &&`.
set -uo pipefail

setup() {
  if compgen -G ".gl/*.deb" > /dev/null; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  [ -f "$icd" ] && export VK_DRIVER_FILES=$icd
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  if [ -f .dev/pack.tar.xz ] && { [ "${FRESH:-0}" = 1 ] || [ ! -d .dev/bin ]; }; then
    rm -rf .dev/bin
    tar xJf .dev/pack.tar.xz -C .dev
  fi
  export WEFT_RECORDS=${WEFT_RECORDS:-/tmp/none.json}
  W=${W:-.dev/bin/weft}
  TIMEOUT=${TIMEOUT:-300}
  mkdir -p "${OUT:?set OUT to the folder whose files come back}"
  start=$(date +%s)
}

elapsed() { echo "$1 at $(($(date +%s) - start)) s"; }

checks() {
  local name=${1:-checks} t
  for t in .dev/checks/handmade-* .dev/checks/workloads-* .dev/checks/models-*; do
    echo "== $t"
    WEFT_REQUIRE=cuda,vulkan timeout 170 "$t" --test-threads=1 2>&1 | tail -n 6
    elapsed "exit ${PIPESTATUS[0]}"
  done > "$OUT/$name.txt" 2>&1
  grep -E "^(==|exit|test result)" "$OUT/$name.txt"
}

# The model rows of results.md: $1 the figure (transformers | cnns), then its options.
figure() {
  local which=$1 targets=cuda,vulkan torch=1 records=() models dtypes seqs=() log base
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --targets) targets=$2; shift 2 ;;
      --records) records=(--model-records "$2"); shift 2 ;;
      --no-torch) torch=0; shift ;;
      *) echo "figure: unknown option $1" >&2; return 2 ;;
    esac
  done
  case $which in
    transformers)
      models=zoo:bert_base,zoo:bert_base@8,zoo:gpt2,zoo:gpt2@8 dtypes=f16
      seqs=(--model-seq 128,512) log=fig base=torch-report ;;
    cnns)
      models=zoo:resnet50,zoo:resnet50@8,zoo:inception_v3,zoo:mobilenet_v2 dtypes=f32,f16
      log=cnn-fig base=torch-cnn ;;
  esac
  local baselines=() dir b s m
  {
    if [ $torch = 1 ]; then
      for b in 1 8; do
        if [ "$which" = transformers ]; then
          for s in 128 512; do
            timeout 120 python3 scripts/torch_models.py --models bert_base,gpt2 --batch $b \
              --seq $s --dtypes f16 --compile 2> /dev/null >> "$OUT/$base.jsonl"
          done
        else
          m=resnet50
          [ $b = 1 ] && m=resnet50,inception_v3,mobilenet_v2
          timeout 200 python3 scripts/torch_models.py --models $m --batch $b \
            --dtypes f32,f16 --compile 2> /dev/null >> "$OUT/$base.jsonl"
        fi
      done
      elapsed "torch done"
      baselines=(--baselines "$OUT/$base.jsonl")
    fi
    dir=$(mktemp -d)
    cp docs/report.json "$dir/"
    timeout "$TIMEOUT" "$W" report --no-compile --no-run --out "$dir" --models $models \
      --model-targets "$targets" --model-dtypes $dtypes "${seqs[@]}" "${records[@]}" \
      --model-iters 20 "${baselines[@]}" 2>&1 | tail -3
    elapsed "report rc=${PIPESTATUS[0]}"
    cp "$dir/report.json" "$dir/results.md" "$OUT/"
  } 2>&1 | tee "$OUT/$log.txt"
}

# Issue 59's corpus figures (measurements/next/README.md, `issue59`): $1 weft |
# torch | zoo, then the batch and the models.
corpus() {
  local kind=$1 batch=${2:-1} models=${3:-all} name side
  case $models in
    # PyTorch's columns take ~50 s a model after phase 1: five fit one call.
    a) models=resnet50,inception_v3,googlenet,shufflenet_v2,mobilenet_v2 ;;
    b) models=regnet_y_400mf,densenet121,efficientnet_b0,resnext50_32x4d,convnext_tiny ;;
    c) models=t5_encoder,gpt2,distilbert,bert_base,llama_shaped ;;
  esac
  export HF_HUB_OFFLINE=1
  python3 -c 'import onnxscript' 2> /dev/null || { compgen -G ".dev/wheels/*.whl" > /dev/null &&
    pip install --no-deps --no-index -q .dev/wheels/*.whl > /dev/null 2>&1; }
  case $kind in
    weft) side=(--no-torch --weft-targets "${COLUMNS:-cuda:f16,cuda:f32,vulkan:f16,vulkan:f32}") ;;
    torch) side=(--no-weft ${HOLD:+--hold}) ;;
    zoo)
      local dir
      dir=$(mktemp -d)
      # Into a folder of its own: only report.json comes back ($OUT brings 8 files).
      timeout "${LIMIT:-300}" "$W" report --no-run --no-compile --out "$dir" \
        --models "${ZOO_MODELS:-zoo:bert_base,zoo:gpt2,zoo:resnet50,zoo:mobilenet_v2,zoo:inception_v3}" \
        --model-dtypes f16 ${ZOO:---model-targets cuda --model-seq 128 --model-iters 20} \
        > "$OUT/zoo.txt" 2>&1
      elapsed "zoo rc=$?"
      [ -f "$dir/report.json" ] && cp "$dir/report.json" "$OUT/zoo-report.json"
      return ;;
    *) echo "corpus: weft, torch or zoo, not $kind" >&2; return 2 ;;
  esac
  name=corpus-b$batch-$kind
  timeout "${LIMIT:-540}" python3 scripts/speed.py --weft "$W" --jobs "$(nproc)" --iters 20 \
    --batch "$batch" --models "$models" "${side[@]}" ${DRY:+--dry-run} --json "$OUT/$name.json" \
    > "$OUT/$name.txt" 2>&1
  elapsed "$name rc=$?"
  [ -f "$OUT/$name.json" ] || mv "$OUT/$name.json.partial" "$OUT/$name.json" 2> /dev/null
  grep -E '^(prepared|\| [a-z]|Geometric)' "$OUT/$name.txt" | cut -c1-300
}

sweep() {
  local name=$1
  shift
  timeout "$TIMEOUT" "$W" sweep "$@" --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  elapsed "$name rc=$?"
  grep -vE "^weft:" "$OUT/$name.txt" | tail -4
}

ab() {
  local name=$1 bins=$2 bin
  shift 2
  for bin in ${bins//,/ }; do
    echo "$* $bin: $(timeout 120 ".dev/bin/$bin" "$@" 2>&1 |
      grep -E '^(median|error|replayed|cuda|vulkan) ' | tr -s ' ' | tr '\n' ' ')"
  done | tee -a "$OUT/$name.txt"
}

run() {
  local name=$1
  shift
  timeout "$TIMEOUT" "$@" > "$OUT/$name.txt" 2>&1
  elapsed "$name rc=$?"
}

job=${1:?usage: bash scripts/device-run.sh JOB [ARG...] (see the comment at the top)}
shift
setup
smi=
if [ "${SMI:-0}" = 1 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate \
    --format=csv -lms 50 > "$OUT/smi.csv" 2>&1 &
  smi=$!
fi
case $job in
  setup) ;;
  checks) checks "$@" ;;
  transformers | cnns) figure "$job" "$@" ;;
  corpus) corpus "$@" ;;
  sweep) sweep "$@" ;;
  ab) ab "$@" ;;
  run) run "$@" ;;
  *) echo "unknown job $job" >&2; exit 2 ;;
esac
status=$?
[ -n "$smi" ] && kill "$smi"
elapsed "$job done"
exit $status
