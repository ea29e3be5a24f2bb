"""How the cluster tests start nord's searches and read their journals.

This is the only module of those tests that knows the command line's flags: every search they
run (under mpirun, srun or sbatch) is one of the argument lists made here.

    argv = search_command(journal, budget=8, mode="async")   # nord run ..., smoke size
    argv = resume_command(journal)                           # nord resume JOURNAL
    rows = evaluations(journal)                               # the journal, times and ranks aside
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[2]
NORD = [sys.executable, "-m", "nord"]
"""``nord`` as the ranks start it: this interpreter, so the same on every (virtual) host."""

TIMES_AND_RANKS = ("started", "ended", "train_time", "eval_time", "worker_rank")
"""Journal fields that differ between two runs of the same search on different ranks or hosts."""


def search_command(journal: os.PathLike, budget: int, *, mode: str = "async",
                   evaluation: str = "distributed", group_size: Optional[int] = None,
                   population: int = 4, seed: int = 0, backend: Optional[str] = None) -> List[str]:
    """``nord run`` for a smoke-size search: regularized evolution, 1 epoch per network."""
    argv = [*NORD, "run", "--algorithm", "regularized_evolution", "--population", str(population),
            "--evaluation", evaluation, "--mode", mode, "--budget", str(budget), "--epochs", "1",
            "--threads", "1", "--seed", str(seed), "--journal", str(journal)]
    if group_size is not None:
        argv += ["--group-size", str(group_size)]
    if backend is not None:
        argv += ["--backend", backend]
    return argv


def resume_command(journal: os.PathLike) -> List[str]:
    """``nord resume JOURNAL``: continue a run from its journal alone."""
    return [*NORD, "resume", str(journal)]


def experiment_command(script: str, *args: str) -> List[str]:
    """An experiment script at its --smoke size."""
    return [sys.executable, str(REPO / "experiments" / script), "--smoke", *args]


def evaluations(journal: os.PathLike, drop: Sequence[str] = TIMES_AND_RANKS) -> List[Dict]:
    """The journal's evaluations in order, without the fields in ``drop``."""
    from nord.journal import Journal

    with Journal(journal) as record:
        rows = record.evaluations()
    return [{key: value for key, value in row.items() if key not in drop} for row in rows]


def run_info(journal: os.PathLike) -> Dict:
    """The run's metadata (status, ranks, workers, budget ...)."""
    from nord.journal import Journal

    with Journal(journal) as record:
        return record.metadata()


def count(journal: os.PathLike) -> int:
    """Evaluations recorded so far; 0 while the journal does not exist yet."""
    from nord.errors import JournalError
    from nord.journal import Journal

    try:
        with Journal(journal) as record:
            return record.count()
    except (JournalError, OSError):
        return 0
    except Exception as error:  # noqa: BLE001 - sqlite while the file is being created
        if type(error).__module__.startswith("sqlite3"):
            return 0
        raise


def retrained(before: List[Dict], after: List[Dict]) -> List[str]:
    """Hashes trained before the interruption and trained again after it (none is the rule).

    A network is trained when its row is not cached and it has a descriptor (a genome that does
    not decode has none).
    """
    done = {row["key"] for row in before if row["descriptor"] and not row["cached"]}
    return [row["key"] for row in after[len(before):]
            if row["descriptor"] and not row["cached"] and row["key"] in done]


SMOKE_RUN = ["--budget", "6", "--population", "3", "--threads", "1"]
"""What makes a ``nord run`` line of the README smoke-sized."""


def smoke_size(argv: Sequence[str], journal: os.PathLike) -> List[str]:
    """A search command line as the README shows it, made smoke-sized and journaled to ``journal``.

    ``nord run`` gets a small budget and population and ``--journal`` moves; an experiment
    script gets ``--smoke`` and ``--journal``.
    """
    argv = list(argv)
    if "--journal" in argv:
        argv[argv.index("--journal") + 1] = str(journal)
    else:
        argv += ["--journal", str(journal)]
    if any(Path(arg).name == "nord" for arg in argv) and "run" in argv:
        return argv + SMOKE_RUN
    if any(arg.startswith("experiments/") for arg in argv):
        return argv + ["--smoke"]
    raise ValueError(f"not a search command line: {' '.join(argv)}")
