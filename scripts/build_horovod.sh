#!/usr/bin/env bash
# Build Horovod with PyTorch, MPI and Gloo (and NCCL with NORD_HOROVOD_NCCL=1) against the
# installed torch and Open MPI, and install it into the given virtual environment.
#
# Horovod 0.28.1 asks CMake for C++14, but torch >= 2.1's headers need C++17, so the
# sdist is patched to C++17 in both places that set the standard. The wheel only fits
# the torch, Open MPI and Python it was built against, so the cache is keyed by all three.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=$(cd "${1:-.venv}" && pwd)
PY="$VENV/bin/python"
HOROVOD_VERSION=${NORD_HOROVOD_VERSION:-0.28.1}
say() { printf '[horovod] %s\n' "$*"; }
pip_quiet() {
    local log status=0
    log=$(mktemp)
    "$PY" -m pip "$@" 2>"$log" || status=$?
    grep -v "is ignored: it is neither" "$log" >&2 || true
    rm -f "$log"
    return $status
}

# What Horovod declares it needs at run time (pip check names any that is missing), installed
# without letting pip touch torch.
runtime_needs() {
    pip_quiet install -q --disable-pip-version-check cloudpickle psutil pyyaml packaging \
        "cffi>=1.4.0"
}

# NORD_HOROVOD_NCCL=1 (set by setup.sh from scripts/gpu_setup.py, with NORD_NCCL_INCLUDE,
# NORD_NCCL_LIB and NORD_CUDA_HOME) adds NCCL operations for GPUs.
NCCL=${NORD_HOROVOD_NCCL:-0}
ops="MPI and Gloo"
[ "$NCCL" = 1 ] && ops="MPI, Gloo and NCCL"
if "$PY" - <<PYEOF 2>/dev/null
import sys
import horovod, horovod.torch as hvd
sys.exit(horovod.__version__ != "$HOROVOD_VERSION" or not (hvd.mpi_built() and hvd.gloo_built())
         or ("$NCCL" == "1" and not hvd.nccl_built()))
PYEOF
then
    say "Horovod $HOROVOD_VERSION with PyTorch, $ops is installed"
    runtime_needs
    exit 0
fi

torch_version=$("$PY" -c "import torch; print(torch.__version__)")
mpi_version=$(mpirun --version 2>/dev/null | head -n 1 | tr -cs 'A-Za-z0-9.' '-')
py_version=$("$PY" -c "import sys; print('cp%d%d' % sys.version_info[:2])")
key="horovod-${HOROVOD_VERSION}_torch-${torch_version}_${mpi_version}_${py_version}"
gpu_env=()
if [ "$NCCL" = 1 ]; then
    key="${key}_nccl"
    gpu_env=(HOROVOD_GPU_OPERATIONS=NCCL "HOROVOD_NCCL_INCLUDE=$NORD_NCCL_INCLUDE"
             "HOROVOD_NCCL_LIB=$NORD_NCCL_LIB" "HOROVOD_CUDA_HOME=$NORD_CUDA_HOME")
fi
cache=${NORD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nord}/wheels/$key
wheel=$(ls "$cache"/horovod-*.whl 2>/dev/null | head -n 1 || true)

if [ -z "$wheel" ]; then
    say "building Horovod $HOROVOD_VERSION with $ops for $key (a few minutes)"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    pip_quiet download -q --disable-pip-version-check --no-binary :all: --no-deps \
        "horovod==$HOROVOD_VERSION" -d "$work"
    tar -xzf "$work"/horovod-"$HOROVOD_VERSION".tar.gz -C "$work"
    src="$work/horovod-$HOROVOD_VERSION"
    sed -i 's/set(CMAKE_CXX_STANDARD 14)/set(CMAKE_CXX_STANDARD 17)/' \
        "$src/CMakeLists.txt" "$src/horovod/torch/CMakeLists.txt"
    pip_quiet install -q --disable-pip-version-check wheel setuptools cmake packaging
    mkdir -p "$cache"
    (cd "$src" && env "${gpu_env[@]}" HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_MPI=1 HOROVOD_WITH_GLOO=1 \
        HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1 \
        MAKEFLAGS="-j$(nproc)" \
        "$PY" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
        . -w "$cache")
    wheel=$(ls "$cache"/horovod-*.whl | head -n 1)
fi

say "installing $(basename "$wheel")"
pip_quiet install -q --disable-pip-version-check --no-deps --force-reinstall "$wheel"
runtime_needs
(cd /tmp && "$VENV/bin/horovodrun" --check-build)
