#!/usr/bin/env bash
# Idempotent set-up of a fresh machine: Open MPI, SLURM and munge for the cluster tests,
# Chromium for the browser tests, Debian's Fashion-MNIST for a checksum test,
# a virtual environment in .venv, torch (pinned; the CPU wheel, or the CUDA build where an
# NVIDIA GPU is present), nord with its dependencies, then Horovod (with NCCL where nvcc and
# NCCL are present). scripts/gpu_setup.py decides what a GPU changes and says it.
# Every step is skipped when what it makes is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${NORD_VENV:-.venv}
PYTHON=${PYTHON:-python3}
TORCH_VERSION=${NORD_TORCH_VERSION:-2.13.0}

say() { printf '[setup] %s\n' "$*"; }

# 1. Open MPI (mpirun and the headers mpi4py and Horovod link against).
if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicxx >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing Debian's Open MPI"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
    else
        say "Open MPI is missing: install it first, e.g. 'sudo apt-get install openmpi-bin libopenmpi-dev'"
        exit 1
    fi
fi

# 2. What the cluster tests run for real (as root only): a single-node SLURM with munge, and
#    iproute2 for hosts made of network namespaces. The tests start and stop the daemons
#    themselves; the install must not start any, hence a policy-rc.d that forbids it.
have_cluster_tools() {
    local tool
    for tool in slurmctld slurmd srun sbatch scancel munged ip unshare; do
        PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" >/dev/null 2>&1 || return 1
    done
}
if [ "${NORD_SKIP_CLUSTER_TOOLS:-0}" != 1 ] && ! have_cluster_tools; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing SLURM, munge and iproute2 for the cluster tests"
        export DEBIAN_FRONTEND=noninteractive
        no_start=/usr/sbin/policy-rc.d
        made_policy=0
        if [ ! -e "$no_start" ]; then
            printf '#!/bin/sh\nexit 101\n' >"$no_start"
            chmod 755 "$no_start"
            made_policy=1
        fi
        status=0
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
            slurmctld slurmd slurm-client munge iproute2 util-linux >/dev/null; } || status=$?
        [ "$made_policy" = 1 ] && rm -f "$no_start"
        [ "$status" = 0 ] || exit "$status"
    else
        say "SLURM, munge or iproute2 is missing: the cluster tests need root and will be skipped"
    fi
fi

# 2b. Headless Chromium and its driver, in which the report tests open report.html and the
#     live view's tests open nord serve's pages (as root only; without them those tests are
#     skipped, saying why).
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing Chromium and chromedriver for the report and live view tests"
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
            chromium chromium-driver >/dev/null; } || say "Chromium could not be installed: the browser tests will be skipped"
    else
        say "Chromium is missing: the browser tests will be skipped"
    fi
fi

# 2c. Debian's copy of Fashion-MNIST (the official files, recompressed), against which a test
#     checks nord's MD5s of the unpacked official files (as root only; else that test is
#     skipped, saying why).
if [ ! -d /usr/share/datasets/fashion-mnist ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing Debian's Fashion-MNIST for the data set checksum test"
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
            dataset-fashion-mnist >/dev/null; } || say "dataset-fashion-mnist could not be installed: its test will be skipped"
    else
        say "dataset-fashion-mnist is missing: its test will be skipped"
    fi
fi

# 3. The virtual environment.
if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"
# pip's notes about this machine's local package indexes are noise: keep real errors only.
pip_install() {
    local log status=0
    log=$(mktemp)
    "$PY" -m pip install -q --disable-pip-version-check "$@" 2>"$log" || status=$?
    grep -v "is ignored: it is neither" "$log" >&2 || true
    rm -f "$log"
    return $status
}

# 4. torch before anything that depends on it: an unpinned torch pulls the CUDA build.
#    With an NVIDIA GPU, the CUDA build the driver supports, from PyTorch's index
#    (scripts/gpu_setup.py decides, and says what it found).
site=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
eval "$("$PY" scripts/gpu_setup.py --shell --site-packages "$site")"
say "$NORD_GPU_SAYS"
if [ -n "$NORD_TORCH_INDEX" ]; then
    if ! "$PY" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION' or torch.version.cuda is None)" 2>/dev/null; then
        say "installing torch==$TORCH_VERSION ($NORD_TORCH_BUILD) for $NORD_GPUS"
        # the local version (+cu130) named: '==2.13.0' alone is met by an installed CPU build
        pip_install "torch==$TORCH_VERSION+$NORD_TORCH_BUILD" --index-url "$NORD_TORCH_INDEX"
    fi
elif ! "$PY" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
    say "installing torch==$TORCH_VERSION"
    pip_install "torch==$TORCH_VERSION"
fi
say "torch: $("$PY" -c "import torch; print(torch.__version__, 'CUDA', torch.version.cuda or 'none', '| GPUs seen:', torch.cuda.device_count())")"

# 5. nord itself, editable, with every optional dependency and the test tools.
if ! "$PY" -c "import nord, mpi4py, pygmo, optuna, pytest, xdist, hypothesis, matplotlib, sklearn, starlette, uvicorn, plotly, selenium" 2>/dev/null \
   || [ setup.py -nt "$VENV/.nord-installed" ]; then
    say "installing nord and its dependencies"
    pip_install -e ".[all,test]"
    touch "$VENV/.nord-installed"
fi

# 5b. The benchmark authors' own supernets (xautodl), the reference the weight-sharing tests
#     check nord's against, in a folder of its own ($VENV/references, which the tests put on
#     their path): it pins numpy <= 1.19.5 and fvcore for modules the tests never import (its
#     cell supernets need torch only), so it is installed without them and kept out of the
#     environment pip checks.
if [ ! -d "$VENV/references/xautodl" ]; then
    say "installing xautodl==1.0.0 into $VENV/references (test reference)"
    pip_install --no-deps --target "$VENV/references" "xautodl==1.0.0"
fi

# 6. Horovod, built from source against this torch and this Open MPI (cached); with NCCL
#    operations where step 4 found a GPU, nvcc and NCCL (NCCL may come with torch's wheel,
#    so it is looked for again now that torch is installed).
if [ "${NORD_SKIP_HOROVOD:-0}" != 1 ]; then
    eval "$("$PY" scripts/gpu_setup.py --shell --site-packages "$site")"
    NORD_HOROVOD_NCCL=$NORD_HOROVOD_NCCL NORD_NCCL_INCLUDE=$NORD_NCCL_INCLUDE \
        NORD_NCCL_LIB=$NORD_NCCL_LIB NORD_CUDA_HOME=$NORD_CUDA_HOME \
        bash scripts/build_horovod.sh "$VENV"
fi
say "ready: $VENV"
