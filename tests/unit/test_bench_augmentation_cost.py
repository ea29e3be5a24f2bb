"""bench/augmentation_cost.py: a tiny run times an epoch and both augmentations each round, and
prints their share."""
import re

import pytest

from bench import augmentation_cost as bench


def test_each_round_times_the_epoch_and_both_augmentations():
    figures = bench.measure(repeats=2, batches=2, batch_size=8, cells_per_stage=1, channels=4)
    for label in ("epoch", "flip+crop", "+cutout"):
        assert len(figures[label]) == 2 and all(seconds > 0 for seconds in figures[label])
    assert figures["parameters"] > 0
    shares = [a / e for a, e in zip(figures["+cutout"], figures["epoch"])]
    assert bench.fraction(figures, "+cutout") == pytest.approx(sum(shares) / 2)  # a median of 2


def test_the_share_is_printed_against_the_target(capsys):
    assert bench.main(repeats=1, batches=1, batch_size=8, cells_per_stage=1, channels=4) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "(C=4, N=1, " in lines[0]
    found = re.fullmatch(r"augmentation: ([\d.]+) % of an epoch \(flip\+crop\), ([\d.]+) % "
                         r"\(\+cutout\) \(target <= 5 %\): (met|NOT met)", lines[-1])
    assert found, lines[-1]
    worst = max(float(found.group(1)), float(found.group(2)))
    assert found.group(3) == ("met" if worst <= 5 else "NOT met")
