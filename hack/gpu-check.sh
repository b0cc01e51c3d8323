#!/usr/bin/env bash
# GPU smoke check for lockstep-launcher's NCCL path: builds the launcher and a small NCCL
# all-reduce program (launcher/tools/nccl_allreduce_smoke.cc), then runs one rank per GPU under
# the launcher, which creates the ncclUniqueId and hands it over as LOCKSTEP_NCCL_UNIQUE_ID.
# Prints NCCL's version and the all-reduce bus bandwidth. Takes a few minutes (mostly the build).
#
# Usage: hack/gpu-check.sh
# Env:   LOCKSTEP_NCCL_LIBRARY  libnccl.so.2 to use (default: hack/setup-nccl.sh's, else the system's)
#        BUILD_DIR              build directory (default: build-gpu-check)
# Where no NVIDIA GPU is present it says "no GPU" and exits 0, so CI can call it everywhere.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"

gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
fi
if [[ "$gpus" -eq 0 ]]; then
  echo "gpu-check: no GPU (nvidia-smi missing or lists no device); skipping the NCCL smoke test"
  exit 0
fi
echo "gpu-check: $gpus GPU(s):"
nvidia-smi -L

BUILD_DIR="${BUILD_DIR:-$REPO_ROOT/build-gpu-check}"
cmake -S "$REPO_ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_WERROR=OFF \
  -DLOCKSTEP_BUILD_BENCH=OFF >/dev/null
ninja -C "$BUILD_DIR" lockstep-launcher
g++ -std=c++20 -O2 -o "$BUILD_DIR/nccl_allreduce_smoke" launcher/tools/nccl_allreduce_smoke.cc -ldl

nccl="${LOCKSTEP_NCCL_LIBRARY:-}"
if [[ -z "$nccl" ]]; then
  nccl="$(hack/setup-nccl.sh 2>/dev/null || true)"
fi
nccl="${nccl:-libnccl.so.2}"
# libcudart: from the CUDA wheels in .venv when present, else the system's loader path.
for d in "$REPO_ROOT"/.venv/lib/python3*/site-packages/nvidia/cuda_runtime/lib \
         "$REPO_ROOT"/.venv/lib/python3*/site-packages/nvidia/cu*/lib; do
  [[ -d "$d" ]] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
echo "gpu-check: running $gpus rank(s) with NCCL from $nccl"
LOCKSTEP_TOKEN="gpu-check-$$" LOCKSTEP_TERMINATION_LOG=/dev/null timeout 300 \
  "$BUILD_DIR/bin/lockstep-launcher" --framework nccl --nnodes 1 --node-rank 0 \
  --nproc-per-node "$gpus" --rdzv-endpoint "127.0.0.1:$port" --rdzv-id gpu-check \
  --advertise-addr 127.0.0.1 --nccl-library "$nccl" -- "$BUILD_DIR/nccl_allreduce_smoke"
echo "gpu-check: OK"
