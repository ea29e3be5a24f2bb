"""REA's initial population (a warm start) and the zero-cost warm-up on NAS-Bench-201."""
import numpy as np
import pytest

from nord.benchmarks.nasbench201 import load_table
from nord.benchmarks.nasbench201.proxy_table import load_proxies
from nord.comparisons.anytime import SimulatedSetting, run_simulated_seed
from nord.comparisons.warmup import WarmUp, run_simulated_warm_seed, run_warm_seed, warm_start
from nord.errors import ConfigurationError, SearchSpaceError
from nord.search.algorithms.evolution import RegularizedEvolution
from nord.search.engine import run_search
from tests.helpers.toy import Interrupting, ToyEvaluator, ToySpace, journal_rows

START = [(6, 4), (1, 1), (3, 2)]


def test_rea_asks_its_initial_population_first_then_random_cells():
    warm = RegularizedEvolution(ToySpace(), seed=0, population_size=5,
                                initial_population=START)
    plain = RegularizedEvolution(ToySpace(), seed=0, population_size=5)
    asked = [warm.ask().genome for _ in range(5)]
    assert asked[:3] == START
    assert asked[3:] == [plain.ask().genome for _ in range(2)]   # the same random stream
    assert warm.parameters()["initial_population"] == [list(g) for g in START]
    assert "initial_population" not in plain.parameters()


def test_an_initial_population_larger_than_the_population_or_off_the_space_is_refused():
    with pytest.raises(ConfigurationError, match="more than population_size=2"):
        RegularizedEvolution(ToySpace(), population_size=2, sample_size=1,
                             initial_population=START)
    with pytest.raises(SearchSpaceError, match="outside its bounds"):
        RegularizedEvolution(ToySpace(), initial_population=[(9, 1)])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_warm_started_run_resumed_half_way_is_the_uninterrupted_run(tmp_path, mode):
    settings = dict(budget=24, mode=mode)

    def algorithm():
        return RegularizedEvolution(ToySpace(), seed=1, population_size=4, sample_size=2,
                                    initial_population=START)

    whole = algorithm()
    run_search(whole, ToyEvaluator(), journal=tmp_path / "whole.db", **settings)
    with pytest.raises(KeyboardInterrupt):
        run_search(algorithm(), Interrupting(11), journal=tmp_path / "cut.db", **settings)
    resumed = algorithm()
    summary = run_search(resumed, ToyEvaluator(), journal=tmp_path / "cut.db", resume=True,
                         **settings)
    assert summary.replayed >= 10
    assert journal_rows(tmp_path / "cut.db") == journal_rows(tmp_path / "whole.db")
    assert resumed.population == whole.population


# --- the warm-up on NAS-Bench-201 -------------------------------------------------------------
def test_the_warm_start_is_the_best_of_seeded_random_cells_by_the_proxy_table():
    warm_up = WarmUp(candidates=40, keep=5)
    genomes, seconds = warm_start("cifar100", 3, warm_up)
    assert (genomes, seconds) == warm_start("cifar100", 3, warm_up)
    assert genomes != warm_start("cifar100", 4, warm_up)[0]
    table, proxies = load_table(), load_proxies()
    scores = [proxies.score("cifar100", "synflow")[table.index_of_genome(g)] for g in genomes]
    assert scores == sorted(scores, reverse=True) and len(genomes) == 5
    held = proxies.score("cifar100", "synflow")[proxies.computed]
    assert scores[-1] >= np.quantile(held, 0.5)   # the best 5 of 40 are in the upper half
    assert 0 < seconds < 40 * np.nanmax(proxies.seconds("cifar100"))


def test_warm_started_rea_evaluates_the_warm_start_first():
    warm_up = WarmUp(candidates=40, keep=10)
    genomes, _ = warm_start("cifar10", 0, warm_up)
    run = run_warm_seed("cifar10", 30, 0, warm_up)
    assert run.evaluations == 30
    assert run.reported_accuracy >= max(load_table().arrays("cifar10").reported_accuracy[
        [load_table().index_of_genome(g) for g in genomes]]) - 0.05


def test_in_simulated_time_the_warm_up_costs_its_measured_seconds_first():
    warm_up = WarmUp(candidates=40, keep=10)
    setting = SimulatedSetting.for_dataset("cifar10", time_budget=30_000.0, workers=2)
    _, seconds = warm_start("cifar10", 0, warm_up)
    run = run_simulated_warm_seed("cifar10", 0, setting, warm_up)
    assert run.curve[0][0] > seconds / 2   # two workers share the warm-up
    assert run.simulated_time <= setting.time_budget + 1e-6
    plain = run_simulated_seed("rea", "cifar10", 0, setting)
    assert run.curve != plain.curve


def test_a_warm_up_that_asks_for_what_the_table_cannot_give_is_refused():
    with pytest.raises(ConfigurationError, match="params, flops"):
        WarmUp(proxy="snip")
    with pytest.raises(ConfigurationError, match="keep"):
        WarmUp(candidates=5, keep=6)


def test_a_warm_up_draws_only_from_its_pool():
    held = np.flatnonzero(load_proxies().computed)
    pool = tuple(int(i) for i in held[:30])
    genomes, _ = warm_start("cifar10", 0, WarmUp(candidates=30, keep=3, pool=pool))
    table = load_table()
    assert {table.index_of_genome(g) for g in genomes} <= set(pool)
    with pytest.raises(ConfigurationError, match="does not"):
        warm_start("cifar10", 0, WarmUp(candidates=1, keep=1, pool=(15_625,)))


def test_a_warm_up_from_an_unfinished_table_draws_only_the_cells_it_holds(tmp_path,
                                                                           monkeypatch):
    import gzip
    from nord.benchmarks.nasbench201.proxy_table import COLUMNS, read_proxies
    import nord.comparisons.warmup as warmup
    full = load_proxies()
    held = list(range(0, 15_625, 97))   # a table the script wrote before it finished
    rows = [",".join([str(i)] + [repr(float(full.columns[c][i])) for c in COLUMNS[1:]])
            for i in held]
    path = tmp_path / "proxies.csv.gz"
    path.write_bytes(gzip.compress(("\n".join([",".join(COLUMNS), *rows]) + "\n").encode()))
    monkeypatch.setattr(warmup, "load_proxies", lambda: read_proxies(path))
    genomes, _ = warm_start("cifar10", 0, WarmUp(candidates=100, keep=5))
    assert {load_table().index_of_genome(g) for g in genomes} <= set(held)
    with pytest.raises(ConfigurationError, match="does not"):
        warm_start("cifar10", 0, WarmUp(candidates=1, keep=1, pool=(1,)))
    with pytest.raises(ConfigurationError, match="fewer than its 500 candidates"):
        warm_start("cifar10", 0, WarmUp(candidates=500, keep=5))
