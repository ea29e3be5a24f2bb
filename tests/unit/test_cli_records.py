"""What `nord` does to a run's record when a run is refused, interrupted, exported or damaged,
tried as a user would: real processes, real signals, real files."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nord.app.cli import main
from nord.journal import Journal
from tests.helpers.disks import tmpfs
from tests.helpers.journals import journaled_evaluations
from tests.helpers.signals import default_sigint

REPO = Path(__file__).resolve().parents[2]
NORD = [sys.executable, "-m", "nord"]
RUN = ["run", "--algorithm", "random", "--epochs", "2", "--threads", "1",
       "--space-params", '{"channels": [1, 4], "kernel_size": [1, 3]}']
SLOW_RUN = [*RUN, "--budget", "500"]   # long enough to be still running when it is stopped


def nord(*args, timeout=120, cwd=None):
    return subprocess.run([*NORD, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd or REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))


def start(*args, cwd=None):
    return subprocess.Popen([*NORD, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd or REPO,
                            env=dict(os.environ, PYTHONPATH=str(REPO)),
                            preexec_fn=default_sigint)


def wait_for(journal, evaluations, process, timeout=90):
    deadline = time.monotonic() + timeout
    while journaled_evaluations(journal) < evaluations:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run recorded no evaluations in time"
        time.sleep(0.05)


@pytest.mark.processes
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_ends_the_run_cleanly_and_resume_finishes_it(tmp_path, signal_number):
    journal = tmp_path / "run.db"
    process = start(*RUN, "--budget", "24", "--journal", journal)
    wait_for(journal, 3, process)
    process.send_signal(signal_number)
    out, err = process.communicate(timeout=60)
    name = signal.Signals(signal_number).name
    assert process.returncode == 128 + signal_number, err   # 130 SIGINT, 143 SIGTERM, 129 SIGHUP
    assert "Traceback" not in err and err.count("\n") == 1
    assert f"interrupted by {name}" in err and f"nord resume {journal}" in err
    with Journal(journal) as record:
        assert record.state() == "interrupted" and record.metadata()["status_detail"] == name
        before = record.evaluations()
    assert main(["resume", str(journal)]) == 0    # resuming is no process's business: here
    with Journal(journal) as record:
        after = record.evaluations()
        assert record.state() == "finished" and len(after) == 24
    keep = ("candidate", "genome", "accuracy", "started")
    assert ([{k: r[k] for k in keep} for r in after[:len(before)]] ==
        [{k: r[k] for k in keep} for r in before])


@pytest.mark.processes
def test_resume_of_a_run_being_written_is_refused_at_once_naming_the_writer(tmp_path):
    journal = tmp_path / "run.db"
    process = start(*SLOW_RUN, "--journal", journal)
    try:
        wait_for(journal, 2, process)
        with Journal(journal) as record:
            resumed_before = record.metadata()["resumed"]
        started = time.monotonic()
        refused = nord("resume", journal)
        assert time.monotonic() - started < 10
        assert refused.returncode == 2
        assert f"pid {process.pid} on host" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr and refused.stderr.count("\n") == 1
        with Journal(journal) as record:
            assert record.metadata()["resumed"] == resumed_before
            assert record.state() == "running"
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)


def test_a_new_run_over_a_finished_journal_is_refused_in_one_line_without_a_change(tmp_path,
                                                                                   capsys):
    journal = tmp_path / "run.db"
    run = ["run", "--space", "nasbench201", "--budget", "5", "--journal", str(journal)]
    assert main(run) == 0
    before = journal.read_bytes()
    capsys.readouterr()
    assert main(run) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "already holds a run" in err and "left untouched" in err
    assert journal.read_bytes() == before


def test_resume_of_a_journal_that_does_not_exist_is_refused(tmp_path, capsys):
    typo = tmp_path / "typo.db"
    assert main(["run", "--space", "nasbench201", "--budget", "5", "--journal", str(typo),
                 "--resume"]) == 2
    assert "no journal at" in capsys.readouterr().err
    assert not typo.exists()


def test_a_run_without_a_journal_writes_one_to_a_path_it_prints(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--space", "nasbench201", "--algorithm", "rea", "--budget", "5"]) == 0
    written = list((tmp_path / "runs").glob("regularized_evolution-*.db"))
    assert len(written) == 1
    assert f"journal: {Path('runs') / written[0].name}" in capsys.readouterr().out


@pytest.mark.processes
def test_export_copies_a_live_run(tmp_path):
    journal = tmp_path / "run.db"
    process = start(*SLOW_RUN, "--journal", journal)
    try:
        wait_for(journal, 2, process)
        exported = nord("export", journal, tmp_path / "copy.db")
        assert exported.returncode == 0, exported.stderr
        with Journal(tmp_path / "copy.db") as copy:
            assert copy.count() >= 2 and copy.state() == "interrupted"
            assert "exported from" in copy.metadata()["status_detail"]
            # nobody writes the copy: resuming it does not wait for the original's writer
            assert copy.check_start(copy.run_record(), resume=True) is not None
        with Journal(journal) as original:
            assert original.metadata()["status"] == "running"
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)


def test_list_and_report_skip_a_damaged_journal_with_a_note(tmp_path, capsys):
    runs = tmp_path / "runs"
    for name in ("good", "deeper/other", "damaged"):
        assert main(["run", "--space", "nasbench201", "--budget", "6", "--journal",
                     str(runs / f"{name}.db")]) == 0
    damaged = runs / "damaged.db"
    data = bytearray(damaged.read_bytes())
    at = data.find(b'"lower"')
    data[at:at + 8] = b"\xff" * 8
    damaged.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["list", str(runs)]) == 0
    listing = capsys.readouterr()
    assert "good.db" in listing.out and "other.db" in listing.out
    assert listing.err.count("\n") == 1 and f"skipped {damaged}" in listing.err
    assert "damaged" in listing.err and "Traceback" not in listing.err
    assert main(["list", str(runs / "good.db")]) == 0
    capsys.readouterr()
    assert main(["report", str(runs), "--out", str(tmp_path / "report")]) == 0
    assert f"skipped {damaged}" in capsys.readouterr().err
    assert main(["resume", str(damaged)]) == 2
    assert f"'{damaged}' is damaged" in capsys.readouterr().err


def test_advice_about_a_file_that_is_not_a_journal_fits_the_command(tmp_path, capsys):
    from nord.app.cli import main
    junk = tmp_path / "junk.db"
    junk.write_text("not a database")
    assert main(["resume", str(junk)]) == 2
    said = capsys.readouterr().err
    assert said.startswith("nord resume: ") and "not a nord journal" in said
    assert "new path to start a run" not in said
    assert main(["run", "--space", "nasbench201", "--budget", "2", "--journal", str(junk)]) == 2
    said = capsys.readouterr().err
    assert said.startswith("nord run: ") and said.rstrip().endswith("or a new path to start a run")
    assert junk.read_text() == "not a database"


def test_compare_stopped_between_two_runs_says_so_too(monkeypatch, capsys):
    """The signal may come while no seed's search runs (between seeds, or building the
    table): still one line, exit 130."""
    import nord.comparisons.compare as compare

    def interrupted_between_runs(*args, **kwargs):
        signal.raise_signal(signal.SIGINT)
        raise AssertionError("SIGINT did not stop the comparison")

    monkeypatch.setattr(compare, "run_comparison", interrupted_between_runs)
    # SIGINT as on a terminal (a suite started in the background inherits it ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = main(["compare", "--seeds", "2", "--budget", "5"])
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # given back
    except KeyboardInterrupt:
        pytest.fail("nord compare let a KeyboardInterrupt out")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code == 130
    err = capsys.readouterr().err
    assert err.startswith("nord compare: interrupted by SIGINT; nothing was printed or saved")


@pytest.mark.processes
def test_compare_stopped_by_ctrl_c_prints_and_saves_the_seeds_that_finished(tmp_path):
    """Progress comes in steps of at most 25 seeds; Ctrl-C after some of them keeps them."""
    process = subprocess.Popen(
        [*NORD, "compare", "--algorithms", "rea", "--seeds", "20000", "--budget", "100",
         "--processes", "1", "--json", str(tmp_path / "out.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)), preexec_fn=default_sigint)
    try:
        first = process.stderr.readline()   # 20,000 runs take minutes
        said = int(first.split(":")[1].split("/")[0])
        assert first.strip().startswith("rea:") and said < 20000, first
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("nord compare: interrupted by SIGINT; the "
                                                   "table and --json hold the seeds that finished")
    assert "Traceback" not in err and "interrupted by SIGINT: only the seeds that finished" in out
    saved = json.loads((tmp_path / "out.json").read_text())
    finished = len(saved["algorithms"]["rea"]["runs"])
    assert saved["interrupted"] == "SIGINT" and said <= finished < 20000 and finished % 25 == 0


@pytest.mark.processes
def test_a_journal_on_a_read_only_file_system_is_read_and_refuses_a_resume(tmp_path, capsys):
    """Reading commands open the file read-only and work; resume says the file is read-only."""
    with tmpfs(tmp_path / "disk", "size=4m") as disk:
        journal = disk / "run.db"
        assert main(["run", "--space", "nasbench201", "--algorithm", "random", "--budget", "3",
                     "--journal", str(journal)]) == 0
        capsys.readouterr()
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        before = {name: (disk / name).read_bytes() for name in os.listdir(disk)}
        assert main(["list", str(disk)]) == 0
        out = capsys.readouterr().out
        assert "run.db" in out and "no run journals" not in out
        assert main(["config", str(journal)]) == 0
        assert 'algorithm = "random"' in capsys.readouterr().out
        assert main(["report", str(journal), "--out", str(tmp_path / "report")]) == 0
        assert (tmp_path / "report").is_dir()
        assert main(["export", str(journal), str(tmp_path / "copy.db")]) == 0
        with Journal(tmp_path / "copy.db") as copy:
            assert copy.count() == 3
        capsys.readouterr()
        assert main(["resume", str(journal), "--budget", "5"]) == 2
        err = capsys.readouterr().err
        assert "the file is read-only" in err and "nord export" in err
        assert {name: (disk / name).read_bytes() for name in os.listdir(disk)} == before


@pytest.mark.processes
@pytest.mark.parametrize("command", [["list"], ["data", "list"]])
def test_a_listing_whose_reader_goes_away_ends_quietly(tmp_path, command):
    """`nord list runs | head -2`: no 'Broken pipe' error, the status a shell gives SIGPIPE."""
    assert main(["run", "--space", "nasbench201", "--algorithm", "random", "--budget", "2",
                 "--journal", str(tmp_path / "run.db")]) == 0
    args = [*command, str(tmp_path)] if command == ["list"] else [*command, "--root",
                                                                  str(tmp_path)]
    process = subprocess.Popen([*NORD, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    process.stdout.close()
    _, err = process.communicate(timeout=60)
    assert process.returncode == 141 and err == "", err


def test_a_report_of_a_mixed_folder_skips_what_it_cannot_read_and_says_what_differs(
        tmp_path, capsys):
    """A journal that lost a table is left out with a note, not the end of the report;
    journals named *.sqlite or without an extension are found by their content; runs that
    measure different things are said to."""
    folder = tmp_path / "runs"
    assert main(["run", "--space", "nasbench201", "--algorithm", "random", "--budget", "2",
                 "--journal", str(folder / "table.sqlite")]) == 0
    assert main(["run", "--algorithm", "random", "--budget", "1", "--epochs", "1", "--threads",
                 "1", "--space-params", '{"layers": 1, "channels": [2, 4]}',
                 "--journal", str(folder / "digits")]) == 0
    assert main(["run", "--space", "nasbench201", "--algorithm", "random", "--budget", "2",
                 "--journal", str(folder / "damaged.db")]) == 0
    connection = sqlite3.connect(str(folder / "damaged.db"))
    connection.execute("DROP TABLE epochs")
    connection.close()
    (folder / "notes.txt").write_text("not a journal\n")
    capsys.readouterr()
    assert main(["list", str(folder)]) == 0
    listed = capsys.readouterr().out
    assert "table.sqlite" in listed and "digits" in listed and "notes.txt" not in listed
    assert main(["report", str(folder), "--out", str(tmp_path / "report")]) == 0
    captured = capsys.readouterr()
    assert f"skipped {folder / 'damaged.db'}" in captured.err
    assert "these runs measure different things" in captured.err
    page = (tmp_path / "report" / "report.md").read_text()
    assert "table" in page and "digits" in page
    assert "digits, trained by the run" in page and "cifar10, NAS-Bench-201's table" in page


PLUGIN = '''
from nord.search.algorithms import register_algorithm
from nord.search.algorithms.random_search import RandomSearch


@register_algorithm("coin_search", description="a user's own algorithm, from a plug-in")
class CoinSearch(RandomSearch):
    """Random search under another name: what matters is where it comes from."""
'''


@pytest.mark.processes
def test_a_plugin_module_given_to_nord_run_is_recorded_and_imported_again(tmp_path):
    """--plugin imports the user's code; resume and config import it from the journal; a
    journal whose plug-in cannot be imported still shows its settings."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "myplug.py").write_text(PLUGIN)
    journal = tmp_path / "run.db"

    def nord_with(path, *args):
        return subprocess.run([*NORD, *map(str, args)], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path,
                              env=dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, path))))

    with_code = (REPO, code)
    done = nord_with(with_code, "run", "--plugin", "myplug", "--algorithm", "coin_search",
                     "--space", "nasbench201", "--budget", "2", "--journal", journal)
    assert done.returncode == 0, done.stderr
    done = nord_with(with_code, "resume", journal, "--budget", "3")
    assert done.returncode == 0, done.stderr
    with Journal(journal) as record:
        assert record.count() == 3 and record.metadata()["config"]["plugins"] == ["myplug"]
        assert record.metadata()["config"]["algorithm"] == "coin_search"
    done = nord_with((REPO,), "config", journal)   # the plug-in is not importable here
    assert done.returncode == 0 and 'algorithm = "coin_search"' in done.stdout
    assert "plugins = [" in done.stdout and "myplug" in done.stdout
    assert "cannot import the plug-in module 'myplug'" in done.stderr
    done = nord_with((REPO,), "resume", journal, "--budget", "4")
    assert done.returncode == 2 and "cannot import the plug-in module 'myplug'" in done.stderr
    done = nord_with((REPO,), "run", "--algorithm", "coin_search", "--space", "nasbench201")
    assert done.returncode == 2 and "--plugin" in done.stderr


@pytest.mark.processes
@pytest.mark.slow
def test_ctrl_c_stops_the_deepest_conv_space_while_it_trains(tmp_path):
    """The deepest chain ConvSpace builds is slow to train: Ctrl-C still ends it at once."""
    from nord.search.spaces.conv import MAX_LAYERS
    journal = tmp_path / "deep.db"
    process = start("run", "--algorithm", "random", "--epochs", "20", "--threads", "1",
                    "--budget", "2", "--space-params", json.dumps({"layers": MAX_LAYERS}),
                    "--journal", journal)
    deadline = time.monotonic() + 120
    while True:   # the first network was handed out: it is being built or trained
        try:
            with Journal(journal) as record:
                if record.attempts():
                    break
        except Exception:  # noqa: BLE001 - not yet a journal
            pass
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run handed out no network in time"
        time.sleep(0.2)
    time.sleep(1.0)
    stopped = time.monotonic()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert time.monotonic() - stopped < 15, "Ctrl-C took too long"
    assert "interrupted by SIGINT" in err
    with Journal(journal) as record:
        assert record.state() == "interrupted" and record.count() == 0


def test_list_says_how_far_a_weight_sharing_search_got_and_its_cell(tmp_path, capsys):
    from tests.helpers.journals import search_epoch, search_journal
    live = search_journal(tmp_path / "live.db", 2, of=5, finish=False)
    search_journal(tmp_path / "done.db", 3, of=3)
    search_journal(tmp_path / "unplanned.db", 1)
    assert main(["list", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    said = {line.split()[0]: lines[index + 1] for index, line in enumerate(lines)
            if line.endswith(".db") or ".db " in line}
    assert said[str(tmp_path / "live.db")] == (
        f"  weight-sharing search: 2 of 5 search epochs; its latest cell {search_epoch(2).cell}")
    assert said[str(tmp_path / "done.db")] == (
        f"  weight-sharing search: 3 of 3 search epochs; its final cell {search_epoch(3).cell}")
    assert "1 of ? search epochs" in said[str(tmp_path / "unplanned.db")]
    live.finish("finished", "")
    live.close()
    search_journal(tmp_path / "other.db", 0)      # no epoch yet: nothing to say
    assert main(["list", str(tmp_path / "other.db")]) == 0
    assert "weight-sharing" not in capsys.readouterr().out
