"""The weight-sharing searches of the NAS-Bench-201 paper on nord's supernet: what each does in
a search step, at the end of an epoch, and how it derives its cell (imports torch).

Every method trains the supernet's weights on one half of the training data with the optimizer
it is given (the ``darts-search`` recipe's), and, except random search with parameter sharing,
learns an architecture on the other half::

    method = make_method("gdas", supernet, weight_optimizer, generator)
    for epoch in range(epochs):
        method.start_epoch(epoch, epochs)
        for weight_batch, arch_batch in batches:
            losses = method.step(weight_batch, arch_batch)
        method.end_epoch(next_arch_batch)
        cell = method.derive(next_arch_batch)        # a genome
        probabilities = method.distribution()         # 6 edges x 5 operations

| name | weights trained on | architecture learned by | cell derived |
|---|---|---|---|
| darts-v1 | the mixture of every operation | the validation loss's gradient (first order) | argmax per edge |
| darts-v2 | the mixture | the gradient after a virtual weight step (second order) | argmax per edge |
| gdas | a Gumbel-softmax sample per step | the sample's straight-through gradient, temperature 10 -> 0.1 | argmax per edge |
| setn | a uniformly drawn cell per step | the mixture's gradient | the best of the most likely cells on a validation batch each |
| enas | a cell drawn from the controller | REINFORCE on validation accuracy, each epoch's end | the best of cells drawn from the controller |
| rsps | a uniformly drawn cell per step | nothing | the best of uniformly drawn cells |

Every random draw (cells, Gumbel noise, the controller's samples) comes from the generator the
method is given, so a search is a function of its seed and resumes exactly from its state.
Data-parallel (``group``, a ``DataParallelGroup``), every rank draws alike but the root's draw is
the one used, each gradient is averaged over the ranks before its step, and a cell is scored on
the samples of every rank: every rank holds one architecture.
Where these methods differ from the benchmark authors' code, and why: docs/oneshot.md.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import torch
from torch import nn
from torch.func import functional_call
from torch.nn import functional as F

from nord.benchmarks.nasbench201.cells import N_CELLS, N_EDGES, N_OPS, code_to_genome
from nord.benchmarks.nasbench201.supernet import EdgeRule, HardMixture, Mixture, Path, Supernet
from nord.checks import check_int
from nord.errors import ConfigurationError
from nord.evaluators.group import Alone
from nord.oneshot.controller import Controller
from nord.oneshot.settings import MethodSettings
from nord.oneshot.registry import METHODS

Batch = Tuple[torch.Tensor, torch.Tensor]
NextBatch = Callable[[], Batch]


class OneShotMethod:
    """A weight-sharing search on a supernet (template: ``step`` and the hooks below).

    Args:
        supernet: the supernet whose weights ``weight_optimizer`` trains.
        weight_optimizer: built on ``supernet.parameters()``; its learning rate is the
            caller's schedule's.
        generator: a CPU generator, every random draw of the method.
        settings: see :class:`MethodSettings`.
        group: the ranks searching together (``Alone``: this process).
    """

    name = ""
    default_candidates = 0

    def __init__(self, supernet: Supernet, weight_optimizer: torch.optim.Optimizer,
                 generator: torch.Generator, settings: MethodSettings = MethodSettings(),
                 group: Alone = Alone()):
        self.supernet = supernet
        self.group = group
        self.weight_optimizer = weight_optimizer
        self.generator = generator
        self.settings = settings
        self.candidates = check_int(settings.candidates or self.default_candidates,
                                    "candidates (cells scored to derive one)", 0)
        device = next(supernet.parameters()).device
        dtype = next(supernet.parameters()).dtype
        draw = torch.randn(N_EDGES, N_OPS, generator=generator, dtype=dtype)
        self.alphas = nn.Parameter((1e-3 * draw).to(device))
        self.arch_optimizer = torch.optim.Adam(
            [self.alphas], lr=settings.arch_lr, betas=settings.arch_betas,
            weight_decay=settings.arch_weight_decay)

    # --- what every method shares ------------------------------------------------------
    def start_epoch(self, epoch: int, epochs: int) -> None:
        """Called before an epoch's steps (``epoch`` counts from 0)."""

    def step(self, weight_batch: Batch, arch_batch: Batch) -> Dict[str, float]:
        """One search step: the weights on ``weight_batch``, the architecture on
        ``arch_batch``. Returns the losses, by name."""
        return {"weight_loss": self._train_weights(weight_batch, self._weight_rule()),
                "arch_loss": self._train_architecture(arch_batch)}

    def end_epoch(self, next_arch_batch: NextBatch) -> Dict[str, float]:
        """Called after an epoch's steps; returns what it measured, by name."""
        return {}

    def distribution(self) -> torch.Tensor:
        """The probability of each operation on each edge (6 x 5), as the method sees it."""
        return self.alphas.detach().softmax(dim=-1).cpu()

    def architecture(self) -> List[torch.Tensor]:
        """What the method has learnt of the architecture (the ranks of a data-parallel search
        must hold it alike)."""
        return [self.alphas]

    def derive(self, next_arch_batch: NextBatch) -> Tuple[int, ...]:
        """The cell the search would return now (a genome): by default, the most likely
        operation on each edge, as the benchmark derives it."""
        return tuple(int(op) for op in self.alphas.detach().argmax(dim=-1))

    def state_dict(self) -> Dict[str, Any]:
        """Everything a resumed search needs to go on as if never stopped."""
        return {"supernet": self.supernet.state_dict(), "alphas": self.alphas.detach().clone(),
                "weight_optimizer": self.weight_optimizer.state_dict(),
                "arch_optimizer": self.arch_optimizer.state_dict(),
                "generator": self.generator.get_state()}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.supernet.load_state_dict(state["supernet"])
        with torch.no_grad():
            self.alphas.copy_(state["alphas"])
        self.weight_optimizer.load_state_dict(state["weight_optimizer"])
        self.arch_optimizer.load_state_dict(state["arch_optimizer"])
        self.generator.set_state(state["generator"])

    # --- hooks -----------------------------------------------------------------------------
    def _weight_rule(self) -> EdgeRule:
        """How the edges combine their operations in a weight step."""
        raise NotImplementedError

    def _arch_rule(self) -> EdgeRule:
        """How they combine in an architecture step (differentiable in ``alphas``)."""
        return Mixture(self.alphas.softmax(dim=-1))

    # --- the pieces ------------------------------------------------------------------------
    def _train_weights(self, batch: Batch, rule: EdgeRule) -> float:
        images, labels = batch
        self.weight_optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.supernet(images, rule), labels)
        loss.backward()
        mean_loss = self.group.average_gradients(self.supernet.parameters(), loss)
        if self.settings.clip_grad:
            nn.utils.clip_grad_norm_(self.supernet.parameters(), self.settings.clip_grad)
        self.weight_optimizer.step()
        return mean_loss

    def _train_architecture(self, batch: Batch) -> float:
        """A step of the architecture parameters on the validation half's loss; only their
        gradient is computed (the weights' would be thrown away)."""
        images, labels = batch
        loss = F.cross_entropy(self.supernet(images, self._arch_rule()), labels)
        (self.alphas.grad,) = torch.autograd.grad(loss, [self.alphas])
        mean_loss = self.group.average_gradients([self.alphas], loss)
        self.arch_optimizer.step()
        return mean_loss

    def _uniform_cell(self) -> Tuple[int, ...]:
        return self.group.root_decides(self._draw_uniform_cell())

    def _draw_uniform_cell(self) -> Tuple[int, ...]:
        """A uniformly drawn cell of this rank's generator (``_uniform_cell``: the root's)."""
        return tuple(int(op) for op in torch.randint(0, N_OPS, (N_EDGES,),
                                                     generator=self.generator))

    def _best_on_batches(self, cells, next_arch_batch: NextBatch) -> Tuple[int, ...]:
        """The cell of ``cells`` with the highest accuracy, each scored on the next
        validation batch (of every rank), in evaluation mode (the first of equals)."""
        best, best_correct = None, -1.0
        self.supernet.eval()
        try:
            with torch.no_grad():
                for cell in cells:
                    images, labels = next_arch_batch()
                    predictions = self.supernet(images, Path(cell)).argmax(dim=-1)
                    correct = self.group.mean(predictions == labels)
                    if correct > best_correct:
                        best, best_correct = cell, correct
        finally:
            self.supernet.train()
        return best


class DartsFirstOrder(OneShotMethod):
    """DARTS, first order: the weights on the mixture, then the architecture on the validation
    half's gradient at the current weights."""

    name = "darts-v1"

    def _weight_rule(self) -> EdgeRule:
        return Mixture(self.alphas.detach().softmax(dim=-1))


class DartsSecondOrder(DartsFirstOrder):
    """DARTS, second order: the architecture's gradient is taken after a virtual step of the
    weights, ``w' = w - lr (momentum * buffer + grad + weight_decay * w)``, with the implicit
    term's Hessian-vector product by central finite differences (step ``0.01 / |dw'|``); then
    the weights are trained as in the first order. The architecture step comes first, as in
    DARTS. The auxiliary passes leave the batch norms' running statistics as they were."""

    name = "darts-v2"
    finite_difference = 0.01

    def step(self, weight_batch: Batch, arch_batch: Batch) -> Dict[str, float]:
        arch_loss = self._train_architecture_unrolled(weight_batch, arch_batch)
        return {"weight_loss": self._train_weights(weight_batch, self._weight_rule()),
                "arch_loss": arch_loss}

    def _loss(self, parameters: Dict[str, torch.Tensor], batch: Batch, rule: EdgeRule):
        """The loss of the supernet with ``parameters``, on copies of its buffers."""
        buffers = {name: b.clone() for name, b in self.supernet.named_buffers()}
        images, labels = batch
        logits = functional_call(self.supernet, (parameters, buffers), (images, rule))
        return F.cross_entropy(logits, labels)

    def _virtual_step(self, batch: Batch) -> Dict[str, torch.Tensor]:
        parameters = dict(self.supernet.named_parameters())
        group = self.weight_optimizer.param_groups[0]
        lr, decay, momentum = group["lr"], group["weight_decay"], group.get("momentum", 0.0)
        gradients = torch.autograd.grad(self._loss(parameters, batch, self._weight_rule()),
                                        list(parameters.values()))
        stepped = {}
        with torch.no_grad():
            for (name, weight), gradient in zip(parameters.items(), gradients):
                buffer = self.weight_optimizer.state.get(weight, {}).get("momentum_buffer")
                moment = momentum * buffer if buffer is not None else 0.0
                stepped[name] = (weight - lr * (moment + gradient + decay * weight)
                                 ).requires_grad_(True)
        return stepped

    def _train_architecture_unrolled(self, weight_batch: Batch, arch_batch: Batch) -> float:
        lr = self.weight_optimizer.param_groups[0]["lr"]
        stepped = self._virtual_step(weight_batch)
        arch_loss = self._loss(stepped, arch_batch, self._arch_rule())
        direct, *vector = torch.autograd.grad(arch_loss, [self.alphas, *stepped.values()])
        radius = self.finite_difference / torch.cat([v.reshape(-1) for v in vector]).norm()
        weights = dict(self.supernet.named_parameters())
        sides = []
        for sign in (1.0, -1.0):
            with torch.no_grad():
                moved = {name: w + sign * radius * v
                         for (name, w), v in zip(weights.items(), vector)}
            loss = self._loss(moved, weight_batch, self._arch_rule())
            sides.append(torch.autograd.grad(loss, [self.alphas])[0])
        implicit = (sides[0] - sides[1]) / (2 * radius)
        self.alphas.grad = direct - lr * implicit
        mean_loss = self.group.average_gradients([self.alphas], arch_loss)
        self.arch_optimizer.step()
        return mean_loss


class GDAS(OneShotMethod):
    """GDAS: each forward pass draws a Gumbel-softmax sample per edge; one operation runs,
    and the straight-through gradient reaches every architecture parameter. The temperature
    falls linearly from ``tau_max`` in the first epoch to ``tau_min`` in the last."""

    name = "gdas"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tau = self.settings.tau_max

    def start_epoch(self, epoch: int, epochs: int) -> None:
        high, low = self.settings.tau_max, self.settings.tau_min
        self.tau = high - (high - low) * epoch / (epochs - 1) if epochs > 1 else high

    def _sample(self, alphas: torch.Tensor) -> HardMixture:
        while True:     # a draw of exactly 0 makes an infinite noise: draw again
            noise = torch.empty(alphas.shape, dtype=alphas.dtype).exponential_(
                generator=self.generator)
            gumbels = -self.group.root_decides(noise).log().to(alphas.device)
            probabilities = ((alphas.log_softmax(dim=1) + gumbels) / self.tau).softmax(dim=1)
            if torch.isfinite(gumbels).all() and torch.isfinite(probabilities).all():
                break
        chosen = probabilities.argmax(dim=-1)
        hard = torch.zeros_like(probabilities).scatter_(-1, chosen[:, None], 1.0)
        return HardMixture(hard - probabilities.detach() + probabilities, chosen.tolist())

    def _weight_rule(self) -> EdgeRule:
        return self._sample(self.alphas.detach())

    def _arch_rule(self) -> EdgeRule:
        return self._sample(self.alphas)

    def state_dict(self) -> Dict[str, Any]:
        return {**super().state_dict(), "tau": self.tau}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.tau = state["tau"]


class SETN(OneShotMethod):
    """SETN: the weights on a uniformly drawn cell per step, the architecture on the mixture;
    the derived cell is the best of the ``candidates`` most likely cells under the learned
    distribution, each scored on a validation batch."""

    name = "setn"
    default_candidates = 100

    def _weight_rule(self) -> EdgeRule:
        return Path(self._uniform_cell())

    def derive(self, next_arch_batch: NextBatch) -> Tuple[int, ...]:
        return self._best_on_batches(self.most_likely_cells(self.candidates), next_arch_batch)

    def most_likely_cells(self, count: int):
        """The ``count`` cells of highest probability (product over edges), most likely first;
        equals in cell-code order."""
        log_probabilities = self.alphas.detach().log_softmax(dim=-1).cpu().double().numpy()
        genomes = _all_genomes()
        scores = log_probabilities[np.arange(N_EDGES), genomes].sum(axis=1)
        order = np.argsort(-scores, kind="stable")[:count]
        return [tuple(int(op) for op in genomes[code]) for code in order]


class ENAS(OneShotMethod):
    """ENAS: the weights on a cell drawn from an LSTM controller per step; at each epoch's end
    the controller is trained by REINFORCE on the supernet's validation accuracy (plus an
    entropy bonus) against a moving-average baseline; the derived cell is the best of
    ``candidates`` cells drawn from it, each scored on a validation batch."""

    name = "enas"
    default_candidates = 10

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        device = next(self.supernet.parameters()).device
        self.controller = Controller().to(device)
        settings = self.settings
        self.controller_optimizer = torch.optim.Adam(
            self.controller.parameters(), lr=settings.controller_lr,
            betas=settings.controller_betas, eps=settings.controller_eps)
        self.baseline = float("nan")

    def _weight_rule(self) -> EdgeRule:
        with torch.no_grad():
            cell, _, _ = self.controller.sample(self.generator)
        return Path(self.group.root_decides(cell))

    def step(self, weight_batch: Batch, arch_batch: Batch) -> Dict[str, float]:
        return {"weight_loss": self._train_weights(weight_batch, self._weight_rule())}

    def end_epoch(self, next_arch_batch: NextBatch) -> Dict[str, float]:
        settings = self.settings
        self.supernet.eval()
        self.controller.train()
        rewards = []
        try:
            for _ in range(settings.controller_steps):
                self.controller_optimizer.zero_grad(set_to_none=True)
                for _ in range(settings.controller_aggregate):
                    cell, log_prob, entropy = self._controller_sample()
                    images, labels = next_arch_batch()
                    with torch.no_grad():
                        predictions = self.supernet(images, Path(cell)).argmax(dim=-1)
                        accuracy = self.group.mean(predictions == labels)
                    reward = accuracy + settings.entropy_weight * float(entropy.detach())
                    self.baseline = (reward if self.baseline != self.baseline else
                                     self.baseline - (1 - settings.baseline_decay)
                                     * (self.baseline - reward))
                    loss = -log_prob * (reward - self.baseline) / settings.controller_aggregate
                    loss.backward()
                    rewards.append(reward)
                self.group.average_gradients(self.controller.parameters())
                nn.utils.clip_grad_norm_(self.controller.parameters(), 5.0)
                self.controller_optimizer.step()
        finally:
            self.supernet.train()
        return {"controller_reward": float(np.mean(rewards)) if rewards else float("nan"),
                "controller_baseline": self.baseline}

    def architecture(self) -> List[torch.Tensor]:
        return [*super().architecture(), *self.controller.parameters()]

    def distribution(self) -> torch.Tensor:
        """The controller's probabilities at each edge along its most likely cell (its choices
        depend on the edges before, so this is one path through the policy, not a marginal)."""
        return self.controller.most_likely()[1].cpu()

    def derive(self, next_arch_batch: NextBatch) -> Tuple[int, ...]:
        self.controller.eval()
        with torch.no_grad():
            cells = [self.controller.sample(self.generator)[0] for _ in range(self.candidates)]
        return self._best_on_batches(self.group.root_decides(cells), next_arch_batch)

    def _controller_sample(self):
        """A cell from the controller, the root's where ranks search together, with its
        log-probability and entropy under this rank's controller."""
        cell, log_prob, entropy = self.controller.sample(self.generator)
        decided = self.group.root_decides(cell)
        if decided != cell:      # ranks whose draws drifted follow the root's
            log_prob, entropy = self.controller.score(decided)
        return decided, log_prob, entropy

    def state_dict(self) -> Dict[str, Any]:
        return {**super().state_dict(), "controller": self.controller.state_dict(),
                "controller_optimizer": self.controller_optimizer.state_dict(),
                "baseline": self.baseline}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.controller.load_state_dict(state["controller"])
        self.controller_optimizer.load_state_dict(state["controller_optimizer"])
        self.baseline = state["baseline"]


class RandomWithSharing(OneShotMethod):
    """Random search with parameter sharing (RSPS): the weights on a uniformly drawn cell per
    step, nothing learned about the architecture; the derived cell is the best of
    ``candidates`` uniformly drawn cells, each scored on a validation batch."""

    name = "rsps"
    default_candidates = 100

    def _weight_rule(self) -> EdgeRule:
        return Path(self._uniform_cell())

    def step(self, weight_batch: Batch, arch_batch: Batch) -> Dict[str, float]:
        return {"weight_loss": self._train_weights(weight_batch, self._weight_rule())}

    def distribution(self) -> torch.Tensor:
        return torch.full((N_EDGES, N_OPS), 1.0 / N_OPS)

    def derive(self, next_arch_batch: NextBatch) -> Tuple[int, ...]:
        cells = self.group.root_decides(   # the root's candidates, in one broadcast
            [self._draw_uniform_cell() for _ in range(self.candidates)])
        return self._best_on_batches(cells, next_arch_batch)


@functools.lru_cache(maxsize=1)
def _all_genomes() -> np.ndarray:
    """Every cell's genome, in code order (SETN ranks them all), made once when first asked."""
    return np.array([code_to_genome(code) for code in range(N_CELLS)], dtype=np.int64)


def make_method(name: str, supernet: Supernet, weight_optimizer: torch.optim.Optimizer,
                generator: torch.Generator, settings: MethodSettings = MethodSettings(),
                group: Alone = Alone()) -> OneShotMethod:
    """The method ``name`` (see ``nord.oneshot.registry.METHODS``) on ``supernet``.

    Raises:
        ConfigurationError: an unknown name (the message lists the methods).
    """
    if not isinstance(name, str):
        raise ConfigurationError(f"a weight-sharing method is named by a string, one of "
                                 f"{', '.join(METHODS.names())}; got {name!r}")
    return METHODS.load(name)(supernet, weight_optimizer, generator, settings, group)
