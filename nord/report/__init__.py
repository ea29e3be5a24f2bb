"""Reports that compare search runs: PNG plots, a summary page and summary.json.

One call reads the runs' journals and writes everything into a folder::

    from nord.report import write_report

    page = write_report(["runs/ga.db", "runs/random.db"], "report/")   # report/report.md
    write_report("runs/", "report/", fmt="html")                       # every journal in runs/

The parts (``runs``, ``plots``, ``pareto``, ``architecture``, ``page``) can be used alone;
matplotlib is used through its Agg canvas only (no ``pyplot``, no change of backend).

Details (what the folder holds, the numbers, each part): docs/report.md.
"""
from nord.report.architecture import draw_descriptor, layered_layout
from nord.report.pareto import dominates, hypervolume, pareto_front, pareto_indices
from nord.report.runs import RunData, is_multi_objective, load_run, load_runs, run_numbers
from nord.report.summary import FORMATS, write_report

__all__ = ["write_report", "FORMATS", "load_run", "load_runs", "RunData", "run_numbers",
           "is_multi_objective", "pareto_front", "pareto_indices", "dominates", "hypervolume",
           "draw_descriptor", "layered_layout"]
