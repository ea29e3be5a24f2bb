"""Rank programs that tests/parallel/test_environment_mpi.py starts under mpirun.

    mpirun -np 3 python -m tests.parallel.environment_programs world OUTDIR
    mpirun -np 3 python -m tests.parallel.environment_programs groups OUTDIR 2 no-dedicated
    mpirun -np 3 python -m tests.parallel.environment_programs output
    mpirun -np 3 python -m tests.parallel.environment_programs fail RANK HOW
        (HOW: raise, exit3, interrupt, sigterm or hook)
    mpirun -np 3 python -m tests.parallel.environment_programs config-error
    mpirun -np 3 python -m tests.parallel.environment_programs twice OUTDIR
    mpirun -np 2 python -m tests.parallel.environment_programs --no-mpi4py world OUTDIR
    mpirun -np 2 python -m tests.parallel.environment_programs --no-local-rank-variable world OUTDIR

Programs that report values write one JSON file per rank, ``OUTDIR/rank-R.json``, because
lines printed by several ranks can interleave. ``--no-mpi4py`` makes ``import mpi4py`` fail
in this process, as if it were not installed; ``--no-local-rank-variable`` hides Open MPI's
local rank variable, so the Environment must find the local rank through MPI. MPI is only
started by the Environment.
"""
import json
import os
import signal
import sys
import time
from pathlib import Path


def _write(outdir, rank, record):
    path = Path(outdir) / f"rank-{rank}.json"
    path.write_text(json.dumps(record))


def _group_record(env):
    group = env.group
    if group is None:
        return None
    message = f"group {group.index} root {env.rank}" if group.is_root else None
    return {
        "index": group.index, "rank": group.rank, "size": group.size,
        "members": list(group.members), "is_root": group.is_root, "root": group.root,
        "comm_size": None if group.comm is None else group.comm.Get_size(),
        "allgather": group.allgather(env.rank),
        "bcast": group.bcast(message, root=0),
    }


def world(outdir):
    """World attributes and the world collectives, with values made from the size."""
    from nord.parallel.environment import Environment

    with Environment() as env:
        record = {
            "rank": env.rank, "size": env.size, "local_rank": env.local_rank,
            "is_root": env.is_root, "uses_mpi": env.comm is not None,
            "comm_size": None if env.comm is None else env.comm.Get_size(),
            "bcast": env.bcast({"size": env.size, "squares": [r * r for r in range(env.size)]}
                               if env.is_root else None),
            "bcast_from_last": env.bcast(f"from rank {env.rank}", root=env.size - 1),
            "gather": env.gather(10 * env.rank),
            "allgather": env.allgather(env.rank ** 2),
            "n_groups": env.n_groups, "group_roots": list(env.group_roots),
            "group": _group_record(env),
            "every_rank": _every_rank_record(env),
        }
    _write(outdir, record["rank"], record)


def _every_rank_record(env):
    """``on_every_rank`` where no rank fails, then where only the last one does."""
    def last_fails():
        if env.rank == env.size - 1:
            raise ValueError(f"rank {env.rank} cannot read its file")
        return env.rank

    value, error = env.on_every_rank(lambda: 3 * env.rank, (ValueError,))
    failed_value, failed = env.on_every_rank(last_fails, (ValueError,))
    return {"value": value, "error": error, "failed_value": failed_value,
            "failed": [type(failed).__name__, str(failed)]}


def groups(outdir, group_size, dedicated):
    """The group this rank landed in, and collectives inside the group."""
    from nord.parallel.environment import Environment

    group_size = None if group_size == "none" else int(group_size)
    with Environment(group_size=group_size, dedicated_root=(dedicated == "dedicated")) as env:
        record = {
            "rank": env.rank, "size": env.size, "n_groups": env.n_groups,
            "group_roots": list(env.group_roots),
            "layout": [list(members) for members in env.group_layout],
            "group": _group_record(env),
        }
    _write(outdir, record["rank"], record)


def twice(outdir):
    """Two Environments one after the other in the same job: groups of 1, then one group."""
    from nord.parallel.environment import Environment

    with Environment(group_size=1) as env:
        first = _group_record(env)
    with Environment() as env:
        record = {"rank": env.rank, "first": first, "second": _group_record(env)}
    _write(outdir, record["rank"], record)


def output():
    """log and print once; ordered and status lines after staggered sleeps (last rank first)."""
    from nord.parallel.environment import Environment

    with Environment() as env:
        env.log("log-marker from rank %d", env.rank)
        env.print(f"print-marker from rank {env.rank}")
        time.sleep(0.15 * (env.size - env.rank))
        env.print_ordered(f"ordered-marker {env.rank}")
        env.status("status-marker")


def fail(failing_rank, how):
    """Rank ``failing_rank`` fails in the way ``how``; the others wait for it forever."""
    from nord.parallel.environment import Environment

    failing_rank = int(failing_rank)

    def fail_deliberately(rank):
        if how in ("raise", "hook"):
            raise ValueError(f"deliberate failure on rank {rank}")
        if how == "exit3":
            sys.exit(3)
        if how == "interrupt":
            raise KeyboardInterrupt
        if how == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(60)
        raise AssertionError(f"unknown failure {how!r}")

    def body(env):
        if env.rank == failing_rank:
            fail_deliberately(env.rank)
        elif env.rank == 0:
            env.comm.recv(source=failing_rank)  # a message that never comes
        else:
            env.barrier()  # a barrier the failing rank never reaches
        print(f"rank {env.rank} went on after the failure", flush=True)

    env = Environment()
    if how == "hook":  # no `with`: the excepthook must abort
        env.start()
        body(env)
        env.close()
    else:
        with env:
            body(env)


def config_error():
    """Every rank asks for groups larger than the job."""
    from nord.parallel.environment import Environment

    probe = os.environ.get("OMPI_COMM_WORLD_SIZE", "1")
    with Environment(group_size=int(probe) + 1):
        print("groups larger than the job were accepted", flush=True)


COMMANDS = {"world": world, "groups": groups, "twice": twice, "output": output, "fail": fail,
            "config-error": config_error}


def main(argv):
    while argv and argv[0].startswith("--"):
        flag, *argv = argv
        if flag == "--no-mpi4py":
            sys.modules["mpi4py"] = None  # `import mpi4py` now raises ImportError
        elif flag == "--no-local-rank-variable":
            os.environ.pop("OMPI_COMM_WORLD_LOCAL_RANK", None)
        else:
            raise SystemExit(f"unknown flag {flag}")
    command, *args = argv
    COMMANDS[command](*args)


if __name__ == "__main__":
    main(sys.argv[1:])
