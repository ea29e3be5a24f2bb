"""Weight-sharing searches from the command line: every method on Digits at a tiny size, a
seeded search repeated, a search killed with SIGKILL in the middle of an epoch and resumed with
``nord resume``, a trained supernet searched by REA, and the refusals that write no journal."""
import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from nord.app.runner import _ranks_refusal, evaluation_of
from nord.app.settings import RunConfig
from nord.benchmarks.nasbench201.cells import cell_to_genome
from nord.journal import Journal
from nord.oneshot.registry import METHODS
from tests.helpers.resumes import kill_in_second_epoch
from tests.mpirun import REPO

pytestmark = [pytest.mark.processes, pytest.mark.timeout(600)]

NORD = [sys.executable, "-m", "nord"]
TINY = ["--space", "nasbench201", "--dataset", "digits", "--search-epochs", "2",
        "--supernet-channels", "4", "--supernet-cells", "1", "--threads", "1",
        "--params", '{"candidates": 4, "controller_steps": 2, "controller_aggregate": 2}']


def nord(*argv, timeout=540):
    process = subprocess.run([*NORD, *map(str, argv)], cwd=REPO, capture_output=True,
                             text=True, timeout=timeout)
    return process.returncode, process.stdout + process.stderr


def rows(journal):
    """The journal's search epochs without their times."""
    with Journal(journal) as record:
        return [{k: v for k, v in row.items() if k not in ("seconds", "recorded")}
                for row in record.search_epochs()]


def final(journal):
    with Journal(journal) as record:
        (row,) = record.evaluations()
    return tuple(row["genome"]), row["accuracy"], row["reported_accuracy"]


@pytest.mark.parametrize("method", METHODS.names())
def test_every_method_journals_a_cell_and_a_distribution_per_epoch(tmp_path, method):
    journal = tmp_path / f"{method}.db"
    code, output = nord("run", "--algorithm", method, *TINY, "--journal", journal)
    assert code == 0, output
    epochs = rows(journal)
    assert [row["epoch"] for row in epochs] == [1, 2]
    for row in epochs:
        assert cell_to_genome(row["cell"]) == row["genome"]
        assert len(row["weights"]) == 6
        assert all(abs(sum(ops.values()) - 1) < 1e-6 for ops in row["weights"].values())
    genome, accuracy, reported = final(journal)
    assert genome == epochs[-1]["genome"]
    assert 0 <= accuracy <= 1 and 0 <= reported <= 1      # trained on digits for --epochs
    assert os.path.exists(f"{journal}.supernet.pt")
    assert not os.path.exists(f"{journal}.checkpoints")     # nothing left to resume
    with Journal(journal) as record:
        assert record.metadata()["status"] == "finished"


def test_a_seeded_search_repeats_itself(tmp_path):
    first, again = tmp_path / "a.db", tmp_path / "b.db"
    for journal in (first, again):
        code, output = nord("run", "--algorithm", "gdas", *TINY, "--seed", "5",
                            "--journal", journal)
        assert code == 0, output
    assert rows(first) == rows(again)
    assert final(first) == final(again)


def test_a_search_killed_mid_epoch_and_resumed_is_the_search_never_killed(tmp_path):
    settings = ["--algorithm", "enas", *TINY[:4], "--search-epochs", "3", *TINY[6:]]
    whole = tmp_path / "whole.db"
    code, output = nord("run", *settings, "--journal", whole)
    assert code == 0, output
    cut = tmp_path / "cut.db"
    assert kill_in_second_epoch([*NORD, "run", *settings, "--journal", str(cut)],
                                cut) == -signal.SIGKILL
    assert len(rows(cut)) < 3
    code, output = nord("resume", cut)
    assert code == 0, output
    assert rows(cut) == rows(whole)
    assert final(cut) == final(whole)


def test_a_search_journaled_before_searches_recorded_their_ranks_resumes(tmp_path):
    journal = tmp_path / "older.db"
    code, output = nord("run", "--algorithm", "rsps", *TINY, "--journal", journal)
    assert code == 0, output
    whole = rows(journal)
    # what such a search left when stopped: no ranks in its evaluator, not finished
    with sqlite3.connect(journal) as connection:
        (evaluator,) = connection.execute("SELECT evaluator FROM run").fetchone()
        older = {k: v for k, v in json.loads(evaluator).items() if k != "ranks_per_network"}
        connection.execute("UPDATE run SET evaluator = ?, status = 'interrupted'",
                           (json.dumps(older),))
    connection.close()
    code, output = nord("resume", journal)
    assert code == 0, output
    assert rows(journal) == whole
    with Journal(journal) as record:
        assert record.metadata()["status"] == "finished"


def test_a_search_resumed_on_another_device_keeps_every_device_it_searched_on(tmp_path):
    journal = tmp_path / "moved.db"
    code, output = nord("run", "--algorithm", "rsps", *TINY, "--journal", journal)
    assert code == 0, output
    with Journal(journal) as record:
        assert record.metadata()["execution"]["searched_on"] == ["cpu"]
    # as though its first start had searched on a GPU, and stopped
    with sqlite3.connect(journal) as connection:
        (execution,) = connection.execute("SELECT execution FROM run").fetchone()
        elsewhere = {**json.loads(execution), "resolved_device": "cuda:0 (NVIDIA H200)"}
        del elsewhere["searched_on"]
        connection.execute("UPDATE run SET execution = ?, status = 'interrupted'",
                           (json.dumps(elsewhere),))
    connection.close()
    code, output = nord("resume", journal)
    assert code == 0, output
    with Journal(journal) as record:
        execution = record.metadata()["execution"]
    assert execution["resolved_device"] == "cpu"
    assert execution["searched_on"] == ["cuda:0 (NVIDIA H200)", "cpu"]


def test_a_search_journaled_before_searches_recorded_their_ranks_ran_on_one():
    config = RunConfig(space="nasbench201", algorithm="gdas", dataset="digits",
                       journal="older.db")
    refusal = _ranks_refusal(config, evaluation_of(config), {"evaluator": "weight sharing"}, 2)
    assert "on 1 rank" in refusal and "without mpirun" in refusal, refusal


def test_a_trained_supernet_scores_the_cells_of_a_search(tmp_path):
    searched = tmp_path / "rsps.db"
    code, output = nord("run", "--algorithm", "rsps", *TINY, "--journal", searched)
    assert code == 0, output
    scored = tmp_path / "rea.db"
    code, output = nord("run", "--space", "nasbench201", "--evaluation", "supernet",
                        "--supernet", searched, "--algorithm", "rea", "--budget", "8",
                        "--params", '{"population_size": 4, "sample_size": 2}',
                        "--threads", "1", "--journal", scored)
    assert code == 0, output
    with Journal(scored) as record:
        evaluations = record.evaluations()
        assert record.metadata()["dataset"]["name"] == "digits"   # the supernet's own
    assert len(evaluations) == 8
    assert all(row["status"] == "ok" and 0 <= row["accuracy"] <= 1 for row in evaluations)


@pytest.mark.parametrize("argv,said", [
    (["--algorithm", "gdas", "--space", "conv"], "--space nasbench201"),
    (["--algorithm", "darts-v1", "--space", "nasbench201", "--search-epochs", "0"],
     "search_epochs"),
    (["--algorithm", "gdas", "--space", "nasbench201", "--evaluation", "benchmark"],
     "weight-sharing method"),
    (["--algorithm", "rea", "--space", "nasbench201", "--search-epochs", "3"],
     "--search-epochs"),
    (["--algorithm", "rea", "--space", "nasbench201", "--evaluation", "supernet"],
     "give --supernet"),
    (["--algorithm", "setn", "--space", "nasbench201", "--dataset", "digits",
      "--final-evaluation", "table"], "--final-evaluation train"),
    (["--algorithm", "enas", "--space", "nasbench201", "--params", '{"temperature": 2}'],
     "takes clip_grad"),
])
def test_bad_input_is_refused_in_one_line_and_writes_no_journal(tmp_path, argv, said):
    journal = tmp_path / "refused.db"
    code, output = nord("run", *argv, "--journal", journal)
    assert code == 2, output
    assert said in output and len(output.strip().splitlines()) == 1, output
    assert not journal.exists()


def test_a_journal_without_a_supernet_is_refused(tmp_path):
    table = tmp_path / "table.db"
    code, output = nord("run", "--space", "nasbench201", "--algorithm", "random", "--budget",
                        "3", "--journal", table)
    assert code == 0, output
    journal = tmp_path / "refused.db"
    code, output = nord("run", "--space", "nasbench201", "--evaluation", "supernet",
                        "--supernet", table, "--algorithm", "rea", "--journal", journal)
    assert code == 2 and "holds no trained supernet" in output, output
    assert not journal.exists()
