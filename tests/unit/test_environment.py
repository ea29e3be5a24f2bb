"""Serial tests of nord.parallel: the pure helpers, and the Environment as one process.

No mpirun here: the tests under mpirun are in tests/parallel/test_environment_mpi.py.
Tests that must not start MPI in the test process (a missing mpi4py, a launcher's variables)
run a short Python subprocess.
"""
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nord.parallel import (Environment, GroupAssignment, derive_seed, group_assignment,
                           group_layout, launched_by_mpi, launcher_local_rank,
                           launcher_world_size)
from nord.errors import ConfigurationError, DistributedError

REPO = Path(__file__).resolve().parents[2]
LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                      "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS",
                      "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK")


# --- group_layout -----------------------------------------------------------------------------
@pytest.mark.parametrize("size, group_size, dedicated_root, expected", [
    (1, None, False, ((0,),)),
    (3, None, False, ((0, 1, 2),)),
    (3, 3, False, ((0, 1, 2),)),
    (3, 1, False, ((0,), (1,), (2,))),
    (4, 2, False, ((0, 1), (2, 3))),
    (3, 2, False, ((0, 1), (2,))),
    (7, 3, False, ((0, 1, 2), (3, 4, 5), (6,))),
    (2, None, True, ((1,),)),
    (4, None, True, ((1, 2, 3),)),
    (4, 1, True, ((1,), (2,), (3,))),
    (4, 2, True, ((1, 2), (3,))),
])
def test_group_layout(size, group_size, dedicated_root, expected):
    assert group_layout(size, group_size, dedicated_root) == expected


VALID = [(size, group_size, dedicated_root)
         for size in range(1, 9) for group_size in (None, 1, 2, 3)
         for dedicated_root in (False, True)
         if 1 <= (group_size or 1) <= size - int(dedicated_root)]


@pytest.mark.parametrize("size, group_size, dedicated_root", VALID)
def test_group_layout_covers_each_evaluating_rank_once(size, group_size, dedicated_root):
    layout = group_layout(size, group_size, dedicated_root)
    flat = [rank for members in layout for rank in members]
    assert flat == list(range(int(dedicated_root), size))


@pytest.mark.parametrize("size, group_size, dedicated_root", [v for v in VALID if v[1]])
def test_only_the_last_group_is_smaller(size, group_size, dedicated_root):
    sizes = [len(members) for members in group_layout(size, group_size, dedicated_root)]
    assert sizes[:-1] == [group_size] * (len(sizes) - 1) and 1 <= sizes[-1] <= group_size


@pytest.mark.parametrize("size, group_size, dedicated_root, words", [
    (3, 0, False, "at least 1"),
    (3, -2, False, "at least 1"),
    (3, 4, False, "larger than the 3 ranks"),
    (3, 3, True, "larger than the 2 ranks besides the dedicated root"),
    (1, None, True, "at least 2 ranks"),
    (1, 1, True, "at least 2 ranks"),
    (0, None, False, "size must be at least 1"),
    (3, 1.5, False, "must be an integer"),
    (3, True, False, "must be an integer"),
    (3, "2", False, "must be an integer"),
])
def test_group_layout_rejects_invalid_arguments(size, group_size, dedicated_root, words):
    with pytest.raises(ConfigurationError, match=re.escape(words)):
        group_layout(size, group_size, dedicated_root)


def test_group_layout_accepts_numpy_integers():
    np = pytest.importorskip("numpy")
    assert group_layout(np.int64(4), np.int32(2)) == ((0, 1), (2, 3))


# --- group_assignment ---------------------------------------------------------------------------
def test_group_assignment_of_a_rank_in_the_smaller_last_group():
    assert group_assignment(2, 3, 2) == GroupAssignment(index=1, rank=0, size=1, members=(2,))


def test_group_assignment_of_a_second_member():
    assert group_assignment(1, 3, 2) == GroupAssignment(index=0, rank=1, size=2, members=(0, 1))


def test_dedicated_root_has_no_group():
    assert group_assignment(0, 3, 1, dedicated_root=True) is None


def test_dedicated_root_shifts_the_workers():
    assert group_assignment(1, 3, None, dedicated_root=True) == GroupAssignment(0, 0, 2, (1, 2))


@pytest.mark.parametrize("size, group_size, dedicated_root", VALID)
def test_group_assignment_agrees_with_group_layout(size, group_size, dedicated_root):
    layout = group_layout(size, group_size, dedicated_root)
    found = {}
    for rank in range(size):
        assignment = group_assignment(rank, size, group_size, dedicated_root)
        if assignment is not None:
            assert layout[assignment.index] == assignment.members
            assert assignment.size == len(assignment.members)
            found[rank] = assignment.members[assignment.rank]
    assert found == {rank: rank for members in layout for rank in members}


@pytest.mark.parametrize("rank", [-1, 3])
def test_group_assignment_rejects_a_rank_outside_the_job(rank):
    with pytest.raises(ConfigurationError, match="rank must be in 0..2"):
        group_assignment(rank, 3)


# --- derive_seed --------------------------------------------------------------------------------
def test_derive_seed_is_reproducible():
    assert derive_seed(42, 3) == derive_seed(42, 3)


def test_derive_seed_has_known_values():
    # a change of algorithm would silently change every seeded run: keep these fixed
    assert (derive_seed(0, 0), derive_seed(2024, 1, 7)) == (2124180693, 3768478679)


def test_derive_seed_differs_between_ranks():
    seeds = {derive_seed(7, rank) for rank in range(64)}
    assert len(seeds) == 64


def test_derive_seed_of_a_run_does_not_replay_the_next_run():
    assert derive_seed(0, 1) != derive_seed(1, 0)


def test_derive_seed_keys_select_separate_streams():
    assert len({derive_seed(7, 1), derive_seed(7, 1, 0), derive_seed(7, 1, 1)}) == 3


def test_derive_seed_fits_numpy_and_torch():
    seeds = [derive_seed(base, rank) for base in range(20) for rank in range(20)]
    assert all(isinstance(seed, int) and 0 <= seed < 2**32 for seed in seeds)


def test_derive_seed_of_no_seed_is_no_seed():
    assert derive_seed(None, 3) is None


@pytest.mark.parametrize("args", [(-1, 0), (0, -1), (0, 1, -5), (1.5, 0), ("1", 0)])
def test_derive_seed_rejects_invalid_arguments(args):
    with pytest.raises(ConfigurationError):
        derive_seed(*args)


# --- launcher variables -------------------------------------------------------------------------
@pytest.mark.parametrize("variables", [
    {"OMPI_COMM_WORLD_SIZE": "2"}, {"PMI_SIZE": "4"}, {"PMIX_RANK": "0"}, {"PMI_RANK": "1"},
    {"MV2_COMM_WORLD_SIZE": "2"},
])
def test_launched_by_mpi_recognises_launchers(variables):
    assert launched_by_mpi(dict(variables, HOME="/root"))


def test_plain_process_is_not_launched_by_mpi():
    assert not launched_by_mpi({"HOME": "/root", "PATH": "/usr/bin", "SLURM_NTASKS": "4"})


def test_launcher_world_size_reads_open_mpi():
    assert launcher_world_size({"OMPI_COMM_WORLD_SIZE": "3"}) == 3


def test_launcher_world_size_unknown_is_none():
    assert launcher_world_size({"PMIX_RANK": "0"}) is None


def test_launcher_local_rank_reads_mpich():
    assert launcher_local_rank({"MPI_LOCALRANKID": "1"}) == 1


def test_launcher_local_rank_skips_unreadable_values():
    assert launcher_local_rank({"OMPI_COMM_WORLD_LOCAL_RANK": "", "MPI_LOCALRANKID": "2"}) == 2


# --- Environment as a single process ------------------------------------------------------------
@pytest.fixture
def serial():
    """A started single-process Environment without MPI, closed after the test."""
    with Environment(use_mpi=False) as env:
        yield env


def test_single_process_world(serial):
    assert (serial.rank, serial.size, serial.local_rank, serial.is_root) == (0, 1, 0, True)


def test_single_process_has_no_communicator(serial):
    assert serial.comm is None


def test_single_process_is_one_group_of_one(serial):
    group = serial.group
    assert ((group.index, group.rank, group.size, group.members, group.is_root, group.comm) ==
        (0, 0, 1, (0,), True, None))


def test_single_process_group_roots(serial):
    assert (serial.n_groups, serial.group_roots, serial.group_layout) == (1, (0,), ((0,),))


def test_single_process_bcast_is_identity(serial):
    payload = {"a": [1, 2]}
    assert serial.bcast(payload) is payload


def test_single_process_gather_is_a_list_of_one(serial):
    assert serial.gather("x") == ["x"]


def test_single_process_allgather_is_a_list_of_one(serial):
    assert serial.allgather(5) == [5]


def test_single_process_barrier_returns(serial):
    assert serial.barrier() is None


def test_single_process_group_collectives(serial):
    group = serial.group
    assert (group.bcast(1), group.gather(2), group.allgather(3)) == (1, [2], [3])


def test_collectives_reject_a_root_outside_the_job(serial):
    with pytest.raises(ConfigurationError, match="root must be a rank in 0..0"):
        serial.bcast(1, root=1)


def test_group_size_larger_than_a_single_process_is_rejected():
    with pytest.raises(ConfigurationError, match="a group size of 2 .* is larger"):
        Environment(group_size=2, use_mpi=False).start()


def test_dedicated_root_needs_two_ranks():
    with pytest.raises(ConfigurationError, match="at least 2 ranks"):
        Environment(dedicated_root=True, use_mpi=False).start()


def test_use_mpi_must_be_none_or_a_bool():
    with pytest.raises(ConfigurationError, match="use_mpi"):
        Environment(use_mpi="yes").start()


def test_attributes_need_a_started_environment():
    with pytest.raises(DistributedError, match="not been started"):
        Environment().rank


def test_constructor_only_stores_arguments():
    env = Environment(group_size=4, dedicated_root=True)
    assert (env.group_size, env.dedicated_root, env.active) == (4, True, False)


def test_starting_an_active_environment_twice_is_an_error(serial):
    with pytest.raises(DistributedError, match="already active"):
        serial.start()


def test_attributes_stay_readable_after_close():
    with Environment(use_mpi=False) as env:
        pass
    assert (env.active, env.rank, env.size) == (False, 0, 1)


def test_exception_in_a_single_process_propagates_unchanged():
    with pytest.raises(KeyError, match="missing"):
        with Environment(use_mpi=False):
            raise KeyError("missing")


def test_excepthook_is_installed_while_active(serial):
    assert sys.excepthook == serial._excepthook


def test_excepthook_is_restored_after_close():
    before = sys.excepthook
    with Environment(use_mpi=False):
        pass
    assert sys.excepthook is before


def test_excepthook_is_restored_after_an_exception():
    before = sys.excepthook
    with pytest.raises(RuntimeError):
        with Environment(use_mpi=False):
            raise RuntimeError("x")
    assert sys.excepthook is before


# --- output -------------------------------------------------------------------------------------
def test_log_goes_through_the_nord_logger(serial, caplog):
    with caplog.at_level(logging.INFO, logger="nord"):
        serial.log("trained %d networks", 3)
    assert [(r.name, r.getMessage()) for r in caplog.records] == [("nord", "trained 3 networks")]


def test_log_handler_is_on_the_nord_logger_not_the_root_logger(serial):
    names = [h.get_name() for h in logging.getLogger("nord").handlers]
    root_names = [h.get_name() for h in logging.getLogger().handlers]
    assert "nord.parallel.environment" in names and "nord.parallel.environment" not in root_names


def test_log_handler_is_removed_at_close():
    with Environment(use_mpi=False):
        pass
    assert "nord.parallel.environment" not in [h.get_name() for h in logging.getLogger("nord").handlers]


def test_nested_environments_add_one_handler():
    with Environment(use_mpi=False), Environment(use_mpi=False):
        names = [h.get_name() for h in logging.getLogger("nord").handlers]
    assert names.count("nord.parallel.environment") == 1


def test_log_handler_can_be_left_to_the_application():
    with Environment(use_mpi=False, log_handler=False):
        names = [h.get_name() for h in logging.getLogger("nord").handlers]
    assert "nord.parallel.environment" not in names


def test_print_on_a_single_process(serial, capsys):
    serial.print("hello", 3)
    assert capsys.readouterr().out == "hello 3\n"


def test_print_takes_sep_and_end(serial, capsys):
    serial.print("a", "b", sep="-", end="!")
    assert capsys.readouterr().out == "a-b!"


def test_print_writes_a_line_in_one_call(serial):
    class Recorder:
        def __init__(self):
            self.writes = []

        def write(self, text):
            self.writes.append(text)

        def flush(self):
            pass

    recorder = Recorder()
    serial.print("epoch", 3, file=recorder)
    assert recorder.writes == ["epoch 3\n"]


def test_print_ordered_prefixes_the_rank(serial, capsys):
    serial.print_ordered("done")
    assert capsys.readouterr().out == "[rank 0] done\n"


def test_status_names_host_and_group(serial, capsys):
    serial.status("ready")
    assert re.fullmatch(r"\[rank 0/1\] host \S+ local rank 0, group 0 rank 0/1: ready\n",
                        capsys.readouterr().out)


# --- without mpirun or without mpi4py: in a subprocess, so MPI never starts in this one ---------
PROBE = """
import json, sys
{prelude}
from nord.parallel.environment import Environment
with Environment({arguments}) as env:
    record = dict(rank=env.rank, size=env.size, comm=env.comm is None,
                  group=env.group.size, bcast=env.bcast("b"), gather=env.gather(1))
record["mpi_imported"] = "mpi4py.MPI" in sys.modules
print(json.dumps(record))
"""


def run_probe(prelude="", arguments="", launcher=None, timeout=60):
    environ = {key: value for key, value in os.environ.items() if key not in LAUNCHER_VARIABLES}
    environ.update(PYTHONPATH=str(REPO), **(launcher or {}))
    code = PROBE.format(prelude=prelude, arguments=arguments)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environ, cwd=REPO, timeout=timeout)


@pytest.mark.processes
def test_outside_mpirun_mpi_is_never_imported():
    done = run_probe()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"rank": 0, "size": 1, "comm": True, "group": 1,
                                       "bcast": "b", "gather": [1], "mpi_imported": False}


BLOCK_MPI4PY = "sys.modules['mpi4py'] = None  # as if mpi4py were not installed"


@pytest.mark.processes
def test_without_mpi4py_an_environment_is_one_process():
    done = run_probe(prelude=BLOCK_MPI4PY, launcher={"OMPI_COMM_WORLD_SIZE": "1", "PMIX_RANK": "0"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["size"] == 1


@pytest.mark.processes
def test_without_mpi4py_a_multi_rank_launch_warns():
    done = run_probe(prelude=BLOCK_MPI4PY, launcher={"OMPI_COMM_WORLD_SIZE": "3", "PMIX_RANK": "1"})
    assert "launched by mpirun with 3 ranks but mpi4py is not installed" in done.stderr


@pytest.mark.processes
def test_without_mpi4py_use_mpi_true_says_what_to_install():
    done = run_probe(prelude=BLOCK_MPI4PY, arguments="use_mpi=True")
    assert (done.returncode != 0 and "MissingDependencyError" in done.stderr
        and "pip install mpi4py" in done.stderr)


@pytest.mark.processes
def test_use_mpi_false_ignores_the_launcher():
    done = run_probe(prelude=BLOCK_MPI4PY, arguments="use_mpi=False",
                     launcher={"OMPI_COMM_WORLD_SIZE": "3", "PMIX_RANK": "1"})
    assert done.returncode == 0 and done.stderr == "", done.stderr


# --- hostfiles ----------------------------------------------------------------------------------
HOST_LINE = re.compile(r"^[A-Za-z0-9_.\-]+( slots=[1-9][0-9]*)?( max[-_]slots=[1-9][0-9]*)?$")


def hostfile_entries(name):
    lines = (REPO / "hostfiles" / name).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_localhost_hostfile_is_this_machine():
    assert hostfile_entries("localhost") == ["localhost slots=2"]


def test_cluster_template_entries_are_valid_hostfile_lines():
    entries = hostfile_entries("cluster.example")
    assert entries and all(HOST_LINE.match(entry) for entry in entries)


def test_cluster_template_shows_mpirun_and_horovodrun():
    text = (REPO / "hostfiles" / "cluster.example").read_text()
    assert "mpirun --hostfile" in text and "horovodrun" in text and "-H " in text


def test_from_root_sends_rank_0s_value_or_its_refusal():
    with Environment(use_mpi=False) as env:
        assert env.from_root(lambda: {"md5": "abc"}) == ({"md5": "abc"}, None)
        refused = env.from_root(lambda: int("x"), (ValueError,))
        assert refused[0] is None and "invalid literal" in refused[1]
        with pytest.raises(KeyError):   # an error it was not told to expect is raised
            env.from_root(lambda: {}["missing"], (ValueError,))
