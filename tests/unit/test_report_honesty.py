"""What the report says about a run's protocol and state: search signal against reported
(test) accuracy, selection on test data, and a run killed with kill -9."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from nord.report import write_report
from nord.report.protocol import protocol_of
from nord.app.evaluation import TEST_SELECTION, evaluation_of
from nord.app.settings import RunConfig
from tests.helpers.journals import ev, write_journal

VALIDATION_DATASET = {"name": "digits", "n_valid": 142,
                      "validation": {"fraction": 0.1, "n_valid": 142}}
TEST_DATASET = {"name": "digits", "n_valid": 0, "validation": {"fraction": 0.0, "n_valid": 0}}
EVALUATOR = {"evaluator": "LocalEvaluator", "signal": "validation accuracy",
             "reported": "test accuracy"}
RUNS = [[ev(0.50, reported=0.48), ev(0.70, reported=0.66)], [ev(0.60, reported=0.61)]]


@pytest.fixture(scope="module")
def honest_report(tmp_path_factory):
    """One run selected on validation data, one on test data (as ``nord run
    --valid-fraction 0`` journals it)."""
    folder = tmp_path_factory.mktemp("honesty")
    valid = write_journal(folder / "valid.db", RUNS, dataset=VALIDATION_DATASET,
                          evaluator=EVALUATOR)
    test = write_journal(folder / "onTest.db", RUNS, dataset=TEST_DATASET,
                         evaluator=dict(EVALUATOR, signal="test accuracy (no validation split)"),
                         extra={"warnings": [TEST_SELECTION]})
    page = write_report([valid, test], folder / "out", best_count=0)
    summary = json.loads((folder / "out" / "summary.json").read_text())
    return {"page": page.read_text(), "summary": summary, "folder": folder,
            "paths": [valid, test]}


def test_summary_names_the_runs_selected_on_test_data(honest_report):
    summary = honest_report["summary"]
    assert summary["selected_on_test"] == ["onTest"]
    valid, test = summary["runs"]
    assert (valid["protocol"]["selection"], test["protocol"]["selection"]) == ("validation", "test")
    assert test["protocol"]["warnings"] == [TEST_SELECTION]
    assert valid["protocol"]["signal"] == "validation accuracy"
    assert valid["protocol"]["reported"] == "test accuracy"


def test_the_page_warns_at_the_top_about_selection_on_test_data(honest_report):
    page = honest_report["page"]
    warning = page.index("> **Warning:** onTest selected its architectures on TEST data")
    assert warning < page.index("## Runs")            # before any table
    assert "optimistically biased" in page and "--valid-fraction 0.1" in page
    assert "valid selected" not in page               # the honest run is not flagged


def test_tables_label_the_search_signal_and_the_reported_test_accuracy(honest_report):
    page = honest_report["page"]
    assert "| best accuracy (search signal) | its test accuracy (reported) |" in page
    valid_row = next(line for line in page.splitlines() if line.startswith("| [valid]"))
    test_row = next(line for line in page.splitlines() if line.startswith("| [onTest]"))
    assert "| validation data | 70.00 % | 66.00 % |" in valid_row
    assert "| TEST data (biased) | 70.00 % | 66.00 % |" in test_row


@pytest.mark.parametrize("metadata, rows", [
    ({"extra": {"warnings": [TEST_SELECTION]}}, []),
    ({"dataset": {"validation": {"fraction": 0.0}}}, []),
    ({"dataset": {"n_valid": 0}}, []),
    ({"evaluator": {"signal": "test accuracy (no validation split)"}}, []),
    ({}, [{"metrics": {"selection": "test"}}]),
    ({"evaluator": {"selection": "test"}}, []),
])
def test_each_sign_of_selection_on_test_data_is_enough(metadata, rows):
    protocol = protocol_of(metadata, rows)
    assert protocol.selected_on_test and protocol.reasons
    assert protocol.signal.startswith("test accuracy")


def test_a_run_with_a_validation_split_is_not_flagged():
    protocol = protocol_of({"dataset": VALIDATION_DATASET, "evaluator": EVALUATOR},
                           [{"metrics": {"selection": "validation"}}])
    assert not protocol.selected_on_test and protocol.reasons == []
    assert (protocol.signal, protocol.reported) == ("validation accuracy", "test accuracy")


def test_the_journaled_selection_is_read_as_a_fact_not_from_the_warnings_words():
    """A run that records where it selected is judged by that field: a warning that happens
    to speak of test accuracy and validation does not flag a run that selected on validation
    data (journals from before the field are still judged by their warnings)."""
    other = ("valid_fraction=0.9 holds out 900 of the 1000 training images for validation; "
             "test accuracy and validation accuracy say little")
    protocol = protocol_of({"dataset": VALIDATION_DATASET, "extra": {"warnings": [other]},
                            "evaluator": {**EVALUATOR, "selection": "validation"}})
    assert not protocol.selected_on_test
    assert protocol_of({"extra": {"warnings": [other]}}).selected_on_test   # no field: words


def test_runs_record_the_split_they_select_on():
    class Curator:
        def __init__(self, n_valid):
            self.n_valid = n_valid

    config = RunConfig()
    assert evaluation_of(config).selection(Curator(0)) == "test"
    assert evaluation_of(config).selection(Curator(10)) == "validation"
    assert evaluation_of(RunConfig(evaluation="zero-cost")).selection(Curator(0)) == "proxy"


def test_a_zero_cost_search_without_a_validation_split_is_not_said_to_select_on_test(tmp_path):
    """The proxy scores untrained networks on a training batch: no split selects, so the
    journal and the report carry no warning about selecting on the test split."""
    from nord.app.runner import run
    from nord.journal import Journal
    run(RunConfig(evaluation="zero-cost", valid_fraction=0, budget=2, seed=0,
                  space_params={"layers": 1, "channels": [2, 4]},
                  journal=str(tmp_path / "zc.db")), progress=False)
    with Journal(tmp_path / "zc.db") as journal:
        meta = journal.metadata()
    assert meta["evaluator"]["selection"] == "proxy"
    assert TEST_SELECTION not in (meta.get("extra") or {}).get("warnings", [])
    assert protocol_of(meta).selected_on_test is False


def test_a_benchmark_signal_keeps_its_own_words():
    protocol = protocol_of({"evaluator": {"signal": "validation accuracy after 12 epochs",
                                          "reported": "test accuracy after 200 epochs"}})
    assert ((protocol.signal, protocol.reported, protocol.selected_on_test) ==
        ("validation accuracy after 12 epochs", "test accuracy after 200 epochs", False))


# --- a run killed with kill -9 -----------------------------------------------------------------
WRITER = textwrap.dedent("""
    import sys, time
    from nord.evaluators.result import EvaluationResult
    from nord.journal import EvaluationRecord, Journal, RunRecord
    journal = Journal(sys.argv[1])
    journal.start(RunRecord("random", {}, 0, {"space": "toy"}, budget=10))
    for sequence in range(3):
        result = EvaluationResult(accuracy=0.5 + 0.1 * sequence, n_params=100, epochs=1)
        journal.record([], [EvaluationRecord(sequence, sequence, 0, [sequence], str(sequence),
                                             None, 0, result, None, 1000.0 + sequence,
                                             1001.0 + sequence)])
    print("written", flush=True)
    time.sleep(600)
""")


@pytest.mark.processes
def test_a_run_killed_with_kill_9_is_labelled_killed_not_running(tmp_path):
    journal = tmp_path / "killed.db"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(journal)],
                              stdout=subprocess.PIPE, text=True,
                              cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    try:
        assert writer.stdout.readline().strip() == "written"
        page = write_report([journal], tmp_path / "live", best_count=0).read_text()
        assert "Still running: killed" in page        # alive: a snapshot of a live run
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
    page = write_report([journal], tmp_path / "out", best_count=0).read_text()
    run = json.loads((tmp_path / "out" / "summary.json").read_text())["runs"][0]
    assert run["status"] == "killed" and run["evaluations"] == 3
    assert "Still running" not in page and "still running" not in page
    assert "Stopped without a final status (killed, a lost host or a power cut): killed;" in page
    row = next(line for line in page.splitlines() if line.startswith("| [killed]"))
    assert row.endswith("| killed |")
