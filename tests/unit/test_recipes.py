"""Recipes: checked data, torch's schedules, per-sample augmentation, and training that ends
bitwise equal to a hand-written PyTorch loop with the same recipe."""
import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.optim import lr_scheduler

from nord import NeuralDescriptor
from nord.data import TensorCurator
from nord.errors import ConfigurationError
from nord.evaluators.local import LocalEvaluator
from nord.nn.augment import Augmentation, augmentation_seed, black_pixel
from nord.nn.recipe import (PUBLISHED_STATISTICS, RECIPES, Recipe, get_recipe, list_recipes,
                            register_recipe)
from nord.nn.schedules import make_schedule


# --- the recipe as data --------------------------------------------------------------------------
def test_the_built_in_recipes_hold_the_benchmarks_published_values():
    nb201 = get_recipe("nasbench201")
    assert (nb201.optimizer, nb201.lr, nb201.momentum, nb201.nesterov, nb201.weight_decay) == (
        "sgd", 0.1, 0.9, True, 5e-4)
    assert (nb201.lr_schedule, nb201.min_lr, nb201.batch_size) == ("cosine", 0.0, 256)
    assert nb201.augment == ("flip", "crop") and nb201.normalise == "published"
    darts = get_recipe("darts-search")
    assert (darts.lr, darts.min_lr, darts.batch_size, darts.clip_grad) == (0.025, 0.001, 64, 5.0)
    assert get_recipe(None) == get_recipe("default") == Recipe()
    assert {"default", "nasbench201", "darts-search"} <= set(list_recipes())


def test_published_statistics_are_the_benchmarks_pixel_means_and_deviations():
    mean, std = PUBLISHED_STATISTICS["cifar10"]
    assert mean == pytest.approx((0.4914, 0.4824, 0.4467), abs=1e-4)
    assert std == pytest.approx((0.2471, 0.2435, 0.2616), abs=1e-4)
    assert get_recipe("nasbench201").statistics_for("CIFAR-10") == PUBLISHED_STATISTICS["cifar10"]
    assert get_recipe("nasbench201").statistics_for("digits") is None
    assert Recipe().statistics_for("cifar10") is None


@pytest.mark.parametrize("parts, words", [
    ({"lr_schedule": "cosin"}, "lr_schedule (--lr-schedule) must be one of constant, cosine, "
                               "step, linear; got 'cosin' (did you mean 'cosine'?)"),
    ({"weight_decay": -1}, "weight_decay (--weight-decay) must be a number >= 0"),
    ({"lr": float("nan")}, "lr (--lr) must be a number > 0"),
    ({"augment": "crop,rotate"}, "augment (--augment) names augmentations among crop, flip, "
                                 "cutout"),
    ({"augment": "crop,crop"}, "names crop more than once"),
    ({"precision": "fp8"}, "precision (--precision) must be one of fp32, bf16, fp16"),
    ({"memory_format": "nhwc"}, "contiguous, channels-last"),
    ({"momentum": 1.5, "optimizer": "sgd"}, "momentum (--momentum) must be a number >= 0 and < 1"),
    ({"momentum": 0.9}, "adam has none"),
    ({"nesterov": True, "optimizer": "sgd"}, "needs --optimizer sgd and --momentum > 0"),
    ({"lr_schedule": "cosine", "min_lr": 0.01, "lr": 0.01}, "below --lr"),
    ({"warmup_epochs": 2, "warmup_lr": 0.1, "lr": 0.01}, "give a smaller --warmup-lr"),
    ({"warmup_epochs": -1}, "warmup_epochs (--warmup-epochs) must be an integer >= 0"),
    ({"label_smoothing": 1.0}, "label_smoothing (--label-smoothing) must be a number >= 0 and < 1"),
    ({"batch_size": 0}, "batch sizes count samples"),
    ({"nesterov": "yes"}, "nesterov (--nesterov) is true or false"),
    ({"warmup_lr": 0.01}, "warmup_lr (--warmup-lr) 0.01 is the rate a warm-up starts from, and "
                          "there is no warm-up, so it would change nothing"),
    ({"min_lr": 1e-4}, "is where the cosine and linear schedules end, and the schedule is "
                       "constant"),
    ({"decay_rate": 0.5, "lr_schedule": "cosine"}, "the step schedule's"),
    ({"crop_padding": 2, "augment": "flip"}, "--augment has no crop"),
    ({"cutout_length": 8}, "--augment has no cutout"),
    ({"schedule_span": "leg"}, "but the rate is constant"),
])
def test_a_bad_part_is_refused_naming_its_flag(parts, words):
    with pytest.raises(ConfigurationError) as refused:
        Recipe(**parts)
    assert words in str(refused.value)


def test_a_part_a_named_recipe_set_is_blamed_on_the_recipe():
    with pytest.raises(ConfigurationError, match="the nasbench201 recipe's"):
        get_recipe("nasbench201").replace(optimizer="adam")
    assert get_recipe("nasbench201").replace(optimizer="adam", momentum=0,
                                             nesterov=False).optimizer == "adam"


def test_replace_keeps_unnamed_parts_and_refuses_unknown_ones():
    recipe = get_recipe("nasbench201").replace(weight_decay=1e-4, lr=None)
    assert (recipe.name, recipe.weight_decay, recipe.lr) == ("nasbench201", 1e-4, 0.1)
    assert recipe.changes() == {"weight_decay": 1e-4}
    with pytest.raises(ConfigurationError, match="did you mean 'weight_decay'"):
        recipe.replace(wight_decay=1)


def test_a_recipe_round_trips_through_its_record():
    recipe = get_recipe("darts-search").replace(augment="cutout,flip", precision="bf16")
    assert Recipe.from_dict(recipe.to_dict()) == recipe
    assert recipe.to_dict()["augment"] == ["cutout", "flip"]


def test_trains_as_default_ignores_only_what_runs_recorded_before_recipes():
    assert Recipe(optimizer="sgd", lr=0.3, batch_size=32).trains_as_default
    assert not Recipe(weight_decay=1e-4).trains_as_default
    assert not get_recipe("nasbench201").trains_as_default


def test_recipes_register_by_name_and_unknown_names_list_the_known():
    registry = RECIPES.copy()
    try:
        mine = register_recipe("mine", Recipe(optimizer="adamw", weight_decay=0.05))
        assert get_recipe("Mine") is mine and mine.name == "mine"
        with pytest.raises(ConfigurationError, match="did you mean 'nasbench201'"):
            get_recipe("nasbench2")
        with pytest.raises(ConfigurationError, match="takes a Recipe"):
            register_recipe("bad", {"lr": 1})
    finally:
        RECIPES._entries, RECIPES._keys = registry._entries, registry._keys


# --- schedules ---------------------------------------------------------------------------------
def _rates(recipe, epochs):
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=recipe.lr)
    schedule = make_schedule(recipe, optimizer, epochs)
    rates = []
    for _ in range(epochs):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    return rates


def test_a_constant_rate_without_warm_up_leaves_the_optimizer_untouched():
    optimizer = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=1e-3)
    before = copy.deepcopy(optimizer.state_dict())
    schedule = make_schedule(Recipe(), optimizer, 5)
    schedule.step()   # no scheduler: nothing to step
    assert optimizer.state_dict() == before and schedule.state_dict() == {}


def test_cosine_follows_the_closed_form_from_lr_to_min_lr():
    recipe = Recipe(optimizer="sgd", lr=0.1, lr_schedule="cosine", min_lr=0.01)
    expected = [0.01 + 0.09 * (1 + math.cos(math.pi * e / 10)) / 2 for e in range(10)]
    assert _rates(recipe, 10) == pytest.approx(expected, rel=1e-12)


def test_warm_up_rises_linearly_then_the_schedule_spans_the_rest():
    recipe = Recipe(optimizer="sgd", lr=0.1, warmup_epochs=2, warmup_lr=0.01,
                    lr_schedule="cosine")
    rates = _rates(recipe, 6)
    assert rates[:3] == pytest.approx([0.01, 0.055, 0.1])
    assert rates[3:] == pytest.approx([0.1 * (1 + math.cos(math.pi * e / 4)) / 2
                                       for e in (1, 2, 3)])


def test_step_and_linear_schedules():
    step = Recipe(optimizer="sgd", lr=1.0, lr_schedule="step", decay_epochs=2, decay_rate=0.5)
    assert _rates(step, 5) == pytest.approx([1, 1, 0.5, 0.5, 0.25])
    linear = Recipe(optimizer="sgd", lr=1.0, lr_schedule="linear", min_lr=0.2)
    assert _rates(linear, 5) == pytest.approx([1, 0.84, 0.68, 0.52, 0.36])


def test_a_schedule_restored_from_its_state_goes_on_exactly():
    recipe = Recipe(optimizer="sgd", lr=0.1, warmup_epochs=1, lr_schedule="cosine")
    whole = _rates(recipe, 6)
    param = torch.nn.Parameter(torch.zeros(1))
    first = torch.optim.SGD([param], lr=0.1)
    schedule = make_schedule(recipe, first, 6)
    for _ in range(3):
        first.step()
        schedule.step()
    state, optimizer_state = schedule.state_dict(), first.state_dict()
    second = torch.optim.SGD([param], lr=0.1)
    resumed = make_schedule(recipe, second, 6)
    second.load_state_dict(optimizer_state)
    resumed.load_state_dict(state)
    rates = []
    for _ in range(3):
        rates.append(second.param_groups[0]["lr"])
        second.step()
        resumed.step()
    assert rates == whole[3:]   # exactly: the recursive form continues from the same floats


# --- augmentation ------------------------------------------------------------------------------
def _batch(n=6, shape=(3, 8, 8), seed=0):
    return torch.randn((n, *shape), generator=torch.Generator().manual_seed(seed))


def _by_hand(x, parts, padding, cutout, fill, generator):
    """The same draws as nord's, applied one sample at a time with slicing."""
    n, c, h, w = x.shape
    out = x.clone()
    for part in parts:
        if part == "crop":
            offsets = torch.randint(0, 2 * padding + 1, (n, 2), generator=generator)
            for i in range(n):
                padded = torch.tensor(fill).view(c, 1, 1).expand(c, h + 2 * padding,
                                                                 w + 2 * padding).clone()
                padded[:, padding:padding + h, padding:padding + w] = out[i]
                top, left = offsets[i].tolist()
                out[i] = padded[:, top:top + h, left:left + w]
        elif part == "flip":
            flips = torch.rand(n, generator=generator) < 0.5
            for i in range(n):
                if flips[i]:
                    out[i] = torch.flip(out[i], dims=(2,))
        else:
            rows = torch.randint(0, h, (n, 1), generator=generator)
            cols = torch.randint(0, w, (n, 1), generator=generator)
            for i in range(n):
                top, left = int(rows[i]) - cutout // 2, int(cols[i]) - cutout // 2
                out[i, :, max(0, top):max(0, top + cutout), max(0, left):max(0, left + cutout)] = 0
    return out


@pytest.mark.parametrize("parts", [("crop",), ("flip",), ("cutout",), ("flip", "crop"),
                                   ("crop", "flip", "cutout")])
def test_augmentation_equals_the_same_draws_applied_sample_by_sample(parts):
    x = _batch()
    fill = (-1.0, 0.5, 2.0)
    augment = Augmentation(parts, x.shape[1:], padding=2, cutout=3, fill=fill)
    augment.start_epoch(seed=4, epoch=1, rank=0)
    generator = torch.Generator().manual_seed(augmentation_seed(4, 1, 0))
    assert torch.equal(augment(x), _by_hand(x, parts, 2, 3, fill, generator))


def test_the_draws_follow_seed_epoch_and_rank_alone():
    x = _batch(n=32)
    augment = Augmentation(("flip", "crop"), x.shape[1:], padding=2)
    results = {}
    for key in ((0, 0, 0), (0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)):
        augment.start_epoch(*key)
        results.setdefault(key, []).append(augment(x))
    assert torch.equal(*results[(0, 0, 0)])
    others = [results[key][0] for key in ((1, 0, 0), (0, 1, 0), (0, 0, 1))]
    assert all(not torch.equal(results[(0, 0, 0)][0], other) for other in others)


def test_the_crop_border_is_a_black_pixel_after_normalisation():
    assert black_pixel((0.5, 0.25), (0.5, 0.25), 2) == (-1.0, -1.0)
    # in float32, as the data's normalisation computes it (in float64 it would be -1/3)
    assert black_pixel((0.1,), (0.3,), 1) == tuple(((torch.zeros(1) - 0.1) / 0.3).tolist())
    assert black_pixel(None, None, 3) == (0.0, 0.0, 0.0)
    x = torch.zeros(1, 1, 4, 4)
    augment = Augmentation(("crop",), (1, 4, 4), padding=4, fill=(-7.0,))
    seen = set()
    for epoch in range(20):
        augment.start_epoch(0, epoch)
        seen |= set(augment(x).unique().tolist())
    assert seen == {0.0, -7.0}


def test_augmenting_samples_that_are_not_images_is_refused_naming_the_flag():
    with pytest.raises(ConfigurationError, match=r"--augment crop .* shape \(6,\); drop --augment"):
        Augmentation(("crop",), (6,))
    assert not Augmentation((), (6,))   # nothing asked: nothing refused


# --- training bitwise equal to plain PyTorch ---------------------------------------------------
def _cifar_like(n_train=96, n_test=32, side=16):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=(n_train + n_test, 3, side, side)).astype("float32")
    y = rng.integers(0, 10, n_train + n_test)
    return TensorCurator(x[:n_train], y[:n_train], x[n_train:], y[n_train:], name="cifar10",
                         valid_fraction=0.0)


def _network():
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": 6, "kernel_size": 3, "padding": 1})
    d.add_layer_sequential("batch_norm2d", {})
    d.add_layer_sequential("relu", {})
    d.add_layer_sequential("conv2d", {"out_channels": 8, "kernel_size": 3, "stride": 2})
    d.add_layer_sequential("relu", {})
    d.add_layer_sequential("linear", {"out_features": 10})
    return d


def _plain_loop(initial: torch.nn.Module, curator, recipe: Recipe, epochs: int, seed: int):
    """A hand-written loop: torch's SGD and schedulers, the same batches, crops, flips and
    cutout drawn from the same seeds, clip_grad_norm_ and F.cross_entropy's smoothing."""
    model = copy.deepcopy(initial)
    optimizer = torch.optim.SGD(model.parameters(), lr=recipe.lr, momentum=recipe.momentum,
                                nesterov=recipe.nesterov, weight_decay=recipe.weight_decay)
    phases = []
    if recipe.warmup_epochs:
        phases.append(lr_scheduler.LinearLR(optimizer, recipe.warmup_lr / recipe.lr, 1.0,
                                            recipe.warmup_epochs))
    phases.append(lr_scheduler.CosineAnnealingLR(optimizer, epochs - recipe.warmup_epochs,
                                                 recipe.min_lr))
    schedule = (phases[0] if len(phases) == 1
                else lr_scheduler.SequentialLR(optimizer, phases, [recipe.warmup_epochs]))
    mean, std = (torch.tensor(values) for values in PUBLISHED_STATISTICS["cifar10"])
    fill = tuple(((torch.zeros(3) - mean) / std).tolist())   # Normalize of a black pixel
    side = curator.input_shape[1]
    loader = curator.train_loader(batch_size=recipe.batch_size, shuffle=True, seed=seed)
    model.train()
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        generator = torch.Generator().manual_seed(augmentation_seed(seed, epoch, 0))
        for x, y in loader:
            x = _by_hand(x, recipe.augment, side // 8, side // 2, fill, generator)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y, label_smoothing=recipe.label_smoothing)
            loss.backward()
            if recipe.clip_grad:
                torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.clip_grad)
            optimizer.step()
        schedule.step()
    return model


@pytest.mark.parametrize("recipe", [
    get_recipe("nasbench201").replace(batch_size=32),
    Recipe(name="warm-clip-smooth", optimizer="sgd", lr=0.05, momentum=0.9, weight_decay=1e-3,
           lr_schedule="cosine", warmup_epochs=1, warmup_lr=0.005, min_lr=0.001, clip_grad=0.5,
           label_smoothing=0.1, augment=("crop", "flip", "cutout"), batch_size=24,
           normalise="published"),
], ids=["nasbench201", "warmup-clip-smooth-cutout"])
def test_three_epochs_end_bitwise_equal_to_a_plain_pytorch_loop(recipe):
    torch.set_num_threads(1)
    curator = _cifar_like()
    start = LocalEvaluator(curator=curator, epochs=0, recipe=recipe, seed=3, device="cpu",
                           keep_model=True)
    assert start.descriptor_evaluate(_network()).ok
    initial = copy.deepcopy(start.model)
    trained = LocalEvaluator(curator=curator, epochs=3, recipe=recipe, seed=3, device="cpu",
                             keep_model=True)
    result = trained.descriptor_evaluate(_network())
    assert result.ok, result.error
    assert curator.mean == pytest.approx(PUBLISHED_STATISTICS["cifar10"][0], rel=1e-6)
    plain = _plain_loop(initial, curator, recipe, epochs=3, seed=3)
    ours, theirs = trained.model.state_dict(), plain.state_dict()
    assert list(ours) == list(theirs)
    different = [name for name in ours if not torch.equal(ours[name], theirs[name])]
    assert not different, f"not bitwise equal: {different}"
    assert not torch.equal(ours["0.weight"] if "0.weight" in ours else next(iter(ours.values())),
                           next(iter(initial.state_dict().values()))), "nothing was trained"


# --- a schedule under a scheduler --------------------------------------------------------------
def test_under_a_scheduler_the_schedule_spans_its_max_epochs_not_the_evaluators(tmp_path):
    """An evaluator made for one epoch, trained in legs by ASHA up to 4: its cosine spans 4."""
    from nord.data import Digits
    from nord.journal import Journal
    from nord.search import RandomSearch, run_search
    from nord.search.schedulers import make_scheduler
    from nord.search.spaces import make_space
    from nord.evaluators.callbacks import TrainingCallback

    class EpochLearningRate(TrainingCallback):   # not registered: no name leaks to other tests
        name = "epoch_lr"

        def on_epoch_end(self, state):
            return {"epoch_lr": state.optimizer.param_groups[0]["lr"]}

    torch.set_num_threads(1)
    space = make_space("conv", layers=1, channels=[2, 4], kernel_size=[1, 3])
    evaluator = LocalEvaluator(curator=Digits(seed=0), recipe="nasbench201", batch_size=64,
                               device="cpu", callbacks=[EpochLearningRate])
    journal = str(tmp_path / "r.db")
    run_search(RandomSearch(space, seed=0), evaluator, budget=4, journal=journal, mode="async",
               scheduler=make_scheduler("asha", min_epochs=1, max_epochs=4, eta=2))
    with Journal(journal) as record:
        rates = {(row["candidate"], row["epoch"]): row["metrics"]["epoch_lr"]
                 for row in record.epochs()}
    cosine = [0.1 * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(4)]
    assert max(epoch for _, epoch in rates) >= 2, "nothing was promoted"
    for (_, epoch), rate in rates.items():
        assert rate == pytest.approx(cosine[epoch - 1], rel=1e-12)


def test_weight_decay_is_passed_when_given_and_recorded_as_trained():
    """AdamW's own default is 0.01: 0 must reach it, and None must be recorded as 0.01."""
    parameter = [torch.nn.Parameter(torch.zeros(1))]
    none = Recipe(optimizer="adamw", lr_schedule="cosine")
    zero = none.replace(weight_decay=0.0)
    assert torch.optim.AdamW(parameter, lr=1e-3, **zero.optimizer_kwargs()).param_groups[0][
        "weight_decay"] == 0.0
    assert torch.optim.AdamW(parameter, lr=1e-3, **none.optimizer_kwargs()).param_groups[0][
        "weight_decay"] == 0.01
    assert (none.describe("digits")["weight_decay"], zero.describe("digits")["weight_decay"]) == (
        0.01, 0.0)
    assert Recipe(optimizer="adamw").trains_as_default and not zero.trains_as_default


def test_a_curator_shared_by_two_recipes_is_normalised_as_each_says():
    curator = _cifar_like()
    own = curator.mean
    LocalEvaluator(curator=curator, recipe="nasbench201").get_curator()
    assert curator.mean == pytest.approx(PUBLISHED_STATISTICS["cifar10"][0], rel=1e-6)
    LocalEvaluator(curator=curator).get_curator()
    assert curator.mean == own


def test_a_scaled_learning_rate_scales_every_rate_of_the_schedule():
    for schedule in ("cosine", "linear"):
        recipe = Recipe(optimizer="sgd", lr=0.1, lr_schedule=schedule, min_lr=0.01,
                        warmup_epochs=1, warmup_lr=0.02)
        optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1 * 4)
        made = make_schedule(recipe, optimizer, 5, scale=4)
        rates = []
        for _ in range(5):
            rates.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            made.step()
        assert rates == pytest.approx([4 * rate for rate in _rates(recipe, 5)])


def test_run_settings_of_a_recipe_that_nothing_would_read_are_refused():
    from nord.app.settings import RunConfig
    with pytest.raises(ConfigurationError, match="this run has no scheduler"):
        RunConfig(recipe="nasbench201", schedule_span="leg")
    assert RunConfig(recipe="nasbench201", schedule_span="leg", scheduler="asha", mode="async",
                     max_epochs=4).schedule_span == "leg"
    with pytest.raises(ConfigurationError, match="the darts-search recipe's"):
        RunConfig(recipe="darts-search", lr_schedule="constant")
    # naming the default recipe sets nothing, even where nothing is trained
    assert RunConfig(space="nasbench201", recipe="default").recipe is None
