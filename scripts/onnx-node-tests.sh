#!/usr/bin/env bash
# Fetches ONNX's backend node tests (onnx 1.19.1's onnx/backend/test/data/node: model.onnx
# and test_data_set_N per test) into DIR/onnx/backend/test/data/node, and prints that
# folder: point WEFT_ONNX_NODE_TESTS at it (onnx/tests/node_tests.rs). The newer wheels
# ship no node test data; the expected outcomes (onnx/tests/node_tests.expected) are
# those of this release's. Does nothing where DIR holds them already.
#
#   scripts/onnx-node-tests.sh DIR
set -euo pipefail
dir=${1:?usage: scripts/onnx-node-tests.sh DIR}
version=1.19.1
node="$dir/onnx/backend/test/data/node"
if [ -f "$dir/.onnx-$version" ] && [ -d "$node" ]; then
  echo "$node"
  exit 0
fi
mkdir -p "$dir"
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
# Any wheel of the release holds the same data; pip picks one for this interpreter.
python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  "onnx==$version" -d "$wheels" >&2
python3 - "$wheels" "$dir" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/onnx-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith("onnx/backend/test/data/node/")]
    z.extractall(sys.argv[2], names)
PY
count=$(find "$node" -name model.onnx | wc -l)
if [ "$count" -lt 1600 ]; then
  echo "onnx $version's wheel gave $count node tests in $node, expected 1615" >&2
  exit 1
fi
touch "$dir/.onnx-$version"
echo "$node"
