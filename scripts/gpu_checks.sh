#!/usr/bin/env bash
# The checks that need a GPU, in one go, each under a time limit, logs kept:
#
#     bash scripts/gpu_checks.sh [LOG_FOLDER]      # default: $OUT, else ./gpu-checks
#     GPU_CHECK_ONLY="device recipe-epoch" bash scripts/gpu_checks.sh     # some steps only
#
# 1. device: the card, the driver and torch's CUDA build;
# 2. gpu-tests: the gpu-marked tests (pytest -m gpu tests/unit): CUDA resume, out-of-memory as a
#    failed result, workers and MPS on one GPU, proxies on CUDA against the CPU, and the
#    recipes' precision and memory format (tests/unit/test_gpu_recipes.py: bf16 and fp16 learn
#    and end near fp32's loss, an fp16 resume equals the uninterrupted run bit for bit with its
#    loss scaler, bf16 refused on a card before Ampere, channels-last weights and inputs with
#    contiguous's accuracy, fp16 data-parallel steps scaled and an overflowing one skipped);
#    GPU_CHECK_TESTS (default tests/unit) narrows them to some files;
# 3. bench-gpu: bench/gpu.py: evaluator against a hand-written loop, candidates per hour with 1
#    and N workers (time-sliced and under MPS), the NORD paper's experiment 1;
# 4. recipe-epoch: bench/gpu.py --parts recipe-epoch: one epoch of a NAS-Bench-201 network (C 16,
#    N 5, 50,000 images 3x32x32, --recipe nasbench201, batch 256) at fp32 and at bf16; its lines
#    nb201_epoch_fp32_s, nb201_epoch_bf16_s and bf16_speedup are bench/results/gpu.json's fields;
# 5. oneshot-epoch: bench/gpu.py --parts oneshot-epoch: a search step of each weight-sharing
#    method at the benchmark's sizes (C 16, N 5, batch 64), an epoch reckoned from it, and the
#    peak memory (oneshot_<method>_step_ms, _epoch_s, _peak_gib lines);
# 6. proxy-table: the NAS-Bench-201 proxy table's script on CUDA for GPU_CHECK_CELLS cells
#    (default 300), into the log folder: seconds per cell on this card.
#
# It runs from a checkout on a machine whose python3 has torch with CUDA; wheels of what that
# python lacks (pygmo, pytest-timeout, optuna) may wait in ./.whl and are put on the path.
# Limits: GPU_CHECK_TESTS_S, GPU_CHECK_BENCH_S, GPU_CHECK_EPOCH_S, GPU_CHECK_ONESHOT_S,
# GPU_CHECK_PROXIES_S seconds (180, 300, 180, 120, 90). All steps may take longer than a session's command may run: name those
# it has time for in GPU_CHECK_ONLY (space-separated step names; unset: all).
set -u
cd "$(dirname "$0")/.."
LOG=${1:-${OUT:-gpu-checks}}
mkdir -p "$LOG"
export PYTHONPATH="$PWD/.site:$PWD" PYTHONUNBUFFERED=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --upgrade --target "$PWD/.site" .whl/*.whl \
        > "$LOG/wheels.log" 2>&1 || echo "wheels: not installed, see $LOG/wheels.log"
fi

step() {   # step NAME SECONDS COMMAND...: run it, log it, say how it ended
    local name=$1 limit=$2
    shift 2
    if [ -n "${GPU_CHECK_ONLY:-}" ] && [[ " $GPU_CHECK_ONLY " != *" $name "* ]]; then
        return 0
    fi
    local started=$SECONDS
    timeout "$limit" "$@" > "$LOG/$name.log" 2>&1
    local status=$?
    echo "$name: exit $status after $((SECONDS - started)) s (limit $limit s); log $LOG/$name.log"
    tail -n 25 "$LOG/$name.log"
}

step device 30 bash -c 'nvidia-smi; python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))"'
# shellcheck disable=SC2086 # GPU_CHECK_TESTS may name several files
step gpu-tests "${GPU_CHECK_TESTS_S:-180}" python3 -m pytest -m gpu ${GPU_CHECK_TESTS:-tests/unit} \
    -q -p no:cacheprovider
step bench-gpu "${GPU_CHECK_BENCH_S:-300}" python3 bench/gpu.py --workers 8
step recipe-epoch "${GPU_CHECK_EPOCH_S:-180}" python3 bench/gpu.py --parts recipe-epoch
step oneshot-epoch "${GPU_CHECK_ONESHOT_S:-120}" python3 bench/gpu.py --parts oneshot-epoch
step proxy-table "${GPU_CHECK_PROXIES_S:-90}" python3 scripts/nasbench201_proxies.py --device cuda \
    --limit "${GPU_CHECK_CELLS:-300}" --out "$LOG/nasbench201_proxies.csv.gz"
