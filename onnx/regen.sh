#!/usr/bin/env bash
# Regenerates src/proto/onnx.rs, the prost messages of ONNX's onnx.proto3, by hand, once per
# ONNX release: nothing runs at build time (no build.rs, no protoc).
#
# What was used for the checked-in file (onnx 1.23.2):
#   - onnx.proto3 from the onnx-1.23.2 source distribution on PyPI (the wheel ships only the
#     proto2 onnx.proto; the sdist has onnx/onnx.proto3, sha256 73b989cc...a5a9);
#   - protoc from PyPI's grpcio-tools (`python -m grpc_tools.protoc`, libprotoc 35.1), in a
#     throwaway virtual environment;
#   - prost-build 0.14.6 (prost 0.14) in a throwaway cargo program that compiles the file.
#
# Usage: onnx/regen.sh PATH/TO/onnx.proto3
set -euo pipefail
proto=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q grpcio-tools
printf '#!/bin/sh\nexec %s -m grpc_tools.protoc "$@"\n' "$work/venv/bin/python" > "$work/protoc"
chmod +x "$work/protoc"

mkdir -p "$work/gen/src"
cat > "$work/gen/Cargo.toml" <<'TOML'
[package]
name = "protogen"
version = "0.0.0"
edition = "2024"
[dependencies]
prost-build = "=0.14.6"
[workspace]
TOML
cat > "$work/gen/src/main.rs" <<'RS'
fn main() {
    let args: Vec<String> = std::env::args().collect();
    prost_build::Config::new()
        .out_dir(&args[3])
        .compile_protos(&[&args[1]], &[&args[2]])
        .expect("prost-build");
}
RS
(cd "$work/gen" && cargo build -q --release)
mkdir -p "$work/out"
PROTOC="$work/protoc" "$work/gen/target/release/protogen" "$proto" "$(dirname "$proto")" "$work/out"
cp "$work/out/onnx.rs" "$here/src/proto/onnx.rs"
echo "wrote $here/src/proto/onnx.rs"
