"""What a process pays to load Digits: its split made anew, against the split kept in the data root.

    python bench/digits_split.py [--repeats 5]

Every rank and worker of a run is a fresh interpreter that loads the data set. Each repeat
starts two processes that import torch and load ``Digits(seed=0)``: one with an empty data
root (it imports scikit-learn and splits), one with the root the first left (it reads the kept
file). Printed: the CPU seconds (user + system, the child's own) of each side, median over
repeats, and their ratio, both sides measured in the same run.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOAD = "import torch; from nord.data import Digits; Digits(seed=0).load()"


def cpu_of(root: Path) -> float:
    """CPU seconds of one fresh process that loads Digits with ``root`` as its data root."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, NORD_DATA_ROOT=str(root), PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    subprocess.run([sys.executable, "-c", LOAD], env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    anew, kept = [], []
    with tempfile.TemporaryDirectory(prefix="nord-bench-digits-") as folder:
        for repeat in range(args.repeats):
            root = Path(folder) / f"root{repeat}"
            anew.append(cpu_of(root))          # empty root: imports scikit-learn, splits, keeps
            kept.append(cpu_of(root))          # the same root: reads the kept split
            shutil.rmtree(root)
    anew_s, kept_s = statistics.median(anew), statistics.median(kept)
    print(f"load Digits in a fresh process, median of {args.repeats} (CPU s, user + system)")
    print(f"  split made anew (scikit-learn imported): {anew_s:.2f} s")
    print(f"  split kept in the data root:             {kept_s:.2f} s")
    print(f"  kept / anew: {kept_s / anew_s:.2f} ({anew_s - kept_s:.2f} s less a process)")


if __name__ == "__main__":
    main()
