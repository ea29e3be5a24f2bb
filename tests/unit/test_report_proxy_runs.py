"""A zero-cost run's figures are named for what they are wherever they are shown: the report's
tables and warning, summary.json, the plots' axes and nord list never call a proxy score an
accuracy."""
import json

import pytest

from nord.app.cli import main
from nord.report.plots import _signal_label
from nord.report.runs import load_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("proxy-runs")
    for name, extra in (("zc", ["--evaluation", "zero-cost", "--proxy", "synflow"]),
                        ("table", [])):
        assert main(["run", "--space", "nasbench201", *extra, "--budget", "20", "--seed", "1",
                     "--journal", str(folder / f"{name}.db")]) == 0
    return folder


def test_the_report_names_a_proxy_score_and_where_it_came_from(runs, capsys):
    assert main(["report", str(runs / "zc.db"), str(runs / "table.db"), "--out",
                 str(runs / "report")]) == 0
    page = (runs / "report" / "report.md").read_text()
    zc_row = next(line for line in page.splitlines() if line.startswith("| [zc]"))
    assert "| untrained networks (proxy score) |" in zc_row and "(proxy score) |" in zc_row
    assert "validation data" not in zc_row
    assert "zc: cifar10, scored untrained by a zero-cost proxy" in page
    assert "| best proxy score (search signal) |" in page
    summary = json.loads((runs / "report" / "summary.json").read_text())
    protocols = {run["label"]: run["protocol"] for run in summary["runs"]}
    assert (protocols["zc"]["measure"], protocols["zc"]["selection"]) == ("proxy score", "proxy")
    assert protocols["table"]["measure"] == "accuracy"


def test_plot_axes_say_when_a_signal_is_a_proxy_score(runs):
    zc, table = load_run(runs / "zc.db"), load_run(runs / "table.db")
    assert _signal_label([zc]).startswith("synflow score") and _signal_label([zc]).endswith(
        "(x 100)")
    assert "proxy score" in _signal_label([zc, table])
    assert _signal_label([table]).endswith("(%)") and "proxy" not in _signal_label([table])


def test_nord_list_says_a_proxy_runs_best_is_no_accuracy(runs, capsys):
    assert main(["list", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "best is the synflow score mapped into (0, 1), not an accuracy" in out
    assert out.count("not an accuracy") == 1
