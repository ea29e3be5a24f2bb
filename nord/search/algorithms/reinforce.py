"""Reinforce: a per-gene categorical policy trained with REINFORCE (Williams, 1992).

    algorithm = Reinforce(space, seed=0, learning_rate=0.01, momentum=0.9)
    candidate = algorithm.ask()          # never None: each genome is drawn from the policy
    algorithm.tell(candidate, result)    # one policy-gradient step per told result

The multi-trial baseline of the NAS-Bench-201 (Dong and Yang, ICLR 2020) and NATS-Bench
(Dong et al., TPAMI 2021) papers, with their settings as defaults. It assumes every gene is
an integer whose values are unordered choices (an edge's operation), chosen independently.
Details (the update, the baseline, asynchronous runs, resuming): docs/search.md.
"""
from __future__ import annotations

import bisect
import math
import numbers
from typing import Any, Dict, List, Optional

import numpy as np

from nord.errors import ConfigurationError, SearchSpaceError
from nord.evaluators.result import EvaluationResult
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.spaces.base import SearchSpace

FAILED_REWARD = 0.0
"""Reward of a failed result: the lowest accuracy, so a failure is never reinforced."""

_BETA1, _BETA2, _EPSILON = 0.9, 0.999, 1e-8   # Adam's usual constants


def _check_rate(value: Any, name: str, rule: str, upper_open: Optional[float] = None) -> float:
    """``value`` as a float when it is a finite real >= 0 (and < ``upper_open`` when given)."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or value < 0
            or (upper_open is not None and value >= upper_open)):
        raise ConfigurationError(f"{name} must be {rule}; got {value!r}")
    return float(value)


class Reinforce(SearchAlgorithm):
    """REINFORCE over one softmax per gene, against a moving-average baseline.

    Each gene ``i`` with values ``lower[i] .. upper[i]`` has one logit per value, all zero at
    the start (the uniform policy). A told result's reward is its accuracy (the search
    signal; :data:`FAILED_REWARD` when failed); the step ascends
    ``(reward - baseline) * grad log p(genome)`` with Adam, as NATS-Bench's runs do. The
    baseline is an exponential moving average of the rewards told before (the first reward
    sets it, so the first step is zero). Each told result is one step, in the order told,
    so an asynchronous run learns from each result as it comes, and a resumed run, told the
    journaled results in order, rebuilds the very same policy.

    Args:
        space: a space of integer genes.
        seed: seeds the draws from the policy; the same seed and the same results told in
            the same order give the same candidates.
        learning_rate: Adam's step size, a finite number >= 0 (0 keeps the policy uniform).
        momentum: the baseline's momentum, in [0, 1) (0: the baseline is the last reward).

    Raises:
        ConfigurationError: a learning rate or momentum out of its range.
        SearchSpaceError: the space has a real-valued gene.
    """

    name = "reinforce"

    def __init__(self, space: SearchSpace, seed: Optional[int] = None,
                 learning_rate: float = 0.01, momentum: float = 0.9):
        learning_rate = _check_rate(learning_rate, "learning_rate",
                                    "a finite number >= 0, e.g. 0.01")
        momentum = _check_rate(momentum, "momentum (of the reward baseline)",
                               "a number in [0, 1), e.g. 0.9", upper_open=1.0)
        if not all(space.integer_mask):
            real = [index for index, flag in enumerate(space.integer_mask) if not flag]
            raise SearchSpaceError(
                f"{type(space).__name__} has real-valued genes (positions {real}); REINFORCE "
                "keeps one categorical distribution per gene, so use it on a space of "
                "integer genes")
        super().__init__(space, seed)
        self.learning_rate = learning_rate
        self.momentum = momentum
        self._lower = [int(low) for low in space.lower]
        sizes = [int(high) - int(low) + 1 for low, high in zip(space.lower, space.upper)]
        self._starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
        self.logits = np.zeros(self._starts[-1])
        self._first = np.zeros_like(self.logits)    # Adam's moment estimates
        self._second = np.zeros_like(self.logits)
        self.steps = 0
        self.baseline: Optional[float] = None
        self._sizes = np.asarray(sizes)
        self._policy: Optional[np.ndarray] = None   # every gene's softmax, until the next step
        self._cumulative: List[float] = []           # its running sum (gene i's ends at i + 1)

    def parameters(self) -> Dict[str, Any]:
        return {**super().parameters(), "learning_rate": self.learning_rate,
                "momentum": self.momentum}

    def probabilities(self) -> List[np.ndarray]:
        """The policy: for each gene, the probability of each of its values, lowest first."""
        policy, starts = self._current_policy(), self._starts
        return [policy[starts[i]:starts[i + 1]].copy() for i in range(len(starts) - 1)]

    def _current_policy(self) -> np.ndarray:
        """Every gene's softmax in one array, computed once per step (all genes at once)."""
        if self._policy is None:
            heads, sizes = self._starts[:-1], self._sizes
            exponentials = np.exp(self.logits - np.repeat(
                np.maximum.reduceat(self.logits, heads), sizes))
            self._policy = exponentials / np.repeat(np.add.reduceat(exponentials, heads), sizes)
            self._cumulative = np.cumsum(self._policy).tolist()
        return self._policy

    def _ask(self) -> Optional[Candidate]:
        self._current_policy()
        cumulative, starts = self._cumulative, self._starts
        draws = self.rng.random(len(self._lower))   # one uniform per gene, in order
        genome = []
        for gene, (low, draw) in enumerate(zip(self._lower, draws.tolist())):
            # the first value whose running sum passes the draw; the last if rounding left
            # the gene's sum below it
            index = bisect.bisect_right(cumulative, gene + draw, starts[gene], starts[gene + 1] - 1)
            genome.append(low + index - starts[gene])
        return Candidate(tuple(genome))

    def _tell(self, candidate: Candidate, result: EvaluationResult) -> None:
        reward = result.accuracy if result.ok else FAILED_REWARD
        if not math.isfinite(reward):
            reward = FAILED_REWARD
        if self.baseline is None:
            self.baseline = reward
        advantage = reward - self.baseline
        self.baseline = self.momentum * self.baseline + (1.0 - self.momentum) * reward
        # the gradient of log p(genome) in gene i's logits: onehot(chosen value) - p_i
        gradient = -self._current_policy()
        for start, low, value in zip(self._starts, self._lower, candidate.genome):
            gradient[start + int(value) - low] += 1.0
        self._adam_ascend(advantage * gradient)
        self._policy = None

    def _adam_ascend(self, gradient: np.ndarray) -> None:
        self.steps += 1
        self._first = _BETA1 * self._first + (1 - _BETA1) * gradient
        self._second = _BETA2 * self._second + (1 - _BETA2) * gradient * gradient
        first = self._first / (1 - _BETA1 ** self.steps)
        second = self._second / (1 - _BETA2 ** self.steps)
        self.logits = self.logits + self.learning_rate * first / (np.sqrt(second) + _EPSILON)

