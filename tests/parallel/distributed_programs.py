"""Rank programs for the DistributedEvaluator tests, run under mpirun.

    mpirun -np 3 python -m tests.parallel.distributed_programs BACKEND CHECK

Each check computes its expectation itself (from the world size or from a LocalEvaluator
run on rank 0) and exits non-zero with a message when it does not hold.
"""
import sys

import numpy as np
import torch

from nord import NeuralDescriptor
from nord.data import Digits, TensorCurator
from nord.parallel.environment import Environment
from nord.evaluators.distributed import DataParallelGroup, DistributedEvaluator
from nord.evaluators.local import LocalEvaluator

CPU = "cpu"
"""Every check compares CPU numbers (and puts several ranks on one host, which NCCL refuses on
one GPU): pinned to the CPU. tests/unit/test_gpu.py covers data-parallel training on CUDA."""


def network(width=6, kernel=3):
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": width, "kernel_size": kernel})
    d.add_layer_sequential("relu")
    d.add_layer_sequential("batch_norm2d", {})
    return d


def require(condition, message):
    if not condition:
        raise AssertionError(message)


def fixed_weights(env, backend):
    """Test accuracy of untrained (seeded) weights equals LocalEvaluator's exactly."""
    curator = Digits(seed=0)
    distributed = DistributedEvaluator(env, curator=curator, backend=backend, device=CPU,
                                       epochs=0, seed=5, test_batch_size=37)
    result = distributed.descriptor_evaluate(network() if env.is_root else None)
    local = LocalEvaluator(curator=curator, epochs=0, seed=5,
                           device=CPU).descriptor_evaluate(network())
    require(result.ok, result.error)
    require(result.accuracy == local.accuracy,
            f"distributed accuracy {result.accuracy} != local {local.accuracy}")
    require(result.metrics["test_samples"] == local.metrics["test_samples"], "sample counts differ")
    env.log(f"fixed weights: {result.accuracy} == {local.accuracy}")


def trained_identical(env, backend):
    """After training, parameters and results are identical on every rank."""
    curator = Digits(seed=0)
    evaluator = DistributedEvaluator(env, curator=curator, backend=backend, device=CPU,
                                     epochs=2, seed=1, batch_size=32, keep_model=True)
    result = evaluator.descriptor_evaluate(network() if env.is_root else None)
    require(result.ok, result.error)
    flat = torch.cat([t.detach().double().reshape(-1)   # weights and batch norm statistics
                      for t in evaluator.model.state_dict().values()]).numpy()
    gathered = env.allgather(flat.tobytes())
    require(all(g == gathered[0] for g in gathered), "weights or statistics differ between ranks")
    results = env.allgather(result.to_dict())
    require(all(r == results[0] for r in results), f"results differ between ranks: {results}")
    require(result.accuracy > 0.3, f"training did not learn: {result.accuracy}")
    scaled = DistributedEvaluator(env, curator=curator, backend=backend, device=CPU, lr=0.01,
                                  scale_lr=True)
    require(abs(scaled.lr * scaled.group.lr_factor - 0.01 * env.size) < 1e-12,
            "lr not scaled by the ranks")
    require(evaluator.group.lr_factor == 1, "lr scaled without scale_lr")
    env.log(f"identical after training on {env.size} ranks: accuracy {result.accuracy}")


def recipe_training(env, backend):
    """A recipe's schedule with warm-up, augmentation drawn per rank, clipping and label
    smoothing train data-parallel: every rank ends with the same weights and result, the
    schedule has reached its last epoch's rate, and each rank augmented its own samples."""
    from nord.nn.recipe import Recipe
    recipe = Recipe(optimizer="sgd", lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4,
                    lr_schedule="cosine", warmup_epochs=1, warmup_lr=0.005, min_lr=0.001,
                    augment=("flip", "crop", "cutout"), clip_grad=1.0, label_smoothing=0.1,
                    batch_size=24)
    evaluator = DistributedEvaluator(env, curator=Digits(seed=0), backend=backend, device=CPU,
                                     epochs=3, seed=2, recipe=recipe, keep_model=True)
    result = evaluator.descriptor_evaluate(network() if env.is_root else None)
    require(result.ok, result.error)
    flat = torch.cat([t.detach().double().reshape(-1)   # weights and batch norm statistics
                      for t in evaluator.model.state_dict().values()]).numpy()
    gathered = env.allgather(flat.tobytes())
    require(all(g == gathered[0] for g in gathered), "weights or statistics differ between ranks")
    results = env.allgather(result.to_dict())
    require(all(r == results[0] for r in results), f"results differ between ranks: {results}")
    require(result.accuracy > 0.3, f"training did not learn: {result.accuracy}")
    from nord.nn.augment import augmentation_seed
    seeds = env.allgather(augmentation_seed(2, 0, env.rank))
    require(len(set(seeds)) == env.size, f"ranks draw the same augmentations: {seeds}")
    env.log(f"recipe trained identically on {env.size} ranks: accuracy {result.accuracy}")


def legs_equal_straight(env, backend):
    """Trained 1 epoch, checkpointed, and resumed to 2, a candidate ends as one trained 2
    epochs straight, with every optimizer (its state, Adam's moments and momentum, carried
    through the checkpoint on every rank) and with a scheduled recipe with weight decay."""
    import os
    import tempfile
    from nord.evaluators.base import Leg
    folder = env.bcast(tempfile.mkdtemp() if env.is_root else None)
    recipes = [{"optimizer": name} for name in ("sgd", "adam", "adamw", "rmsprop")]
    recipes.append({"recipe": "nasbench201", "batch_size": 32})
    for index, settings in enumerate(recipes):
        evaluator = DistributedEvaluator(env, curator=Digits(seed=0), backend=backend,
                                         device=CPU, epochs=2, seed=4, **settings)
        straight = evaluator.descriptor_evaluate(network() if env.is_root else None)
        path = os.path.join(folder, f"candidate-{index}.pt")
        evaluator.descriptor_evaluate(network() if env.is_root else None,
                                      Leg(epochs=1, checkpoint=path, keep_at_end=True))
        resumed = evaluator.descriptor_evaluate(
            network() if env.is_root else None,
            Leg(epochs=2, resume_from=path, checkpoint=path, keep_at_end=False))
        require(straight.ok and resumed.ok, f"{settings}: {straight.error} {resumed.error}")
        require(resumed.metrics["epochs_resumed"] == 1, f"{settings}: not resumed")
        figures = [(r.accuracy, r.loss, r.metrics["train_loss"], r.reported_accuracy)
                   for r in (straight, resumed)]
        require(figures[0] == figures[1], f"{settings}: resumed {figures[1]} != {figures[0]}")
    env.log(f"legs equal straight training on {env.size} ranks for {len(recipes)} optimizers")


class FailsAtSecondStepOnLastRank(DataParallelGroup):
    """A group whose last rank runs out of memory at its second training step."""

    def prepare(self, model, optimizer):
        optimizer = super().prepare(model, optimizer)
        if self.rank == self.size - 1:
            calls = []

            def hook(*_):
                calls.append(1)
                if len(calls) == 2:
                    raise RuntimeError("simulated out of memory at the second step")

            model.register_forward_hook(hook)
        return optimizer


def failure_between_checks_with_step_rules(env, backend):
    """As failure_between_checks, with a callback publishing every step and a stopping rule
    the group root decides at each of them: the failed rank still takes part in those
    decisions, so no rank waits alone in a collective, and all fail together."""

    import functools
    from nord.evaluators.callbacks import callback_classes
    every_step = functools.partial(callback_classes(["grad_norm_step"])[0], every_steps=1)
    evaluator = DistributedEvaluator(env, curator=Digits(seed=0), backend=backend, device=CPU,
                                     epochs=1, batch_size=32, check_every=5,
                                     callbacks=[every_step], stop_rules=["not finite(loss)"])
    evaluator.group = FailsAtSecondStepOnLastRank(evaluator.comm, evaluator.backend)
    result = evaluator.descriptor_evaluate(network() if env.is_root else None)
    statuses = env.allgather((result.status, result.error))
    require(all(s == statuses[0] for s in statuses), f"not consistent: {statuses}")
    require(statuses[0][0] == "failed" and "second step" in statuses[0][1], statuses[0][1])
    env.log("failure between checks, with rules decided at every step: consistent")


def uneven_data(env, backend):
    """A training set not divisible by the ranks (nor by the batch) does not deadlock."""
    rng = np.random.default_rng(0)
    n_train = 7 * env.size + 1
    x = rng.normal(size=(n_train + 13, 1, 6, 6)).astype("float32")
    y = rng.integers(0, 3, n_train + 13)
    curator = TensorCurator(x[:n_train], y[:n_train], x[n_train:], y[n_train:])
    evaluator = DistributedEvaluator(env, curator=curator, backend=backend, device=CPU, epochs=2,
                                     batch_size=3, test_batch_size=4)
    result = evaluator.descriptor_evaluate(network(3) if env.is_root else None)
    require(result.ok, result.error)
    require(result.metrics["test_samples"] == 13, f"test samples {result.metrics}")
    env.log("uneven data: finished")


def failing_network(env, backend):
    """A failing network is 'failed' on every rank, and the next one is evaluated."""
    evaluator = DistributedEvaluator(env, curator=Digits(seed=0), backend=backend, device=CPU,
                                     epochs=1)
    bad = NeuralDescriptor()
    bad.add_layer_sequential("conv2d", {"out_channels": 4, "kernel_size": 50})
    result = evaluator.descriptor_evaluate(bad if env.is_root else None)
    statuses = env.allgather((result.status, result.error))
    require(all(s == ("failed", statuses[0][1]) for s in statuses), f"statuses: {statuses}")
    require("ShapeError" in statuses[0][1], statuses[0][1])
    diverging = DistributedEvaluator(env, curator=Digits(seed=0), backend=backend, device=CPU,
                                     epochs=1, optimizer="sgd", lr=1e12)
    result = diverging.descriptor_evaluate(network() if env.is_root else None)
    statuses = env.allgather(result.status)
    require(statuses == ["failed"] * env.size, f"diverging statuses: {statuses}")
    require("NonFiniteLossError" in result.error, result.error)
    after = evaluator.descriptor_evaluate(network() if env.is_root else None)
    require(after.ok, f"the evaluator did not recover: {after.error}")
    env.log("failing network: failed on all ranks, next one ok")


def rank_specific_failure(env, backend):
    """A failure on one rank only (here: the last) fails the network on all ranks."""

    class FailsOnLastRank(DataParallelGroup):
        def prepare(self, model, optimizer):
            optimizer = super().prepare(model, optimizer)
            if self.rank == self.size - 1:
                model.register_forward_hook(lambda *_: (_ for _ in ()).throw(
                    RuntimeError("simulated out of memory")))
            return optimizer

    evaluator = DistributedEvaluator(env, curator=Digits(seed=0), backend=backend, device=CPU,
                                     epochs=1)
    evaluator.group = FailsOnLastRank(evaluator.comm, evaluator.backend)
    result = evaluator.descriptor_evaluate(network() if env.is_root else None)
    statuses = env.allgather((result.status, result.error))
    require(all(s == statuses[0] for s in statuses), f"not consistent: {statuses}")
    require(statuses[0][0] == "failed" and "simulated out of memory" in statuses[0][1]
            and f"rank {env.size - 1}" in statuses[0][1], statuses[0][1])
    env.log("rank-specific failure: consistent")


class _FailsBackwardOnLastRank(torch.autograd.Function):
    """Identity forward; the backward pass raises on the last rank only (an OOM there)."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        from mpi4py import MPI
        if MPI.COMM_WORLD.Get_rank() == MPI.COMM_WORLD.Get_size() - 1:
            raise RuntimeError("simulated out of memory in the backward pass")
        return grad


class FailsBackward(torch.nn.Module):
    def forward(self, x):
        return _FailsBackwardOnLastRank.apply(x)


def backward_failure(env, backend):
    """A failure in the backward pass of one rank fails the network everywhere, no hang,
    and the next network trains (the collectives are left in a usable state)."""
    from nord.architecture.layers import register_layer
    register_layer("fails_backward", FailsBackward, overwrite=True)
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": 4, "kernel_size": 3})
    d.add_layer_sequential("fails_backward")
    evaluator = DistributedEvaluator(env, curator=Digits(seed=0), backend=backend, device=CPU,
                                     epochs=1,
                                     timeout=60)
    result = evaluator.descriptor_evaluate(d if env.is_root else None)
    statuses = env.allgather((result.status, result.error))
    require(all(s == statuses[0] for s in statuses), f"not consistent: {statuses}")
    require(statuses[0][0] == "failed" and "backward pass" in statuses[0][1]
            and f"rank {env.size - 1}" in statuses[0][1], statuses[0][1])
    after = evaluator.descriptor_evaluate(network() if env.is_root else None)
    require(after.ok, f"the evaluator did not recover: {after.error}")
    env.log("backward failure on one rank: consistent, next network ok")


class NaNOnLastRank(torch.nn.Module):
    """Identity, except on the last rank, where the output becomes NaN (a diverging shard)."""

    def forward(self, x):
        from mpi4py import MPI
        if MPI.COMM_WORLD.Get_rank() == MPI.COMM_WORLD.Get_size() - 1:
            return x * float("nan")
        return x


def nan_on_one_rank(env, backend):
    """A NaN loss on one rank only fails the network everywhere, read at every step or
    every few steps, and the next network trains."""
    from nord.architecture.layers import register_layer
    register_layer("nan_on_last_rank", NaNOnLastRank, overwrite=True)
    d = NeuralDescriptor()
    d.add_layer_sequential("conv2d", {"out_channels": 4, "kernel_size": 3})
    d.add_layer_sequential("nan_on_last_rank")
    for check_every in (1, 3):
        evaluator = DistributedEvaluator(env, curator=Digits(seed=0), backend=backend, device=CPU,
                                         epochs=1,
                                         batch_size=32, check_every=check_every)
        result = evaluator.descriptor_evaluate(d if env.is_root else None)
        statuses = env.allgather((result.status, result.error))
        require(all(s == statuses[0] for s in statuses), f"not consistent: {statuses}")
        require(statuses[0][0] == "failed" and "NonFiniteLossError" in statuses[0][1]
                and f"rank {env.size - 1}" in statuses[0][1], statuses[0][1])
        after = evaluator.descriptor_evaluate(network() if env.is_root else None)
        require(after.ok, f"the evaluator did not recover: {after.error}")
    env.log("NaN on one rank: failed on all ranks, next network ok")


def failure_between_checks(env, backend):
    """A rank that fails between two reads of the flag keeps taking part in the
    collectives until the read; then all ranks fail together, and the next network trains."""

    evaluator = DistributedEvaluator(env, curator=Digits(seed=0), backend=backend, device=CPU,
                                     epochs=1, batch_size=32, check_every=5)
    evaluator.group = FailsAtSecondStepOnLastRank(evaluator.comm, evaluator.backend)
    result = evaluator.descriptor_evaluate(network() if env.is_root else None)
    statuses = env.allgather((result.status, result.error))
    require(all(s == statuses[0] for s in statuses), f"not consistent: {statuses}")
    require(statuses[0][0] == "failed" and "second step" in statuses[0][1]
            and f"rank {env.size - 1}" in statuses[0][1], statuses[0][1])
    plain = DistributedEvaluator(env, curator=Digits(seed=0), backend=backend, device=CPU, epochs=1,
                                 check_every=5)
    after = plain.descriptor_evaluate(network() if env.is_root else None)
    require(after.ok, f"the evaluator did not recover: {after.error}")
    env.log("failure between checks: consistent, next network ok")


class CountingComm:
    """An mpi4py communicator that counts its collective calls."""

    COLLECTIVES = {"bcast", "allgather", "allreduce", "gather", "scatter", "barrier", "alltoall",
                   "Bcast", "Allgather", "Allreduce", "Gather", "Scatter", "Barrier", "Alltoall"}

    def __init__(self, comm):
        self.comm, self.calls = comm, 0

    def __getattr__(self, name):
        attribute = getattr(self.comm, name)
        if name not in self.COLLECTIVES:
            return attribute

        def counted(*args, **kwargs):
            self.calls += 1
            return attribute(*args, **kwargs)
        return counted


def _horovod_timeline_counts(path):
    """(reductions of the failure flag, of them those that shared a cycle with gradients)."""
    import bisect
    import json
    text = open(path).read().rstrip().rstrip(",")
    events = json.loads(text if text.endswith("]") else text + "]")
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("name") == "process_name" and "name" in e.get("args", {})}
    cycles = sorted(e["ts"] for e in events if e.get("name") == "CYCLE_START")
    by_cycle = {}
    for e in events:
        if e.get("ph") == "B" and e.get("name") == "ALLREDUCE":
            cycle = bisect.bisect_right(cycles, e["ts"]) - 1
            by_cycle.setdefault(cycle, []).append(names[e["pid"]])
    flagged = [tensors for tensors in by_cycle.values() if any("nord.failed" in t for t in tensors)]
    return len(flagged), sum(len(tensors) > 1 for tensors in flagged)


def one_collective_per_step(env, backend):
    """Training takes one all-reduce per step, with the failure flag inside it, and no
    collective of Python objects: the communicator's calls do not grow with the steps.
    (Horovod: run with HOROVOD_TIMELINE=DYNAMIC, so that its cycles can be recorded.) The
    data has no validation split, so that no per-epoch validation adds calls of its own."""
    import os
    import tempfile
    curator = Digits(seed=0, valid_fraction=0)
    evaluator = DistributedEvaluator(env, curator=curator, backend=backend, device=CPU, epochs=1,
                                     batch_size=64)
    evaluator.descriptor_evaluate(network() if env.is_root else None)  # starts the backend
    evaluator.comm = counting = CountingComm(evaluator.comm)
    steps = len(curator.train_loader(batch_size=64, rank=env.rank, size=env.size))
    calls, reductions = {}, {}
    for epochs in (1, 3):
        evaluator.epochs = epochs
        counting.calls = 0
        if backend == "horovod":
            import horovod.torch as hvd
            path = os.path.join(tempfile.gettempdir(),
                                f"nord-timeline-{os.getppid()}-{env.rank}.json")
            hvd.start_timeline(path, mark_cycles=True)
            result = evaluator.descriptor_evaluate(network() if env.is_root else None)
            hvd.stop_timeline()
            reductions[epochs] = env.bcast(_horovod_timeline_counts(path) if env.is_root else None)
            if os.path.exists(path):
                os.remove(path)
        else:
            import torch.distributed as dist
            real, seen = dist.all_reduce, []
            dist.all_reduce = lambda tensor, *a, **k: (seen.append(tensor.numel()), real(tensor, *a, **k))[1]
            try:
                result = evaluator.descriptor_evaluate(network() if env.is_root else None)
            finally:
                dist.all_reduce = real
            reductions[epochs] = seen
        require(result.ok, result.error)
        calls[epochs] = counting.calls
    require(calls[1] == calls[3], f"communicator calls grow with the steps: {calls}")
    if backend == "horovod":
        (flags1, fused1), (flags3, fused3) = reductions[1], reductions[3]
        require((flags1, flags3) == (steps, 3 * steps),
                f"flag reductions {flags1}, {flags3} for {steps} and {3 * steps} steps")
        require(fused1 + fused3 > 0, "the failure flag never shared a cycle with gradients")
        env.log(f"one collective per step: the flag shared the gradients' cycle in "
                f"{fused1 + fused3} of {flags1 + flags3} steps")
    else:
        n_parameters = sum(p.numel() for p in network_model(curator).parameters())
        require(len(reductions[3]) - len(reductions[1]) == 2 * steps,
                f"all-reduces: {len(reductions[1])} and {len(reductions[3])} for 1 and 3 "
                f"epochs of {steps} steps")
        require(reductions[3].count(n_parameters + 1) == 3 * steps,
                f"the step's all-reduce is not gradients + flag: {reductions[3]}")
        env.log(f"one collective per step: {len(reductions[3])} all-reduces for 3 x {steps} steps")


def network_model(curator):
    from nord.nn.network import NeuralNet
    return NeuralNet(network(), curator.input_shape, curator.num_classes)


def horovod_alone_is_refused(env, backend):
    """Horovod started with fewer ranks than the group (its Gloo controller under mpirun,
    without horovodrun's rendezvous) is an error on every rank, not each rank training alone."""
    from nord.errors import DistributedError
    evaluator = DistributedEvaluator(env, curator=Digits(seed=0), backend=backend, device=CPU,
                                     epochs=1)
    try:
        evaluator.descriptor_evaluate(network() if env.is_root else None)
    except DistributedError as error:
        require("Horovod started with 1 rank(s)" in str(error), str(error))
    else:
        raise AssertionError("Horovod of one rank in a group of several was accepted")
    env.log("Horovod started alone: refused on every rank")


def serve_and_release(env, backend):
    """Only the root drives; the others serve until released."""
    evaluator = DistributedEvaluator(env, curator=Digits(seed=0), backend=backend, device=CPU,
                                     epochs=1)
    if env.is_root:
        results = [evaluator.descriptor_evaluate(network(w)) for w in (2, 4, 6)]
        evaluator.release()
        require(all(r.ok for r in results), [r.error for r in results])
        count = 3
    else:
        count = evaluator.serve()
    counts = env.allgather(count)
    require(counts == [3] * env.size, f"served counts {counts}")
    env.log("serve/release: 3 evaluations on every rank")


def groups_of_one(env, backend):
    """With groups of 1, every rank evaluates its own network at the same time."""
    with Environment(group_size=1) as grouped:
        evaluator = DistributedEvaluator(grouped, curator=Digits(seed=0), backend=backend,
                                         device=CPU,
                                         epochs=1, seed=0)
        descriptor = network(width=2 + grouped.group.index)
        result = evaluator.descriptor_evaluate(descriptor)
        results = grouped.gather((grouped.group.index, descriptor.hash, result.to_dict()))
        if grouped.is_root:
            require(len(results) == grouped.size, results)
            require(len({h for _, h, _ in results}) == grouped.size, "hashes not distinct")
            local = LocalEvaluator(curator=Digits(seed=0), epochs=1, seed=0, device=CPU)
            for index, digest, record in results:
                expected = local.descriptor_evaluate(network(width=2 + index))
                require(record["accuracy"] == expected.accuracy,
                        f"group {index}: {record['accuracy']} != local {expected.accuracy}")
        grouped.log(f"groups of one: {grouped.size} networks at once")


def groups_of_two(env, backend):
    """3 ranks in groups of 2 and 1: each group trains its own network data-parallel."""
    with Environment(group_size=2) as grouped:
        evaluator = DistributedEvaluator(grouped, curator=Digits(seed=0), backend=backend,
                                         device=CPU,
                                         epochs=1, seed=0)
        descriptor = network(width=3 + grouped.group.index)
        result = evaluator.descriptor_evaluate(descriptor if grouped.group.is_root else None)
        require(result.ok, result.error)
        rows = grouped.gather((grouped.group.index, grouped.group.size, result.descriptor_hash))
        if grouped.is_root:
            by_group = {}
            for index, size, digest in rows:
                by_group.setdefault(index, set()).add(digest)
                require(digest == network(width=3 + index).hash, f"group {index} trained {digest}")
            require(len(by_group) == grouped.n_groups, by_group)
            require(all(len(hashes) == 1 for hashes in by_group.values()), by_group)
        grouped.log(f"groups of two: {grouped.n_groups} groups")


CHECKS = {f.__name__: f for f in (fixed_weights, trained_identical, recipe_training,
                                  legs_equal_straight, uneven_data,
                                  failing_network,
                                  rank_specific_failure, backward_failure, nan_on_one_rank,
                                  failure_between_checks, failure_between_checks_with_step_rules,
                                  one_collective_per_step, horovod_alone_is_refused,
                                  serve_and_release, groups_of_one,
                                  groups_of_two)}

def main(checks_by_name) -> None:
    """Run on this rank the checks named on the command line after the backend, one
    thread a rank; say so when all passed."""
    backend, *checks = sys.argv[1:]
    torch.set_num_threads(1)
    with Environment() as world:
        for check in checks:
            checks_by_name[check](world, backend)
    print(f"checks passed: {' '.join(checks)}")


if __name__ == "__main__":
    main(CHECKS)
