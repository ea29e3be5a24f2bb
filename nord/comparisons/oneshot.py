"""Weight-sharing (one-shot) searches beside the black-box methods' anytime curves.

A weight-sharing search (``nord run --space nasbench201 --algorithm gdas``) journals, after
each search epoch, the cell it derives, that cell's 200-epoch test accuracy in the
NAS-Bench-201 table (which the search never sees) and the epoch's measured wall time. Its
curve is that accuracy against the seconds searched so far::

    from nord.comparisons.oneshot import oneshot_curves, read_oneshot_runs

    runs = read_oneshot_runs(["gdas-0.db", "gdas-1.db"], "cifar10")   # method -> its runs
    runs["gdas"][0].curve    # [(seconds searched, table accuracy of the derived cell), ...]
    oneshot_curves(runs)     # per method: mean and band over its runs, against those seconds

What the curves measure, and how their seconds differ from simulated ones:
docs/comparisons.md.
"""
from __future__ import annotations

import os
import textwrap
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from nord.benchmarks.nasbench201 import get_dataset
from nord.benchmarks.nasbench201.table import DATASETS
from nord.comparisons.anytime import anytime_curves
from nord.comparisons.dataset_table import DatasetTable
from nord.errors import BenchmarkError, ConfigurationError, JournalError
from nord.journal.reads import JournalReader

__all__ = ["OneShotRun", "read_oneshot_run", "read_oneshot_runs", "oneshot_curves",
           "oneshot_plot", "oneshot_summary", "ONESHOT_PROTOCOL"]

FLAG = "--oneshot (oneshot=)"
"""How a refusal names the setting: the command's flag and the parameter together."""

ONESHOT_PROTOCOL = (
    "one-shot runs: x is the search's own wall time, the sum of its journaled epochs' "
    "seconds, measured on the machine it ran on (its device below; setup, data loading and "
    "the final evaluation not counted), not simulated time; y is the 200-epoch test accuracy "
    "in the table of the cell derived after each epoch, which the search never saw: the "
    "black-box curves' y (their incumbent's 200-epoch test accuracy), chosen there by the "
    "12-epoch validation signal")
"""What a one-shot curve is, said in the table and the JSON."""


@dataclass
class OneShotRun:
    """The finished epochs of one weight-sharing search, as its journal has them.

    Attributes:
        journal: the journal's path, as given.
        method: the search method (the run's algorithm: 'gdas', 'darts-v1', ...).
        seed: the run's seed.
        dataset: the data set searched (one of the table's).
        state: the run's state: 'finished', or 'running' (still going), 'interrupted',
            'killed', 'crashed' or 'failed' (its finished epochs only).
        planned_epochs: the search epochs the run was given.
        seconds: each finished epoch's measured wall time, in order (epoch 1 first).
        cells: the cell derived after each, as the benchmark writes it.
        accuracies: each cell's 200-epoch test accuracy in the table (fractions).
        device: where the seconds were measured, as the run record says it (the device
            asked for, the torch build, the ranks).
    """

    journal: str
    method: str
    seed: Any
    dataset: str
    state: str
    planned_epochs: Optional[int]
    seconds: List[float]
    cells: List[str]
    accuracies: List[float]
    device: str

    @property
    def epochs(self) -> int:
        """Search epochs finished."""
        return len(self.seconds)

    @property
    def search_seconds(self) -> float:
        """Seconds the finished epochs took, together."""
        return float(sum(self.seconds))

    @property
    def curve(self) -> List[Tuple[float, float]]:
        """``[(seconds searched by the end of the epoch, its cell's table accuracy)]``, one
        point per finished epoch (a fraction, as :mod:`nord.comparisons.anytime`'s curves)."""
        return list(zip(np.cumsum(self.seconds).tolist(), self.accuracies))

    @property
    def final_cell(self) -> str:
        """The cell derived after the last finished epoch."""
        return self.cells[-1]

    @property
    def final_accuracy(self) -> float:
        """Its 200-epoch test accuracy in the table (a fraction)."""
        return self.accuracies[-1]

    @property
    def complete(self) -> bool:
        return self.state == "finished"

    def status(self) -> str:
        """'finished', or what became of an unfinished run and the epochs it finished."""
        if self.complete:
            return "finished"
        planned = "" if self.planned_epochs is None else f" of {self.planned_epochs}"
        going = "still running" if self.state == "running" else self.state
        return f"{going}: {self.epochs}{planned} epochs finished"

    def to_dict(self) -> Dict[str, Any]:
        """The run as the comparison's JSON keeps it: accuracies in percent, the curve's
        points ``[seconds searched, percent]``."""
        data = asdict(self)
        data["accuracies_percent"] = [100 * value for value in data.pop("accuracies")]
        data.update(epochs=self.epochs, search_seconds=self.search_seconds,
                    final_cell=self.final_cell, final_accuracy_percent=100 * self.final_accuracy,
                    curve=[[time, 100 * value] for time, value in self.curve])
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "OneShotRun":
        """A run saved with :meth:`to_dict`."""
        return cls(journal=data["journal"], method=data["method"], seed=data["seed"],
                   dataset=data["dataset"], state=data["state"],
                   planned_epochs=data["planned_epochs"],
                   seconds=[float(value) for value in data["seconds"]], cells=list(data["cells"]),
                   accuracies=[float(value) / 100 for value in data["accuracies_percent"]],
                   device=data["device"])


def read_oneshot_run(path: Union[str, os.PathLike], dataset: Union[str, DatasetTable]
                     ) -> OneShotRun:
    """The finished epochs of the weight-sharing search journaled at ``path``, searched on
    ``dataset`` (a name or its :class:`~nord.comparisons.dataset_table.DatasetTable`). The
    journal is only read (a run still going may go on writing it).

    Raises:
        ConfigurationError: not a journal; a journal with no search epochs (not a
            weight-sharing search, or none finished yet); a search on another data set, or
            on one off the table (no table accuracies); an epoch without its seconds or its
            table accuracy, or missing from the sequence.
    """
    return _read(path, DatasetTable.of(dataset))[0]


def _read(path: Union[str, os.PathLike], table: DatasetTable
          ) -> Tuple[OneShotRun, Dict[str, Any]]:
    """The run at ``path`` (see :func:`read_oneshot_run`) and what it measures but its seed:
    the method's settings and the evaluator's, flattened."""
    given = os.fspath(path)
    try:
        with JournalReader(path, read_only=True) as journal:
            meta = journal.metadata()
            state = journal.state()
            rows = journal.search_epochs()
    except JournalError as error:
        raise ConfigurationError(f"{FLAG} {given}: {error}") from None
    method = meta.get("algorithm")
    if not rows:
        raise ConfigurationError(
            f"{FLAG} {given} holds no search epochs (a run of {method}, "
            f"{_not_yet(state)}); give the journal of a weight-sharing search (nord run --space "
            "nasbench201 --algorithm gdas, darts-v1, darts-v2, setn, enas or rsps) with at "
            "least one finished epoch")
    searched = _dataset_name(meta)
    try:
        on_table = get_dataset(searched).name if searched else None
    except BenchmarkError:
        on_table = None
    if on_table is None:
        raise ConfigurationError(
            f"{FLAG} {given} searched {searched or 'a data set it does not name'}, which is "
            f"not one of the NAS-Bench-201 table's ({', '.join(DATASETS)}), so its "
            "epochs have no table accuracy to draw; give a search on the table's data set "
            f"--dataset {table.name} (dataset=)")
    if on_table != table.name:
        raise ConfigurationError(
            f"{FLAG} {given} searched {on_table}, but this comparison is on --dataset "
            f"{table.name} (dataset=); give --dataset {on_table}, or a search on {table.name}")
    numbers = [row["epoch"] for row in rows]
    if numbers != list(range(1, len(rows) + 1)):
        missing = sorted(set(range(1, max(numbers) + 1)) - set(numbers))
        raise ConfigurationError(
            f"{FLAG} {given} journals search epochs {_listed(numbers)}, without epoch "
            f"{_listed(missing)}: its seconds searched cannot be summed; give a complete journal")
    for field, what in (("lookup_accuracy", "table accuracy"), ("seconds", "measured seconds")):
        empty = [row["epoch"] for row in rows if row[field] is None]
        if empty:
            raise ConfigurationError(
                f"{FLAG} {given}: search epoch{'s' if len(empty) > 1 else ''} "
                f"{_listed(empty)} of its {len(rows)} {'have' if len(empty) > 1 else 'has'} no "
                f"{what} journaled, so its curve cannot be drawn; give a search journaled "
                f"with them (nord run on --dataset {table.name})")
    # a search recorded before searches ran on several ranks ran on one
    evaluator = {"ranks_per_network": 1, **(meta.get("evaluator") or {})}
    settings = {**{f"parameters.{key}": value for key, value in
                   (meta.get("parameters") or {}).items()},
                **{f"evaluator.{key}": value for key, value in evaluator.items()}}
    return OneShotRun(journal=given, method=str(method), seed=meta.get("seed"),
                      dataset=table.name, state=state,
                      planned_epochs=evaluator.get("search_epochs"),
                      seconds=[float(row["seconds"]) for row in rows],
                      cells=[row["cell"] for row in rows],
                      accuracies=[float(row["lookup_accuracy"]) for row in rows],
                      device=_device(meta)), settings


def read_oneshot_runs(paths: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]],
                      dataset: Union[str, DatasetTable]) -> Dict[str, List[OneShotRun]]:
    """The runs journaled at ``paths``, by method, each method's runs (its seeds) by seed.

    Raises:
        ConfigurationError: no paths; a path given twice; two runs of one method with the same
            seed, or with other settings (the runs of a method are its seeds); and what
            :func:`read_oneshot_run` refuses.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise ConfigurationError(f"{FLAG} needs at least one journal of a weight-sharing search")
    seen: Dict[str, str] = {}
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            raise ConfigurationError(
                f"{FLAG} names one journal twice ({seen[real]} and {os.fspath(path)}); give "
                "each run once")
        seen[real] = os.fspath(path)
    table = DatasetTable.of(dataset)
    runs: Dict[str, List[OneShotRun]] = {}
    settings: Dict[str, Tuple[str, Dict[str, Any]]] = {}
    for path in paths:
        run, mine = _read(path, table)
        if run.method in settings:
            first, theirs = settings[run.method]
            _check_same_search(run, runs[run.method], first, theirs, mine)
        else:
            settings[run.method] = (run.journal, mine)
        runs.setdefault(run.method, []).append(run)
    for method_runs in runs.values():
        method_runs.sort(key=_by_seed)
    return runs


def oneshot_curves(runs: Mapping[str, Sequence[OneShotRun]], points: int = 101
                   ) -> Dict[str, Dict[str, Any]]:
    """Per method, the mean and band over its runs of the derived cell's table accuracy (%)
    against seconds searched, on ``points`` times from 0 to its longest run's end (as
    :func:`~nord.comparisons.anytime.anytime_curves` draws the black-box methods: a run counts
    from its first epoch's end, and holds its last cell after its last)."""
    return {method: anytime_curves([run.curve for run in method_runs],
                                   max(run.search_seconds for run in method_runs), points)
            for method, method_runs in runs.items()}


def oneshot_plot(runs: Mapping[str, Sequence[OneShotRun]], points: int = 101
                 ) -> Dict[str, Any]:
    """What :func:`~nord.comparisons.anytime.write_anytime_plot` needs to draw ``runs`` beside
    the black-box methods: ``oneshot`` (legend label -> curve) and a ``caption`` that says
    what each axis is for each kind of curve, and where the searches' seconds were measured."""
    curves = oneshot_curves(runs, points)
    drawn = {}
    for method, method_runs in runs.items():
        unfinished = sum(not run.complete for run in method_runs)
        count = len(method_runs)
        drawn[f"{method}, one-shot ({count} run{'s' if count != 1 else ''}"
              f"{f', {unfinished} unfinished' if unfinished else ''})"] = curves[method]
    measured = "; ".join(f"{method}: {', '.join(sorted({run.device for run in method_runs}))}"
                         for method, method_runs in runs.items())
    caption = textwrap.fill(
        "Solid: black-box methods, the incumbent's 200-epoch test accuracy in the table "
        "against simulated time (the table's training costs, on the benchmark's GPU). "
        "Dashed: weight-sharing searches, the 200-epoch table test accuracy of the cell derived "
        "after each epoch (never seen by the search) against the search's own measured "
        f"seconds ({measured}); not simulated, so the two time axes are of different machines.",
        120)
    return {"oneshot": drawn, "caption": caption}


def oneshot_summary(method_runs: Sequence[OneShotRun]) -> Dict[str, Any]:
    """One method's runs in figures: their count and how many finished, the final derived
    cell's table accuracy (%) and the seconds searched (mean, std with ddof=0, min, max), the
    epochs finished (mean) and where the seconds were measured."""
    final = np.array([100 * run.final_accuracy for run in method_runs])
    seconds = np.array([run.search_seconds for run in method_runs])
    return {"runs": len(method_runs),
            "finished": sum(run.complete for run in method_runs),
            "final_accuracy": _stats(final), "search_seconds": _stats(seconds),
            "epochs": float(np.mean([run.epochs for run in method_runs])),
            "devices": sorted({run.device for run in method_runs})}


def _stats(values: np.ndarray) -> Dict[str, float]:
    return {"mean": float(values.mean()), "std": float(values.std()),
            "min": float(values.min()), "max": float(values.max())}


def _check_same_search(run: OneShotRun, others: Sequence[OneShotRun], first: str,
                       theirs: Mapping[str, Any], mine: Mapping[str, Any]) -> None:
    """Refuse a run of a method whose seed repeats another's, or whose settings differ: the
    runs of one method are drawn as its seeds."""
    twin = next((other for other in others if other.seed == run.seed), None)
    if twin is not None:
        raise ConfigurationError(
            f"{FLAG} has two {run.method} runs with seed {run.seed} ({twin.journal} and "
            f"{run.journal}); the runs of a method are drawn as its seeds: give each seed once")
    for name in sorted(set(theirs) | set(mine)):
        if theirs.get(name) != mine.get(name):
            raise ConfigurationError(
                f"{FLAG}: {run.journal} searched with other {run.method} settings than "
                f"{first} ({name}: {mine.get(name)!r} against {theirs.get(name)!r}); the runs "
                "of a method are drawn as its seeds, so they must differ in the seed only")


def _by_seed(run: OneShotRun) -> Tuple[int, Any]:
    """Integer seeds in order, then any other (a seed journaled as something else)."""
    seed = run.seed
    return (0, seed) if isinstance(seed, int) and not isinstance(seed, bool) else (1, str(seed))


def _dataset_name(meta: Mapping[str, Any]) -> Optional[str]:
    dataset = meta.get("dataset")
    if isinstance(dataset, Mapping) and dataset.get("name"):
        return str(dataset["name"])
    return (meta.get("config") or {}).get("dataset")


def _device(meta: Mapping[str, Any]) -> str:
    """Where a run measured its seconds, as its record says: the device it searched on (every
    one, when a resume moved it; in a record without it, the device asked for), the torch
    build, the ranks."""
    execution, evaluator = meta.get("execution") or {}, meta.get("evaluator") or {}
    devices = execution.get("searched_on") or [
        execution.get("resolved_device") or execution.get("device") or "unrecorded"]
    parts = [f"device {devices[0]}" if len(devices) == 1 else
             f"devices {', then '.join(devices)} (a resume moved the search)"]
    torch = (meta.get("versions") or {}).get("torch")
    if torch:
        parts.append(f"torch {torch}")
    ranks = evaluator.get("ranks_per_network")
    if ranks and ranks > 1:
        parts.append(f"{ranks} ranks")
    return ", ".join(parts)


def _not_yet(state: str) -> str:
    if state == "running":
        return "still running, no search epoch finished yet"
    return state


def _listed(numbers: Sequence[int]) -> str:
    return ", ".join(str(number) for number in numbers)
