"""BANANAS: path encodings, the predictor ensemble, Thompson sampling, settings, batches,
determinism and resuming."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nord.app.cli import main
from nord.benchmarks.nasbench201 import BenchmarkEvaluator, NASBench201Space
from nord.benchmarks.nasbench201.cells import (N_CELLS, N_PATH_FEATURES, OPS, cell_paths,
                                               code_to_genome, is_connected, path_encoding)
from nord.errors import ConfigurationError, SearchSpaceError
from nord.evaluators.result import EvaluationResult
from nord.journal import Journal
from nord.search.algorithms.bananas import Bananas, thompson_choice
from nord.search.algorithms.ensemble import MLPEnsemble
from nord.search.algorithms.registry import make_algorithm
from nord.search.engine import run_search
from nord.search.spaces import ConvSpace
from nord.search.spaces.base import SearchSpace
from tests.helpers.journals import journaled_evaluations
from tests.helpers.toy import Interrupting, ToyEvaluator, ToySpace, journal_rows

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]
SMALL = dict(ensemble_size=3, layers=3, width=10, epochs=20)
"""A small ensemble, where a test checks the algorithm's bookkeeping, not the paper's model."""


class Grid(SearchSpace):
    """Three genes in 0..9, with no path encoding of its own."""

    lower, upper = (0, 0, 0), (9, 9, 9)


def peak(genome) -> EvaluationResult:
    """Accuracy falls with the L1 distance from (7, 2, 5)."""
    return EvaluationResult(accuracy=1.0 - sum(abs(g - t) for g, t in zip(genome, (7, 2, 5))) / 27)


def drive(algorithm, evaluate, count):
    """Ask and tell ``count`` times, one candidate at a time; the candidates asked."""
    asked = []
    for _ in range(count):
        candidate = algorithm.ask()
        asked.append(candidate)
        algorithm.tell(candidate, evaluate(candidate.genome))
    return asked


# --- the NAS-Bench-201 path encoding ------------------------------------------------------------
def all_encodings():
    return np.stack([path_encoding(code_to_genome(code)) for code in range(N_CELLS)])


def test_nasbench201_has_84_path_features_and_every_cell_path_sets_one():
    encodings = all_encodings()
    assert N_PATH_FEATURES == 4 + 4 ** 2 + 4 ** 3 == encodings.shape[1]
    assert encodings.max(axis=0).min() == 1          # every possible path occurs in some cell
    assert set(np.unique(encodings)) == {0.0, 1.0}
    # a cell has at most its 4 input-output paths, and exactly as many distinct ones
    counts = encodings.sum(axis=1)
    assert counts.max() == 4
    assert all(counts[code] == len(set(cell_paths(code_to_genome(code))))
               for code in range(0, N_CELLS, 97))


def test_a_known_cell_has_its_four_paths():
    genome = (3, 3, 4, 1, 3, 1)   # |nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip~0|...
    assert cell_paths(genome) == (
        ("skip_connect",), ("nor_conv_3x3", "nor_conv_3x3"), ("nor_conv_3x3", "skip_connect"),
        ("nor_conv_3x3", "avg_pool_3x3", "skip_connect"))
    assert path_encoding(genome).sum() == 4
    assert NASBench201Space().path_encoding(genome).tolist() == path_encoding(genome).tolist()


def test_none_edges_drop_the_paths_through_them():
    whole = (3, 3, 4, 1, 3, 1)
    no_shortcut = (3, 3, 4, 0, 3, 1)                 # edge 0-3 is none
    assert ("skip_connect",) not in cell_paths(no_shortcut)
    assert path_encoding(no_shortcut).sum() == 3
    assert (path_encoding(whole) - path_encoding(no_shortcut)).min() == 0   # only one dropped
    assert path_encoding((0,) * 6).sum() == 0


def test_exactly_the_disconnected_cells_encode_as_zeros():
    encodings = all_encodings()
    disconnected = [not is_connected(code_to_genome(code)) for code in range(N_CELLS)]
    assert (encodings.sum(axis=1) == 0).tolist() == disconnected
    assert sum(disconnected) == 341


def test_cells_with_the_same_paths_encode_alike():
    # 0-1-3 carries (conv1x1, pool), 0-2-3 carries (conv3x3, skip); swapped in the other
    one = (OPS.index("nor_conv_1x1"), OPS.index("nor_conv_3x3"), 0, 0,
           OPS.index("avg_pool_3x3"), OPS.index("skip_connect"))
    other = (one[1], one[0], 0, 0, one[5], one[4])
    assert one != other
    assert path_encoding(one).tolist() == path_encoding(other).tolist()
    assert path_encoding(one).tolist() != path_encoding((one[0], one[1], 0, 0, one[5],
                                                         one[4])).tolist()


# --- ConvSpace's encoding ----------------------------------------------------------------------
def test_conv_space_encodes_each_layer_in_unary():
    space = ConvSpace(input_shape=(3, 32, 32))
    encoding = space.path_encoding((3, 5, 50, 1))
    assert encoding.shape == (2 * (49 + 49),)
    blocks = encoding.reshape(4, 49)                # channels, kernel, channels, kernel
    assert blocks.sum(axis=1).tolist() == [2, 4, 49, 0]
    assert blocks[0].tolist() == [1, 1] + [0] * 47  # feature j: at least 1 + j + 1 channels
    near, far = space.path_encoding((4, 5, 50, 1)), space.path_encoding((40, 5, 50, 1))
    assert np.abs(encoding - near).sum() < np.abs(encoding - far).sum()


def test_conv_genomes_that_decode_alike_encode_alike():
    space = ConvSpace(input_shape=(1, 8, 8))
    assert space.decode((3, 50, 2, 3)).hash == space.decode((3, 8, 2, 3)).hash
    assert space.path_encoding((3, 50, 2, 3)).tolist() == space.path_encoding((3, 8, 2, 3)).tolist()
    unrepaired = ConvSpace(input_shape=(1, 8, 8), repair=False)
    assert (unrepaired.path_encoding((3, 50, 2, 3)).tolist()
            != unrepaired.path_encoding((3, 8, 2, 3)).tolist())


def test_bananas_runs_on_the_conv_space():
    space = ConvSpace(input_shape=(1, 8, 8))
    asked = drive(Bananas(space, seed=0, **SMALL),
                  lambda g: EvaluationResult(accuracy=1 - abs(g[0] - 20) / 50), 25)
    assert len({c.genome for c in asked}) == 25
    assert all(space.normalise(c.genome) == c.genome for c in asked)


# --- refusals ------------------------------------------------------------------------------
def test_a_space_without_a_path_encoding_is_refused_with_what_to_do():
    with pytest.raises(SearchSpaceError) as error:
        Bananas(Grid(), seed=0)
    message = str(error.value)
    for words in ("bananas needs a path encoding", "Grid has not", "path_encoding(genome)",
                  "encoding='onehot'", "rea", "NASBench201Space and ConvSpace"):
        assert words in message


def test_the_onehot_encoding_refuses_real_valued_genes_and_unknown_encodings():
    class Mixed(SearchSpace):
        lower, upper, integer = (0, 0.0), (3, 1.0), (True, False)

    with pytest.raises(SearchSpaceError, match=r"real-valued genes \(positions \[1\]\)"):
        Bananas(Mixed(), seed=0, encoding="onehot")
    with pytest.raises(ConfigurationError, match="encoding must be one of path, onehot"):
        Bananas(NASBench201Space(), seed=0, encoding="adjacency")


@pytest.mark.parametrize("settings, words", [
    ({"ensemble_size": 0}, "ensemble_size (networks in the ensemble) must be an integer >= 1"),
    ({"learning_rate": -0.01}, "learning_rate must be a finite number > 0"),
    ({"learning_rate": 0}, "learning_rate must be a finite number > 0"),
    ({"learning_rate": float("nan")}, "learning_rate must be a finite number > 0"),
    ({"learning_rate": "0.01"}, "learning_rate must be a finite number > 0"),
    ({"layers": 0}, "layers (hidden layers of each network) must be an integer >= 1"),
    ({"width": 0}, "width (units per hidden layer) must be an integer >= 1"),
    ({"epochs": 0}, "epochs (passes over the data per fit) must be an integer >= 1"),
    ({"batch_size": 0}, "batch_size (examples per Adam step) must be an integer >= 1"),
    ({"num_init": 0}, "num_init (random genomes before the first fit) must be an integer >= 1"),
    ({"k": 0}, "k (genomes proposed per fit) must be an integer >= 1"),
    ({"k": 2.5}, "k (genomes proposed per fit) must be an integer >= 1; got 2.5"),
    ({"k": 20, "candidates": 10}, "candidates (pool scored per fit) must be an integer >= k=20"),
    ({"parents": 0}, "parents (best genomes mutated into the pool) must be an integer >= 1"),
    ({"mutations": True}, "mutations (one-gene changes per pool member) must be an integer")])
def test_bad_settings_are_refused_with_the_parameter_and_the_rule(settings, words):
    with pytest.raises(ConfigurationError) as error:
        Bananas(NASBench201Space(), seed=0, **settings)
    assert words in str(error.value)


# --- the ensemble ----------------------------------------------------------------------------
def toy_regression(count, seed):
    rng = np.random.default_rng(seed)
    features = (rng.random((count, 30)) < 0.2).astype(float)
    return features, features @ np.linspace(-1, 1, 30)


def test_the_ensemble_learns_a_toy_function():
    features, targets = toy_regression(150, 0)
    test_features, test_targets = toy_regression(200, 1)
    guess = np.abs(test_targets - targets.mean()).mean()      # predicting the mean
    ensemble = MLPEnsemble(members=3, epochs=60).fit(features, targets, seed=0)
    predictions = ensemble.predict(test_features)
    assert predictions.shape == (3, 200)
    assert np.abs(predictions.mean(axis=0) - test_targets).mean() < 0.5 * guess
    train_error = np.abs(ensemble.predict(features).mean(axis=0) - targets).mean()
    assert train_error < 0.3 * np.abs(targets - targets.mean()).mean()


def test_a_fit_is_a_function_of_its_seed_and_data():
    features, targets = toy_regression(40, 2)

    def predictions(seed):
        return MLPEnsemble(members=2, layers=3, epochs=10).fit(
            features, targets, seed=seed).predict(features)

    assert predictions(5).tolist() == predictions(5).tolist()
    assert predictions(5).tolist() != predictions(6).tolist()
    assert predictions(5)[0].tolist() != predictions(5)[1].tolist()   # members differ


def test_the_ensemble_refuses_to_predict_unfitted_and_to_fit_bad_shapes():
    with pytest.raises(ConfigurationError, match="call fit"):
        MLPEnsemble().predict(np.zeros((2, 3)))
    with pytest.raises(ConfigurationError, match=r"features \(n, d\) and targets \(n,\)"):
        MLPEnsemble().fit(np.zeros((3, 2)), np.zeros(4), seed=0)


# --- independent Thompson sampling -----------------------------------------------------------
def test_thompson_sampling_ranks_one_normal_draw_per_candidate():
    predictions = np.array([[0.1, 0.5, 0.3, 0.9], [0.3, 0.5, 0.1, 0.7]])
    mean, spread = predictions.mean(axis=0), predictions.std(axis=0)
    expected = np.argsort(-np.random.default_rng(4).normal(mean, spread))[:2].tolist()
    assert thompson_choice(predictions, 2, np.random.default_rng(4)) == expected
    # no spread: the draws are the means
    same = np.array([[0.2, 0.8, 0.5]] * 3)
    assert thompson_choice(same, 3, np.random.default_rng(0)) == [1, 2, 0]


def test_thompson_sampling_explores_where_the_ensemble_disagrees():
    # candidate 0: surely 0.5; candidate 1: mean 0, spread 1, above 0.5 with probability 0.31
    predictions = np.array([[0.5, -1.0], [0.5, 1.0]])
    rng = np.random.default_rng(0)
    picks = [thompson_choice(predictions, 1, rng)[0] for _ in range(2000)]
    assert 0.27 < np.mean(picks) < 0.35


# --- the algorithm ---------------------------------------------------------------------------
def test_random_genomes_first_then_batches_of_k_one_fit_each():
    algorithm = Bananas(NASBench201Space(), seed=0, num_init=6, k=4, **SMALL)
    evaluator = BenchmarkEvaluator(dataset="cifar10")
    asked = drive(algorithm, evaluator.evaluate_genome, 6)
    assert [c.generation for c in asked] == [0] * 6 and algorithm.fits == 0
    asked += drive(algorithm, evaluator.evaluate_genome, 14)
    assert [c.generation for c in asked[6:]] == [1] * 4 + [2] * 4 + [3] * 4 + [4] * 2
    assert algorithm.fits == 4                      # once per batch of k, not per ask
    assert len({c.genome for c in asked}) == 20     # never the same genome twice


def test_the_pool_mutates_the_best_genome_first():
    algorithm = Bananas(Grid(), seed=1, num_init=5, k=3, candidates=9, parents=1,
                        encoding="onehot", **SMALL)
    told = drive(algorithm, peak, 5)
    best = max(told, key=lambda c: peak(c.genome).accuracy).genome
    for candidate in drive(algorithm, peak, 3):     # one gene away from the best
        assert sum(a != b for a, b in zip(candidate.genome, best)) == 1


def test_it_waits_only_while_no_result_is_in():
    algorithm = Bananas(NASBench201Space(), seed=0, **SMALL)
    out = [algorithm.ask() for _ in range(10)]
    assert algorithm.ask() is None and algorithm.ask() is None
    algorithm.tell(out[0], BenchmarkEvaluator().evaluate_genome(out[0].genome))
    # one result in: it fits on it instead of waiting for the other nine
    assert all(algorithm.ask() is not None for _ in range(10)) and algorithm.fits == 1


def test_failed_results_are_not_learnt_and_not_proposed_again():
    def fails_high(genome):
        return (EvaluationResult.failure("does not build") if genome[0] > 6 else peak(genome))

    algorithm = Bananas(Grid(), seed=3, encoding="onehot", **SMALL)
    asked = drive(algorithm, fails_high, 60)
    assert len({c.genome for c in asked}) == 60
    assert algorithm.fits == 5
    assert all(genome[0] <= 6 for genome, _ in algorithm._learnt)
    assert len(algorithm._learnt) == sum(c.genome[0] <= 6 for c in asked)


def test_when_everything_fails_it_keeps_drawing_random_genomes():
    algorithm = Bananas(Grid(), seed=0, encoding="onehot", **SMALL)
    asked = drive(algorithm, lambda g: EvaluationResult.failure("no"), 35)
    assert algorithm.fits == 0 and len({c.genome for c in asked}) == 35


def test_a_small_space_runs_out_of_new_genomes_and_repeats():
    asked = drive(Bananas(ToySpace(), seed=0, encoding="onehot", **SMALL),
                  lambda g: EvaluationResult(accuracy=g[0] / 10), 40)
    assert len({c.genome for c in asked}) == 24 and len(asked) == 40


def test_the_same_seed_and_results_give_the_same_run():
    def run(seed):
        algorithm = Bananas(NASBench201Space(), seed=seed, **SMALL)
        return [c.genome for c in drive(algorithm, BenchmarkEvaluator().evaluate_genome, 30)]

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_it_is_registered_and_takes_its_settings():
    algorithm = make_algorithm("BANANAS", NASBench201Space(), seed=2, k=5, epochs=50)
    assert isinstance(algorithm, Bananas)
    assert algorithm.parameters() == {
        "algorithm": "bananas", "seed": 2, "num_init": 10, "k": 5, "candidates": 100,
        "parents": 5, "mutations": 1, "ensemble_size": 5, "layers": 10, "width": 20,
        "epochs": 50, "learning_rate": 0.01, "batch_size": 32, "encoding": "path"}


@pytest.mark.slow
def test_an_end_to_end_run_on_nasbench201_beats_random_search():
    def best(name, seed):
        summary = run_search(make_algorithm(name, NASBench201Space(), seed=seed),
                             BenchmarkEvaluator(dataset="cifar100"), budget=50)
        assert summary.best_result.ok and summary.evaluations == 50
        NASBench201Space().normalise(summary.best.genome)
        return summary.best_result.accuracy

    bananas = [best("bananas", seed) for seed in range(3)]
    assert np.mean(bananas) > np.mean([best("random", seed) for seed in range(10)])


# --- through the engine ------------------------------------------------------------------------
@pytest.mark.parametrize("mode, workers", [("sync", 1), ("async", 1), ("sync", 3), ("async", 3)])
def test_a_run_resumed_half_way_proposes_the_uninterrupted_runs_genomes(tmp_path, mode, workers):
    """ToySpace has an undecodable genome and a failing one: both are failures told."""
    settings = dict(budget=30, mode=mode, batch_size=workers)

    def bananas():
        return Bananas(ToySpace(), seed=0, num_init=5, k=4, encoding="onehot", **SMALL)

    whole = bananas()
    run_search(whole, ToyEvaluator(), journal=tmp_path / "whole.db", **settings)
    with pytest.raises(KeyboardInterrupt):
        run_search(bananas(), Interrupting(13), journal=tmp_path / "cut.db", **settings)
    resumed = bananas()
    summary = run_search(resumed, ToyEvaluator(), journal=tmp_path / "cut.db", resume=True,
                         **settings)
    assert summary.replayed >= 10
    assert journal_rows(tmp_path / "cut.db") == journal_rows(tmp_path / "whole.db")
    assert resumed.fits == whole.fits > 3
    features = np.eye(10)     # ToySpace's one-hot features: 6 widths and 4 kernels
    assert (resumed.ensemble.predict(features).tolist()
            == whole.ensemble.predict(features).tolist())


class InterruptingTable(BenchmarkEvaluator):
    """The table, interrupted (KeyboardInterrupt) at its ``stop_at``-th look-up."""

    def __init__(self, stop_at):
        super().__init__(dataset="cifar10")
        self.stop_at, self.calls = stop_at, 0

    def describe(self):
        # it measures what the table does: a run it interrupted resumes with the table
        return {**super().describe(), "evaluator": "BenchmarkEvaluator"}

    def evaluate_task(self, task):
        self.calls += 1
        if self.calls == self.stop_at:
            raise KeyboardInterrupt
        return super().evaluate_task(task)


def test_a_resumed_nasbench201_run_rebuilds_the_path_encoded_model(tmp_path):
    settings = dict(budget=35, mode="async")
    whole = Bananas(NASBench201Space(), seed=1, **SMALL)
    run_search(whole, BenchmarkEvaluator(dataset="cifar10"), journal=tmp_path / "whole.db",
               **settings)
    with pytest.raises(KeyboardInterrupt):
        run_search(Bananas(NASBench201Space(), seed=1, **SMALL), InterruptingTable(22),
                   journal=tmp_path / "cut.db", **settings)
    resumed = Bananas(NASBench201Space(), seed=1, **SMALL)
    run_search(resumed, BenchmarkEvaluator(dataset="cifar10"), journal=tmp_path / "cut.db",
               resume=True, **settings)
    assert journal_rows(tmp_path / "cut.db") == journal_rows(tmp_path / "whole.db")
    assert resumed.fits == whole.fits == 3


# --- the command line --------------------------------------------------------------------------
@pytest.mark.slow
def test_nord_run_and_compare_take_it_and_its_refusals(tmp_path, capsys):
    journal = tmp_path / "bananas.db"
    assert main(["run", "--space", "nasbench201", "--algorithm", "bananas", "--budget", "14",
                 "--seed", "1", "--params", '{"epochs": 20}', "--journal", str(journal)]) == 0
    with Journal(journal) as record:
        assert len(record.evaluations()) == 14
    assert main(["run", "--space", "nasbench201", "--algorithm", "bananas", "--budget", "5",
                 "--params", '{"ensemble_size": 0}', "--journal", str(tmp_path / "x.db")]) == 2
    assert "ensemble_size (networks in the ensemble) must be" in capsys.readouterr().err
    assert main(["run", "--space", "conv", "--algorithm", "bananas", "--budget", "5",
                 "--params", '{"encoding": "adjacency"}',
                 "--journal", str(tmp_path / "y.db")]) == 2
    assert "encoding must be one of path, onehot" in capsys.readouterr().err
    assert main(["compare", "--algorithms", "random,bananas", "--budget", "12",
                 "--seeds", "2"]) == 0
    assert "bananas" in capsys.readouterr().out


@pytest.mark.processes
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_kill_9_then_nord_resume_gives_the_uninterrupted_journal(tmp_path):
    arguments = ["run", "--space", "nasbench201", "--algorithm", "bananas", "--budget", "60",
                 "--seed", "4"]
    assert main(arguments + ["--journal", str(tmp_path / "whole.db")]) == 0
    journal = tmp_path / "killed.db"
    process = subprocess.Popen(
        [sys.executable, "-m", "nord"] + arguments + ["--journal", str(journal)],
        env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while journaled_evaluations(journal) < 15:
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "the run did not record evaluations in time"
        time.sleep(0.005)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert journaled_evaluations(journal) < 60
    assert main(["resume", str(journal)]) == 0
    assert journal_rows(journal) == journal_rows(tmp_path / "whole.db")
