"""Bananas: Bayesian optimisation with an ensemble of neural predictors over path encodings.

    algorithm = Bananas(NASBench201Space(), seed=0)   # the paper's settings by default
    candidate = algorithm.ask()      # None only while no result is in and some are out
    algorithm.tell(candidate, result)

BANANAS (White, Neiswanger and Savani, "BANANAS: Bayesian Optimization with Neural
Architectures for Neural Architecture Search", AAAI 2021): after ``num_init`` random
genomes, each batch of ``k`` comes from an ensemble of small MLPs, trained on the path
encodings of the genomes told so far, that scores a pool of mutations of the best genomes
by independent Thompson sampling. The space says how its genomes encode as paths
(``space.path_encoding(genome)``). Details (settings, failures, asynchronous runs,
resuming, cost): docs/search.md.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Optional, Set, Tuple

import numpy as np

from nord.checks import check_int
from nord.errors import ConfigurationError, SearchSpaceError
from nord.evaluators.result import EvaluationResult
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.algorithms.ensemble import MLPEnsemble
from nord.search.algorithms.evolution import mutate_one
from nord.search.spaces.base import Genome, SearchSpace

__all__ = ["Bananas", "ENCODINGS", "thompson_choice"]

ENCODINGS = ("path", "onehot")
"""How genomes become the predictors' features: the space's path encoding (the paper's), or
one feature per value of each gene (any space of integer genes)."""

_RANDOM_TRIES = 100   # draws spent looking for a genome not asked before


def thompson_choice(predictions: np.ndarray, count: int,
                    rng: np.random.Generator) -> List[int]:
    """Independent Thompson sampling: one draw per candidate from a normal with the
    ensemble's mean and standard deviation there, the ``count`` highest draws, highest first.

    Args:
        predictions: ``(members, candidates)``, higher is better.
        count: how many candidates to choose.
        rng: the generator the draws come from (one normal per candidate, in order).
    """
    mean = predictions.mean(axis=0)
    spread = predictions.std(axis=0)
    samples = rng.normal(mean, spread)
    return np.argsort(-samples, kind="stable")[:count].tolist()


class Bananas(SearchAlgorithm):
    """BANANAS with the authors' settings as defaults.

    The predictors learn the search signal (accuracy) of every result told ``ok``; a failed
    result carries no accuracy to learn, so it is left out of training, but its genome, like
    every genome asked, is never proposed again. The ensemble is fitted again each time a
    batch of ``k`` runs out, on the results told by then: in an asynchronous run the genomes
    still out are left out of the pool rather than waited for, so workers never idle; it
    waits (``ask`` returns None) only while no result is in. Every draw comes from
    ``self.rng`` in ask/tell order, so the same seed and the same results told in the same
    order give the same candidates, and a resumed run, replayed from its journal, fits the
    very same ensembles.

    Args:
        space: the search space; with ``encoding='path'`` it must define
            ``path_encoding(genome)``.
        seed: seeds the random genomes, the mutations, the fits and the samples.
        num_init: random genomes before the first fit (the paper: 10).
        k: genomes proposed per fit (the paper: 10).
        candidates: size of the pool each fit scores (the authors: 100).
        parents: best genomes mutated into the pool, best first, the next one only while the
            pool is short (the authors: the best, then up to 4 more).
        mutations: one-gene mutations applied to make each pool member (the authors: 1).
        ensemble_size: networks in the ensemble (the paper: 5).
        layers: hidden layers per network (the paper: 10).
        width: units per hidden layer (the paper: 20).
        epochs: training epochs per fit (the authors' code: 150).
        learning_rate: Adam's step size (the paper: 0.01).
        batch_size: examples per Adam step (the authors' code: 32).
        encoding: 'path' (the space's path encoding, the paper's) or 'onehot' (one
            feature per value of each integer gene).

    Raises:
        ConfigurationError: a setting out of its range (named, with the rule).
        SearchSpaceError: the space has no path encoding (or, for 'onehot', a real-valued
            gene).
    """

    name = "bananas"

    def __init__(self, space: SearchSpace, seed: Optional[int] = None, num_init: int = 10,
                 k: int = 10, candidates: int = 100, parents: int = 5, mutations: int = 1,
                 ensemble_size: int = 5, layers: int = 10, width: int = 20, epochs: int = 150,
                 learning_rate: float = 0.01, batch_size: int = 32, encoding: str = "path"):
        num_init = check_int(num_init, "num_init (random genomes before the first fit)", 1)
        k = check_int(k, "k (genomes proposed per fit)", 1)
        candidates = check_int(candidates, "candidates (pool scored per fit)", k,
                               rule=f"an integer >= k={k} (the pool k genomes are chosen from)")
        parents = check_int(parents, "parents (best genomes mutated into the pool)", 1)
        mutations = check_int(mutations, "mutations (one-gene changes per pool member)", 1)
        self.ensemble = MLPEnsemble(ensemble_size, layers, width, epochs, learning_rate,
                                    batch_size)
        self._encode = _encoder(space, encoding)
        super().__init__(space, seed)
        self.num_init, self.k, self.candidates = num_init, k, candidates
        self.parents, self.mutations, self.encoding = parents, mutations, encoding
        self.fits = 0
        """Ensembles fitted so far."""
        self._batch: Deque[Genome] = deque()       # chosen, not yet asked
        self._asked: Set[Genome] = set()           # every genome proposed
        self._learnt: List[Tuple[Genome, float]] = []   # (genome, accuracy) of ok results
        self._features: Dict[Genome, np.ndarray] = {}
        self._iteration = 0

    def parameters(self) -> Dict[str, Any]:
        ensemble = self.ensemble
        return {**super().parameters(), "num_init": self.num_init, "k": self.k,
                "candidates": self.candidates, "parents": self.parents,
                "mutations": self.mutations, "ensemble_size": ensemble.members,
                "layers": ensemble.layers, "width": ensemble.width, "epochs": ensemble.epochs,
                "learning_rate": ensemble.learning_rate, "batch_size": ensemble.batch_size,
                "encoding": self.encoding}

    def _ask(self) -> Optional[Candidate]:
        if not self._batch and not self._next_batch():
            return None
        genome = self._batch.popleft()
        self._asked.add(genome)
        return Candidate(genome, self._iteration)

    def _tell(self, candidate: Candidate, result: EvaluationResult) -> None:
        if result.ok and math.isfinite(result.accuracy):
            self._learnt.append((tuple(candidate.genome), float(result.accuracy)))

    # --- one batch ----------------------------------------------------------------------
    def _next_batch(self) -> bool:
        """Fill the batch; False (nothing drawn, nothing changed) to wait for results."""
        if self.asked == 0:
            self._batch.extend(self._random(self.num_init))
            return True
        if not self._learnt:
            if self.asked > self.told:
                return False       # nothing to learn from yet, and results are out
            # everything told failed: nothing to learn from, so random genomes again
            self._batch.extend(self._random(self.k))
        else:
            pool = self._pool()
            chosen: List[Genome] = []
            if pool:
                self._fit()
                features = np.stack([self._features_of(genome) for genome in pool])
                chosen = [pool[index] for index in thompson_choice(
                    self.ensemble.predict(features), self.k, self.rng)]
            # a space with fewer than k genomes left: repeats, which the engine's cache answers
            self._batch.extend(chosen + self._random(self.k - len(chosen), set(chosen)))
        self._iteration += 1
        return True

    def _fit(self) -> None:
        features = np.stack([self._features_of(genome) for genome, _ in self._learnt])
        targets = np.array([accuracy for _, accuracy in self._learnt])
        self.ensemble.fit(features, targets, seed=int(self.rng.integers(2 ** 63)))
        self.fits += 1

    def _pool(self) -> List[Genome]:
        """``candidates`` genomes never asked: mutations of the best told ones, topped up
        with random genomes where mutations run short (late in a run on a small space, when
        every neighbour of the best genomes has been asked)."""
        ranked = sorted(self._learnt, key=lambda pair: -pair[1])   # stable: first told first
        pool: List[Genome] = []
        members: Set[Genome] = set()
        for parent, _ in ranked[:self.parents]:
            for _ in range(self.candidates):
                child = parent
                for _ in range(self.mutations):
                    child = mutate_one(self.space, child, self.rng)
                child = self.space.normalise(child)
                if child not in self._asked and child not in members:
                    members.add(child)
                    pool.append(child)
                    if len(pool) == self.candidates:
                        return pool
        return pool + self._random(self.candidates - len(pool), members, repeats=False)

    def _random(self, count: int, taken: Set[Genome] = frozenset(),
                repeats: bool = True) -> List[Genome]:
        """``count`` random genomes not asked before and not in ``taken``, as long as a new
        one turns up in a hundred draws; then, with ``repeats``, genomes asked before (a
        small space has run out), else no more."""
        drawn: List[Genome] = []
        seen = set(taken)
        for _ in range(count):
            for _ in range(_RANDOM_TRIES):
                genome = self.space.normalise(self.space.sample(self.rng))
                if genome not in self._asked and genome not in seen:
                    break
            else:
                if not repeats:
                    break
            seen.add(genome)
            drawn.append(genome)
        return drawn

    def _features_of(self, genome: Genome) -> np.ndarray:
        features = self._features.get(genome)
        if features is None:
            features = self._features[genome] = np.asarray(self._encode(genome),
                                                           dtype=np.float64)
        return features


def _encoder(space: SearchSpace, encoding: str) -> Callable[[Genome], np.ndarray]:
    """The function that turns the space's genomes into features, or the reason there is none."""
    if encoding not in ENCODINGS:
        raise ConfigurationError(
            f"encoding must be one of {', '.join(ENCODINGS)} ('path': the space's path "
            f"encoding, the paper's); got {encoding!r}")
    name = type(space).__name__
    if encoding == "path":
        path_encoding = getattr(space, "path_encoding", None)
        if not callable(path_encoding):
            raise SearchSpaceError(
                f"bananas needs a path encoding of the genome: NASBench201Space and ConvSpace "
                f"have one; {name} has not. Define path_encoding(genome) on {name} (an array "
                "of features of a fixed length), or give encoding='onehot' (a space of integer "
                "genes), or use another algorithm such as rea")
        return path_encoding
    if not all(space.integer_mask):
        real = [index for index, flag in enumerate(space.integer_mask) if not flag]
        raise SearchSpaceError(
            f"{name} has real-valued genes (positions {real}); bananas's 'onehot' encoding has "
            "one feature per value of each integer gene: define path_encoding(genome) on the "
            "space, or use another algorithm such as rea")
    lower = [int(low) for low in space.lower]
    sizes = [int(high) - low + 1 for low, high in zip(lower, space.upper)]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)

    def onehot(genome: Genome) -> np.ndarray:
        features = np.zeros(sum(sizes))
        features[offsets + np.asarray(genome, dtype=int) - lower] = 1.0
        return features

    return onehot
