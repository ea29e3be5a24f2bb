"""A zero-cost search on NAS-Bench-201: each cell scored by a proxy read from nord's packaged table.

    from nord.benchmarks.nasbench201.proxy_evaluator import ProxyTableEvaluator
    evaluator = ProxyTableEvaluator("synflow", dataset="cifar10")
    summary = run_search(algorithm, evaluator, budget=100)   # a look-up per candidate

The table (``proxy_table``) holds, for every cell and data set, the score ``ZeroCostEvaluator``
gives the cell's whole benchmark network (seed 0): the data-free proxies synflow, params and
flops. The search signal is that score mapped into (0, 1), as ``ZeroCostEvaluator`` maps it (it
is no accuracy); the reported figure is the benchmark's own 200-epoch test accuracy of the cell,
which the search never sees. A proxy that needs images is not in the table: nord does not ship
the benchmark's images.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional

from nord.benchmarks.nasbench201.evaluator import BenchmarkEvaluator
from nord.benchmarks.nasbench201.proxy_table import TABLE_PROXIES, load_proxies
from nord.benchmarks.nasbench201.space import NASBench201Space
from nord.benchmarks.nasbench201.table import get_dataset
from nord.errors import ConfigurationError
from nord.evaluators.base import Evaluator
from nord.evaluators.result import EvaluationResult
from nord.evaluators.zero_cost import proxy_signal

__all__ = ["ProxyTableEvaluator", "check_table_proxy"]


def check_table_proxy(proxy: str) -> str:
    """``proxy`` when the packaged table holds it.

    Raises:
        ConfigurationError: a proxy that needs data, saying which the table holds.
    """
    if proxy not in TABLE_PROXIES:
        raise ConfigurationError(
            f"--proxy {proxy} scores a network on a batch of images, and nord does not ship "
            f"NAS-Bench-201's images; on the benchmark, a zero-cost search reads nord's packaged "
            f"table of every cell's {', '.join(TABLE_PROXIES)} scores: give --proxy "
            f"{' or '.join(TABLE_PROXIES)}, or search the conv space on your own data")
    return proxy


class ProxyTableEvaluator(Evaluator):
    """A NAS-Bench-201 cell scored by a data-free zero-cost proxy from nord's packaged table,
    reported by the benchmark's 200-epoch test accuracy.

    Args:
        proxy: 'synflow', 'params' or 'flops' (``proxy_table.TABLE_PROXIES``).
        dataset: 'cifar10', 'cifar100' or 'imagenet16' (aliases as the table takes them).
    """

    def __init__(self, proxy: str = "synflow", dataset: str = "cifar10"):
        self.proxy = check_table_proxy(proxy)
        self.dataset = get_dataset(dataset).name
        self._benchmark = BenchmarkEvaluator(dataset=self.dataset)
        self._scores = None

    def describe(self) -> Dict[str, Any]:
        return {"evaluator": type(self).__name__, "benchmark": "nasbench201",
                "proxy": self.proxy, "dataset": self.dataset,
                "source": "nord's packaged proxy table (scripts/nasbench201_proxies.py)",
                "signal": f"{self.proxy} score, mapped into (0, 1) (not an accuracy; read from "
                          "nord's packaged table)",
                "reported": "test accuracy after 200 epochs"}

    def evaluate_task(self, task) -> EvaluationResult:
        """A search engine's task: looked up by its key when it is a NAS-Bench-201 cell (the
        key is the cell's table row), else by its descriptor."""
        if isinstance(task.space, NASBench201Space):
            return self._scored(self._benchmark.evaluate_task(task))
        return super().evaluate_task(task)

    def _evaluate(self, descriptor) -> EvaluationResult:
        return self._scored(self._benchmark.descriptor_evaluate(descriptor))

    def _scored(self, looked_up: EvaluationResult) -> EvaluationResult:
        """The benchmark's result of a cell with the proxy's score as its search signal."""
        if not looked_up.ok:
            return looked_up
        index = looked_up.metrics["index"]
        if self._scores is None:
            self._scores = load_proxies().score(self.dataset, self.proxy)
        value: Optional[float] = float(self._scores[index])
        if math.isnan(value):
            return EvaluationResult.failure(
                f"the packaged proxy table has no {self.proxy} score for cell {index}")
        metrics = {**looked_up.metrics, "proxy": self.proxy, "proxy_score": value,
                   "source": "packaged proxy table"}
        metrics.pop("test_accuracy_12ep", None)
        return EvaluationResult(accuracy=proxy_signal(value), train_time=0.0, eval_time=0.0,
                                n_params=looked_up.n_params, epochs=0,
                                reported_accuracy=looked_up.reported_accuracy, metrics=metrics)
