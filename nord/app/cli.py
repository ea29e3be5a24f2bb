"""The nord command: run and resume searches, report, list and export runs, compare algorithms.

    nord run --algorithm regularized_evolution --budget 50 --journal runs/rea.db
    nord run --config run.toml --journal runs/b.db        # flags override the file
    nord config runs/rea.db > run.toml                      # a recorded run's settings
    mpirun -np 3 nord run --evaluation distributed --mode async --journal runs/async.db
    nord resume runs/rea.db
    nord export runs/rea.db backup/rea.db          # a consistent copy, also of a live run
    nord report runs/rea.db runs/async.db --out reports/
    nord list runs/
    nord compare --benchmark nasbench201 --dataset cifar10 --algorithms random,rea \\
        --budget 100 --seeds 500 --json compare.json
    nord compare --workers 8 --mode async --seeds 100 --report out/   # in simulated time
    nord data download cifar10 --root data          # resumable, checked, read once

Argument parsing lives here and in experiments/; everything else takes plain arguments.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from nord.errors import ConfigurationError, NordError, RunInterrupted
from nord.version import __version__

# Every other nord module is imported inside the command that needs it: `nord --help`,
# `nord list` and a refused flag must answer without loading torch, sqlite or matplotlib.

DESCRIPTION = "nord: neural architecture search, from a laptop to an MPI or SLURM cluster."


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


# --- nord run: one flag per RunConfig field ------------------------------------------------------
# (field, flag, type, help). The help says what the setting is; the default is added from
# RunConfig, so the two never disagree. Flags left out of the command line are not in the
# parsed arguments at all, so a --config file can set them.
RUN_FLAGS = (
    ("algorithm", "--algorithm", str, "the search algorithm: {algorithms}"),
    ("algorithm_params", "--params", "json",
     "the algorithm's settings as a JSON object, e.g. '{{\"sample_size\": 5}}' (default: "
     "the algorithm's own)"),
    ("space", "--space", str, "the search space: conv (the paper's convolutional layers) or "
                               "nasbench201 (the benchmark's cells, looked up in its table)"),
    ("space_params", "--space-params", "json",
     "the space's settings as a JSON object, e.g. '{{\"layers\": 3}}' (default: the "
     "space's own)"),
    ("evaluation", "--evaluation", str,
     "how candidates are evaluated: local (one process per network), data-parallel (all ranks "
     "train each network), distributed (groups of --group-size ranks train networks side by "
     "side), benchmark (NAS-Bench-201 look-ups), zero-cost (untrained networks scored by "
     "--proxy) (default: local; benchmark for --space nasbench201)"),
    ("proxy", "--proxy", str,
     "(zero-cost) the proxy scoring each untrained network: synflow, snip, grasp, fisher, "
     "grad_norm, jacov, nwot, params, flops (default: synflow)"),
    ("dataset", "--dataset", str,
     "digits (built in), mnist, fashion-mnist, cifar10; for nasbench201: cifar10, cifar100, "
     "imagenet16 (also ImageNet16-120) (default: digits; cifar10 for nasbench201)"),
    ("data_root", "--data-root", str,
     "folder of the data set's files (default: $NORD_DATA_ROOT, else ~/.cache/nord/data)"),
    ("data_checksums", "--data-checksums", str,
     "MD5s to check the data set's files against instead of the official ones, for files "
     "from a mirror that differ ('<md5>  <file name>' lines, the file given to 'nord data "
     "download --checksums') (default: the official MD5s)"),
    ("valid_fraction", "--valid-fraction", float,
     "share of the training split held out (stratified) as the validation split the search "
     "sees, where the data set has no official one; 0 selects on test data (warned)"),
    ("epochs", "--epochs", int, "training epochs of each candidate (without --scheduler)"),
    ("batch_size", "--batch-size", int, "training mini-batch per rank, in samples"),
    ("lr", "--lr", float, "learning rate"),
    ("optimizer", "--optimizer", str, "adam, adamw, sgd or rmsprop"),
    ("max_params", "--max-params", int,
     "refuse networks with more trainable parameters, as failed evaluations, before they are "
     "allocated (default: no limit; a network that would not fit the free memory of its GPU "
     "or host is refused either way)"),
    ("scheduler", "--scheduler", str,
     "stop poor candidates early: asha (async mode), sha (sync), hyperband, median "
     "(default: none, every candidate trains --epochs)"),
    ("min_epochs", "--min-epochs", int,
     "(scheduler) epochs before a candidate is first judged (default: 1)"),
    ("max_epochs", "--max-epochs", int,
     "(scheduler) epochs a candidate trains at most (default: --epochs)"),
    ("eta", "--eta", int,
     "(scheduler) each rung keeps the best 1/eta; rungs are eta times apart (default: 3)"),
    ("budget", "--budget", int,
     "evaluations in the run, reused and failed ones included (default: what the algorithm "
     "asks for, else 100)"),
    ("time_budget", "--time-budget", str,
     "the run's running time, its resumed sessions included, after which no candidate starts: "
     "90s, 30m, 8h or 1.5d; candidates in training finish (default: none)"),
    ("target", "--target", float,
     "a search-signal accuracy that ends the run once a candidate reaches it (default: none)"),
    ("mode", "--mode", str,
     "sync (generations: results told in candidate order) or async (steady state: no worker "
     "waits)"),
    ("group_size", "--group-size", int,
     "ranks training one network, for --evaluation distributed (default: 1)"),
    ("backend", "--backend", str, "data-parallel training with horovod or torch (auto: Horovod "
                                   "when it is installed)"),
    ("device", "--device", str, "auto (CUDA when available), cpu, cuda or cuda:N"),
    ("threads", "--threads", int, "torch CPU threads per rank (default: torch's choice)"),
    ("worker_processes", "--workers", int,
     "worker processes on this machine evaluating side by side, several per GPU allowed; not "
     "with mpirun; at most one per CPU and 16 per GPU (default: evaluate in this process)"),
    ("mps", "--mps", str,
     "how workers share a GPU: auto (CUDA MPS when installed or running), on (MPS or "
     "refuse), off (time-slicing)"),
    ("seed", "--seed", int, "seeds the algorithm and every candidate's training"),
    ("max_attempts", "--max-attempts", int,
     "how often one candidate's evaluation may kill the run's process (e.g. the out-of-memory "
     "killer's SIGKILL) before a resume records it as failed instead of trying it again"),
    ("checkpoint_every", "--checkpoint-every", int,
     "epochs between the checkpoints of each candidate in training, beside the journal: a "
     "resumed run goes on from them and trains no epoch twice; 0: none (default: 1)"),
    ("journal", "--journal", str,
     "the run's SQLite journal (default: runs/<algorithm>-<date>-<time>.db)"),
    ("plugins", "--plugin", "list",
     "modules to import first, comma-separated: they register your own algorithm, space, "
     "data set or scheduler (recorded: a resume imports them too) (default: none)"),
    ("callbacks", "--callbacks", "list",
     "training callbacks whose scalars each epoch records, comma-separated: grad_norm "
     "(gradient norm per layer), weight_norm (weight norm per layer), dead_relu (share of "
     "dead ReLU units) (default: none)"),
)

_METAVARS = {"json": "JSON", "list": "NAMES", int: "N", float: "X", str: "NAME", "data_root": "DIR",
             "data_checksums": "FILE",
             "journal": "FILE", "device": "DEVICE", "lr": "RATE", "valid_fraction": "FRACTION",
             "time_budget": "DURATION", "target": "ACCURACY"}


def _flag_help(name: str, text: str) -> str:
    from dataclasses import MISSING, fields

    from nord.app.settings import RunConfig
    if "(default" in text:
        return text
    field = next(f for f in fields(RunConfig) if f.name == name)
    default = field.default if field.default is not MISSING else field.default_factory()
    if default is None or default == {}:
        return text
    return f"{text} (default: {default})"


ALGORITHM_FLAGS = (
    ("population", "population_size",
     "population size of evolutionary algorithms (a shortcut into --params; default: the "
     "algorithm's)"),
    ("generations", "generations",
     "generations after the initial population, for pygmo's algorithms (default: as many as "
     "--budget allows; nord's genetic runs until the budget is spent)"),
)
"""``nord run`` flags that set an entry of ``algorithm_params``: (flag, key, help)."""


def _run_arguments():
    """Every ``nord run`` flag but --config, in the order of its help: (name, flag, the
    options of ``add_argument``), where name is the RunConfig field, the ALGORITHM_FLAGS
    shortcut, or 'resume'."""
    from nord.search.algorithms.registry import ALGORITHMS
    algorithms = "; ".join(ALGORITHMS.choices())
    for name, flag, kind, text in RUN_FLAGS:
        yield name, flag, dict(type=str if kind in ("json", "list") else kind,
                               metavar=_METAVARS.get(name) or _METAVARS[kind],
                               help=_flag_help(name, text.format(algorithms=algorithms)))
        if name == "algorithm_params":
            for shortcut, _, text in ALGORITHM_FLAGS:
                yield shortcut, f"--{shortcut}", dict(type=int, metavar="N", help=text)
    yield "resume", "--resume", dict(action="store_true",
                                     help="continue the run in --journal (which must hold one)")


def add_run_flags(parser: argparse.ArgumentParser, names: Sequence[str],
                  defaults: Optional[Mapping[str, Any]] = None) -> None:
    """Add ``nord run`` flags to ``parser``, with their help, for scripts that build runs
    (experiments/).

    Args:
        parser: the script's parser.
        names: the flags' RunConfig fields (``RUN_FLAGS``), ``population``, ``generations``
            (``ALGORITHM_FLAGS``) or ``resume``; each is the flag's ``dest``.
        defaults: the script's own default of a flag, where it differs from nord run's on
            purpose; its help says it. Every other flag defaults to None (False for
            --resume): RunConfig's default.

    Raises:
        ConfigurationError: a name that is no ``nord run`` flag, listing those that are.
    """
    defaults = dict(defaults or {})
    known = {name: (flag, options) for name, flag, options in _run_arguments()}
    unknown = [name for name in [*names, *defaults] if name not in known]
    if unknown:
        raise ConfigurationError(f"no 'nord run' flag has the name {unknown[0]!r}; the names "
                                 f"are {', '.join(known)}")
    for name in names:
        flag, options = known[name]
        if name in defaults:
            value = defaults[name]
            text = options["help"]
            options["help"] = (re.sub(r"default: [^;)]*", lambda _: f"default: {value}", text,
                                      count=1) if "default: " in text
                               else f"{text} (default: {value})")
        default = defaults.get(name, False if options.get("action") == "store_true" else None)
        parser.add_argument(flag, dest=name, default=default, **options)


def _run_config(args):
    """The RunConfig of ``nord run``: RunConfig's defaults (with --resume and no --config:
    the journal's settings, as ``nord resume`` takes them), then the --config file, then the
    flags given."""
    from dataclasses import fields

    from nord.app.config_file import read_config
    from nord.app.runner import stored_config
    from nord.app.settings import RunConfig
    known = [f.name for f in fields(RunConfig)]
    values: Dict[str, Any] = {}
    given = vars(args)
    if given.get("resume") and given.get("journal") and not getattr(args, "config", None):
        values.update(stored_config(given["journal"]).to_dict())   # flags given still differ
    if getattr(args, "config", None):
        values.update(read_config(args.config, known, moved={
            flag: f"algorithm_params.{key}" for flag, key, _ in ALGORITHM_FLAGS}))
        overridden = {name for name, flag, _, _ in RUN_FLAGS
                      if flag.lstrip("-").replace("-", "_") in given}
        try:   # a bad value in the file is named with the file's path
            RunConfig(**{key: value for key, value in values.items() if key not in overridden})
        except ConfigurationError as error:
            raise ConfigurationError(f"{args.config}: {error}") from None
    for name, flag, kind, _ in RUN_FLAGS:
        key = flag.lstrip("-").replace("-", "_")
        if key not in given:
            continue
        value = given[key]
        if kind == "json":
            value = {**values.get(name, {}), **_json_dict(value, flag)}
        values[name] = value
    for flag, key, _ in ALGORITHM_FLAGS:
        if flag in given:
            values["algorithm_params"] = {**values.get("algorithm_params", {}),
                                          key: given[flag]}
    return RunConfig(**values)


def _run_command(args) -> int:
    from nord.app.runner import run
    run(_run_config(args), resume=getattr(args, "resume", False))
    return 0


def _config(args) -> int:
    from dataclasses import asdict

    from nord.app.config_file import to_toml
    from nord.app.runner import recorded_config, stored_config
    try:
        values = asdict(stored_config(args.journal))
    except ConfigurationError as error:   # its code cannot be loaded: the settings as recorded
        values = recorded_config(args.journal)
        print(f"nord config: note: {error}; the settings are printed as recorded",
              file=sys.stderr)
    values.pop("journal", None)
    sys.stdout.write(to_toml(values, comment=(
        f"the configuration of the run in {args.journal}\n"
        "repeat it with: nord run --config THIS.toml --journal NEW.db")))
    return 0


def _resume(args) -> int:
    from nord.app.runner import resume
    resume(args.journal, budget=args.budget, device=args.device, threads=args.threads,
           backend=args.backend, worker_processes=args.workers, mps=args.mps,
           max_attempts=args.max_attempts, checkpoint_every=args.checkpoint_every,
           time_budget=args.time_budget, target=args.target)
    return 0


def _export(args) -> int:
    from nord.journal import Journal
    with Journal(args.journal) as journal:
        journal.metadata()   # a clear error when it is not a journal
        written = journal.export(args.out)
    print(f"exported: {written}")
    return 0


def _report(args) -> int:
    from nord.report import write_report
    _check_output(args.out, "--out", folder=True)
    skipped = []
    page = write_report(args.journals, args.out, title=args.title, fmt=args.format,
                        pareto=True if args.pareto else None, best_count=args.best,
                        skipped=skipped)
    for path, reason in skipped:
        print(f"skipped {path}: {reason}", file=sys.stderr)
    summary = Path(args.out) / "summary.json"
    if summary.is_file():
        biased = json.loads(summary.read_text()).get("selected_on_test") or []
        for label in biased:
            print(f"warning: {label} selected its architectures on TEST data: its best test "
                  "accuracy is optimistically biased (the report says so at the top)",
                  file=sys.stderr)
        unlike = json.loads(summary.read_text()).get("unlike") or {}
        if unlike:
            print("warning: these runs measure different things, so their accuracies do not "
                  "compare (the report says so at the top): " + "; ".join(
                      f"{', '.join(labels)}: {what}" for what, labels in unlike.items()),
                  file=sys.stderr)
    print(f"report written: {page}")
    return 0


def _list(args) -> int:
    import os

    from nord.app.search_progress import resumed_line
    from nord.journal import list_runs
    runs, skipped = list_runs(args.paths)
    named = {os.path.realpath(path) for path in args.paths if os.path.isfile(path)}
    status = 0
    for path, reason in skipped:   # a file named on its own that is no journal is an error
        if os.path.realpath(path) in named:
            status = 2
            print(f"nord list: {reason}", file=sys.stderr)
        else:
            print(f"skipped {path}: {reason}", file=sys.stderr)
    if not runs:
        if not status:
            print(f"no run journals in {', '.join(args.paths)}")
        return status
    width = max(len("journal"), *(len(str(run["path"])) for run in runs))
    print(f"{'journal':{width}s} {'algorithm':22s} {'state':11s} {'evals':>9s} {'failed':>6s} "
          f"{'best':>7s}  created")
    for run in runs:
        created = datetime.datetime.fromtimestamp(run["created"]).strftime("%Y-%m-%d %H:%M")
        best = run["best_accuracy"]
        best = None if best is None or best != best else best  # no successful evaluation yet
        print(f"{str(run['path']):{width}s} {run['algorithm']:22s} {run['state']:11s} "
              f"{run['evaluations']:>4d}/{run['budget'] or '?':<4} {run['failed']:>6d} "
              f"{'-' if best is None else format(best, '.4f'):>7s}  {created}")
        if run["resumed"]:
            print(f"  {resumed_line(run['resumed'])}")
    return status


def _compare(args) -> int:
    from nord.parallel import interruptible
    with interruptible():   # between runs too, not only inside each seed's search
        return _compare_in(args)


def _compare_in(args) -> int:
    from nord.checks import check_int
    from nord.comparisons.compare import DEFAULT_BUDGET, run_comparison
    from nord.comparisons.multiobjective import run_nsga2, write_nsga2_report
    from nord.comparisons.anytime import write_anytime_plot

    _check_comparison_flags(args)
    # --processes 0 is the command's way to say None (one per CPU)
    processes = check_int(args.processes, "--processes", 0,
                          rule="an integer >= 0 (0: one per CPU)") or None
    _check_output(args.json, "--json", folder=False)
    _check_output(args.report, "--report", folder=True)
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

    result = run_comparison(budget=args.budget, progress=progress, simulation=_simulation(args),
                            params=_json_dict(args.params, "--params"),
                            **given, **_given(algorithms=args.algorithms))
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
            "mean ± std")
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
    if args.multi_objective and args.algorithms is not None:
        raise ConfigurationError(
            f"--algorithms {args.algorithms} chooses single-objective algorithms; "
            "--multi-objective always runs pygmo's nsga2. Leave one of them out")
    if args.params is not None and args.multi_objective:
        raise ConfigurationError(
            f"--params {args.params} sets algorithms of a single-objective comparison; "
            "--multi-objective runs nsga2 with --population. Leave one of them out")
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
    from nord.comparisons.anytime import SimulatedSetting
    if args.workers is None:
        return None
    return SimulatedSetting.for_dataset(args.dataset, **_given(
        workers=args.workers, time_budget=args.time_budget, mode=args.mode, signal=args.signal,
        noise=args.noise, overhead=args.overhead))


def _check_output(path: Optional[str], flag: str, folder: bool) -> None:
    """Refuse, before any work, an output path that cannot be written when the work is done."""
    if path is None:
        return
    import os

    target = Path(path)
    if folder and target.exists() and not target.is_dir():
        raise ConfigurationError(
            f"{flag} {path} names a folder to write into, but {path} is a file; give a folder "
            "path (it is created if missing)")
    if not folder and target.is_dir():
        raise ConfigurationError(
            f"{flag} {path} names a file to write, but {path} is a folder; give a file path, "
            f"e.g. {target / 'compare.json'}")
    if not folder and target.exists():
        if os.access(target, os.W_OK):
            return
        raise ConfigurationError(f"{flag} {path} cannot be written (no permission); choose "
                                 "another path")
    if not folder and not target.parent.exists():
        raise ConfigurationError(
            f"{flag} {path}: the folder {target.parent} does not exist; create it first "
            f"(mkdir -p {target.parent}), or choose a path in an existing folder")
    existing = next(parent for parent in (target, *target.parents) if parent.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigurationError(
            f"{flag} {path} cannot be written: {existing} is not a folder you can write; "
            "choose a path in one")


def _layers(args) -> int:
    from nord.architecture.layers import get_layer_spec, list_layers
    for name in list_layers():
        spec = get_layer_spec(name)
        params = ", ".join(p for p, _ in spec.params)
        print(f"{name:22s} {str(spec.target):28s} ({params})")
    return 0


def build_parser() -> argparse.ArgumentParser:

    parser = argparse.ArgumentParser(
        prog="nord", description=DESCRIPTION,
        epilog="'nord COMMAND --help' explains a command and its flags.")
    parser.add_argument("--version", action="version", version=f"nord {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    from nord.search.algorithms.registry import ALGORITHMS

    run = commands.add_parser(
        "run", help="run a search (under mpirun: on every rank)",
        description="Run a search. Every setting has a flag; --config FILE sets any of them "
                    "from a TOML file (keys: the flag names with underscores; "
                    "algorithm_params for --params), and flags given here override the file.",
        argument_default=argparse.SUPPRESS)
    run.add_argument("--config", metavar="FILE",
                     help="a TOML file of settings, e.g. from 'nord config RUN.db'")
    for _, flag, options in _run_arguments():
        run.add_argument(flag, **options)
    run.set_defaults(handler=_run_command)

    resume = commands.add_parser("resume", help="continue a run from its journal",
                                 description="Continue a run with the settings stored in "
                                             "its journal (only its budget and where it runs "
                                             "may change).")
    resume.add_argument("journal", help="the run's journal (.db)")
    resume.add_argument("--budget", type=int, default=None, metavar="N",
                        help="extend the run to N evaluations in all, those in the journal "
                             "included (default: its own budget)")
    for _, flag, options in _run_arguments():
        if flag in ("--device", "--threads", "--backend", "--workers", "--mps",
                    "--max-attempts", "--checkpoint-every", "--time-budget",
                    "--target"):   # where and how long it runs
            resume.add_argument(flag, **{**options, "help": options["help"] + " (default: "
                                                           "the journal's)"})
    resume.set_defaults(handler=_resume)

    config = commands.add_parser(
        "config", help="print a recorded run's settings as TOML",
        description="Print the settings a run was started with, as TOML for "
                    "'nord run --config': nord config a.db > a.toml && "
                    "nord run --config a.toml --journal b.db")
    config.add_argument("journal", help="the run's journal (.db)")
    config.set_defaults(handler=_config)

    report = commands.add_parser("report", help="plots and a summary page comparing runs")
    report.add_argument("journals", nargs="+", help="run journals, or folders of them")
    report.add_argument("--out", required=True, metavar="DIR", help="folder for the report")
    report.add_argument("--title", default=None,
                        help="the page's title (default: 'Comparison of N runs')")
    report.add_argument("--format", default="markdown", choices=["markdown", "html"],
                        help="report.md with PNG files beside it, or one self-contained "
                             "report.html")
    report.add_argument("--pareto", action="store_true", help="Pareto front for every run")
    report.add_argument("--best", type=int, default=3, metavar="N",
                        help="best architectures drawn per run")
    report.set_defaults(handler=_report)

    listing = commands.add_parser("list", help="the runs journaled in files or folders")
    listing.add_argument("paths", nargs="*", default=["runs"],
                         help="journals, or folders searched with their sub-folders (default: runs)")
    listing.set_defaults(handler=_list)

    export = commands.add_parser("export", help="a consistent copy of a journal, also of a live run")
    export.add_argument("journal", help="the run's journal")
    export.add_argument("out", help="the copy's path (a new file)")
    export.set_defaults(handler=_export)

    names = "; ".join(f"{entry.label}: {entry.description}" for entry in ALGORITHMS.entries())
    from nord.benchmarks.nasbench201.costs import DEVICES
    compare = commands.add_parser(
        "compare", help="compare search algorithms over many seeds on a tabular benchmark",
        description="Each algorithm runs --seeds times with --budget evaluations; the table "
                    "gives the mean and standard deviation of the 200-epoch test accuracy of "
                    "the architecture it returns (the one with the best 12-epoch validation "
                    "accuracy, the only signal it sees).")
    compare.add_argument("--benchmark", default="nasbench201", choices=["nasbench201"],
                         help="the tabular benchmark")
    compare.add_argument("--dataset", default="cifar10", metavar="NAME",
                         help="cifar10 (also cifar10-valid), cifar100, imagenet16 (also "
                              "ImageNet16-120)")
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
    compare.add_argument("--seeds", type=int, default=100, help="runs per algorithm")
    compare.add_argument("--base-seed", type=int, default=0, metavar="SEED",
                         help="the first seed; runs use SEED..SEED+SEEDS-1")
    compare.add_argument("--processes", type=int, default=1, help="worker processes (0: one per CPU)")
    compare.add_argument("--json", default=None, metavar="FILE",
                         help="save the table and every run's values")
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
    simulated.add_argument("--time-budget", type=float, default=None, metavar="S",
                           help="simulated seconds per run (default, from NATS-Bench: 20,000 "
                                "cifar10, 40,000 cifar100, 120,000 imagenet16)")
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
    compare.set_defaults(handler=_compare)

    layers = commands.add_parser("layers", help="the layer types descriptors may use")
    layers.set_defaults(handler=_layers)

    from nord.app.data_commands import register as register_data
    register_data(commands)
    _say_defaults(parser)
    return parser


def _say_defaults(parser: argparse.ArgumentParser) -> None:
    """End every flag's help with its default, where it has one and does not say it yet."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                _say_defaults(subparser)
            continue
        default = action.default
        if (not action.option_strings or action.help in (None, argparse.SUPPRESS)
                or default in (None, False, argparse.SUPPRESS) or "default" in action.help):
            continue
        shown = ",".join(map(str, default)) if isinstance(default, list) else default
        action.help = f"{action.help} (default: {shown})"


BROKEN_PIPE = 128 + 13
"""The exit status of a command whose reader went away (as a shell reports SIGPIPE)."""


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush of what the closed pipe
    did not take writes nothing (and no second BrokenPipeError at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):   # no file descriptor (stdout replaced, e.g. in tests)
        pass


QUIET_RANKS_WAIT = 2.0
"""Seconds a rank that does not speak waits before it exits with a refusal every rank shares."""


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.verbose:
        import logging
        logging.getLogger("nord").setLevel(logging.DEBUG)
    from nord.parallel import launcher_rank
    speak = (launcher_rank() or 0) == 0   # under mpirun every rank fails alike: one says why
    try:
        return args.handler(args)
    except RunInterrupted as stop:
        if speak and args.command == "compare":   # a run says itself how to resume
            print(f"nord compare: interrupted by {stop.signal_name}; nothing was printed or "
                  "saved (runs are not journaled: run the command again)", file=sys.stderr)
        return stop.exit_code
    except KeyboardInterrupt:   # a command that writes no run (report, list, config)
        if speak:
            print(f"nord {args.command}: interrupted", file=sys.stderr)
        return 130
    except NordError as error:
        if speak:
            print(f"nord {args.command}: {error}", file=sys.stderr)
        else:   # the others fail alike; the first to exit makes mpirun end the job, rank 0 too
            time.sleep(QUIET_RANKS_WAIT)   # so rank 0 says why before they do
        return 2
    except BrokenPipeError:   # `nord list | head`: the reader has what it wanted
        _silence_stdout()
        return BROKEN_PIPE
    except OSError as error:  # a journal or report path that cannot be written
        if speak:
            print(f"nord {args.command}: {error.strerror or error}: {error.filename or ''}; "
                  "choose a path in a folder you can write", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
