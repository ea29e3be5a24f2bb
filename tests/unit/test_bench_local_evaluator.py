"""bench/local_evaluator.py: its default line as it was, and a recipe mode whose plain loop
trains to nord's weights bit for bit, or fails the bench."""
import re

import numpy as np
import pytest
import torch

from bench import local_evaluator as bench
from nord.data import TensorCurator
from nord.nn.augment import Augmentation

LINE = re.compile(r"^(\S+) +nord +([\d.]+) s  plain +([\d.]+) s  ratio ([\d.]+) \(min [\d.]+, "
                  r"max [\d.]+\)  accuracy nord ([\d.]+) plain ([\d.]+)(  weights (\S+))?$")


def test_the_default_mode_prints_the_line_it_always_printed(capsys):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(150, 1, 8, 8)), rng.integers(0, 3, 150)
    ratio = bench.compare("tiny", TensorCurator(x[:120], y[:120], x[120:], y[120:]), epochs=1,
                          batch_size=32, repeats=1)
    line = capsys.readouterr().out.strip()
    found = LINE.match(line)
    assert found and found.group(1) == "tiny" and found.group(7) is None, line
    assert float(found.group(4)) == round(ratio, 3) > 0


def test_the_plain_augmentation_draws_and_cuts_what_nord_does():
    x = torch.randn(37, 3, 32, 32)
    fill = (-1.5, -1.0, 0.5)
    for recipe in bench.BENCH_RECIPES.values():
        nord_side = Augmentation(recipe.augment, (3, 32, 32), recipe.crop_padding_for(32),
                                 recipe.cutout_length_for(32), fill)
        nord_side.start_epoch(seed=0, epoch=2)
        generator = torch.Generator().manual_seed(bench.augmentation_seed(0, 2))
        plain = bench.plain_augment(x, recipe, generator, torch.tensor(fill).view(1, 3, 1, 1))
        assert torch.equal(nord_side(x), plain), recipe.name
        assert not torch.equal(plain, x)


def run_recipes(capsys, recipes):
    """The recipe mode at a tiny size: its exit status and the lines of each data set."""
    status = bench.main_recipes(recipes, repeats=1, epochs=2, samples=200)
    lines = capsys.readouterr().out.splitlines()
    return status, lines


@pytest.mark.slow
def test_the_recipe_mode_times_both_data_sets_and_finds_the_weights_identical(capsys):
    status, lines = run_recipes(capsys, list(bench.BENCH_RECIPES))
    assert status == 0
    headers = [line for line in lines if line.startswith("LocalEvaluator with recipe ")]
    assert [header.split()[3] for header in headers] == list(bench.BENCH_RECIPES)
    rows = [LINE.match(line) for line in lines if LINE.match(line)]
    assert [row.group(1) for row in rows] == ["digits", "cifar10-sized"] * 2
    for row in rows:
        assert row.group(8) == "identical"
        assert row.group(5) == row.group(6)      # the same weights, the same test accuracy
    assert re.fullmatch(r"worst ratio [\d.]+ \(target <= 1\.03\): (met|NOT met); final "
                        r"weights identical", lines[-1])


def test_a_plain_loop_that_trains_otherwise_fails_the_bench(capsys, monkeypatch):
    monkeypatch.setattr(bench, "plain_cutout", lambda x, *_: x)
    status, lines = run_recipes(capsys, ["warmup-clip-smooth"])
    assert status == 1
    assert all(line.endswith("weights DIFFER") for line in lines[1:3])
    assert lines[-1].endswith("final weights DIFFER (a bug in nord)")
