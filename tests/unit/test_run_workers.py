"""``nord run --workers N``: refused where it cannot run, and a seeded sync run gives the same
architectures and accuracies on one worker and on two."""
import pytest

from nord.app.cli import main
from nord.app.settings import usable_cpus
from nord.journal import Journal
from tests.helpers.toy import journal_rows

SMALL = ["--space-params", '{"layers": 1, "channels": [2, 4]}', "--epochs", "1",
         "--threads", "1", "--device", "cpu"]


@pytest.mark.parametrize("args,words", [
    (["--workers", "0"], "--workers (worker processes) must be an integer >= 1; got 0"),
    (["--workers", str(usable_cpus() + 1)], f"Use --workers {usable_cpus()} or fewer"),
    (["--mps", "on"], "--mps on says how worker processes share a GPU, but no --workers"),
    (["--workers", "1", "--mps", "sometimes"], "--mps must be one of auto, on, off"),
    (["--workers", "1", "--space", "nasbench201"], "looks results up in a table"),
    (["--workers", "1", "--evaluation", "data-parallel"], "launch it with mpirun instead"),
])
def test_workers_that_cannot_run_are_refused_before_anything_starts(args, words, tmp_path,
                                                                    capsys):
    journal = tmp_path / "r.db"
    assert main(["run", "--budget", "2", "--journal", str(journal), *args]) == 2
    assert words in capsys.readouterr().err
    assert not journal.exists()


def test_workers_under_mpirun_are_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "3")
    assert main(["run", "--budget", "2", "--workers", "1", *SMALL,
                 "--journal", str(tmp_path / "r.db")]) == 2
    err = capsys.readouterr().err
    assert "launched by mpirun with 3 ranks" in err and "one way to parallelise" in err


def test_mps_on_the_cpu_is_refused_before_the_journal_is_written(tmp_path, capsys):
    journal = tmp_path / "r.db"
    assert main(["run", "--budget", "2", "--workers", "1", "--mps", "on", *SMALL,
                 "--journal", str(journal)]) == 2
    assert "the workers train on the CPU" in capsys.readouterr().err
    assert not journal.exists()


@pytest.mark.processes
@pytest.mark.slow
def test_one_worker_and_two_give_the_same_seeded_sync_run(tmp_path, capsys):
    """The genetic algorithm's generations do not depend on how many candidates train at
    once: the journals agree apart from times and which worker trained what."""
    journals = []
    for workers in (1, 2):
        journal = tmp_path / f"w{workers}.db"
        assert main(["run", "--algorithm", "genetic", "--population", "4", "--budget", "8",
                     "--seed", "3", "--workers", str(workers), *SMALL,
                     "--journal", str(journal)]) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        noun = "worker processes" if workers > 1 else "worker process"
        assert f"{workers} {noun} on cpu; device sharing: cpu" in out
        journals.append(journal)
    drop = ("started", "ended", "train_time", "eval_time", "worker_rank", "told_before")
    one, two = (journal_rows(path, drop) for path in journals)
    assert one == two
    assert any(row["status"] == "ok" for row in one[0])
    with Journal(journals[1]) as journal:
        execution = journal.metadata()["execution"]
    assert execution["workers"] == 2 and execution["sharing"] == "cpu"
