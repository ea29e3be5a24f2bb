"""The report of a weight-sharing search: each edge's distribution per epoch and the derived
cell's accuracy (or the losses, off the table's data sets), in a figure, on the page and in
summary.json; other runs have none."""
import json

import pytest

pytest.importorskip("torch")

from nord.app.runner import run  # noqa: E402
from nord.app.settings import RunConfig  # noqa: E402
from nord.journal import Journal  # noqa: E402
from nord.report import write_report  # noqa: E402
from tests.helpers.journals import ev, write_journal  # noqa: E402

pytestmark = pytest.mark.slow     # a weight-sharing run end to end: in make test


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    journal = tmp_path_factory.mktemp("ws") / "gdas.db"
    run(RunConfig(algorithm="gdas", space="nasbench201", dataset="digits", search_epochs=2,
                  supernet_channels=3, supernet_cells=1, threads=1, journal=str(journal)),
        progress=False)
    return journal


def test_the_report_draws_each_edge_per_epoch_and_says_the_final_cell(searched, tmp_path):
    other = write_journal(tmp_path / "ga.db", [[ev(0.5), ev(0.6)]])
    page = write_report([searched, other], tmp_path / "report")
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    with Journal(searched) as journal:
        epochs = journal.search_epochs()
    entry = next(r for r in summary["runs"] if r["label"] == "gdas")
    assert entry["search"]["epochs"] == 2
    assert entry["search"]["cells"] == [row["cell"] for row in epochs]
    assert entry["search"]["final_cell"] == epochs[-1]["cell"]
    assert entry["search"]["lookup_accuracy"] == [None, None]      # digits: not the table's
    assert "search" not in next(r for r in summary["runs"] if r["label"] == "ga")
    figure = tmp_path / "report" / summary["files"]["search"]["gdas"]
    assert figure.stat().st_size > 10_000
    text = page.read_text()
    assert "Weight-sharing search: gdas" in text and epochs[-1]["cell"] in text
    assert "mean losses" in text
