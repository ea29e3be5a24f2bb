"""Journal: the SQLite record of a run (schema, round trip, resume checks, reads for reports)."""
import math
import sqlite3

import pytest

from nord.errors import JournalError
from nord.evaluators.result import EvaluationResult
from nord.journal import SCHEMA_VERSION, Journal, evaluation_result, list_runs


def run_metadata(**changes):
    run = {"algorithm": "random", "parameters": {"algorithm": "random", "seed": 3},
           "seed": 3, "space": {"space": "Toy", "lower": [1, 1], "upper": [6, 4]},
           "mode": "sync", "budget": 10, "ranks": 3, "groups": 3, "workers": 2,
           "worker_ranks": [1, 2], "dataset": {"name": "digits"}}
    run.update(changes)
    return run


def evaluation(sequence, accuracy=0.5, generation=0, status="ok", cached=False, **result):
    if status == "ok":
        res = EvaluationResult(accuracy=accuracy, loss=0.1, n_params=10 + sequence,
                               descriptor_hash=f"h{sequence}", **result)
    else:
        res = EvaluationResult.failure("ValueError: boom", f"h{sequence}")
    return {"sequence": sequence, "candidate": sequence, "generation": generation,
            "genome": (sequence, 2), "descriptor": '{"format": "x"}', "worker_rank": 1,
            "result": res, "cached": cached, "cached_from": 0 if cached else None,
            "started": 100.0 + sequence, "ended": 101.0 + sequence}


@pytest.fixture
def journal(tmp_path):
    with Journal(tmp_path / "run.db") as journal:
        journal.start(run_metadata())
        yield journal


def test_start_creates_a_wal_database_with_the_schema_version(tmp_path):
    path = tmp_path / "new" / "run.db"
    with Journal(path) as journal:
        assert journal.start(run_metadata()) is False
    connection = sqlite3.connect(str(path))
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert connection.execute("SELECT version FROM nord_schema").fetchone()[0] == SCHEMA_VERSION


def test_metadata_round_trips_and_records_versions(journal):
    meta = journal.metadata()
    assert (meta["algorithm"], meta["seed"], meta["worker_ranks"]) == ("random", 3, [1, 2])
    assert meta["space"]["upper"] == [6, 4]
    assert meta["status"] == "running"
    assert meta["versions"]["python"] and meta["versions"]["numpy"]


def test_evaluation_round_trips_every_result_field(journal):
    result = EvaluationResult(accuracy=0.75, loss=0.2, train_time=1.5, eval_time=0.25,
                              n_params=1234, epochs=3, descriptor_hash="abc",
                              reported_accuracy=0.7, metrics={"flops": 99, "curve": [0.1, 0.2]})
    journal.record_evaluation({**evaluation(0), "result": result})
    row = journal.evaluations()[0]
    assert evaluation_result(row) == result
    assert row["genome"] == [0, 2] and row["worker_rank"] == 1 and row["cached"] is False


def test_failed_result_reads_back_with_nan_accuracy(journal):
    journal.record_evaluation(evaluation(0, status="failed"))
    row = journal.evaluations()[0]
    assert math.isnan(row["accuracy"]) and row["status"] == "failed"
    assert row["error"] == "ValueError: boom"


def test_evaluations_are_ordered_by_sequence(journal):
    for sequence in (2, 0, 1):
        journal.record_evaluation(evaluation(sequence))
    assert [row["sequence"] for row in journal.evaluations()] == [0, 1, 2]


def test_a_sequence_cannot_be_recorded_twice(journal):
    journal.record_evaluation(evaluation(0))
    with pytest.raises(JournalError, match="already has"):
        journal.record_evaluation(evaluation(0))


def test_record_writes_candidates_and_evaluations_all_or_nothing(journal):
    journal.record_evaluation(evaluation(0))
    candidate = {"candidate": 1, "generation": 0, "genome": (1, 2), "told_before": 1}
    with pytest.raises(JournalError):
        journal.record([candidate], [evaluation(1), evaluation(0)])
    assert journal.count() == 1 and journal.candidates() == []


def test_candidates_round_trip(journal):
    journal.record_candidates([{"candidate": 0, "generation": 0, "genome": (1, 2), "told_before": 0},
                               {"candidate": 1, "generation": 0, "genome": (3, 4), "told_before": 0}])
    assert [(c["candidate"], c["genome"]) for c in journal.candidates()] == [(0, [1, 2]), (1, [3, 4])]


def test_best_is_the_highest_accuracy_among_ok_results(journal):
    for sequence, accuracy in enumerate([0.3, 0.9, 0.6]):
        journal.record_evaluation(evaluation(sequence, accuracy))
    journal.record_evaluation(evaluation(3, status="failed"))
    assert journal.best()["sequence"] == 1


def test_best_list_leaves_out_cached_repeats(journal):
    journal.record_evaluation(evaluation(0, 0.9))
    journal.record_evaluation(evaluation(1, 0.9, cached=True))
    journal.record_evaluation(evaluation(2, 0.5))
    assert [row["sequence"] for row in journal.best(count=3)] == [0, 2]


def test_generation_stats(journal):
    for sequence, (generation, accuracy) in enumerate([(0, 0.2), (0, 0.4), (1, 0.8), (1, 0.6)]):
        journal.record_evaluation(evaluation(sequence, accuracy, generation))
    journal.record_evaluation(evaluation(4, generation=1, status="failed"))
    first, second = journal.generation_stats()
    assert first["accuracy_mean"] == pytest.approx(0.3)
    assert (second["evaluations"], second["ok"], second["failed"]) == (3, 2, 1)
    assert second["best_so_far"] == pytest.approx(0.8)
    assert second["wall_time"] == pytest.approx(105.0 - 102.0)


def test_status_can_be_set(journal):
    journal.set_status("finished")
    assert journal.metadata()["status"] == "finished"


def test_unknown_status_is_refused(journal):
    with pytest.raises(JournalError, match="status"):
        journal.set_status("done")


def test_a_second_run_in_the_same_file_is_refused_without_resume(journal):
    with pytest.raises(JournalError, match="resume"):
        Journal(journal.path).start(run_metadata())


def test_resume_with_the_same_metadata_is_accepted(journal):
    other = Journal(journal.path)
    assert other.start(run_metadata(budget=50, workers=1), resume=True) is True
    assert other.metadata()["budget"] == 50 and other.metadata()["resumed"] == 1
    other.close()


@pytest.mark.parametrize("field, value", [
    ("algorithm", "evolution"),
    ("parameters", {"algorithm": "random", "seed": 3, "population": 9}),
    ("seed", 4),
    ("space", {"space": "Toy", "lower": [1, 1], "upper": [7, 4]}),
    ("mode", "async"),
])
def test_resume_with_different_metadata_names_the_field(journal, field, value):
    with pytest.raises(JournalError, match=f"field '{field}' differs"):
        Journal(journal.path).start(run_metadata(**{field: value}), resume=True)


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    path = tmp_path / "notes.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(JournalError, match="not a nord journal"):
        Journal(path).metadata()


def test_an_sqlite_database_of_something_else_is_refused(tmp_path):
    path = tmp_path / "other.db"
    sqlite3.connect(str(path)).execute("CREATE TABLE things (x)")
    with pytest.raises(JournalError, match="not a nord journal"):
        Journal(path).start(run_metadata())


def test_another_schema_version_is_refused(journal):
    journal._connection.execute("UPDATE nord_schema SET version = 99")
    journal.close()
    with pytest.raises(JournalError, match="schema version 99"):
        Journal(journal.path).metadata()


def test_reading_a_missing_file_does_not_create_it(tmp_path):
    with pytest.raises(JournalError, match="does not exist"):
        Journal(tmp_path / "missing.db").evaluations()
    assert not (tmp_path / "missing.db").exists()


def test_a_reader_sees_each_evaluation_as_soon_as_it_is_recorded(journal):
    journal.record_evaluation(evaluation(0))
    with Journal(journal.path) as reader:
        assert reader.count() == 1


def test_list_runs_finds_journals_and_skips_other_files(tmp_path):
    for name, seed in (("b.db", 1), ("a.db", 2)):
        with Journal(tmp_path / name) as journal:
            journal.start(run_metadata(seed=seed))
            journal.record_evaluation(evaluation(0, 0.25 * seed))
    (tmp_path / "junk.db").write_bytes(b"junk" * 100)
    runs = list_runs(tmp_path)
    assert [run["seed"] for run in runs] == [1, 2]  # oldest first
    assert runs[1]["best_accuracy"] == pytest.approx(0.5) and runs[1]["evaluations"] == 1


def test_list_runs_of_a_missing_directory_is_an_error(tmp_path):
    with pytest.raises(JournalError, match="not a directory"):
        list_runs(tmp_path / "nowhere")
