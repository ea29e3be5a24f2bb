"""``nord compare``: search algorithms over many seeds on a tabular benchmark, by evaluations
or in simulated time, single- or multi-objective.

    nord compare --benchmark nasbench201 --dataset cifar10 --algorithms random,rea \\
        --budget 100 --seeds 500 --json compare.json
    nord compare --workers 8 --mode async --seeds 100 --report out/   # in simulated time
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional

from nord.app.commands.flags import check_output, json_dict
from nord.errors import ConfigurationError, NordError, RunInterrupted

# Every other nord module is imported inside the command that needs it: `nord --help`,
# `nord list` and a refused flag must answer without loading torch, sqlite or matplotlib.


def _compare(args) -> int:
    from nord.parallel import interruptible
    with interruptible():   # between runs too, not only inside each seed's search
        return _compare_in(args)


def _compare_in(args) -> int:
    from nord.checks import check_int
    from nord.comparisons.compare import DEFAULT_BUDGET, run_comparison
    from nord.comparisons.multiobjective import run_nsga2, write_nsga2_report
    from nord.comparisons.anytime import write_anytime_plot
    from nord.comparisons.oneshot import oneshot_plot

    _check_comparison_flags(args)
    # --processes 0 is the command's way to say None (one per CPU)
    processes = check_int(args.processes, "--processes", 0,
                          rule="an integer >= 0 (0: one per CPU)") or None
    check_output(args.json, "--json", folder=False)
    if args.json and Path(args.json).exists() and not args.force:
        raise ConfigurationError(
            f"--json {args.json} exists already; give a new path, or add --force to "
            "overwrite it")
    check_output(args.report, "--report", folder=True)
    given = dict(dataset=args.dataset, seeds=args.seeds, base_seed=args.base_seed,
                 processes=processes, max_latency_ms=args.max_latency_ms,
                 latency_device=args.latency_device)
    if args.multi_objective:
        result = run_nsga2(budget=DEFAULT_BUDGET if args.budget is None else args.budget,
                           **given, **_given(population_size=args.population,
                                             objectives=args.objectives))
        print(result.table())
        if args.json:
            print(f"saved: {result.save_json(args.json)}")
        if args.report:
            written = write_nsga2_report(args.report, dataset=result.dataset,
                                         budget=result.budget, seed=result.base_seed,
                                         population_size=result.population_size,
                                         objectives=result.objectives, limit=result.limit)
            print(f"report written: {written.page} (front next to the exact one: {written.figure})")
        return 0

    said = [time.monotonic()]

    def progress(name, done, total):   # every tenth of the seeds, and at least every 10 s
        if (done == total or done % max(1, total // 10) == 0
                or time.monotonic() - said[0] >= 10):
            said[0] = time.monotonic()
            print(f"  {name}: {done}/{total} seeds", file=sys.stderr, flush=True)

    simulation = _simulation(args)
    if simulation is not None:
        warning = _cost_warning(simulation, args)
        if warning:
            print(f"warning: {warning}", file=sys.stderr, flush=True)
    result = run_comparison(budget=args.budget, progress=progress, simulation=simulation,
                            params=json_dict(args.params, "--params"), **_given(repeats=args.repeats),
                            **given, **_given(algorithms=args.algorithms, oneshot=args.oneshot))
    print(result.table())
    if args.json:
        print(f"saved: {result.save_json(args.json)}")
    if result.interrupted is not None:
        print(f"nord compare: interrupted by {result.interrupted}; the table"
              f"{' and --json' if args.json else ''} hold the seeds that finished",
              file=sys.stderr)
        return RunInterrupted(result.interrupted).exit_code
    if args.report:
        folder = Path(args.report)
        folder.mkdir(parents=True, exist_ok=True)
        label = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100",
                 "imagenet16": "ImageNet16-120"}[result.dataset]
        simulation = result.simulation
        figure = write_anytime_plot(
            folder / "anytime.png", result.curves(),
            f"{label}, {simulation.workers} workers ({simulation.mode}), {result.seeds} seeds: "
            "mean ± std", **(oneshot_plot(result.oneshot) if result.oneshot else {}))
        print(f"anytime curves: {figure}")
    return 0


def _given(**values) -> Dict[str, Any]:
    """The keyword arguments of the flags given (not None): the library's defaults apply to
    the others."""
    return {key: value for key, value in values.items() if value is not None}


_SIMULATION_FLAGS = ("time_budget", "mode", "signal", "noise", "overhead")


def _check_comparison_flags(args) -> None:
    """Refuse a flag that the comparison chosen by the flags has no parameter for.

    --multi-objective runs ``run_nsga2`` and --workers gives ``run_comparison`` a
    SimulatedSetting; a flag of the other comparison, or of a setting that is not built,
    would be ignored. The values themselves are the library's to check.
    """
    if args.objectives is not None and not args.multi_objective:
        raise ConfigurationError(
            f"--objectives {args.objectives} sets what --multi-objective trades for accuracy; "
            "add --multi-objective, or leave --objectives out (a single-objective comparison "
            "maximises accuracy; --max-latency-ms with --latency-device constrains it)")
    if args.multi_objective and args.workers is not None:
        raise ConfigurationError(
            f"--workers {args.workers} runs a comparison in simulated time, which "
            "--multi-objective does not do (it counts --budget evaluations); leave one of them out")
    if args.multi_objective and args.oneshot is not None:
        raise ConfigurationError(
            f"--oneshot {' '.join(args.oneshot)} draws weight-sharing searches against the "
            "seconds they searched, beside runs in simulated time (--workers N); "
            "--multi-objective has no time axis (it counts --budget evaluations). Leave one of "
            "them out")
    if args.multi_objective and args.algorithms is not None:
        raise ConfigurationError(
            f"--algorithms {args.algorithms} chooses single-objective algorithms; "
            "--multi-objective always runs pygmo's nsga2. Leave one of them out")
    if args.params is not None and args.multi_objective:
        raise ConfigurationError(
            f"--params {args.params} sets algorithms of a single-objective comparison; "
            "--multi-objective runs nsga2 with --population. Leave one of them out")
    if args.repeats is not None and args.multi_objective:
        raise ConfigurationError(
            f"--repeats {args.repeats} sets how a single-objective comparison charges a repeat "
            "of a cell; --multi-objective counts --budget evaluations, repeats included. "
            "Leave one of them out")
    if args.population is not None and not args.multi_objective:
        raise ConfigurationError(
            f"--population {args.population} sets nsga2's population in a --multi-objective "
            "run; the single-objective algorithms use their published settings. Add "
            "--multi-objective, or leave --population out")
    if args.report and args.workers is None and not args.multi_objective:
        raise ConfigurationError(
            "--report draws anytime curves of runs in simulated time (or, with "
            "--multi-objective, a Pareto front); add --workers N, or --multi-objective")
    given = [f"--{name.replace('_', '-')}" for name in _SIMULATION_FLAGS
             if getattr(args, name) is not None]
    if given and args.workers is None:
        raise ConfigurationError(
            f"{', '.join(given)} set{'s' if len(given) == 1 else ''} up a comparison in "
            "simulated time, which needs --workers N (the simulated GPUs), e.g. --workers 8")


def _simulation(args):
    """The SimulatedSetting of the flags (``run_comparison`` checks it), or None without
    --workers."""
    from nord.checks import check_duration
    from nord.comparisons.anytime import SimulatedSetting
    if args.workers is None:
        return None
    time_budget = args.time_budget
    if time_budget is not None:
        try:   # a number of seconds is the library's to check, in its words
            time_budget = float(time_budget)
        except ValueError:   # 90s, 30m, 8h, 1.5d: read as nord run reads them
            time_budget = check_duration(time_budget, "--time-budget")
    return SimulatedSetting.for_dataset(args.dataset, **_given(
        workers=args.workers, time_budget=time_budget, mode=args.mode, signal=args.signal,
        noise=args.noise, overhead=args.overhead))


MICROSECONDS_PER_RESULT = 10
"""CPU a simulated result costs random search and REA, about (docs/comparisons.md: 5 to 12 µs
as measured by bench/compare_speed.py); model-based algorithms cost more."""
BYTES_PER_RESULT = 200
"""Memory a simulated result holds until its run ends, about: one run of random search on 16
workers peaked at 87 MB (RSS) with 52,410 results and at 168 MB with 524,993, 175 bytes a
result more."""


def _cost_warning(simulation, args) -> Optional[str]:
    """What a time budget far beyond the benchmark's costs, said before the work starts: the
    results a run tells (more than the space has cells: most are repeats), and about how long
    the runs take, since progress is said only as seeds finish. None for a usual budget."""
    from nord.benchmarks.nasbench201 import N_CELLS
    from nord.comparisons.anytime import TIME_BUDGETS
    from nord.comparisons.dataset_table import DatasetTable
    from nord.search.engine.stopping import format_duration
    try:
        table = DatasetTable.of(args.dataset)
        per_run = simulation.check(table).results_per_run(table)
    except NordError:   # a setting the comparison refuses, in its own words
        return None
    if per_run <= N_CELLS:
        return None
    from nord.comparisons.compare import DEFAULT_ALGORITHMS
    named = args.algorithms.split(",") if args.algorithms else DEFAULT_ALGORITHMS
    algorithms = len([name for name in named if name.strip()])
    runs = algorithms * args.seeds
    seconds = per_run * MICROSECONDS_PER_RESULT / 1e6
    return (f"--time-budget {format_duration(simulation.time_budget)} on {simulation.workers} "
            f"worker{'s' if simulation.workers != 1 else ''} is about {per_run:,.0f} results "
            f"a run on {table.name}, more than the {N_CELLS:,} cells of NAS-Bench-201, so most "
            f"are repeats (NATS-Bench's budget: {TIME_BUDGETS[table.name]:,.0f} s, the "
            f"default); {runs:,} runs ({algorithms} algorithm{'s' if algorithms != 1 else ''} "
            f"x {args.seeds:,} seeds) take {_about(runs * seconds)} of CPU in all at "
            f"{MICROSECONDS_PER_RESULT} µs a result (random search and REA at best; more on a "
            f"busy machine, model-based algorithms longer), each run {_about(seconds)} and {per_run * BYTES_PER_RESULT / 1e9:.2g} GB "
            "of memory, and progress is said as runs finish")


def _about(seconds: float) -> str:
    """A rough duration: 'about 40 s', 'about 12 min', 'about 3.1 h', 'about 2.2 days'."""
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"about {seconds / size:.2g} {unit}"
    return f"about {max(seconds, 1):.0f} s"


def register(commands) -> None:
    """Add ``nord compare`` to the ``nord`` command's subcommands."""
    from nord.search.algorithms.registry import ALGORITHMS
    from nord.benchmarks.nasbench201.costs import DEVICES
    from nord.benchmarks.nasbench201.table import DATASET_NAMES
    names = "; ".join(f"{entry.label}: {entry.description}" for entry in ALGORITHMS.entries())
    scheduled = [entry for entry in ALGORITHMS.entries() if entry.value.cls.schedulers]
    asynchronous = [entry.name for entry in scheduled
                    if "hyperband" not in entry.value.cls.schedulers]
    if scheduled:   # compare has no --scheduler: the table's fidelities are the rungs
        names += (f". {', '.join(entry.name for entry in scheduled)} run here under their "
                  "scheduler over the table's 12- and 200-epoch accuracies"
                  + (f" ({', '.join(asynchronous)}: in simulated time only, --workers N "
                     "--mode async)" if asynchronous else ""))
    compare = commands.add_parser(
        "compare", help="compare search algorithms over many seeds on a tabular benchmark",
        description="Each algorithm runs --seeds times with --budget evaluations; the table "
                    "gives the mean and standard deviation of the 200-epoch test accuracy of "
                    "the architecture it returns (the one with the best 12-epoch validation "
                    "accuracy, the only signal it sees); a legend under the table says what "
                    "each column holds. With --workers N each run has a budget of simulated "
                    "time instead (below).")
    compare.add_argument("--benchmark", default="nasbench201", choices=["nasbench201"],
                         help="the tabular benchmark")
    compare.add_argument("--dataset", default="cifar10", metavar="NAME",
                         help=", ".join(DATASET_NAMES.choices()))
    compare.add_argument("--algorithms", default=None,
                         help=f"comma-separated: {names} (default: random,rea; not with "
                              "--multi-objective, which runs nsga2)")
    compare.add_argument("--params", default=None, metavar="JSON",
                         help="settings of algorithms compared, keyed by algorithm, e.g. "
                              "'{\"rea\": {\"population_size\": 20}}' (default: each "
                              "algorithm's own, as in nord run --params)")
    compare.add_argument("--budget", type=int, default=None,
                         help="evaluations per run (default: 100; not with --workers, whose "
                              "budget is --time-budget)")
    compare.add_argument("--repeats", choices=["charge", "free"], default=None,
                         help="charge (default, the benchmark's rule): every result told costs "
                              "its training time, a repeat of a cell included, in simulated "
                              "time and in BOHB's epochs; free: the run's cache answers a "
                              "repeat at no training time (a budget of evaluations still "
                              "counts it)")
    compare.add_argument("--seeds", type=int, default=100, help="runs per algorithm")
    compare.add_argument("--base-seed", type=int, default=0, metavar="SEED",
                         help="the first seed; runs use SEED..SEED+SEEDS-1")
    compare.add_argument("--processes", type=int, default=1, help="worker processes (0: one per CPU)")
    compare.add_argument("--json", default=None, metavar="FILE",
                         help="save the table and every run's values (a new file, unless "
                              "--force)")
    compare.add_argument("--force", action="store_true",
                         help="overwrite the --json file if it exists")
    compare.add_argument("--multi-objective", action="store_true",
                         help="pygmo's nsga2 on accuracy against a cost (--objectives): "
                              "hypervolume per seed, next to the exact front's")
    compare.add_argument("--objectives", default=None, metavar="accuracy,COST",
                         help="(nsga2) accuracy,parameters (default) or accuracy,latency:DEVICE "
                              "with DEVICE one of " + ", ".join(DEVICES))
    compare.add_argument("--max-latency-ms", type=float, default=None, metavar="MS",
                         help="cells slower than MS milliseconds are failed evaluations (any "
                              "algorithm; device: --latency-device, or the latency objective's)")
    compare.add_argument("--latency-device", default=None, metavar="DEVICE",
                         help="the device of --max-latency-ms")
    compare.add_argument("--population", type=int, default=None, help="(nsga2) population size")
    compare.add_argument("--report", default=None, metavar="DIR",
                         help="folder for anytime curves (with --workers: anytime.png) or, with "
                              "--multi-objective, one run's front next to the exact one")
    simulated = compare.add_argument_group(
        "simulated time",
        "With --workers N, each run has a budget of simulated seconds on N GPUs instead of "
        "--budget evaluations; an evaluation costs the training time behind its signal "
        "(valid12: 12/200 of the 200-epoch time, an approximation; valid200: all of it). "
        "The table adds evaluations done, simulated time and worker utilisation.")
    simulated.add_argument("--workers", type=int, default=None, metavar="N",
                           help="simulated GPUs (turns simulated time on)")
    simulated.add_argument("--time-budget", default=None, metavar="DURATION",
                           help="simulated time per run, as nord run's --time-budget: 90s, "
                                "30m, 8h or 1.5d, a plain number is seconds (default, from "
                                "NATS-Bench: 20,000 s cifar10, 40,000 s cifar100, 120,000 s "
                                "imagenet16)")
    simulated.add_argument("--mode", choices=["sync", "async"], default=None,
                           help="sync: each generation waits for its slowest network; async: a "
                                "free worker gets the next candidate at once (default async)")
    simulated.add_argument("--signal", choices=["valid12", "valid200"], default=None,
                           help="search signal: 12-epoch (default) or 200-epoch validation "
                                "accuracy (seed mean)")
    simulated.add_argument("--noise", choices=["seed"], default=None,
                           help="seed: each evaluation answers with one training seed's "
                                "accuracy (NATS-Bench protocol; needs --signal valid200)")
    simulated.add_argument("--overhead", type=float, default=None, metavar="S",
                           help="seconds added to every evaluation (default 0)")
    simulated.add_argument("--oneshot", nargs="+", action="extend", default=None,
                           metavar="RUN.db",
                           help="journals of weight-sharing searches on --dataset (nord run "
                                "--space nasbench201 --algorithm gdas ...; several runs of a "
                                "method are its seeds): each method's curve, the derived "
                                "cell's 200-epoch table test accuracy against the seconds the "
                                "search measured on its own machine (not simulated), goes "
                                "beside the anytime curves in the table, --json and --report; "
                                "a run not finished is drawn to its last finished epoch")
    compare.set_defaults(handler=_compare)
