#!/usr/bin/env bash
# The main job: the NORD paper's three experiments at a small size on the built-in Digits
# data, under mpirun, then a report that compares them (runs/demo/report/report.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${NORD_DEMO_DIR:-runs/demo}
SIZE=(--population 6 --generations 3 --epochs 2 --seed 0)

# One torch thread per rank, and MPI yields the core while it waits: on a machine with few
# cores, Horovod's background thread otherwise polls for its peers on the cores training
# needs (experiment 2 then takes about twice as long; see the README, "Few CPU cores").
MPIRUN=(mpirun --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 --mca mpi_yield_when_idle 1)
if [ "$(id -u)" = 0 ]; then
    # Open MPI refuses to start as root unless told that this is intended.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMP_NUM_THREADS=1

rm -rf "$OUT"
mkdir -p "$OUT"
echo "== the paper's example networks"
"$PY" experiments/paper_examples.py --epochs 2
echo
echo "== experiment 1: pygmo GA, local training, 1 process"
"$PY" experiments/experiment1_local.py "${SIZE[@]}" --journal "$OUT/experiment1-local.db"
echo
echo "== experiment 2: pygmo GA, every network data-parallel on 2 ranks (Horovod)"
"${MPIRUN[@]}" -np 2 "$PY" experiments/experiment2_data_parallel.py "${SIZE[@]}" \
    --journal "$OUT/experiment2-data-parallel.db"
echo
echo "== experiment 3: distributed GA, 2 worker ranks train whole networks (rank 0 dispatches)"
"${MPIRUN[@]}" -np 3 "$PY" experiments/experiment3_distributed_ga.py "${SIZE[@]}" \
    --journal "$OUT/experiment3-distributed.db"
echo
"$PY" -m nord list "$OUT"
"$PY" -m nord report "$OUT" --out "$OUT/report" --title "NORD's three experiments on Digits"
