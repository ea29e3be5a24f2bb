"""Journal: the SQLite record of a run (schema, round trip, resume policy, writers, the file
on disk, damage, reads for reports)."""
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

from nord.errors import DiskFullError, JournalError, JournalInUseError
from nord.evaluators.result import EvaluationResult
from nord.journal import (HEARTBEAT_SECONDS, SCHEMA_VERSION, CandidateRecord, EvaluationRecord,
                          Journal, RunRecord, Writer, evaluation_result, list_runs)
from nord.report.runs import generation_stats


def record(**changes):
    values = dict(algorithm="random", parameters={"algorithm": "random", "seed": 3}, seed=3,
                  space={"space": "Toy", "lower": [1, 1], "upper": [6, 4]},
                  evaluator={"evaluator": "Toy", "epochs": 1}, dataset={"name": "digits"},
                  mode="sync", batch_size=2, budget=10,
                  execution={"ranks": 3, "groups": 3, "workers": 2, "worker_ranks": [1, 2]},
                  config={"epochs": 1})
    values.update(changes)
    return RunRecord(**values)


def evaluation(sequence, accuracy=0.5, generation=0, status="ok", cached=False, **result):
    if status == "ok":
        res = EvaluationResult(accuracy=accuracy, loss=0.1, n_params=10 + sequence, **result)
    else:
        res = EvaluationResult.failure("ValueError: boom")
    return EvaluationRecord(sequence, sequence, generation, (sequence, 2), f"h{sequence}",
                            '{"format": "x"}', 1, res, 0 if cached else None,
                            100.0 + sequence, 101.0 + sequence)


@pytest.fixture
def journal(tmp_path):
    with Journal(tmp_path / "run.db") as journal:
        journal.start(record())
        yield journal


def finished(path, **changes):
    """A journal at ``path`` holding a finished run of ``record(**changes)``."""
    with Journal(path) as journal:
        journal.start(record(**changes))
        journal.record([], [evaluation(0)])
        journal.finish("finished")
    return path


def file_bytes(path):
    return {name: (path.parent / name).read_bytes()
            for name in os.listdir(path.parent) if name.startswith(path.name)}


# --- schema and round trips --------------------------------------------------------------------
def test_start_creates_a_wal_database_with_the_schema_version(tmp_path):
    path = tmp_path / "new" / "run.db"
    with Journal(path) as journal:
        assert journal.start(record()) is None
    connection = sqlite3.connect(str(path))
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert connection.execute("SELECT version FROM nord_schema").fetchone()[0] == SCHEMA_VERSION


def test_the_writer_commits_without_waiting_for_the_disk(tmp_path):
    """synchronous=NORMAL is a setting of each connection, not of the file: in WAL mode a
    commit then survives the process's death without an fsync (FULL costs ~0.4 ms each)."""
    with Journal(tmp_path / "run.db") as journal:
        journal.start(record())
        assert journal._open().execute("PRAGMA synchronous").fetchone()[0] == 1   # NORMAL


def test_metadata_round_trips_and_records_versions(journal):
    meta = journal.metadata()
    assert (meta["algorithm"], meta["seed"], meta["worker_ranks"]) == ("random", 3, [1, 2])
    assert meta["space"]["upper"] == [6, 4] and meta["config"] == {"epochs": 1}
    assert meta["status"] == "running" and journal.state() == "running"
    assert meta["versions"]["python"] and meta["versions"]["numpy"]
    assert journal.run_record() == record()


def test_evaluation_round_trips_every_result_field(journal):
    result = EvaluationResult(accuracy=0.75, loss=0.2, train_time=1.5, eval_time=0.25,
                              n_params=1234, epochs=3, reported_accuracy=0.7,
                              metrics={"flops": 99, "curve": [0.1, 0.2]})
    base = evaluation(0)
    base.result = result
    journal.record([], [base])
    row = journal.evaluations()[0]
    assert evaluation_result(row) == result
    assert row["genome"] == [0, 2] and row["worker_rank"] == 1 and row["cached"] is False
    assert row["key"] == "h0"


def test_keys_keep_their_type(journal):
    first, second = evaluation(0), evaluation(1)
    first.key, second.key = 1234, "abc"
    journal.record([], [first, second])
    assert [row["key"] for row in journal.evaluations()] == [1234, "abc"]


def test_failed_result_reads_back_with_nan_accuracy(journal):
    journal.record([], [evaluation(0, status="failed")])
    row = journal.evaluations()[0]
    assert math.isnan(row["accuracy"]) and row["status"] == "failed"
    assert row["error"] == "ValueError: boom"


def test_a_nan_metric_is_stored_as_standard_json(journal):
    base = evaluation(0)
    base.result.metrics = {"train_loss": float("nan")}
    journal.record([], [base])
    stored = journal._connection.execute("SELECT metrics FROM evaluations").fetchone()[0]
    assert json.loads(stored) == {"train_loss": None} and "NaN" not in stored


def test_evaluations_are_ordered_by_sequence(journal):
    journal.record([], [evaluation(sequence) for sequence in (2, 0, 1)])
    assert [row["sequence"] for row in journal.evaluations()] == [0, 1, 2]


def test_a_sequence_cannot_be_recorded_twice(journal):
    journal.record([], [evaluation(0)])
    with pytest.raises(JournalError, match="already has"):
        journal.record([], [evaluation(0)])


def test_record_writes_candidates_and_evaluations_all_or_nothing(journal):
    journal.record([], [evaluation(0)])
    with pytest.raises(JournalError):
        journal.record([CandidateRecord(1, 0, (1, 2), 1)], [evaluation(1), evaluation(0)])
    assert journal.count() == 1 and journal.candidates() == []


def test_candidates_round_trip(journal):
    journal.record([CandidateRecord(0, 0, (1, 2), 0), CandidateRecord(1, 0, (3, 4), 0)])
    assert [(c["candidate"], c["genome"]) for c in journal.candidates()] == [(0, [1, 2]), (1, [3, 4])]


def test_best_is_the_highest_accuracy_among_ok_results(journal):
    journal.record([], [evaluation(s, a) for s, a in enumerate([0.3, 0.9, 0.6])]
                   + [evaluation(3, status="failed")])
    assert journal.best()["sequence"] == 1


def test_best_list_leaves_out_cached_repeats(journal):
    journal.record([], [evaluation(0, 0.9), evaluation(1, 0.9, cached=True), evaluation(2, 0.5)])
    assert [row["sequence"] for row in journal.best(count=3)] == [0, 2]


def test_generation_stats(journal):
    journal.record([], [evaluation(s, a, g) for s, (g, a) in
                        enumerate([(0, 0.2), (0, 0.4), (1, 0.8), (1, 0.6)])]
                   + [evaluation(4, generation=1, status="failed")])
    first, second = generation_stats(journal)
    assert first["accuracy_mean"] == pytest.approx(0.3)
    assert (second["evaluations"], second["ok"], second["failed"]) == (3, 2, 1)
    assert second["best_so_far"] == pytest.approx(0.8)
    assert second["wall_time"] == pytest.approx(105.0 - 102.0)


# --- status and the writer ---------------------------------------------------------------------
@pytest.mark.parametrize("status", ["finished", "interrupted", "failed", "crashed"])
def test_finish_marks_the_status_and_releases_the_run(journal, status):
    journal.finish(status, "a detail")
    meta = journal.metadata()
    assert (meta["status"], meta["status_detail"], meta["writer"]) == (status, "a detail", None)
    assert journal.state() == status and journal.writer() is None


def test_unknown_status_is_refused(journal):
    with pytest.raises(JournalError, match="status"):
        journal.finish("done")


def test_closing_without_a_status_says_crashed(tmp_path):
    with Journal(tmp_path / "run.db") as journal:
        journal.start(record())
    with Journal(tmp_path / "run.db") as reader:
        assert reader.state() == "crashed"


def test_the_writer_is_this_process_while_it_writes(journal):
    writer = journal.writer()
    assert writer is not None and writer.pid == os.getpid()


@pytest.mark.processes
def test_a_killed_writer_leaves_a_killed_run_that_can_be_resumed(tmp_path):
    path = tmp_path / "run.db"
    program = (f"import os; from nord.journal import Journal; from tests.unit.test_journal import "
               f"record; j = Journal({str(path)!r}); j.start(record()); os._exit(9)")
    subprocess.run([sys.executable, "-c", program], check=False,
                   cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    with Journal(path) as journal:
        assert journal.metadata()["status"] == "running"
        assert journal.state() == "killed" and journal.writer() is None
        assert journal.start(record(), resume=True) is not None


def test_a_writer_on_another_host_is_alive_while_its_heartbeat_is_fresh():
    elsewhere = Writer("another-host", 1, 1, "other-boot")
    now = time.time()
    assert elsewhere.alive(now - HEARTBEAT_SECONDS, now)
    assert not elsewhere.alive(now - 4 * HEARTBEAT_SECONDS, now)


def test_a_reused_pid_is_not_taken_for_the_writer():
    here = Writer.this_process()
    assert here.alive(None)
    assert not here._replace(started=(here.started or 0) + 1).alive(None)


# --- refusals touch nothing ---------------------------------------------------------------------
def test_a_second_run_in_the_same_file_is_refused_and_the_file_is_untouched(tmp_path):
    path = finished(tmp_path / "run.db")
    before = file_bytes(path)
    with Journal(path) as refused, pytest.raises(JournalError,
                                                 match="already holds a run.*left untouched"):
        refused.start(record())
    assert file_bytes(path) == before
    with Journal(path) as journal:
        assert journal.state() == "finished"


def test_resume_of_a_live_run_names_its_writer_and_touches_nothing(journal):
    journal.record([], [evaluation(0)])
    before = journal.metadata()
    with pytest.raises(JournalInUseError, match=f"pid {os.getpid()} on host"):
        Journal(journal.path).start(record(), resume=True)
    after = journal.metadata()
    assert ((after["resumed"], after["status"], after["updated"]) ==
        (before["resumed"], before["status"], before["updated"]))


def test_resume_of_a_missing_journal_is_refused_and_creates_nothing(tmp_path):
    with pytest.raises(JournalError, match="no journal at .* to resume"):
        Journal(tmp_path / "typo.db").start(record(), resume=True)
    assert not (tmp_path / "typo.db").exists()


def test_resume_with_the_same_run_is_accepted_and_remembers_the_budget(tmp_path):
    path = finished(tmp_path / "run.db")
    with Journal(path) as journal:
        stored = journal.start(record(budget=50, execution={"workers": 1}), resume=True)
        assert stored.budget == 10
        meta = journal.metadata()
        assert (meta["budget"], meta["resumed"], meta["workers"]) == (50, 1, 1)


def test_resume_with_a_budget_below_the_evaluations_held_is_refused_and_touches_nothing(tmp_path):
    path = tmp_path / "run.db"
    with Journal(path) as journal:
        journal.start(record())
        journal.record([], [evaluation(0), evaluation(1), evaluation(2)])
        journal.finish("finished")
    before = file_bytes(path)
    with Journal(path) as journal, pytest.raises(
            JournalError, match="budget of 2: it already holds 3 evaluations.*at least 3 "
                                "\\(its own was 10\\)"):
        journal.start(record(budget=2), resume=True)
    assert file_bytes(path) == before
    with Journal(path) as journal:
        assert journal.start(record(budget=3), resume=True).budget == 10


def test_resume_counts_the_candidates_in_flight_in_the_budget_it_needs(tmp_path):
    path = tmp_path / "run.db"
    with Journal(path) as journal:
        journal.start(record())
        journal.record([CandidateRecord(n, 0, (1, n + 1), 0) for n in range(4)],
                       [evaluation(0), evaluation(1)])
        journal.finish("interrupted")
    with Journal(path) as journal, pytest.raises(
            JournalError, match="holds 2 evaluations and 2 candidates proposed, which a resume "
                                "evaluates first.*at least 4"):
        journal.start(record(budget=3), resume=True)
    with Journal(path) as journal:
        assert journal.start(record(budget=4), resume=True) is not None


@pytest.mark.parametrize("resume", [False, True])
def test_a_folder_given_as_journal_is_refused_naming_a_file_path(tmp_path, resume):
    folder = tmp_path / "runs.db"
    folder.mkdir()
    with pytest.raises(JournalError, match="is a folder, not a journal file; give a file path, "
                                           "e.g. '.*runs.db/run.db'"):
        Journal(folder).start(record(), resume=resume)
    assert list(folder.iterdir()) == []


def test_a_journal_that_cannot_be_created_says_so(tmp_path):
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    with pytest.raises(JournalError, match="cannot create a journal at .*notes.txt/run.db.*"
                                           "folder this process can write"):
        Journal(tmp_path / "notes.txt" / "run.db").start(record())


def test_resume_without_a_batch_size_takes_the_journals(tmp_path):
    path = finished(tmp_path / "run.db")
    with Journal(path) as journal:
        assert journal.start(record(batch_size=None), resume=True).batch_size == 2


@pytest.mark.parametrize("field, value", [
    ("algorithm", "evolution"),
    ("parameters.population", {"algorithm": "random", "seed": 3, "population": 9}),
    ("seed", 4),
    ("space.upper", {"space": "Toy", "lower": [1, 1], "upper": [7, 4]}),
    ("evaluator.epochs", {"evaluator": "Toy", "epochs": 3}),
    ("mode", "async"),
    ("batch_size", 3),
    ("config.epochs", {"epochs": 2}),
])
def test_resume_with_a_different_run_names_the_field_and_touches_nothing(tmp_path, field, value):
    path = finished(tmp_path / "run.db")
    before = file_bytes(path)
    with Journal(path) as refused, pytest.raises(JournalError, match=f"its run has {field}="):
        refused.start(record(**{field.split(".")[0]: value}), resume=True)
    assert file_bytes(path) == before


# --- the file on disk ---------------------------------------------------------------------------
def test_the_main_file_alone_holds_every_committed_evaluation(tmp_path):
    """People copy RUN.db, not its -wal: a copy of the .db alone, taken while the writer
    still runs (as after kill -9), holds every evaluation committed, at once."""
    path = tmp_path / "run.db"
    with Journal(path) as journal:
        journal.start(record())
        for sequence in range(3):
            journal.record([], [evaluation(sequence)])
            assert os.path.exists(f"{path}-wal")          # the writer still holds the WAL
            shutil.copy(path, tmp_path / f"copy{sequence}.db")
            with Journal(tmp_path / f"copy{sequence}.db") as copy:
                assert copy.count() == sequence + 1
                assert copy.metadata()["recorded_results"] == sequence + 1


def test_a_resume_of_a_file_that_lost_results_its_run_recorded_is_refused(tmp_path):
    """A file whose run says it had more results than it holds (rows lost with a -wal left
    behind) is refused on resume, saying so, instead of silently starting over."""
    path = finished(tmp_path / "run.db")
    with Journal(path) as journal:
        journal.start(record(), resume=True)
        journal.record([], [evaluation(1), evaluation(2)])
        journal.finish("interrupted")
    connection = sqlite3.connect(str(path))
    with connection:   # what a copy made without its -wal loses
        connection.execute("DELETE FROM evaluations WHERE sequence > 0")
    connection.close()
    before = file_bytes(path)
    with Journal(path) as journal:
        with pytest.raises(JournalError, match="recorded 3 results, but the file holds 1"):
            journal.start(record(), resume=True)
    assert file_bytes(path) == before


def test_export_copies_a_live_run_consistently(journal, tmp_path):
    journal.record([], [evaluation(0), evaluation(1)])
    out = journal.export(tmp_path / "backup" / "copy.db")
    with Journal(out) as copy:
        assert copy.count() == 2 and copy.metadata()["algorithm"] == "random"
    with pytest.raises(JournalError, match="exists already"):
        journal.export(out)


def test_a_full_disk_is_a_clear_error_and_the_journal_stays_readable(journal):
    journal.record([], [evaluation(0)])
    pages = journal._connection.execute("PRAGMA page_count").fetchone()[0]
    journal._connection.execute(f"PRAGMA max_page_count = {pages}")
    big = evaluation(1)
    big.result.error = "x" * 200_000
    with pytest.raises(DiskFullError, match="full .* free.*nord resume"):
        journal.record([], [big])
    with Journal(journal.path) as reader:
        assert reader.count() == 1


# --- damage and foreign files -------------------------------------------------------------------
def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    path = tmp_path / "notes.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(JournalError, match="not a nord journal"):
        Journal(path).metadata()


def test_an_sqlite_database_of_something_else_is_refused(tmp_path):
    path = tmp_path / "other.db"
    sqlite3.connect(str(path)).execute("CREATE TABLE things (x)")
    with pytest.raises(JournalError, match="not a nord journal"):
        Journal(path).start(record())


def test_an_empty_database_is_refused_as_a_journal_perhaps_being_created(tmp_path):
    path = tmp_path / "new.db"
    sqlite3.connect(str(path)).execute("PRAGMA journal_mode=WAL")   # as a new journal starts
    with pytest.raises(JournalError, match=r"not a nord journal: an SQLite database without "
                                           r"tables \(a journal is one only while a run "
                                           r"creates it: if one is starting, try again\)"):
        Journal(path).count()


def test_another_schema_version_is_refused(journal):
    journal._connection.execute("UPDATE nord_schema SET version = 99")
    journal.finish("finished")
    journal.close()
    with pytest.raises(JournalError, match="schema version 99"):
        Journal(journal.path).metadata()


def test_a_damaged_run_row_is_a_clear_error_naming_the_file(tmp_path):
    path = finished(tmp_path / "run.db")
    data = bytearray(path.read_bytes())
    at = data.find(b'"upper"')
    assert at > 0
    data[at:at + 8] = b"\xff" * 8
    path.write_bytes(bytes(data))
    with pytest.raises(JournalError, match=f"'{path}' is damaged"):
        Journal(path).metadata()
    runs, skipped = list_runs(tmp_path)
    assert runs == [] and skipped[0][0] == path and "damaged" in skipped[0][1]


def test_reading_a_missing_file_does_not_create_it(tmp_path):
    with pytest.raises(JournalError, match="does not exist"):
        Journal(tmp_path / "missing.db").evaluations()
    assert not (tmp_path / "missing.db").exists()


def test_a_reader_sees_each_evaluation_as_soon_as_it_is_recorded(journal):
    journal.record([], [evaluation(0)])
    with Journal(journal.path) as reader:
        assert reader.count() == 1


# --- journals of the first schema ----------------------------------------------------------------
_SCHEMA_1 = """
CREATE TABLE nord_schema (version INTEGER NOT NULL, created REAL NOT NULL);
CREATE TABLE run (id INTEGER PRIMARY KEY, algorithm TEXT, parameters TEXT, seed TEXT, space TEXT,
    evaluator TEXT, dataset TEXT, ranks INTEGER, groups INTEGER, workers INTEGER,
    worker_ranks TEXT, mode TEXT, batch_size INTEGER, budget INTEGER, versions TEXT, extra TEXT,
    created REAL, updated REAL, status TEXT, resumed INTEGER);
CREATE TABLE candidates (candidate INTEGER PRIMARY KEY, generation INTEGER, genome TEXT,
    told_before INTEGER, asked REAL);
CREATE TABLE evaluations (sequence INTEGER PRIMARY KEY, candidate INTEGER, generation INTEGER,
    genome TEXT, descriptor TEXT, descriptor_hash TEXT, worker_rank INTEGER, accuracy REAL,
    loss REAL, train_time REAL, eval_time REAL, n_params INTEGER, epochs INTEGER, status TEXT,
    error TEXT, reported_accuracy REAL, metrics TEXT, cached INTEGER, cached_from INTEGER,
    started REAL, ended REAL);
INSERT INTO nord_schema VALUES (1, 0);
INSERT INTO run VALUES (1, 'random', '{}', '0', '{}', '{}', '{"name": "digits"}', 2, 2, 1, '[1]',
    'sync', 1, 3, '{}', '{"config": {"algorithm": "random"}}', 1, 2, 'finished', 0);
INSERT INTO evaluations VALUES (0, 0, 0, '[1]', NULL, 'abc', 1, 0.5, 0.1, 1, 1, 10, 1, 'ok', '',
    NULL, '{}', 0, NULL, 1, 2);
INSERT INTO evaluations VALUES (1, 1, 0, '[1]', NULL, 'abc', NULL, 0.5, 0.1, 1, 1, 10, 1, 'ok', '',
    NULL, '{}', 1, 0, 1, 2);
"""


def test_a_journal_of_the_first_schema_can_be_read_but_not_resumed(tmp_path):
    path = tmp_path / "old.db"
    sqlite3.connect(str(path)).executescript(_SCHEMA_1)
    with Journal(path) as journal:
        meta = journal.metadata()
        assert (meta["algorithm"], meta["workers"], meta["worker_ranks"]) == ("random", 1, [1])
        rows = journal.evaluations()
        assert [row["key"] for row in rows] == ["abc", "abc"]
        assert [row["cached"] for row in rows] == [False, True]
        assert journal.summary()["cached"] == 1
        with pytest.raises(JournalError, match="older nord"):
            journal.check_start(record(), resume=True)


# --- listing ------------------------------------------------------------------------------------
def test_list_runs_finds_journals_in_sub_folders_and_notes_other_files(tmp_path):
    for name, seed in (("b.db", 1), ("deeper/a.db", 2)):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        with Journal(tmp_path / name) as journal:
            journal.start(record(seed=seed))
            journal.record([], [evaluation(0, 0.25 * seed)])
            journal.finish("finished")
    (tmp_path / "junk.db").write_bytes(b"junk" * 100)
    runs, skipped = list_runs(tmp_path)
    assert [run["seed"] for run in runs] == [1, 2]  # oldest first
    assert runs[1]["best_accuracy"] == pytest.approx(0.5) and runs[1]["evaluations"] == 1
    assert [path.name for path, _ in skipped] == ["junk.db"]
    assert list_runs(tmp_path / "b.db")[0][0]["seed"] == 1


def test_list_runs_of_a_missing_path_is_an_error(tmp_path):
    with pytest.raises(JournalError, match="does not exist"):
        list_runs(tmp_path / "nowhere")


@pytest.mark.processes
def test_a_killed_writer_not_yet_reaped_by_its_parent_is_not_alive():
    # a rank killed by a lost launcher lingers as a zombie until someone reaps it: it can
    # write nothing more, so its run must read as killed, not running
    import signal
    import subprocess
    import time

    from pathlib import Path

    from nord.journal.writers import Writer, _process_start
    child = subprocess.Popen(["sleep", "60"])
    try:
        here = Writer.this_process()
        writer = Writer(here.host, child.pid, _process_start(child.pid), here.boot)
        assert writer.started is not None and writer.alive(heartbeat=None)
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not writer.alive(heartbeat=time.time())   # a fresh heartbeat does not matter here
    finally:
        child.kill()
        child.wait()


def test_a_commit_of_another_connection_mid_record_does_not_fail_the_write(journal):
    # record() reads (is this epoch new?) before it writes, and holds the write lock for the
    # whole commit: no other connection (the heartbeat thread's) commits in between, which
    # can make SQLite refuse the write at once ('database is locked' under mpirun, at load 10)
    from nord.evaluators.result import EpochRecord
    journal.record([], [evaluation(0)])
    other = sqlite3.connect(str(journal.path), timeout=0.2, isolation_level=None)
    raced = []

    def between(statement):
        if statement.startswith("INSERT OR REPLACE INTO epochs") and not raced:
            try:
                other.execute("UPDATE run SET heartbeat = heartbeat WHERE id = 1")
                raced.append("committed")
            except sqlite3.OperationalError:   # the writer holds the lock: the beat waits
                raced.append("waited")

    connection = journal._open()
    connection.set_trace_callback(between)
    try:
        journal.record(epochs=[(0, EpochRecord(1, 0.5, 0.5, 0.5, 1.0), 0)])
    finally:
        connection.set_trace_callback(None)
        other.close()
    assert raced == ["waited"]
    assert [row["epoch"] for row in journal.epochs()] == [1]
