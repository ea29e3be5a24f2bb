"""A weight-sharing search from start to end on a tiny image set: every method derives a valid
cell and a distribution per epoch, a seeded search repeats itself exactly, a search stopped
after any epoch and resumed from its checkpoint is the search never stopped (weights, every
optimizer, generators and records alike), and the journal keeps the epochs."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nord.benchmarks.nasbench201.cells import EDGE_NAMES, OPS, cell_to_genome  # noqa: E402
from nord.data.builtin import TensorCurator  # noqa: E402
from nord.errors import ConfigurationError  # noqa: E402
from nord.evaluators.group import Alone  # noqa: E402
from nord.journal import Journal, RunRecord  # noqa: E402
from nord.oneshot.settings import MethodSettings  # noqa: E402
from nord.oneshot.registry import METHODS  # noqa: E402
from nord.oneshot import search as search_module  # noqa: E402
from nord.oneshot.search import OneShotSearch, OneShotSettings  # noqa: E402

# every method searched, repeated, stopped and resumed: in make test, not the fast lane
pytestmark = pytest.mark.slow

SMALL = MethodSettings(controller_steps=2, controller_aggregate=2, candidates=3)


def images(samples=96, seed=0):
    """A tiny two-channel image set: half the classes brighter in a corner, so it can be
    learned a little."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, samples)
    x = rng.normal(size=(samples, 2, 8, 8)).astype(np.float32)
    x[:, :, :2, :2] += y[:, None, None, None]
    return TensorCurator(x, y, x[:16], y[:16], name="tiny")


def settings(method, epochs=2, **changes):
    return OneShotSettings(method, search_epochs=epochs, channels=3, cells_per_stage=1,
                           recipe=changes.pop("recipe", "darts-search"),
                           method_settings=SMALL, **changes)


def rows(result):
    return [(r.epoch, r.cell, r.genome, r.weights, r.metrics) for r in result.epochs]


@pytest.mark.parametrize("method", METHODS.names())
def test_every_method_derives_a_cell_and_a_distribution_each_epoch(method):
    torch.set_num_threads(1)
    result = OneShotSearch(settings(method), images()).run()
    assert [r.epoch for r in result.epochs] == [1, 2]
    for record in result.epochs:
        assert cell_to_genome(record.cell) == record.genome
        assert list(record.weights) == list(EDGE_NAMES)
        for edge, probabilities in record.weights.items():
            assert list(probabilities) == list(OPS)
            assert math.isclose(sum(probabilities.values()), 1.0, rel_tol=1e-6), edge
        assert math.isfinite(record.metrics["weight_loss"])
        assert math.isnan(record.lookup_accuracy)
    assert result.cell == result.epochs[-1].genome


@pytest.mark.parametrize("method", ["darts-v1", "gdas", "enas", "rsps"])
def test_a_seeded_search_repeats_itself_and_another_seed_does_not(method):
    torch.set_num_threads(1)
    first = OneShotSearch(settings(method, seed=3), images()).run()
    again = OneShotSearch(settings(method, seed=3), images()).run()
    other = OneShotSearch(settings(method, seed=4), images()).run()
    assert rows(first) == rows(again)
    assert rows(first) != rows(other)


class StopAfter:
    """Records epochs, and stops the search (as a kill would) after epoch ``epoch``."""

    def __init__(self, epoch):
        self.epoch, self.kept = epoch, {}

    def search_epoch(self, record):
        self.kept[record.epoch] = record
        if record.epoch == self.epoch:
            raise KeyboardInterrupt


def state_of(search):
    return {name: t.clone() for name, t in search.supernet.state_dict().items()}


@pytest.mark.parametrize("method,stop", [("darts-v2", 1), ("gdas", 2), ("setn", 1),
                                         ("enas", 1), ("rsps", 2)])
def test_a_search_resumed_from_its_checkpoint_is_the_search_never_stopped(tmp_path, method,
                                                                          stop):
    torch.set_num_threads(1)
    whole = OneShotSearch(settings(method, epochs=3), images())
    straight = whole.run()
    checkpoint = tmp_path / "search.ckpt"
    stopped = StopAfter(stop)
    with pytest.raises(KeyboardInterrupt):
        OneShotSearch(settings(method, epochs=3), images(), records=stopped,
                      checkpoint=checkpoint).run()
    resumed_records = StopAfter(None)
    resumed = OneShotSearch(settings(method, epochs=3), images(), records=resumed_records,
                            checkpoint=checkpoint)
    result = resumed.run()
    assert rows(result) == rows(straight)
    assert sorted(resumed_records.kept) == [1, 2, 3]     # the stopped epochs kept again
    mine, theirs = state_of(resumed), state_of(whole)
    assert all(torch.equal(mine[name], theirs[name]) for name in theirs)
    assert torch.equal(resumed.method.alphas, whole.method.alphas)


def test_a_checkpoint_of_other_settings_is_refused(tmp_path):
    checkpoint = tmp_path / "search.ckpt"
    with pytest.raises(KeyboardInterrupt):
        OneShotSearch(settings("rsps"), images(), records=StopAfter(1),
                      checkpoint=checkpoint).run()
    with pytest.raises(ConfigurationError, match="belongs to another search"):
        OneShotSearch(settings("rsps", seed=9), images(), checkpoint=checkpoint).run()


def test_a_search_resumes_on_another_device_setting(tmp_path):
    """Where a search runs is not what it is: a checkpoint written with device 'cpu' is gone
    on from with 'auto' (the CPU here too; on a GPU machine, the card)."""
    straight = OneShotSearch(settings("gdas", device="cpu"), images()).run()
    checkpoint = tmp_path / "search.ckpt"
    with pytest.raises(KeyboardInterrupt):
        OneShotSearch(settings("gdas", device="cpu"), images(), records=StopAfter(1),
                      checkpoint=checkpoint).run()
    resumed = OneShotSearch(settings("gdas", device="auto"), images(),
                            checkpoint=checkpoint).run()
    assert rows(resumed) == rows(straight)


def test_the_journal_keeps_every_epoch(tmp_path):
    path = tmp_path / "oneshot.db"
    journal = Journal(path)
    journal.start(RunRecord("gdas", {}, 0, {"space": "nasbench201"}, evaluator={},
                            dataset={"name": "tiny"}, mode="sync", budget=1, extra={},
                            execution={}))
    lookup = {}

    def looked_up(genome):
        lookup[genome] = 0.5 + 0.01 * sum(genome)
        return lookup[genome]
    result = OneShotSearch(settings("gdas"), images(), records=journal, lookup=looked_up).run()
    journal.finish("finished")
    journal.close()
    epochs = Journal(path).search_epochs()
    assert [row["epoch"] for row in epochs] == [1, 2]
    for row, record in zip(epochs, result.epochs):
        assert row["cell"] == record.cell and row["genome"] == record.genome
        assert row["weights"] == record.weights
        assert row["lookup_accuracy"] == lookup[record.genome]
        assert row["metrics"]["weight_loss"] == record.metrics["weight_loss"]


@pytest.mark.parametrize("change,said", [
    (dict(search_epochs=0), "search_epochs"), (dict(method="dart"), "darts-v1"),
    (dict(seed=-1), "seed")])
def test_bad_search_settings_are_refused(change, said):
    values = {"method": "gdas", "search_epochs": 2, **change}
    with pytest.raises(ConfigurationError, match=said):
        OneShotSettings(**values)


def test_data_that_are_not_images_are_refused():
    rng = np.random.default_rng(0)
    flat = TensorCurator(rng.normal(size=(40, 5)), rng.integers(0, 2, 40),
                         rng.normal(size=(8, 5)), rng.integers(0, 2, 8))
    with pytest.raises(ConfigurationError, match="images shaped"):
        OneShotSearch(settings("darts-v1"), flat)


def test_images_the_network_cannot_halve_twice_are_refused():
    rng = np.random.default_rng(0)
    odd = TensorCurator(rng.normal(size=(40, 1, 6, 6)), rng.integers(0, 2, 40),
                        rng.normal(size=(8, 1, 6, 6)), rng.integers(0, 2, 8))
    with pytest.raises(ConfigurationError, match=r"multiples of 4.*\(1, 6, 6\)"):
        OneShotSearch(settings("darts-v1"), odd)


def test_the_ranks_of_a_host_search_each_on_the_gpu_of_its_local_rank(monkeypatch):
    """As in data-parallel training, 'cuda' or 'auto' on rank k of a host is its GPU k: the
    group's backend took that GPU for the rank, and NCCL refuses two ranks on one."""
    asked = []

    def resolve(device, local_rank=0):
        asked.append((device, local_rank))
        return torch.device("cpu")          # the GPU that rank would take, on this machine
    monkeypatch.setattr(search_module, "resolve_device", resolve)
    OneShotSearch(settings("rsps", device="cuda"), images(), group=Alone(local_rank=1))
    assert asked == [("cuda", 1)]
