"""A weight-sharing search from start to end: bilevel data, the method's epochs, a record of
every epoch, a checkpoint after each, and the resume that goes on from it (imports torch).

    search = OneShotSearch(OneShotSettings("gdas", search_epochs=2, channels=4,
                                           cells_per_stage=1), Digits(),
                           checkpoint="runs/gdas.ckpt")
    result = search.run()        # result.cell, result.epochs (one SearchEpochRecord each)

The curator's training split is cut in two halves by a seeded permutation: the weights train
on one, the architecture on the other, and the cells a method scores when it derives one are
scored on batches of the second (the benchmark's scripts split CIFAR's training set the same
way). Every epoch is recorded: the derived cell (the benchmark's string), the distribution of
every edge, the mean losses, what the method measured at the epoch's end and, when a look-up
is given (the NAS-Bench-201 table, for its data sets), the derived cell's accuracy there.

Data-parallel (``group``: a started ``DataParallelGroup`` of MPI ranks), each rank takes its
shard of every batch (the recipe's batch size is per rank, as in data-parallel training), the
gradients of the weights, the architecture and the controller are averaged over the ranks
before each step, every draw is the root's, and a cell's score counts the samples of every
rank; after each epoch the ranks take the root's batch-norm statistics and compare their
architecture and weights, so a search on N ranks is one search. Only the root writes the
checkpoint; a resume reads it on the root and sends it to the others.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Dict, Iterator, List, Tuple

import numpy as np
import torch

from nord.benchmarks.nasbench201.cells import EDGE_NAMES, OPS, genome_to_cell
from nord.benchmarks.nasbench201.supernet import Supernet, check_image_shape
from nord.checks import check_int
from nord.data.curator import DataCurator, TensorLoader
from nord.errors import ConfigurationError, NordError
from nord.evaluators.group import Alone
from nord.journal.records import SearchEpochRecord
from nord.nn.augment import Augmentation, black_pixel
from nord.nn.recipe import Recipe, get_recipe
from nord.nn.schedules import make_schedule
from nord.nn.training import make_optimizer, resolve_device
from nord.oneshot.methods import OneShotMethod, make_method
from nord.oneshot.settings import MethodSettings
from nord.oneshot.registry import METHODS

CHECKPOINT_FORMAT = "nord-oneshot/1"
PASSES = 1_000_003
"""Orders of the validation batches per epoch: pass ``p`` of epoch ``e`` is order
``e * PASSES + p``, so an epoch's batches are a function of its number alone."""


@dataclass(frozen=True)
class OneShotSettings:
    """What a weight-sharing search is: the method, the supernet, the weights' recipe.

    Args:
        method: a name of ``METHODS`` (``darts-v1``, ``darts-v2``, ``gdas``, ``setn``,
            ``enas``, ``rsps``).
        search_epochs: epochs of search (the benchmark: 50 for DARTS, 240 to 310 for others).
        channels, cells_per_stage: the supernet's ``C`` and ``N`` (the benchmark: 16 and 5).
        affine, track_running_stats: the supernet cells' batch norms.
        recipe: how the weights train (a name or a Recipe; the benchmark's: ``darts-search``).
        method_settings: the architecture's optimizer and each method's own settings.
        seed: every draw of the search (data halves and orders, augmentation, the method's).
        device: 'cpu', 'cuda', 'cuda:N' or 'auto'.
    """

    method: str
    search_epochs: int = 50
    channels: int = 16
    cells_per_stage: int = 5
    affine: bool = False
    track_running_stats: bool = True
    recipe: Any = "darts-search"
    method_settings: MethodSettings = field(default_factory=MethodSettings)
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self):
        METHODS.get(self.method)      # an unknown name is refused with the list
        check_int(self.search_epochs, "search_epochs (--search-epochs)", 1)
        check_int(self.seed, "seed", 0)
        object.__setattr__(self, "recipe", get_recipe(self.recipe))

    def record(self) -> Dict[str, Any]:
        """What the search is, as a checkpoint keeps it: every setting but the device, where
        it runs (a search resumes on any device)."""
        described = asdict(self)
        described["recipe"] = self.recipe.to_dict()
        del described["device"]
        return described


@dataclass
class OneShotResult:
    """What a search ends with: the final cell and every epoch's record."""

    cell: Tuple[int, ...]
    epochs: List[SearchEpochRecord]

    @property
    def cell_string(self) -> str:
        return genome_to_cell(self.cell)


class NoSearchRecords:
    """Where a search's epochs go when nothing keeps them (a journal keeps them otherwise)."""

    def search_epoch(self, record: SearchEpochRecord) -> None:
        """Keep the record of one finished epoch (an epoch recorded again replaces it)."""


def _no_lookup(genome: Tuple[int, ...]) -> float:
    return math.nan


class OneShotSearch:
    """One weight-sharing search on ``curator``'s images.

    Args:
        settings: see :class:`OneShotSettings`.
        curator: the data set; its training split is halved for the weights and the
            architecture.
        records: what keeps each epoch's record (a ``Journal``, or ``NoSearchRecords``).
        checkpoint: the file written after every epoch and read by a resume ('' : none).
        lookup: the accuracy of a cell by genome (NaN where unknown): the table's 200-epoch
            test accuracy of the derived cell, journaled beside it, never seen by the search.
        group: the ranks searching together (``Alone``: this process; a
            ``DataParallelGroup``, started, for a data-parallel search).

    Raises:
        ConfigurationError: data that are not images, or halves too small for a batch.
    """

    def __init__(self, settings: OneShotSettings, curator: DataCurator,
                 records: Any = NoSearchRecords(), checkpoint: str = "",
                 lookup: Callable[[Tuple[int, ...]], float] = _no_lookup,
                 group: Alone = Alone()):
        self.settings = settings
        self.group = group
        self.curator = curator.load() if hasattr(curator, "load") else curator
        self.records = records
        self.checkpoint = str(checkpoint)
        self.lookup = lookup
        shape = tuple(self.curator.input_shape)
        check_image_shape(shape, "a weight-sharing search")
        self.device = resolve_device(settings.device, group.local_rank)
        recipe: Recipe = settings.recipe
        torch.manual_seed(settings.seed)        # the supernet's and the controller's weights
        self.supernet = Supernet(settings.channels, settings.cells_per_stage,
                                 self.curator.num_classes, shape[0], settings.affine,
                                 settings.track_running_stats).to(self.device)
        optimizer = make_optimizer(recipe.optimizer, self.supernet.parameters(), recipe.lr,
                                   **recipe.optimizer_kwargs())
        self.schedule = make_schedule(recipe, optimizer, settings.search_epochs)
        method_settings = settings.method_settings
        if recipe.clip_grad != method_settings.clip_grad:
            method_settings = replace(method_settings, clip_grad=recipe.clip_grad)
        self.method: OneShotMethod = make_method(
            settings.method, self.supernet, optimizer,
            torch.Generator().manual_seed(settings.seed), method_settings, group)
        side = min(shape[1:])
        self.augmentation = Augmentation(
            recipe.augment, shape, recipe.crop_padding_for(side), recipe.cutout_length_for(side),
            black_pixel(self.curator.mean, self.curator.std, shape[0]))
        self.weight_loader, self.arch_loader, self.score_loader = self._loaders(recipe.batch_size)
        self.epochs: List[SearchEpochRecord] = []

    # --- data ------------------------------------------------------------------------------
    def _loaders(self, batch_size: int) -> Tuple[TensorLoader, TensorLoader, TensorLoader]:
        x, y = self.curator.tensors("train", self.device)
        order = np.random.default_rng(self.settings.seed).permutation(len(x))
        weights_half, arch_half = np.sort(order[: len(x) // 2]), np.sort(order[len(x) // 2:])
        if min(len(weights_half), len(arch_half)) < 1:
            raise ConfigurationError(
                f"the training split has {len(x)} samples; a weight-sharing search needs at "
                "least 2, one half for the weights and one for the architecture")
        seed, shard = self.settings.seed, {"rank": self.group.rank, "size": self.group.size}
        return (TensorLoader(x, y, batch_size, shuffle=True, seed=seed, indices=weights_half,
                             **shard),
                TensorLoader(x, y, batch_size, shuffle=True, seed=seed + 1, indices=arch_half,
                             **shard),
                TensorLoader(x, y, batch_size, shuffle=True, seed=seed + 2, indices=arch_half,
                             **shard))

    def _validation_batches(self, epoch: int) -> Callable[[], Tuple[torch.Tensor, torch.Tensor]]:
        """The next batch of the architecture's half, as often as asked, in epoch ``epoch``'s
        orders (a new order each pass through the half)."""
        def batches() -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
            for number in range(PASSES):
                self.score_loader.set_epoch(epoch * PASSES + number)
                yield from self.score_loader
        stream = batches()
        return lambda: next(stream)

    # --- the search ---------------------------------------------------------------------------
    def run(self) -> OneShotResult:
        """Search from the checkpoint when there is one, else from the start."""
        start = self._resume()
        if start == 0:      # a resume gave every rank the root's checkpoint already
            self._start_together()
        epochs = self.settings.search_epochs
        for epoch in range(start, epochs):
            began = time.perf_counter()
            self.method.start_epoch(epoch, epochs)
            losses = self._train_epoch(epoch)
            self._agree(epoch)
            next_batch = self._validation_batches(epoch)
            measured = self.method.end_epoch(next_batch)
            cell = self.method.derive(next_batch)
            record = SearchEpochRecord(
                epoch=epoch + 1, cell=genome_to_cell(cell), genome=cell,
                weights=_edge_table(self.method.distribution()),
                metrics={**losses, **measured, "lr": self._lr()},
                lookup_accuracy=self.lookup(cell), seconds=time.perf_counter() - began)
            self.schedule.step()
            self._save(epoch + 1, record)
            self.records.search_epoch(record)
            self.epochs.append(record)
        final = self.epochs[-1].genome if self.epochs else self.method.derive(
            self._validation_batches(epochs))
        return OneShotResult(tuple(final), list(self.epochs))

    def _lr(self) -> float:
        return float(self.method.weight_optimizer.param_groups[0]["lr"])

    def _train_epoch(self, epoch: int) -> Dict[str, float]:
        self.supernet.train()
        self.weight_loader.set_epoch(epoch)
        self.arch_loader.set_epoch(epoch)
        self.augmentation.start_epoch(self.settings.seed, epoch, self.group.rank)
        sums: Dict[str, float] = {}
        steps = 0
        for (wx, wy), (ax, ay) in zip(self.weight_loader, self.arch_loader):
            losses = self.method.step((self.augmentation(wx), wy), (self.augmentation(ax), ay))
            for name, value in losses.items():
                if not math.isfinite(value):
                    raise NordError(
                        f"the {self.settings.method} search diverged in epoch {epoch + 1}: "
                        f"{name} is {value}; lower the weights' learning rate (--lr) or the "
                        "architecture's")
                sums[name] = sums.get(name, 0.0) + value
            steps += 1
        return {name: total / steps for name, total in sums.items()}

    def _start_together(self) -> None:
        """Every rank starts from the root's state: its weights, architecture, optimizers and
        generator (the same seed makes them alike; the root's makes them one)."""
        if self.group.size == 1:
            return
        state = self.group.root_decides(_on_cpu(self.method.state_dict())
                                        if self.group.is_root else None)
        if not self.group.is_root:
            self.method.load_state_dict(state)

    def _agree(self, epoch: int) -> None:
        """After an epoch's steps: every rank takes the root's batch-norm statistics (each
        gathered its own shard's) and the ranks check that they hold one search."""
        if self.group.size == 1:
            return
        self.group.share_root_buffers(self.supernet)
        self.group.check_same(f"architectures after epoch {epoch + 1}",
                              self.method.architecture())
        self.group.check_same(f"supernet weights after epoch {epoch + 1}",
                              self.supernet.state_dict().values())

    # --- checkpoints -----------------------------------------------------------------------------
    def _save(self, done: int, record: SearchEpochRecord) -> None:
        """Write the state after ``done`` epochs atomically (a kill leaves the last whole one)."""
        if not self.checkpoint or not self.group.is_root:
            return
        state = {"format": CHECKPOINT_FORMAT, "settings": self.settings.record(),
                 "ranks": self.group.size, "epochs_done": done, "method": self.method.state_dict(),
                 "schedule": self.schedule.state_dict(),
                 "records": [asdict(r) for r in self.epochs] + [asdict(record)]}
        partial = f"{self.checkpoint}.partial"
        torch.save(state, partial)
        os.replace(partial, self.checkpoint)

    def _resume(self) -> int:
        """Load the checkpoint, if any: the epochs it holds are done (their records kept again,
        in case the process died between the checkpoint and the record). The root reads it
        and sends it to the other ranks."""
        state, refusal = self.group.root_decides(
            self._read_checkpoint() if self.group.is_root else (None, None))
        if refusal is not None:
            raise ConfigurationError(refusal)
        if state is None:
            return 0
        self.method.load_state_dict(state["method"])
        self.schedule.load_state_dict(state["schedule"])
        self.epochs = [SearchEpochRecord(**{**r, "genome": tuple(r["genome"])})
                       for r in state["records"]]
        for record in self.epochs:
            self.records.search_epoch(record)
        return int(state["epochs_done"])

    def _read_checkpoint(self) -> Tuple[Any, Any]:
        """``(state, None)``, ``(None, None)`` without a checkpoint, or ``(None, why)`` when it
        belongs to another search."""
        if not self.checkpoint or not os.path.exists(self.checkpoint):
            return None, None
        state = torch.load(self.checkpoint, map_location="cpu", weights_only=False)
        if state.get("format") != CHECKPOINT_FORMAT or state.get("settings") != \
                self.settings.record():
            return None, (
                f"the checkpoint '{self.checkpoint}' belongs to another search (its settings "
                "differ from this one's); resume with the settings it was written with, or "
                "remove the file to search from the start")
        ranks = state.get("ranks", 1)
        if ranks != self.group.size:
            return None, (
                f"the checkpoint '{self.checkpoint}' was written by a search on {ranks} "
                f"rank{'s' if ranks > 1 else ''} (each rank its shard of every batch); this one "
                f"runs on {self.group.size}: resume it on {ranks}")
        return state, None


def _on_cpu(state: Any) -> Any:
    """``state`` with every tensor copied to the CPU (what is sent to another rank, whose
    device may differ)."""
    if isinstance(state, torch.Tensor):
        return state.cpu()
    if isinstance(state, dict):
        return {key: _on_cpu(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_on_cpu(value) for value in state)
    return state


def _edge_table(distribution: torch.Tensor) -> Dict[str, Dict[str, float]]:
    """``edge -> operation -> probability`` of a 6 x 5 table."""
    rows = distribution.tolist()
    return {edge: {op: float(p) for op, p in zip(OPS, row)}
            for edge, row in zip(EDGE_NAMES, rows)}
