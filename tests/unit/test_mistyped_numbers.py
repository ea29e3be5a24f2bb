"""Numbers a user mistypes are refused before anything runs, saying the rule: no traceback, no
journal left behind, no machine filled."""
import os

import pytest

from nord.app.cli import main
from nord.app.settings import RunConfig
from nord.checks import MAX_SEED, MAX_SEEDS, check_seeds
from nord.comparisons.compare import run_comparison
from nord.comparisons.multiobjective import run_nsga2
from nord.errors import ConfigurationError
from nord.search.algorithms.random_search import RandomSearch
from nord.search.engine import run_search
from tests.helpers.toy import ToyEvaluator, ToySpace


def test_a_budget_beyond_what_a_journal_stores_is_refused_leaving_nothing(tmp_path, capsys,
                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--space", "nasbench201", "--budget", "99999999999999999999"]) == 2
    error = capsys.readouterr().err
    assert "budget must be at most 9,223,372,036,854,775,807 evaluations" in error
    assert "got 99999999999999999999" in error and "Traceback" not in error
    assert not os.path.exists(tmp_path / "runs")
    with pytest.raises(ConfigurationError, match="64-bit"):
        RunConfig(budget=2 ** 63)
    with pytest.raises(ConfigurationError, match="budget"):
        run_search(RandomSearch(ToySpace(), seed=0), ToyEvaluator(), budget=2 ** 63)


def test_a_configuration_file_that_is_not_utf8_is_refused_naming_the_byte(tmp_path, capsys):
    config = tmp_path / "latin1.toml"
    config.write_bytes("budget = 5\n# r\u00e9sum\u00e9\n".encode("latin-1"))
    assert main(["run", "--config", str(config)]) == 2
    error = capsys.readouterr().err
    assert f"the configuration file {config} is not UTF-8 text (byte 14 is b'\\xe9')" in error
    assert "Traceback" not in error


@pytest.mark.parametrize("seeds", [0, MAX_SEEDS + 1, 2 ** 31, 4294967297])
def test_a_seed_count_out_of_range_is_refused_before_any_seed_is_made(seeds):
    for compare in (run_comparison, run_nsga2):
        with pytest.raises(ConfigurationError, match=r"--seeds must be an integer from 1 to "
                                                     r"100,000 .*give --base-seed"):
            compare(seeds=seeds)


def test_the_last_seed_of_a_comparison_is_one_nord_run_takes():
    assert check_seeds(2, MAX_SEED - 1) == (2, MAX_SEED - 1)
    with pytest.raises(ConfigurationError, match=r"--base-seed must be an integer from 0 to "
                                                 r"4,294,967,294 .*got 4294967295"):
        check_seeds(2, MAX_SEED)
    with pytest.raises(ConfigurationError, match="--base-seed"):
        run_comparison(seeds=2, base_seed=MAX_SEED)


def test_nord_compare_says_so_in_its_own_words(capsys):
    assert main(["compare", "--seeds", "4294967297"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("nord compare: --seeds must be an integer from 1 to 100,000")
