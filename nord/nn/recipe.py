"""Recipes: how a candidate network is trained, as data.

A recipe names every choice of a training protocol that is not the architecture: optimizer,
learning-rate schedule, weight decay, augmentation, gradient clipping, label smoothing, batch
size, normalisation, and on a GPU the precision and memory format. It is plain values (no torch
import), checked when it is made, recorded in a run's journal and read back by ``nord config``::

    from nord.nn.recipe import get_recipe
    recipe = get_recipe("nasbench201")                  # the benchmark's own protocol
    recipe = recipe.replace(weight_decay=1e-4)          # one part changed, the rest kept
    LocalEvaluator(curator, epochs=12, recipe=recipe)

Built in: ``default`` (constant Adam, nothing else: what nord always did), ``nasbench201`` and
``darts-search``; :func:`register_recipe` adds more. Where each value comes from, and what a
schedule does under an early-stopping scheduler: docs/recipes.md.
"""
from __future__ import annotations

import difflib
import math
import numbers
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Dict, List, Mapping, Optional, Tuple

from nord.checks import check_int
from nord.errors import ConfigurationError
from nord.registry import Registry

__all__ = ["Recipe", "RECIPES", "RECIPE_PARTS", "get_recipe", "register_recipe", "list_recipes",
           "OPTIMIZERS", "SCHEDULES", "AUGMENTATIONS", "PRECISIONS", "MEMORY_FORMATS",
           "NORMALISATIONS", "SCHEDULE_SPANS", "PUBLISHED_STATISTICS", "RECIPE_FLAGS"]

OPTIMIZERS = ("adam", "adamw", "sgd", "rmsprop")
SCHEDULES = ("constant", "cosine", "step", "linear")
AUGMENTATIONS = ("crop", "flip", "cutout")
PRECISIONS = ("fp32", "bf16", "fp16")
MEMORY_FORMATS = ("contiguous", "channels-last")
NORMALISATIONS = ("training-split", "published")
SCHEDULE_SPANS = ("max-epochs", "leg")

PUBLISHED_STATISTICS: Dict[str, Tuple[Tuple[float, ...], Tuple[float, ...]]] = {
    "cifar10": (tuple(v / 255 for v in (125.3, 123.0, 113.9)),
                tuple(v / 255 for v in (63.0, 62.1, 66.7))),
    "cifar100": (tuple(v / 255 for v in (129.3, 124.1, 112.4)),
                 tuple(v / 255 for v in (68.2, 65.4, 70.4))),
    "imagenet16": (tuple(v / 255 for v in (122.68, 116.66, 104.01)),
                   tuple(v / 255 for v in (63.22, 61.26, 65.09))),
}
"""Per-channel means and deviations (of pixels scaled to [0, 1]) that NAS-Bench-201 normalised
its data sets with (``xautodl/datasets/get_dataset_with_transform.py``): what
``normalise='published'`` uses."""

OPTIMIZER_WEIGHT_DECAY = {"adamw": 0.01}
"""torch's default weight decay of an optimizer that has one besides 0: what
``weight_decay=None`` trains with."""

RECIPE_PARTS = ("momentum", "nesterov", "weight_decay", "lr_schedule", "warmup_epochs",
                "warmup_lr", "min_lr", "decay_epochs", "decay_rate", "schedule_span", "augment",
                "crop_padding", "cutout_length", "clip_grad", "label_smoothing", "precision",
                "memory_format", "normalise")
"""The parts of a recipe besides the optimizer, learning rate and batch size (which runs had
settings for before recipes): each a setting of its own."""

RECIPE_FLAGS = {f: "--" + f.replace("_", "-")
                for f in ("optimizer", "lr", "batch_size", *RECIPE_PARTS)}
"""The ``nord run`` flag of each part of a recipe: what a refusal names."""


def _name(part: str) -> str:
    """A part as a refusal names it: the keyword and the flag (``lr_schedule (--lr-schedule)``)."""
    return f"{part} ({RECIPE_FLAGS[part]})"


def _choice(part: str, value: Any, choices: Tuple[str, ...]) -> str:
    if isinstance(value, str) and value.lower().replace("_", "-") in choices:
        return value.lower().replace("_", "-")
    close = difflib.get_close_matches(str(value), choices, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigurationError(
        f"{_name(part)} must be one of {', '.join(choices)}; got {value!r}{hint}")


def _number(part: str, value: Any, minimum: float = 0.0, inclusive: bool = True,
            maximum: Optional[float] = None, rule: str = "") -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value >= minimum if inclusive else value > minimum) and (
            maximum is None or value < maximum)
    if not ok:
        bound = f"{'>=' if inclusive else '>'} {minimum:g}"
        if maximum is not None:
            bound += f" and < {maximum:g}"
        raise ConfigurationError(
            f"{_name(part)} must be a number {bound}{rule}; got {value!r}")
    return float(value)


def _augmentations(value: Any) -> Tuple[str, ...]:
    """``'crop,flip'``, a list of names, or ``'none'``/empty, as a tuple in the order given."""
    if isinstance(value, str):
        value = [part for part in value.split(",") if part.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(
            f"{_name('augment')} is a comma-separated list of {', '.join(AUGMENTATIONS)} (or "
            f"none); got {value!r}")
    names = [v.strip().lower() for v in value]
    if names == ["none"]:
        return ()
    for name in names:
        if name not in AUGMENTATIONS:
            close = difflib.get_close_matches(name, AUGMENTATIONS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigurationError(
                f"{_name('augment')} names augmentations among {', '.join(AUGMENTATIONS)} "
                f"(comma-separated, or none); got {name!r}{hint}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConfigurationError(
            f"{_name('augment')} names {', '.join(repeated)} more than once; name each once")
    return tuple(names)


@dataclass(frozen=True)
class Recipe:
    """How a candidate is trained (see the module docstring); checked when made.

    Attributes:
        name: the recipe this one was made from (its parts may since have been replaced).
        optimizer: 'adam', 'adamw', 'sgd' or 'rmsprop'.
        lr: the learning rate (the peak, after any warm-up).
        momentum: SGD's and RMSprop's momentum (0: none).
        nesterov: Nesterov momentum (SGD with momentum only).
        weight_decay: L2 penalty (decoupled for AdamW, as torch's AdamW applies it); None: the
            optimizer's own default (0, and 0.01 for AdamW: ``OPTIMIZER_WEIGHT_DECAY``).
        lr_schedule: 'constant', 'cosine' (from ``lr`` down to ``min_lr``), 'step' (times
            ``decay_rate`` every ``decay_epochs``) or 'linear' (from ``lr`` down to ``min_lr``);
            the rate changes once per epoch, after it.
        warmup_epochs: epochs over which the rate rises linearly from ``warmup_lr`` to ``lr``
            before the schedule starts.
        warmup_lr: the rate of the first warm-up epoch.
        min_lr: where 'cosine' and 'linear' end.
        decay_epochs, decay_rate: the 'step' schedule's period and factor.
        schedule_span: what the schedule spans under an early-stopping scheduler:
            'max-epochs' (one schedule over the most epochs a candidate may train; a
            promoted candidate goes on where it paused) or 'leg' (each leg follows a schedule
            of its own length, as NAS-Bench-201's 12-epoch figures come from a 12-epoch
            cosine; a promoted candidate is trained again from scratch).
        augment: image augmentations, applied to each training batch in this order, drawn
            per sample: 'crop' (random crop after padding), 'flip' (horizontal, p = 0.5),
            'cutout' (a square of zeros).
        crop_padding: pixels of padding before the crop (None: an eighth of the image side,
            NAS-Bench-201's 4 for 32 x 32 and 2 for 16 x 16).
        cutout_length: the cutout square's side (None: half the image side).
        clip_grad: clip the gradients' total norm to this (0: no clipping).
        label_smoothing: the training loss's label smoothing (validation and test losses are
            never smoothed).
        batch_size: samples per training step and rank (None: the evaluator's or run's own).
        precision: 'fp32', 'bf16' (autocast) or 'fp16' (autocast with a gradient scaler):
            the arithmetic of training on a GPU.
        memory_format: 'contiguous' or 'channels-last' (the network and its inputs).
        normalise: 'training-split' (the training split's per-channel statistics) or
            'published' (:data:`PUBLISHED_STATISTICS` where the data set has them, else the
            training split's: the run's record says which).
    """

    name: str = "default"
    optimizer: str = "adam"
    lr: float = 1e-3
    momentum: float = 0.0
    nesterov: bool = False
    weight_decay: Optional[float] = None
    lr_schedule: str = "constant"
    warmup_epochs: int = 0
    warmup_lr: float = 1e-5
    min_lr: float = 0.0
    decay_epochs: int = 30
    decay_rate: float = 0.1
    schedule_span: str = "max-epochs"
    augment: Tuple[str, ...] = field(default=())
    crop_padding: Optional[int] = None
    cutout_length: Optional[int] = None
    clip_grad: float = 0.0
    label_smoothing: float = 0.0
    batch_size: Optional[int] = None
    precision: str = "fp32"
    memory_format: str = "contiguous"
    normalise: str = "training-split"

    def __post_init__(self):
        put = object.__setattr__   # frozen: the checked values replace what was given
        if not isinstance(self.name, str) or not self.name:
            raise ConfigurationError(f"a recipe's name is a non-empty string; got {self.name!r}")
        put(self, "optimizer", _choice("optimizer", self.optimizer, OPTIMIZERS))
        put(self, "lr", _number("lr", self.lr, inclusive=False, rule=" (the learning rate)"))
        put(self, "momentum", _number("momentum", self.momentum, maximum=1.0,
                                      rule=" (0: none)"))
        if not isinstance(self.nesterov, bool):
            raise ConfigurationError(f"{_name('nesterov')} is true or false; got {self.nesterov!r}")
        if self.weight_decay is not None:
            put(self, "weight_decay", _number("weight_decay", self.weight_decay,
                                              rule=" (0: none)"))
        put(self, "lr_schedule", _choice("lr_schedule", self.lr_schedule, SCHEDULES))
        put(self, "warmup_epochs", check_int(self.warmup_epochs, _name("warmup_epochs"), 0))
        put(self, "warmup_lr", _number("warmup_lr", self.warmup_lr, inclusive=False))
        put(self, "min_lr", _number("min_lr", self.min_lr))
        put(self, "decay_epochs", check_int(self.decay_epochs, _name("decay_epochs"), 1))
        put(self, "decay_rate", _number("decay_rate", self.decay_rate, inclusive=False,
                                        maximum=1.0))
        put(self, "schedule_span", _choice("schedule_span", self.schedule_span, SCHEDULE_SPANS))
        put(self, "augment", _augmentations(self.augment))
        for part in ("crop_padding", "cutout_length"):
            if getattr(self, part) is not None:
                put(self, part, check_int(getattr(self, part), _name(part), 1,
                                          rule="an integer >= 1 (pixels), or None"))
        put(self, "clip_grad", _number("clip_grad", self.clip_grad, rule=" (0: no clipping)"))
        put(self, "label_smoothing", _number("label_smoothing", self.label_smoothing,
                                             maximum=1.0, rule=" (0: none)"))
        if self.batch_size is not None:
            put(self, "batch_size", check_int(self.batch_size, _name("batch_size"), 1,
                                              rule="an integer >= 1: batch sizes count samples"))
        put(self, "precision", _choice("precision", self.precision, PRECISIONS))
        put(self, "memory_format", _choice("memory_format", self.memory_format, MEMORY_FORMATS))
        put(self, "normalise", _choice("normalise", self.normalise, NORMALISATIONS))
        self._check_combinations()

    def _check_combinations(self) -> None:
        """Parts that only make sense together, refused rather than silently ignored."""
        source = "" if self.name == "default" else f" (the {self.name} recipe's)"
        if self.momentum and self.optimizer not in ("sgd", "rmsprop"):
            raise ConfigurationError(
                f"{_name('momentum')} {self.momentum:g}{source} is SGD's and RMSprop's; "
                f"{self.optimizer} has none (its betas play that part): give --momentum 0 "
                "(momentum=0), or --optimizer sgd")
        if self.nesterov and (self.optimizer != "sgd" or not self.momentum):
            raise ConfigurationError(
                f"{_name('nesterov')}{source} is a kind of SGD momentum: it needs --optimizer sgd "
                f"and --momentum > 0 (got optimizer {self.optimizer}, momentum "
                f"{self.momentum:g}); give --no-nesterov (nesterov=False), or both")
        if self.lr_schedule in ("cosine", "linear") and self.min_lr >= self.lr:
            raise ConfigurationError(
                f"{_name('min_lr')} is where the {self.lr_schedule} schedule ends, below --lr "
                f"({self.lr:g}); got {self.min_lr:g}")
        if self.warmup_epochs and self.warmup_lr > self.lr:
            raise ConfigurationError(
                f"{_name('warmup_lr')} is where the warm-up starts, rising to --lr ({self.lr:g}); "
                f"got {self.warmup_lr:g}: give a smaller --warmup-lr")
        self._check_parts_act(source)

    def _check_parts_act(self, source: str) -> None:
        """Refuse a part set away from its default where nothing reads it (a cutout length
        without cutout, a step schedule's rate under cosine): the run would record it as if it
        had shaped the training."""
        idle = {"warmup_lr": not self.warmup_epochs,
                "min_lr": self.lr_schedule not in ("cosine", "linear"),
                "decay_epochs": self.lr_schedule != "step",
                "decay_rate": self.lr_schedule != "step",
                "crop_padding": "crop" not in self.augment,
                "cutout_length": "cutout" not in self.augment}
        why = {"warmup_lr": ("the rate a warm-up starts from, and there is no warm-up",
                             "give --warmup-epochs"),
               "min_lr": (f"where the cosine and linear schedules end, and the schedule is "
                          f"{self.lr_schedule}", "use --lr-schedule cosine or linear"),
               "decay_epochs": (f"the step schedule's, and the schedule is {self.lr_schedule}",
                                "use --lr-schedule step"),
               "decay_rate": (f"the step schedule's, and the schedule is {self.lr_schedule}",
                              "use --lr-schedule step"),
               "crop_padding": ("the crop's, and --augment has no crop", "add crop to --augment"),
               "cutout_length": ("the cutout's, and --augment has no cutout",
                                 "add cutout to --augment")}
        for part, unused in idle.items():
            value, default = getattr(self, part), _PART_DEFAULTS[part]
            if unused and value != default:
                what, fix = why[part]
                back = f" (or give {RECIPE_FLAGS[part]} {default})" if default is not None else ""
                raise ConfigurationError(
                    f"{_name(part)} {value}{source} is {what}, so it would change nothing: "
                    f"leave it out{back}, or {fix}")
        if self.schedule_span == "leg" and not self.varies_lr:
            raise ConfigurationError(
                f"{_name('schedule_span')} leg{source} gives each leg a learning-rate schedule "
                "of its own, retraining promoted candidates from scratch, but the rate is "
                "constant: they would train the same epochs again. Use --schedule-span "
                "max-epochs, or a --lr-schedule")

    # --- making and reading ----------------------------------------------------------------
    def replace(self, **changes: Any) -> "Recipe":
        """A recipe with some parts changed (None leaves a part as it is), checked again.

        Raises:
            ConfigurationError: an unknown part (with the closest), or a bad value.
        """
        known = [f.name for f in fields(self)]
        for part in changes:
            if part not in known:
                close = difflib.get_close_matches(part, known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ConfigurationError(
                    f"a recipe has no part {part!r}; {hint}its parts are {', '.join(known[1:])}")
        given = {part: value for part, value in changes.items() if value is not None}
        return replace(self, **given) if given else self

    def to_dict(self) -> Dict[str, Any]:
        """Plain values (``augment`` a list): what the journal records."""
        values = asdict(self)
        values["augment"] = list(self.augment)
        return values

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "Recipe":
        """A recipe recorded by :meth:`to_dict` (parts added later take their defaults)."""
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in values.items() if key in known})

    def changes(self) -> Dict[str, Any]:
        """The parts that differ from the recipe it was made from (``name``)."""
        base = get_recipe(self.name).to_dict() if self.name in RECIPES else Recipe().to_dict()
        return {key: value for key, value in self.to_dict().items()
                if key != "name" and value != base[key]}

    @property
    def trains_as_default(self) -> bool:
        """Whether it trains as nord did before recipes: the default recipe, but for the
        optimizer, learning rate and batch size (which runs recorded on their own). Such a run
        records no recipe, so its journal is what it always was."""
        recorded_alone = ("name", "optimizer", "lr", "batch_size")
        return all(getattr(self, f.name) == getattr(DEFAULT, f.name)
                   for f in fields(self) if f.name not in recorded_alone)

    def describe(self, dataset: str) -> Dict[str, Any]:
        """What a journal records of the recipe training on ``dataset``: its parts, and the
        statistics the data was normalised with."""
        described = self.to_dict()
        described["weight_decay"] = self.weight_decay_used
        if self.normalise == "published":
            described["normalised_with"] = (
                "NAS-Bench-201's published statistics" if self.statistics_for(dataset)
                else f"the training split's statistics ({dataset} has no published ones)")
        return described

    # --- what the parts mean -----------------------------------------------------------------
    def optimizer_kwargs(self) -> Dict[str, Any]:
        """The optimizer's keyword arguments besides ``lr``: only the parts the recipe sets, so
        that a default recipe builds exactly the optimizer nord always built (a weight decay of
        None leaves the optimizer's own default)."""
        kwargs: Dict[str, Any] = {}
        if self.momentum:
            kwargs["momentum"] = self.momentum
        if self.nesterov:
            kwargs["nesterov"] = True
        if self.weight_decay is not None:
            kwargs["weight_decay"] = self.weight_decay
        return kwargs

    @property
    def weight_decay_used(self) -> float:
        """The weight decay training applies (``weight_decay``, or the optimizer's default)."""
        if self.weight_decay is not None:
            return self.weight_decay
        return OPTIMIZER_WEIGHT_DECAY.get(self.optimizer, 0.0)

    def crop_padding_for(self, side: int) -> int:
        """The crop's padding for images of ``side`` pixels."""
        return self.crop_padding if self.crop_padding is not None else max(1, side // 8)

    def cutout_length_for(self, side: int) -> int:
        """The cutout square's side for images of ``side`` pixels."""
        return self.cutout_length if self.cutout_length is not None else max(1, side // 2)

    def statistics_for(self, dataset: str) -> Optional[Tuple[Tuple[float, ...], Tuple[float, ...]]]:
        """The published (mean, std) to normalise ``dataset`` with, or None: the training
        split's own (``normalise='training-split'``, or no published figures for it)."""
        if self.normalise != "published":
            return None
        return PUBLISHED_STATISTICS.get(str(dataset).lower().replace("-", ""))

    @property
    def varies_lr(self) -> bool:
        """Whether the learning rate changes during training."""
        return self.lr_schedule != "constant" or self.warmup_epochs > 0


_PART_DEFAULTS = {part.name: part.default for part in fields(Recipe)}
"""Each part's default, which the checks of a recipe read (so defined before the first one)."""
DEFAULT = Recipe()

RECIPES: Registry[Recipe] = Registry(
    "recipe (--recipe)",
    hint="Register yours with nord.nn.recipe.register_recipe(name, Recipe(...))")
"""Recipe names -> :class:`Recipe`."""


def register_recipe(name: str, recipe: Recipe, description: str = "",
                    overwrite: bool = False) -> Recipe:
    """Make ``recipe`` known as ``name`` (``--recipe NAME``); its ``name`` becomes ``name``.

    Raises:
        ConfigurationError: not a Recipe, or the name is taken.
    """
    if not isinstance(recipe, Recipe):
        raise ConfigurationError(
            f"register_recipe takes a Recipe (nord.nn.recipe.Recipe(...)); got "
            f"{type(recipe).__name__}")
    named = replace(recipe, name=name)
    RECIPES.register(name, named, description=description, overwrite=overwrite)
    return named


def get_recipe(recipe: Any = None) -> Recipe:
    """A recipe by name (None: ``default``), or the :class:`Recipe` given.

    Raises:
        ConfigurationError: an unknown name (listing the valid ones), or not a recipe.
    """
    if recipe is None:
        return DEFAULT
    if isinstance(recipe, Recipe):
        return recipe
    if isinstance(recipe, str):
        return RECIPES.get(recipe)
    raise ConfigurationError(
        f"recipe is a name ({', '.join(RECIPES.names())}) or a nord.nn.recipe.Recipe; got "
        f"{type(recipe).__name__}: {recipe!r:.80}")


def list_recipes() -> List[str]:
    """The names of the known recipes."""
    return RECIPES.names()


register_recipe("default", DEFAULT,
                "constant Adam at 1e-3, no weight decay, no augmentation: nord's own training")
register_recipe("nasbench201", Recipe(
    optimizer="sgd", lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4,
    lr_schedule="cosine", min_lr=0.0, batch_size=256, augment=("flip", "crop"),
    normalise="published"),
    "NAS-Bench-201's protocol: Nesterov SGD 0.1, cosine to 0, weight decay 5e-4, batch 256, "
    "crop and flip")
register_recipe("darts-search", Recipe(
    optimizer="sgd", lr=0.025, momentum=0.9, nesterov=True, weight_decay=5e-4,
    lr_schedule="cosine", min_lr=0.001, batch_size=64, clip_grad=5.0, augment=("flip", "crop"),
    normalise="published"),
    "the weights of NAS-Bench-201's one-shot searches: Nesterov SGD 0.025, cosine to 0.001, "
    "weight decay 5e-4, batch 64, clipping at 5")
