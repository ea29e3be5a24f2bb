"""ZeroCostEvaluator: scores an untrained network with a zero-cost proxy instead of training it.

    evaluator = ZeroCostEvaluator(proxy="synflow", curator=Digits(), seed=0)
    result = evaluator.descriptor_evaluate(descriptor)
    result.metrics["proxy_score"]     # the raw score (synflow: up to about 7e50)
    result.accuracy                   # the search signal: the score mapped into (0, 1)
    result.reported_accuracy          # NaN: nothing was trained, no accuracy was measured

A proxy score is not an accuracy, but the search algorithms minimise ``result.fitness``
(``1 - accuracy``, 2.0 for a failure) or reward ``accuracy``. So ``accuracy`` carries
``proxy_signal(score)``, a strictly increasing map of the score into (0, 1): every algorithm
that ranks candidates sees the proxy's own ranking, and a failure stays worse than any
score. ``reported_accuracy`` is NaN so that a report never presents the signal as an
accuracy; the journal keeps the raw score and the proxy's name in ``metrics``.
Details (the proxies, the mapping, what a run records): docs/proxies.md.
"""
from __future__ import annotations

import math
import time
from typing import Any, Dict, Optional

import torch

from nord.architecture.descriptor import NeuralDescriptor
from nord.checks import check_int
from nord.data import Digits
from nord.evaluators.base import Evaluator, Leg
from nord.evaluators.result import EvaluationResult
from nord.nn.network import NeuralNet
from nord.nn.proxies import PROXIES, check_proxy, score
from nord.nn.training import resolve_device, seed_generators


def proxy_signal(value: float) -> float:
    """A strictly increasing map of a proxy score (any real) into (0, 1):
    ``0.5 + atan(asinh(value)) / pi``. asinh compresses scores that span fifty orders of
    magnitude (synflow) so that neighbours stay distinct in double precision."""
    return 0.5 + math.atan(math.asinh(value)) / math.pi


class ZeroCostEvaluator(Evaluator):
    """Score a descriptor's network, untrained, with one zero-cost proxy.

    Args:
        proxy: a name of ``nord.nn.proxies.PROXIES`` ('synflow', 'snip', 'grasp', 'fisher',
            'grad_norm', 'jacov', 'nwot', 'params', 'flops').
        curator: the DataCurator: its input shape and classes size the network; a proxy
            that needs data reads one training batch from it. ``Digits()`` when None.
        batch_size: samples in that batch.
        device: 'auto' (a GPU when there is one), 'cpu', 'cuda' or 'cuda:N'.
        seed: seeds the network's initial weights and the batch drawn: same seed, same score.
        threads: torch CPU threads (None leaves torch's setting alone).

    Raises:
        ConfigurationError: an unknown proxy (the message lists them), a bad batch size or
            device.
    """

    def __init__(self, proxy: str = "synflow", curator=None, batch_size: int = 64,
                 device="auto", seed: int = 0, threads: Optional[int] = None):
        self.proxy = check_proxy(proxy)
        check_int(batch_size, "batch_size", 1, rule="an integer >= 1: it counts samples")
        if threads is not None:
            check_int(threads, "threads", 1)
        resolve_device(device)
        self.curator = curator
        self.batch_size = int(batch_size)
        self.device = device
        self.seed = int(seed)
        self.threads = threads
        self._batch = None

    def get_curator(self):
        if self.curator is None:
            self.curator = Digits()
        return self.curator

    def describe(self) -> Dict[str, Any]:
        curator = self.get_curator()
        return {"evaluator": type(self).__name__, "proxy": self.proxy,
                "dataset": getattr(curator, "name", type(curator).__name__),
                "batch_size": self.batch_size, "seed": self.seed,
                "signal": f"{self.proxy} score, mapped into (0, 1) (not an accuracy)",
                "reported": "none: no network is trained"}

    def _evaluate(self, descriptor: NeuralDescriptor, leg: Leg = Leg()) -> EvaluationResult:
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        device = resolve_device(self.device)
        curator = self.get_curator()
        inputs, targets = self._inputs(curator)
        seed_generators(self.seed, device)   # equal initial weights for equal seeds
        net = NeuralNet(descriptor, curator.input_shape, curator.num_classes)
        started = time.perf_counter()
        value = score(self.proxy, net, inputs, targets, device=str(device))
        seconds = time.perf_counter() - started
        return EvaluationResult(accuracy=proxy_signal(value), train_time=0.0, eval_time=seconds,
                                n_params=net.count_parameters(), epochs=0,
                                reported_accuracy=math.nan,
                                metrics={"proxy": self.proxy, "proxy_score": value})

    def _inputs(self, curator):
        """The batch a proxy reads: the first seeded training batch for a proxy that needs
        data (drawn once, the same for every candidate), else zeros of the input's shape."""
        if not PROXIES[self.proxy].needs_data:
            return torch.zeros((1,) + tuple(curator.input_shape)), None
        if self._batch is None:
            loader = curator.train_loader(batch_size=self.batch_size, shuffle=True,
                                          seed=self.seed)
            self._batch = next(iter(loader))
        return self._batch
