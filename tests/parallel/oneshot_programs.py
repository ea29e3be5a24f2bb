"""Rank programs for the data-parallel weight-sharing search, run under mpirun.

    mpirun -np 3 python -m tests.parallel.oneshot_programs BACKEND CHECK [CHECK ...]

Each check computes what must hold from the ranks themselves (their digests, gathered) and
exits non-zero with a message when it does not.
"""
import hashlib

import torch

from nord.data import Digits
from nord.errors import DistributedError
from nord.evaluators.distributed import DataParallelGroup
from nord.oneshot.registry import METHODS
from nord.oneshot.search import OneShotSearch, OneShotSettings
from nord.oneshot.settings import MethodSettings
from tests.parallel.distributed_programs import main

TINY = dict(search_epochs=2, channels=4, cells_per_stage=1, seed=3, device="cpu")
QUICK = MethodSettings(candidates=4, controller_steps=2, controller_aggregate=2)


def require(condition, message):
    if not condition:
        raise AssertionError(message)


def digest(tensors):
    hashed = hashlib.sha256()
    for tensor in tensors:
        hashed.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return hashed.hexdigest()


def group_of(env, backend):
    group = DataParallelGroup(env.group.comm, backend)
    group.start(torch.device("cpu"))
    return group


def search(env, backend, method, **settings):
    return OneShotSearch(OneShotSettings(method, method_settings=QUICK, **{**TINY, **settings}),
                         Digits(seed=0), group=group_of(env, backend))


def one_architecture_at_every_step(env, backend):
    """Every method: after every search step, every rank holds the same architecture (the
    alphas, ENAS's controller) and the same supernet weights, and the ranks end with the same
    records; each rank trained on its own shard of the batches."""
    for method in METHODS.names():
        run = search(env, backend, method)
        steps, shards = [], set()
        step = run.method.step

        def recorded_step(weight_batch, arch_batch):
            shards.add(digest([weight_batch[1]]))
            losses = step(weight_batch, arch_batch)
            steps.append((digest(run.method.architecture()),
                          digest(p for p in run.supernet.parameters()), losses))
            return losses
        run.method.step = recorded_step
        result = run.run()
        everyone = env.allgather(steps)
        require(len(steps) > 2, f"{method}: {len(steps)} steps")
        for rank, theirs in enumerate(everyone):
            for number, (mine, other) in enumerate(zip(steps, theirs)):
                require(mine == other, f"{method}: rank {rank} differs from rank {env.rank} "
                                       f"after step {number + 1}")
            require(len(theirs) == len(steps), f"{method}: ranks made different steps")
        records = env.allgather([(r.cell, r.weights, r.metrics) for r in result.epochs])
        require(all(r == records[0] for r in records), f"{method}: records differ: {records}")
        all_shards = env.allgather(shards)
        require(all(not (all_shards[0] & other) for other in all_shards[1:]),
                f"{method}: ranks trained on the same batches")
        run.group.close()
    env.log(f"one architecture at every step of {len(METHODS.names())} methods")


def draws_are_the_roots(env, backend):
    """Every method, with the other ranks' generators moved off the root's at the first
    step: the cells, Gumbel noise and controller samples used are still the root's, so the
    ranks still hold one architecture at every step."""
    for method in METHODS.names():
        run = search(env, backend, method, search_epochs=1)
        steps = []
        step = run.method.step

        def shifted_step(weight_batch, arch_batch):
            if not steps and not env.is_root:
                run.method.generator.manual_seed(1000 + env.rank)
            losses = step(weight_batch, arch_batch)
            steps.append(digest(run.method.architecture()))
            return losses
        run.method.step = shifted_step
        result = run.run()
        everyone = env.allgather(steps)
        require(all(theirs == steps for theirs in everyone),
                f"{method}: the ranks' architectures differ once their draws differ")
        cells = env.allgather([r.cell for r in result.epochs])
        require(all(c == cells[0] for c in cells), f"{method}: cells differ: {cells}")
        run.group.close()
    env.log("draws are the root's")


def drift_is_caught(env, backend):
    """A rank whose architecture drifts from the others' (here: a nudge on the last rank)
    stops the search on every rank at the epoch's end, naming the ranks."""
    run = search(env, backend, "darts-v1")
    if env.rank == env.size - 1:
        step = run.method.step

        def nudged(weight_batch, arch_batch):
            losses = step(weight_batch, arch_batch)
            with torch.no_grad():
                run.method.alphas[0, 0] += 1e-3
            return losses
        run.method.step = nudged
    try:
        run.run()
    except DistributedError as error:
        require(f"ranks {env.size - 1} against rank 0" in str(error), str(error))
        require("architectures after epoch 1" in str(error), str(error))
    else:
        raise AssertionError("a drifted architecture went unnoticed")
    run.group.close()
    env.log("drift caught")


def resume_on_the_ranks(env, backend):
    """Stopped after its first epoch and resumed, a data-parallel search is the search never
    stopped, on every rank. Only the root writes the checkpoint and reads it on a resume
    (each other rank is given a path of its own, which stays empty); a search of one process
    refuses the checkpoint of several ranks."""
    import os
    import tempfile
    from nord.errors import ConfigurationError
    folder = env.bcast(tempfile.mkdtemp() if env.is_root else None)
    checkpoint = os.path.join(folder, "search.pt" if env.is_root else f"rank-{env.rank}.pt")
    whole = search(env, backend, "gdas", search_epochs=3)
    whole.run()

    class Stop(Exception):
        pass

    def searched(stop_after=None):
        run = OneShotSearch(OneShotSettings("gdas", method_settings=QUICK,
                                            **{**TINY, "search_epochs": 3}),
                            Digits(seed=0), group=group_of(env, backend), checkpoint=checkpoint)
        save = run._save

        def save_then_stop(done, record):
            save(done, record)
            if done == stop_after:
                raise Stop()
        run._save = save_then_stop
        try:
            run.run()
        except Stop:
            pass
        return run
    cut = searched(stop_after=1)
    require(os.path.exists(checkpoint) == env.is_root,
            f"rank {env.rank}: the checkpoint was written by a rank other than the root")
    resumed = searched()
    require([(r.cell, r.weights, r.metrics) for r in resumed.epochs]
            == [(r.cell, r.weights, r.metrics) for r in whole.epochs],
            "the resumed search differs from the search never stopped")
    require(digest(resumed.method.architecture()) == digest(whole.method.architecture()),
            "the resumed architecture differs")
    if env.is_root:
        try:
            OneShotSearch(OneShotSettings("gdas", method_settings=QUICK,
                                          **{**TINY, "search_epochs": 3}),
                          Digits(seed=0), checkpoint=checkpoint).run()
        except ConfigurationError as error:
            require(f"on {env.size} ranks" in str(error) and "resume it on" in str(error),
                    str(error))
        else:
            raise AssertionError("one process resumed the checkpoint of several ranks")
    env.log("resumed on the ranks")


def final_cell_trained_together(env, backend):
    """The final cell a search under mpirun journaled (``NORD_TEST_JOURNAL``) was trained by
    every rank together: a DistributedEvaluator on these ranks, with the run's settings,
    gives its figures exactly (one process alone trains with another global batch)."""
    import os
    from nord.benchmarks.nasbench201 import network_to_descriptor
    from nord.evaluators.distributed import DistributedEvaluator
    from nord.journal import Journal
    from nord.nn.recipe import get_recipe
    with Journal(os.environ["NORD_TEST_JOURNAL"]) as journal:
        (row,) = journal.evaluations()
        config = journal.metadata()["config"]
    trainer = DistributedEvaluator(env, curator=Digits(), backend=backend, device="cpu",
                                   epochs=config["epochs"], seed=config["seed"], threads=1,
                                   recipe=get_recipe("nasbench201"))
    result = trainer.descriptor_evaluate(network_to_descriptor(tuple(row["genome"]))
                                         if env.is_root else None)
    figures = (result.accuracy, result.reported_accuracy, result.metrics["train_loss"])
    journaled = (row["accuracy"], row["reported_accuracy"], row["metrics"]["train_loss"])
    require(figures == journaled, f"trained {figures}, journaled {journaled}")
    env.log("the final cell was trained by the ranks together")


CHECKS = {f.__name__: f for f in (one_architecture_at_every_step, draws_are_the_roots, drift_is_caught,
                                  resume_on_the_ranks, final_cell_trained_together)}

if __name__ == "__main__":
    main(CHECKS)
