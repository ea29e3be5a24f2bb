"""The packaged NAS-Bench-201 costs file and the evaluator's signals, noise and costs."""
import ast
import fnmatch
import gzip
from pathlib import Path

import numpy as np
import pytest

from nord.benchmarks import BenchmarkEvaluator, load_costs, load_table
from nord.benchmarks.nasbench201.costs import COSTS_FILE, DEVICES, costs_path, read_costs
from nord.errors import BenchmarkError, CorruptDataError, MissingDataError

ROOT = Path(__file__).resolve().parents[2]
KNOWN_GENOME = (3, 3, 4, 1, 3, 1)   # table index 1


@pytest.fixture(scope="module")
def costs():
    return load_costs()


# --- the file -----------------------------------------------------------------------------
def test_a_changed_byte_is_refused_by_its_sha256(tmp_path):
    data = bytearray(costs_path().read_bytes())
    data[-20] ^= 1
    copy = tmp_path / COSTS_FILE
    copy.write_bytes(bytes(data))
    with pytest.raises(CorruptDataError) as error:
        read_costs(copy)
    assert "SHA-256" in str(error.value) and "600375714e8f" in str(error.value)


def test_a_faithful_copy_reads(tmp_path):
    copy = tmp_path / COSTS_FILE
    copy.write_bytes(costs_path().read_bytes())
    assert len(read_costs(copy)) == 15625


def test_a_file_of_your_own_is_checked_for_its_shape_not_its_digest(tmp_path):
    copy = tmp_path / "short.csv.gz"
    lines = gzip.decompress(costs_path().read_bytes()).decode().splitlines()[:10]
    copy.write_bytes(gzip.compress("\n".join(lines).encode()))
    with pytest.raises(CorruptDataError, match="15625 rows"):
        read_costs(copy, sha256=None)


def test_a_missing_file_says_how_to_get_it_back(tmp_path):
    with pytest.raises(MissingDataError, match="reinstall nord"):
        read_costs(tmp_path / "absent.csv.gz")


def test_setup_ships_the_costs_file():
    tree = ast.parse((ROOT / "setup.py").read_text())
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and getattr(node.func, "id", "") == "setup")
    package_data = ast.literal_eval(next(k.value for k in call.keywords if k.arg == "package_data"))
    name = f"benchmarks/nasbench201/data/{COSTS_FILE}"
    assert any(fnmatch.fnmatch(name, pattern) for pattern in package_data["nord"])
    assert (ROOT / "nord" / name).is_file()


# --- joined with the right cells ------------------------------------------------------------
def test_seed_means_agree_with_the_tables_200_epoch_validation_column(costs):
    difference = np.abs(costs.valid_mean("cifar10") - load_table().column("cifar10_valid_200ep"))
    assert difference.mean() < 0.05 and np.median(difference) < 0.01


def test_training_time_follows_the_cells_size(costs):
    # joined row by row the correlation is about 0.77; shifted by one row it is about 0
    params = load_table().column("params_mb")
    for dataset in ("cifar10", "cifar100", "imagenet16"):
        assert np.corrcoef(params, costs.train_time(dataset))[0, 1] > 0.7


def test_raspberry_pi_latency_of_cell_0_is_hw_nas_bench_s(costs):
    assert costs.latency("raspi4")[0] == pytest.approx(10.482)


def test_every_cell_has_two_or_three_seeds(costs):
    for dataset in ("cifar10", "cifar100", "imagenet16"):
        assert set(np.unique(costs.seed_counts(dataset))) == {2, 3}


def test_an_unknown_device_lists_the_devices(costs):
    with pytest.raises(BenchmarkError) as error:
        costs.latency("iphone")
    assert all(device in str(error.value) for device in DEVICES)


# --- the evaluator's signals ----------------------------------------------------------------
def test_the_default_signal_is_unchanged():
    result = BenchmarkEvaluator().evaluate_genome(KNOWN_GENOME)
    assert (result.accuracy, result.epochs) == (0.82834, 12)


def test_valid200_is_the_seed_mean(costs):
    result = BenchmarkEvaluator("cifar100", signal="valid200").evaluate_genome(KNOWN_GENOME)
    assert result.accuracy == pytest.approx(costs.valid_mean("cifar100")[1] / 100)
    assert result.epochs == 200 and result.reported_accuracy == pytest.approx(0.702933)


def test_seed_noise_answers_with_one_seeds_value(costs):
    evaluator = BenchmarkEvaluator("cifar10", signal="valid200", noise="seed", seed=3)
    seen = set()
    for _ in range(60):
        result = evaluator.query(1)
        chosen = result.metrics["training_seed"]
        assert result.accuracy == pytest.approx(costs.valid_seeds("cifar10")[1, chosen] / 100)
        seen.add(chosen)
    assert seen == set(range(costs.seed_counts("cifar10")[1]))


def test_seed_noise_is_reproducible_per_seed():
    def answers(seed):
        evaluator = BenchmarkEvaluator("imagenet16", signal="valid200", noise="seed", seed=seed)
        return [evaluator.query(index).accuracy for index in range(0, 15625, 97)]
    assert answers(5) == answers(5)
    assert answers(5) != answers(6)


def test_seed_noise_on_the_12_epoch_signal_is_refused():
    with pytest.raises(BenchmarkError, match="valid200"):
        BenchmarkEvaluator(noise="seed")


@pytest.mark.parametrize("signal, noise", [("valid100", None), ("valid200", "gaussian")])
def test_unknown_signals_and_noises_list_the_valid_ones(signal, noise):
    with pytest.raises(BenchmarkError, match="valid"):
        BenchmarkEvaluator(signal=signal, noise=noise)


def test_costs_are_the_signals_share_of_the_training_time(costs):
    full = costs.train_time("cifar10")[1]
    assert BenchmarkEvaluator(signal="valid200").train_cost(KNOWN_GENOME) == full
    cheap = BenchmarkEvaluator()
    assert cheap.train_cost(1) == pytest.approx(full * 12 / 200)
    assert cheap.evaluation_cost(cheap.query(1)) == cheap.train_cost(1)


def test_latency_of_a_cell(costs):
    assert BenchmarkEvaluator().latency(KNOWN_GENOME, "pixel3") == costs.latency("pixel3")[1]
