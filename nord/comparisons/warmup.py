"""Zero-cost warm-up on NAS-Bench-201: REA's first population chosen by a proxy.

Abdelfattah et al. ("Zero-Cost Proxies for Lightweight NAS", ICLR 2021) score many random
cells with a zero-cost proxy and start the search from the best. Here the scores come from
the packaged proxy table, so a warm-up costs no training; it costs the proxy's measured
seconds in simulated time::

    from nord.comparisons.warmup import WarmUp, run_warm_seed

    warm_up = WarmUp(candidates=1000, keep=10, proxy="synflow")
    run = run_warm_seed("cifar10", budget=100, seed=0, warm_up=warm_up)
    run.reported_accuracy          # as compare.run_seed("rea", ...) reports it

The budget counts benchmark evaluations only (the proxy's scores are not evaluations).
Details (what helps where, measured): docs/proxies.md.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from nord.benchmarks.nasbench201 import NASBench201Space, get_dataset, load_table
from nord.benchmarks.nasbench201.proxy_table import TABLE_PROXIES, load_proxies
from nord.checks import check_int
from nord.comparisons.anytime import SimulatedSetting, run_simulated_seed
from nord.comparisons.compare import evaluated_cells
from nord.comparisons.dataset_table import DatasetTable
from nord.comparisons.records import SeedRun
from nord.errors import ConfigurationError
from nord.search.algorithms.registry import make_algorithm

_STREAM = 0x5EED
"""Mixed into the run's seed for the warm-up's draws, so that they never replay REA's."""


@dataclass(frozen=True)
class WarmUp:
    """Score ``candidates`` random cells with ``proxy``; REA starts from the best ``keep``.

    ``pool``: the table indices candidates are drawn from (None: every cell the proxy table
    holds); each must be in the table.

    Raises:
        ConfigurationError: counts out of range, or a proxy the table does not hold.
    """

    candidates: int = 1000
    keep: int = 10
    proxy: str = "synflow"
    pool: Optional[Tuple[int, ...]] = None

    def __post_init__(self):
        check_int(self.candidates, "candidates (cells the proxy scores)", 1)
        check_int(self.keep, "keep (cells REA starts from)", 1, self.candidates,
                  rule=f"an integer in [1, candidates={self.candidates}]")
        if self.proxy not in TABLE_PROXIES:
            raise ConfigurationError(
                f"a warm-up on NAS-Bench-201 reads the packaged proxy table, which holds "
                f"{', '.join(TABLE_PROXIES)}; got proxy={self.proxy!r}")


def warm_start(dataset: str, seed: int, warm_up: WarmUp) -> Tuple[List[Tuple[int, ...]], float]:
    """The genomes REA starts from (best proxy score first) and the seconds the warm-up's
    proxy evaluations took. Candidates are drawn, seeded, among the cells the proxy table
    holds (all of them once it is complete; a uniform sample of the space before).

    Raises:
        ConfigurationError: the table holds fewer cells than ``warm_up.candidates``.
    """
    dataset = get_dataset(dataset).name
    proxies = load_proxies()
    pool = np.flatnonzero(proxies.computed)
    if warm_up.pool is not None:
        asked = np.asarray(warm_up.pool, dtype=np.int64)
        missing = np.setdiff1d(asked, pool)
        if len(missing):
            raise ConfigurationError(
                f"the warm-up's pool holds {len(missing)} cells the proxy table does not "
                f"(e.g. {missing[0]}); draw from cells it holds (proxies.computed)")
        pool = np.unique(asked)
    if len(pool) < warm_up.candidates:
        raise ConfigurationError(
            f"the warm-up draws from {len(pool)} cells, fewer than its {warm_up.candidates} "
            "candidates; ask for fewer candidates")
    drawn = np.random.default_rng([seed, _STREAM]).choice(pool, warm_up.candidates,
                                                            replace=False)
    scores = proxies.score(dataset, warm_up.proxy)[drawn]
    best = drawn[np.argsort(-scores, kind="stable")[:warm_up.keep]]
    table = load_table()
    return ([table.genome(int(index)) for index in best],
            float(proxies.seconds(dataset)[drawn].sum()))


def run_warm_seed(dataset: str, budget: int, seed: int, warm_up: WarmUp,
                  population_size: int = 10) -> SeedRun:
    """One REA run of ``budget`` benchmark evaluations that starts from the warm-up's best
    cells (the rest of its first population random)."""
    table = DatasetTable.of(dataset)
    genomes, _ = warm_start(table.name, seed, warm_up)
    algorithm = make_algorithm("rea", NASBench201Space(), seed=seed, budget=budget,
                               population_size=population_size,
                               initial_population=genomes[:population_size])
    return SeedRun.from_indices(seed, evaluated_cells(algorithm, table.evaluator, budget), table)


def run_simulated_warm_seed(dataset: str, seed: int, setting: SimulatedSetting,
                            warm_up: WarmUp, population_size: int = 10) -> SeedRun:
    """One REA run in simulated time after the warm-up: the proxy evaluations, spread over
    the simulated workers, take their measured seconds first (the clock starts there, and
    they come out of the time budget)."""
    table = DatasetTable.of(dataset)
    genomes, seconds = warm_start(table.name, seed, warm_up)
    spent = seconds / setting.virtual_workers
    if spent >= setting.time_budget:
        raise ConfigurationError(
            f"the warm-up's proxy evaluations take {spent:,.0f} simulated seconds, the whole "
            f"time budget of {setting.time_budget:,.0f}; score fewer candidates")
    rest = dataclasses.replace(setting, time_budget=setting.time_budget - spent)
    run = run_simulated_seed("rea", table, seed, rest,
                             params={"population_size": population_size,
                                     "initial_population": genomes[:population_size]})
    return dataclasses.replace(run, simulated_time=run.simulated_time + spent,
                               curve=[(time + spent, accuracy) for time, accuracy in run.curve])
