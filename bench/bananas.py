"""What a BANANAS proposal costs in CPU time, against random search measured in the same run.

    .venv/bin/python bench/bananas.py                 # budgets 100 and 300, 3 seeds each
    .venv/bin/python bench/bananas.py --quick         # budget 100 and 300, 1 seed
    .venv/bin/python bench/bananas.py --json out.json

Each seed asks and tells BANANAS (``nord.search.algorithms.bananas``, the paper's settings)
``budget`` times on NAS-Bench-201's CIFAR-10 table, results looked up beforehand so that
only ask and tell are timed (CPU seconds of this process, ``time.process_time``), and random
search the same way. The ratio is per proposal. A second part times one fit of the
ensemble (5 networks, 10 layers of width 20, 150 epochs, batches of 32) on 100 and 300 path
encodings, with nord's numpy ensemble (members stacked, one call per layer for all) and with
the same networks in torch (stacked with ``torch.baddbmm``, autograd, ``torch.optim.Adam``,
one thread), the choice the implementation made.
"""
import argparse
import json
import time

import numpy as np


def ask_tell_cost(name, budget, seed, results):
    """CPU seconds of ``budget`` asks and tells of the algorithm ``name``."""
    from nord.benchmarks.nasbench201 import NASBench201Space
    from nord.search.algorithms.registry import make_algorithm

    algorithm = make_algorithm(name, NASBench201Space(), seed=seed)
    space = algorithm.space
    spent = 0.0
    for _ in range(budget):
        started = time.process_time()
        candidate = algorithm.ask()
        spent += time.process_time() - started
        result = results[space.index(candidate.genome)]
        started = time.process_time()
        algorithm.tell(candidate, result)
        spent += time.process_time() - started
    return spent


def torch_fit_cost(features, targets, seed, members=5, layers=10, width=20, epochs=150,
                   batch_size=32, learning_rate=0.01):
    """CPU seconds of the same ensemble fit, written in torch."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    x = torch.tensor(features, dtype=torch.float64)
    y = torch.tensor((targets - targets.mean()) / (targets.std() or 1.0), dtype=torch.float64)
    sizes = [x.shape[1]] + [width] * layers + [1]
    weights, biases = [], []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        limit = (6.0 / (fan_in + fan_out)) ** 0.5
        weights.append((torch.rand(members, fan_in, fan_out, dtype=torch.float64) * 2 - 1)
                       .mul_(limit).requires_grad_())
        biases.append(torch.zeros(members, 1, fan_out, dtype=torch.float64, requires_grad=True))
    optimiser = torch.optim.Adam(weights + biases, lr=learning_rate)
    count = x.shape[0]
    started = time.process_time()
    for _ in range(epochs):
        order = torch.stack([torch.randperm(count) for _ in range(members)])
        for start in range(0, count, batch_size):
            chosen = order[:, start:start + batch_size]
            hidden = x[chosen]
            for weight, bias in zip(weights[:-1], biases[:-1]):
                hidden = torch.relu(torch.baddbmm(bias, hidden, weight))
            output = torch.baddbmm(biases[-1], hidden, weights[-1])[..., 0]
            loss = (output - y[chosen]).abs().mean(dim=1).sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    return time.process_time() - started


def numpy_fit_cost(features, targets, seed):
    from nord.search.algorithms.ensemble import MLPEnsemble

    started = time.process_time()
    MLPEnsemble().fit(features, targets, seed=seed)
    return time.process_time() - started


def main(seeds, budgets, json_path=None):
    from nord.benchmarks.nasbench201 import N_CELLS, BenchmarkEvaluator, NASBench201Space

    evaluator = BenchmarkEvaluator(dataset="cifar10")
    results = [evaluator.query(index) for index in range(N_CELLS)]
    figures = {"seeds": seeds, "budgets": {}, "fit": {}}
    print(f"ask + tell per proposal, CPU time, NAS-Bench-201 CIFAR-10, {seeds} seed(s)")
    for budget in budgets:
        costs = {name: [ask_tell_cost(name, budget, seed, results) for seed in range(seeds)]
                 for name in ("random", "bananas")}
        per = {name: float(np.mean(values)) / budget for name, values in costs.items()}
        figures["budgets"][budget] = {"per_proposal_s": per,
                                      "ratio": per["bananas"] / per["random"]}
        print(f"  budget {budget}: bananas {per['bananas'] * 1e3:.1f} ms, random "
              f"{per['random'] * 1e6:.1f} us: {per['bananas'] / per['random']:,.0f} times")
    space, rng = NASBench201Space(), np.random.default_rng(0)
    print("one fit of the ensemble (5 x 10 layers of 20, 150 epochs, batches of 32), CPU time")
    for count in (100, 300):
        genomes = space.sample_many(rng, count)
        features = np.stack([space.path_encoding(genome) for genome in genomes])
        targets = np.array([results[space.index(genome)].accuracy for genome in genomes])
        numpy_s = numpy_fit_cost(features, targets, 0)
        try:
            torch_s = torch_fit_cost(features, targets, 0)
        except ImportError:
            torch_s = None
        figures["fit"][count] = {"numpy_s": numpy_s, "torch_s": torch_s}
        torch_text = "torch not installed" if torch_s is None else (
            f"torch {torch_s:.2f} s ({torch_s / numpy_s:.1f} times numpy's)")
        print(f"  {count} results: numpy {numpy_s:.2f} s, {torch_text}")
    if json_path:
        with open(json_path, "w") as handle:
            json.dump(figures, handle, indent=1)
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one seed")
    parser.add_argument("--json", help="save the figures")
    arguments = parser.parse_args()
    main(1 if arguments.quick else arguments.seeds, (100, 300), arguments.json)
