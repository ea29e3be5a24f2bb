"""Rank programs for the cluster tests (several hosts under mpirun, SLURM's srun and sbatch).

    mpirun --hostfile HOSTS -np 4 python -m tests.parallel.cluster_programs where OUTDIR
    srun -n 3 python -m tests.parallel.cluster_programs where OUTDIR
    srun --mpi=none -n 2 python -m tests.parallel.cluster_programs start

``where`` writes one JSON file per rank, ``OUTDIR/rank-R.json``: where the rank runs as nord
sees it (``Environment.local_rank``, the launcher's variables) next to what MPI itself says
(the rank among those sharing its node, the processor name). ``start`` only starts an
Environment, to see whether it accepts the launch.
"""
import json
import os
import socket
import sys
from pathlib import Path


def where(outdir):
    from nord.parallel import Environment, launcher_local_rank, launcher_world_size

    with Environment() as env:
        from mpi4py import MPI

        shared = env.comm.Split_type(MPI.COMM_TYPE_SHARED, key=env.rank)
        record = {
            "rank": env.rank, "size": env.size, "local_rank": env.local_rank,
            "launcher_local_rank": launcher_local_rank(),
            "launcher_world_size": launcher_world_size(),
            "node_rank": shared.Get_rank(), "node_size": shared.Get_size(),
            "hostname": socket.gethostname(), "processor": MPI.Get_processor_name(),
            "slurm_localid": os.environ.get("SLURM_LOCALID"),
            "slurm_node": os.environ.get("SLURMD_NODENAME"),
            "hosts_seen": sorted(set(env.allgather(socket.gethostname()))),
        }
        shared.Free()
    (Path(outdir) / f"rank-{record['rank']}.json").write_text(json.dumps(record))


def start():
    from nord.parallel.environment import Environment

    with Environment() as env:
        print(f"started as rank {env.rank} of {env.size}", flush=True)


def records(outdir):
    """The ``where`` records, in rank order (for the tests)."""
    found = [json.loads(path.read_text()) for path in Path(outdir).glob("rank-*.json")]
    return sorted(found, key=lambda record: record["rank"])


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    {"where": where, "start": start}[command](*arguments)
