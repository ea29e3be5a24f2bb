"""A search step of each weight-sharing method, nord's against the benchmark authors' code.

    python bench/oneshot.py [--methods darts-v1,gdas] [--channels 8] [--cells-per-stage 2]
                            [--batch-size 32] [--side 16] [--rounds 5] [--steps 3] [--threads 1]

For each method, nord's supernet and xautodl 1.0.0's (same size, same weights: nord's holds a
copy of the reference's) take search steps on the same batches, in float32 on the CPU: nord's
``method.step`` against the step the reference's search script takes, restated on its supernet
(tests/helpers/supernets.py). One round times ``--steps`` steps of each, in turn (which goes
first alternates), and the median over rounds of nord's time over the reference's is printed,
so background load affects both alike. ENAS's controller is trained at an epoch's end, not in
a step, and is not timed here.
Target: a ratio of at most 1.0 for every method.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nord.oneshot.methods import make_method  # noqa: E402
from nord.oneshot.registry import METHODS  # noqa: E402
from tests.helpers.supernets import (copied, reference, reference_arch_step,  # noqa: E402
                                     reference_weight_step, virtual_step_of_the_reference,
                                     weights_of)
# the reference, from where scripts/setup.sh installs it (tests.helpers.supernets's path)
from xautodl.models.cell_searchs import nas201_super_nets  # noqa: E402
from xautodl.models.cell_searchs import search_model_enas_utils  # noqa: E402

REFERENCE = {"darts-v1": "DARTS-V1", "darts-v2": "DARTS-V2", "gdas": "GDAS", "setn": "SETN",
             "enas": "ENAS", "rsps": "RANDOM"}
WEIGHTS = dict(lr=0.025, momentum=0.9, nesterov=True, weight_decay=5e-4)


class _Modules:
    """Stands in for the ``xautodl.models.cell_searchs`` module the helpers take."""
    nas201_super_nets = nas201_super_nets


def reference_step(name, ref, weights, arch, controller):
    """The step of the reference's search script for method ``name`` on batches ``w`` and
    ``a``, as a function of them."""
    def step(w, a):
        if name == "darts-v2":
            ref.arch_parameters.grad = virtual_step_of_the_reference(ref, weights, w, a)
            arch.step()
            reference_weight_step(ref, weights, *w)
            return
        if name == "setn":
            ref.set_cal_mode("dynamic", ref.dync_genotype(True))
        elif name == "rsps":
            ref.random_genotype(True)
        elif name == "enas":
            with torch.no_grad():
                _, _, sampled = controller()
            ref.update_arch(sampled)
        reference_weight_step(ref, weights, *w)
        if name in ("darts-v1", "gdas", "setn"):
            if name == "setn":
                ref.set_cal_mode("joint")
            reference_arch_step(ref, arch, *a)
    return step


def pair(name, sizes, seed=0):
    """nord's method and the reference's step, on copies of one supernet."""
    torch.manual_seed(seed)
    ours, ref = copied(reference(_Modules, REFERENCE[name], sizes=sizes), dtype=torch.float32,
                       sizes=sizes)
    method = make_method(name, ours, torch.optim.SGD(ours.parameters(), **WEIGHTS),
                         torch.Generator().manual_seed(seed))
    arch = (torch.optim.Adam([ref.arch_parameters], lr=3e-4, betas=(0.5, 0.999),
                             weight_decay=1e-3) if hasattr(ref, "arch_parameters") else None)
    controller = search_model_enas_utils.Controller(6, 5) if name == "enas" else None
    weights = torch.optim.SGD([p for _, p in weights_of(ref)], **WEIGHTS)
    return method.step, reference_step(name, ref, weights, arch, controller)


def timed(step, batches):
    started = time.perf_counter()
    for w, a in batches:
        step(w, a)
    return time.perf_counter() - started


def measure(name, sizes, batch_size, side, rounds, steps, seed=0):
    """Per round, nord's and the reference's seconds for ``steps`` steps."""
    ours, theirs = pair(name, sizes, seed)
    generator = torch.Generator().manual_seed(seed)

    def batch():
        return (torch.randn(batch_size, 3, side, side, generator=generator),
                torch.randint(0, sizes["num_classes"], (batch_size,), generator=generator))
    batches = [(batch(), batch()) for _ in range(steps)]
    timed(ours, batches[:1]), timed(theirs, batches[:1])    # first-call allocations
    figures = []
    for number in range(rounds):
        order = (ours, theirs) if number % 2 == 0 else (theirs, ours)
        seconds = {id(step): timed(step, batches) for step in order}
        figures.append((seconds[id(ours)], seconds[id(theirs)]))
    return figures


def main(methods, channels, cells_per_stage, batch_size, side, rounds, steps, threads):
    torch.set_num_threads(threads)
    sizes = dict(channels=channels, cells_per_stage=cells_per_stage, num_classes=10)
    print(f"A search step, nord / xautodl 1.0.0: supernet C={channels}, N={cells_per_stage}, "
          f"batches of {batch_size} images 3x{side}x{side}, float32, {threads} thread(s), "
          f"{steps} steps a round, median of {rounds} rounds")
    worst = 0.0
    for name in methods:
        figures = measure(name, sizes, batch_size, side, rounds, steps)
        ratio = statistics.median(mine / theirs for mine, theirs in figures)
        worst = max(worst, ratio)
        mine = statistics.median(m for m, _ in figures) / steps
        theirs = statistics.median(t for _, t in figures) / steps
        print(f"{name:9s} nord {1e3 * mine:8.1f} ms  xautodl {1e3 * theirs:8.1f} ms  "
              f"ratio {ratio:.3f}")
    print(f"worst ratio {worst:.3f} (target <= 1.0): {'met' if worst <= 1.0 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=",".join(METHODS.names()))
    parser.add_argument("--channels", type=int, default=8, help="C (the benchmark's: 16)")
    parser.add_argument("--cells-per-stage", type=int, default=2, help="N (the benchmark's: 5)")
    parser.add_argument("--batch-size", type=int, default=32, help="(the benchmark's: 64)")
    parser.add_argument("--side", type=int, default=16, help="image side (CIFAR's: 32)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3, help="steps a round")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    sys.exit(main(args.methods.split(","), args.channels, args.cells_per_stage, args.batch_size,
                  args.side, args.rounds, args.steps, args.threads))
