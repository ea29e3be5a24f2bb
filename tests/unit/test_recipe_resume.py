"""A recipe run killed and resumed ends bit-identical to the run never interrupted.

Besides the weights, a resumed candidate needs its recipe's state: where the learning-rate
schedule stands, the optimizer's momentum, and the augmentation's draws (seeded per epoch from
seed, epoch and rank). Each kill test runs ``nord run`` in a process of its own, killed with
SIGKILL in the middle of an epoch by the plug-in tests/helpers/killing.py, then ``nord resume``
in another, and compares the journal with that of the same run never interrupted: every
evaluation (accuracy, losses, test accuracy, metrics), every learning-curve row with the rate
its epoch trained at (tests/helpers/learning_rates.py), and the epochs trained (none twice).

The uninterrupted runs, ``nord config`` and the refusals run in this process (``main``): a
process start costs seconds of imports, and their results do not depend on where they run.
What their plug-ins register goes into copies of the registries, so nothing leaks into other
tests. The evaluator-level checks at the end need no process at all.
"""
import contextlib
import json
import sys

import pytest
import torch

import nord.app.plugins
import nord.data.registry
import nord.evaluators.callbacks
from nord.app.cli import main
from nord.data import Digits
from nord.evaluators.base import Leg
from nord.evaluators.local import LocalEvaluator
from nord.journal import Journal
from nord.nn.recipe import Recipe
from tests.helpers.journals import conv_descriptor
from tests.helpers.resumes import logged, results, run

PLUGINS = ("tests.helpers.killing", "tests.helpers.learning_rates")
SMALL_NETS = json.dumps({"layers": 1, "channels": [2, 4], "kernel_size": [1, 3]})
RECIPE_FLAGS = ("--recipe", "nasbench201", "--warmup-epochs", "2", "--clip-grad", "1",
                "--label-smoothing", "0.1", "--augment", "flip,crop,cutout")
"""The benchmark's recipe (Nesterov SGD, cosine, weight decay, flips and crops), with the
other parts that keep state or draw at random given too: a warm-up into the cosine, clipping,
label smoothing, cutout."""
ASHA = ("--budget", "6", "--scheduler", "asha", "--mode", "async", "--min-epochs", "1",
        "--max-epochs", "4", "--eta", "2")


def nord_run(journal, *extra):
    """``nord run`` of small networks on digits, 4 epochs each, checkpointed every epoch,
    each epoch logged (and the run killed where the environment says) with its rate."""
    return ["run", "--plugin", ",".join(PLUGINS), "--callbacks", "epoch_log,epoch_lr",
            "--epochs", "4", "--seed", "1", "--threads", "1", "--batch-size", "64",
            "--checkpoint-every", "1", "--space-params", SMALL_NETS, "--journal", str(journal),
            *extra]


@contextlib.contextmanager
def nord_here():
    """Run ``nord`` commands in this process: plug-ins import afresh into copies of the
    registries (the plug-in loader's memory of what it imported is emptied for that), and
    torch's thread count, which ``--threads`` sets, is put back afterwards."""
    threads = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as patch:
        for module, registry in ((nord.evaluators.callbacks, "CALLBACKS"),
                                 (nord.data.registry, "CURATORS")):
            patch.setattr(module, registry, getattr(module, registry).copy())
        patch.setattr(nord.app.plugins, "_loaded", set())
        for plugin in PLUGINS:
            patch.delitem(sys.modules, plugin, raising=False)
        patch.delenv("NORD_KILL_AFTER", raising=False)
        try:
            yield patch
        finally:
            torch.set_num_threads(threads)


def uninterrupted(folder, *extra):
    """The journal and epoch log of the run never killed, run in this process."""
    journal, log = folder / "whole.db", folder / "whole.log"
    with nord_here() as patch:
        patch.setenv("NORD_EPOCH_LOG", str(log))
        assert main(nord_run(journal, *extra)) == 0
    return journal, log


def killed_and_resumed(folder, extra, kill_after):
    """The journal and epoch log of the run killed after ``kill_after`` epochs (in the
    middle of the next) and resumed, each in a process of its own."""
    journal, log = folder / "cut.db", folder / "cut.log"
    code, output = run(nord_run(journal, *extra), log, kill_after=kill_after)
    assert code == -9, output                                  # killed, mid-epoch
    code, output = run(["resume", str(journal)], log)
    assert code == 0, output
    return journal, log


def assert_identical(cut, whole):
    """The same evaluations, learning curves (rates included) and epochs trained, exactly."""
    assert logged(cut[1]) == logged(whole[1])                  # no epoch trained twice
    actual, expected = results(cut[0]), results(whole[0])
    assert actual[0] == expected[0]                            # every evaluation
    assert actual[1] == expected[1]                            # every epoch's row


def rates(journal, candidate):
    """The learning rate of each epoch of ``candidate``'s curve."""
    with Journal(journal) as record:
        return [row["metrics"]["epoch_lr"] for row in record.epochs(candidate)]


# --- killed and resumed -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def serial_whole(tmp_path_factory):
    """The uninterrupted serial run of three candidates."""
    return uninterrupted(tmp_path_factory.mktemp("serial"), *RECIPE_FLAGS, "--budget", "3")


@pytest.mark.processes
@pytest.mark.slow
def test_a_run_killed_in_a_candidates_warm_up_resumes_bit_identically(tmp_path, serial_whole):
    cut = killed_and_resumed(tmp_path, (*RECIPE_FLAGS, "--budget", "3"), kill_after=5)
    assert_identical(cut, serial_whole)
    with Journal(cut[0]) as record:
        assert record.resumed() == {1: 1}       # the second candidate, killed in its second epoch
    warm_up = rates(cut[0], 1)    # the resumed rates rose to --lr, then went down its cosine
    assert warm_up[0] < warm_up[1] < warm_up[2] > warm_up[3]


def legs_of(journal):
    """The legs of a run under a scheduler, in the order handed out."""
    with Journal(journal) as record:
        return record.legs()


def promoted_leg(legs):
    """The first leg that went on from a pause and trains two epochs or more."""
    return next(leg for leg in legs
                if leg["start_epochs"] > 0 and leg["target_epochs"] - leg["start_epochs"] >= 2)


@pytest.mark.processes
@pytest.mark.slow
def test_asha_killed_mid_leg_goes_on_with_the_one_schedule_of_the_candidate(tmp_path):
    extra = (*RECIPE_FLAGS, *ASHA)
    whole = uninterrupted(tmp_path, *extra)
    legs = legs_of(whole[0])
    leg = promoted_leg(legs)   # where to kill is read from the uninterrupted run
    before = sum(other["target_epochs"] - other["start_epochs"]
                 for other in legs if other["leg"] < leg["leg"])
    cut = killed_and_resumed(tmp_path, extra, kill_after=before + 1)
    assert_identical(cut, whole)
    with Journal(cut[0]) as record:
        assert record.resumed() == {leg["candidate"]: 1}
    with Journal(whole[0]) as record:   # the promoted candidate went on from its pause
        furthest = {row["candidate"]: row for row in record.evaluations()}
    assert furthest[leg["candidate"]]["metrics"]["epochs_resumed"] == leg["start_epochs"]


@pytest.fixture(scope="module")
def leg_span(tmp_path_factory):
    """ASHA with ``--schedule-span leg``: the uninterrupted run, and the run killed in the
    middle of a promoted leg once it has trained as many epochs from scratch as the pause it
    was promoted from held (its checkpoint then holds as many epochs as the pause did)."""
    folder = tmp_path_factory.mktemp("leg-span")
    extra = (*RECIPE_FLAGS, *ASHA, "--schedule-span", "leg")
    whole = uninterrupted(folder, *extra)
    legs = legs_of(whole[0])
    assert sum(other["target_epochs"] for other in legs) == len(logged(whole[1])), (
        "under --schedule-span leg every leg trains from scratch: its epochs from the first")
    leg = promoted_leg(legs)
    before = sum(other["target_epochs"] for other in legs if other["leg"] < leg["leg"])
    cut = killed_and_resumed(folder, extra, kill_after=before + leg["start_epochs"])
    return whole, cut, leg


@pytest.mark.processes
@pytest.mark.slow
def test_asha_with_a_schedule_per_leg_killed_mid_leg_resumes_bit_identically(leg_span):
    whole, cut, leg = leg_span
    assert_identical(cut, whole)
    with Journal(whole[0]) as record:   # each promoted candidate was trained from scratch
        promoted = {row["candidate"] for row in record.legs() if row["start_epochs"] > 0}
        furthest = {row["candidate"]: row for row in record.evaluations()}
    assert leg["candidate"] in promoted
    assert all(furthest[candidate]["metrics"]["epochs_resumed"] == 0 for candidate in promoted)


@pytest.mark.processes
@pytest.mark.slow
def test_asha_with_a_schedule_per_leg_counts_the_epochs_its_checkpoint_kept(leg_span):
    _, cut, leg = leg_span
    with Journal(cut[0]) as record:
        assert record.resumed() == {leg["candidate"]: leg["start_epochs"]}


# --- the recorded recipe ----------------------------------------------------------------------
@pytest.mark.slow
def test_nord_config_prints_the_recipe_and_its_run_repeats_exactly(
        tmp_path, serial_whole, capsys):
    journal, log = serial_whole
    capsys.readouterr()
    with nord_here():
        assert main(["config", str(journal)]) == 0
    printed = capsys.readouterr().out
    for line in ('recipe = "nasbench201"', "weight_decay = 0.0005", 'lr_schedule = "cosine"',
                 "nesterov = true", "warmup_epochs = 2", "clip_grad = 1.0",
                 "label_smoothing = 0.1", 'augment = ["flip", "crop", "cutout"]'):
        assert line in printed.splitlines()
    config = tmp_path / "run.toml"
    config.write_text(printed)
    again = tmp_path / "again.db"
    with nord_here() as patch:
        patch.setenv("NORD_EPOCH_LOG", str(tmp_path / "again.log"))
        assert main(["run", "--config", str(config), "--journal", str(again)]) == 0
    assert_identical((again, tmp_path / "again.log"), (journal, log))


# --- refused values ---------------------------------------------------------------------------
FEATURE_VECTORS = '''
import numpy as np

from nord.data.builtin import TensorCurator
from nord.data.registry import register_curator


@register_curator("feature-vectors")
class FeatureVectors(TensorCurator):
    """Samples of six features each: nothing to crop."""

    def __init__(self, valid_fraction=0.1):
        draw = np.random.default_rng(0)
        super().__init__(draw.normal(size=(40, 6)), np.arange(40) % 2,
                         draw.normal(size=(20, 6)), np.arange(20) % 2,
                         valid_fraction=valid_fraction, name="feature-vectors")
'''


def cpu_has_amx() -> bool:
    supported = getattr(torch.cpu, "_is_amx_tile_supported", None)
    return bool(supported()) if supported is not None else False


@pytest.mark.parametrize("flags, words", [
    (["--lr-schedule", "cosin"], ["--lr-schedule", "constant, cosine, step, linear"]),
    (["--weight-decay", "-1"], ["--weight-decay", "a number >= 0"]),
    (["--augment", "crop", "--dataset", "feature-vectors"], ["--augment", "crop, flip, cutout"]),
    pytest.param(["--precision", "bf16", "--device", "cpu"], ["--precision", "fp32, bf16, fp16"],
                 marks=pytest.mark.skipif(cpu_has_amx(), reason="this CPU has AMX: bf16 trains")),
], ids=["schedule", "weight-decay", "augment-features", "bf16-on-cpu"])
def test_a_refused_recipe_value_exits_2_naming_the_flag_and_writes_no_journal(
        tmp_path, capsys, flags, words):
    plugin = tmp_path / "feature_vectors.py"
    plugin.write_text(FEATURE_VECTORS)
    journal = tmp_path / "refused.db"
    capsys.readouterr()
    with nord_here() as patch:
        patch.delitem(sys.modules, "feature_vectors", raising=False)
        code = main(["run", "--plugin", str(plugin), "--epochs", "1", "--budget", "1",
                     "--journal", str(journal), *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert all(word in err for word in words), err
    assert not [path for path in tmp_path.iterdir() if path.name.startswith("refused")]


# --- the evaluator alone ----------------------------------------------------------------------
RECIPE = Recipe(optimizer="sgd", lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4,
                lr_schedule="cosine", warmup_epochs=1, augment=("flip", "crop", "cutout"),
                clip_grad=1.0, label_smoothing=0.1)


@pytest.fixture(scope="module")
def digits():
    return Digits(seed=0)


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def trained(digits, leg, span):
    """The result and final weights of one evaluation, by an evaluator of its own."""
    evaluator = LocalEvaluator(curator=digits, epochs=4, batch_size=64, seed=2, threads=1,
                               data_fraction=0.3, keep_model=True,
                               recipe=RECIPE.replace(schedule_span=span))
    result = evaluator.descriptor_evaluate(conv_descriptor(4), leg)
    assert result.ok, result.error
    return result, evaluator.model.state_dict()


@pytest.mark.parametrize("span, resumed", [("max-epochs", 2), ("leg", 0)])
def test_a_leg_promoted_from_its_pause_ends_bitwise_as_one_trained_through(
        digits, tmp_path, one_thread, span, resumed):
    """Two epochs, paused in a checkpoint, then on to four: the weights and figures of four
    epochs in one go. Under ``leg`` the second leg trains from scratch on a schedule of its
    own, which is what four epochs in one go are."""
    path = str(tmp_path / "candidate.pt")
    whole, whole_weights = trained(digits, Leg(epochs=4), span)
    trained(digits, Leg(epochs=2, checkpoint=path, keep_at_end=True), span)
    second, weights = trained(digits, Leg(epochs=4, resume_from=path, checkpoint=path), span)
    assert second.metrics["epochs_resumed"] == resumed
    assert weights.keys() == whole_weights.keys()
    assert all(torch.equal(weights[name], whole_weights[name]) for name in weights)
    figures = ("accuracy", "loss", "reported_accuracy", "epochs")
    assert [getattr(second, f) for f in figures] == [getattr(whole, f) for f in figures]
    for metric in ("train_loss", "test_loss"):
        assert second.metrics[metric] == whole.metrics[metric]
