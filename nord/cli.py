"""The ``nord`` command: run and resume searches, write reports, list runs, compare algorithms.

    nord run --algorithm regularized_evolution --budget 50 --journal runs/rea.db
    mpirun -np 3 nord run --evaluation distributed --mode async --journal runs/async.db
    nord resume runs/rea.db
    nord report runs/rea.db runs/async.db --out reports/
    nord list runs/
    nord compare --benchmark nasbench201 --dataset cifar10 --algorithms random,rea \\
        --budget 100 --seeds 500 --json compare.json

Argument parsing lives here and in experiments/; everything else takes plain arguments.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from typing import List, Optional

from nord.errors import ConfigurationError, NordError


def _json_dict(text: Optional[str], flag: str) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigurationError(f"{flag} must be a JSON object such as '{{\"layers\": 3}}'; "
                                 f"{text!r} does not parse: {error}") from error
    if not isinstance(value, dict):
        raise ConfigurationError(f"{flag} must be a JSON object (keyword arguments); got {text!r}")
    return value


def _run(args) -> int:
    from nord.runner import RunConfig, run
    params = _json_dict(args.params, "--params")
    if args.population is not None:
        params["population_size"] = args.population
    if args.generations is not None:
        params["generations"] = args.generations
    benchmark = args.space == "nasbench201"
    config = RunConfig(
        algorithm=args.algorithm, algorithm_params=params, space=args.space,
        space_params=_json_dict(args.space_params, "--space-params"),
        evaluation="benchmark" if benchmark else args.evaluation,
        dataset=args.dataset or ("cifar10" if benchmark else "digits"), data_root=args.data_root,
        epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, budget=args.budget,
        mode=args.mode, group_size=args.group_size, backend=args.backend, device=args.device,
        threads=args.threads, seed=args.seed, journal=args.journal)
    run(config, resume=args.resume)
    return 0


def _resume(args) -> int:
    from nord.runner import resume
    resume(args.journal)
    return 0


def _report(args) -> int:
    from nord.report import write_report
    page = write_report(args.journals, args.out, title=args.title, fmt=args.format,
                        pareto=True if args.pareto else None, best_count=args.best)
    print(f"report written: {page}")
    return 0


def _list(args) -> int:
    from nord.journal import list_runs
    runs = list_runs(args.directory)
    if not runs:
        print(f"no run journals in {args.directory}")
        return 0
    width = max(len("journal"), *(len(str(run["path"])) for run in runs))
    print(f"{'journal':{width}s} {'algorithm':22s} {'status':9s} {'evals':>9s} {'failed':>6s} "
          f"{'best':>7s}  created")
    for run in runs:
        created = datetime.datetime.fromtimestamp(run["created"]).strftime("%Y-%m-%d %H:%M")
        best = run["best_accuracy"]
        best = None if best is None or best != best else best  # no successful evaluation yet
        print(f"{str(run['path']):{width}s} {run['algorithm']:22s} {run['status']:9s} "
              f"{run['evaluations']:>4d}/{run['budget'] or '?':<4} {run['failed']:>6d} "
              f"{'-' if best is None else format(best, '.4f'):>7s}  {created}")
    return 0


def _compare(args) -> int:
    if args.benchmark != "nasbench201":
        raise ConfigurationError(f"unknown benchmark {args.benchmark!r}; nord ships 'nasbench201'")
    processes = args.processes or None
    if args.multi_objective:
        from nord.benchmarks.multiobjective import run_nsga2, write_nsga2_report
        result = run_nsga2(dataset=args.dataset, budget=args.budget, seeds=args.seeds,
                           base_seed=args.base_seed, population_size=args.population or 20,
                           processes=processes)
        print(result.table())
        if args.json:
            print(f"saved: {result.save_json(args.json)}")
        if args.report:
            written = write_nsga2_report(args.report, dataset=args.dataset, budget=args.budget,
                                         seed=args.base_seed, population_size=args.population or 20)
            print(f"report written: {written.page} (front next to the exact one: {written.figure})")
        return 0
    from nord.benchmarks.compare import run_comparison

    def progress(name, done, total):
        if done == total or done % max(1, total // 10) == 0:
            print(f"  {name}: {done}/{total} seeds", file=sys.stderr, flush=True)

    result = run_comparison(dataset=args.dataset, algorithms=args.algorithms, budget=args.budget,
                            seeds=args.seeds, base_seed=args.base_seed, processes=processes,
                            progress=progress)
    print(result.table())
    if args.json:
        print(f"saved: {result.save_json(args.json)}")
    return 0


def _layers(args) -> int:
    from nord.layers import get_layer_spec, list_layers
    for name in list_layers():
        spec = get_layer_spec(name)
        params = ", ".join(p for p, _ in spec.params)
        print(f"{name:22s} {str(spec.target):28s} ({params})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nord", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a search (under mpirun: on every rank)")
    run.add_argument("--algorithm", default="regularized_evolution",
                     help="pygmo, genetic, regularized_evolution or random")
    run.add_argument("--params", default=None,
                     help='algorithm parameters as JSON, e.g. \'{"sample_size": 5}\'')
    run.add_argument("--population", type=int, default=None)
    run.add_argument("--generations", type=int, default=None, help="(pygmo)")
    run.add_argument("--space", default="conv", choices=["conv", "nasbench201"])
    run.add_argument("--space-params", default=None,
                     help='space parameters as JSON, e.g. \'{"layers": 3}\'')
    run.add_argument("--evaluation", default="local",
                     choices=["local", "data-parallel", "distributed"],
                     help="how ranks train networks (ignored for --space nasbench201)")
    run.add_argument("--dataset", default=None,
                     help="digits (default), mnist, fashion-mnist, cifar10; for nasbench201: "
                          "cifar10, cifar100, imagenet16")
    run.add_argument("--data-root", default=None)
    run.add_argument("--epochs", type=int, default=1)
    run.add_argument("--batch-size", type=int, default=64)
    run.add_argument("--lr", type=float, default=1e-3)
    run.add_argument("--budget", type=int, default=None, help="evaluations (default: 100)")
    run.add_argument("--mode", default="sync", choices=["sync", "async"])
    run.add_argument("--group-size", type=int, default=None)
    run.add_argument("--backend", default="auto", choices=["auto", "horovod", "torch"])
    run.add_argument("--device", default="auto")
    run.add_argument("--threads", type=int, default=None)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--journal", default=None, help="SQLite journal of the run")
    run.add_argument("--resume", action="store_true", help="continue the run in --journal")
    run.set_defaults(handler=_run)

    resume = commands.add_parser("resume", help="continue a run from its journal")
    resume.add_argument("journal")
    resume.set_defaults(handler=_resume)

    report = commands.add_parser("report", help="plots and a summary page comparing runs")
    report.add_argument("journals", nargs="+", help="run journals, or folders of them")
    report.add_argument("--out", required=True, help="folder for the report")
    report.add_argument("--title", default=None)
    report.add_argument("--format", default="markdown", choices=["markdown", "html"])
    report.add_argument("--pareto", action="store_true", help="Pareto front for every run")
    report.add_argument("--best", type=int, default=3, help="best architectures drawn per run")
    report.set_defaults(handler=_report)

    listing = commands.add_parser("list", help="the runs journaled in a folder")
    listing.add_argument("directory", nargs="?", default="runs")
    listing.set_defaults(handler=_list)

    from nord.benchmarks.compare import COMPARE_ALGORITHMS
    names = "; ".join(f"{name}: {entry.description}" for name, entry in COMPARE_ALGORITHMS.items())
    compare = commands.add_parser(
        "compare", help="compare search algorithms over many seeds on a tabular benchmark",
        description="Each algorithm runs --seeds times with --budget evaluations; the table "
                    "gives the mean and standard deviation of the 200-epoch test accuracy of "
                    "the architecture it returns (the one with the best 12-epoch validation "
                    "accuracy, the only signal it sees).")
    compare.add_argument("--benchmark", default="nasbench201", choices=["nasbench201"])
    compare.add_argument("--dataset", default="cifar10", choices=["cifar10", "cifar100", "imagenet16"])
    compare.add_argument("--algorithms", default="random,rea", help=f"comma-separated: {names}")
    compare.add_argument("--budget", type=int, default=100, help="evaluations per run")
    compare.add_argument("--seeds", type=int, default=100, help="runs per algorithm")
    compare.add_argument("--base-seed", type=int, default=0)
    compare.add_argument("--processes", type=int, default=1, help="worker processes (0: one per CPU)")
    compare.add_argument("--json", default=None, help="save the table and every run's values")
    compare.add_argument("--multi-objective", action="store_true",
                         help="pygmo's nsga2 on accuracy against parameters: hypervolume per seed")
    compare.add_argument("--population", type=int, default=None, help="(nsga2) population size")
    compare.add_argument("--report", default=None,
                         help="(nsga2) folder for a report of one run's front next to the exact one")
    compare.set_defaults(handler=_compare)

    layers = commands.add_parser("layers", help="the layer types descriptors may use")
    layers.set_defaults(handler=_layers)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.verbose:
        import logging
        logging.getLogger("nord").setLevel(logging.DEBUG)
    try:
        return args.handler(args)
    except NordError as error:
        print(f"nord {args.command}: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a journal or report path that cannot be written
        print(f"nord {args.command}: {error.strerror or error}: {error.filename or ''}; "
              "choose a path in a folder you can write", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
