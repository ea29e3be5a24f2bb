"""``nord run``: one flag per RunConfig field, a --config file beneath them, and the run.

    nord run --algorithm regularized_evolution --budget 50 --journal runs/rea.db
    nord run --config run.toml --journal runs/b.db        # flags override the file
    mpirun -np 3 nord run --evaluation distributed --mode async --journal runs/async.db

``RUN_FLAGS`` and ``add_run_flags`` give scripts that build runs (experiments/) the same flags.
"""
from __future__ import annotations

import argparse
import re
from typing import Any, Dict, Mapping, Optional, Sequence

from nord.app.commands.flags import json_dict
from nord.errors import ConfigurationError

# Every other nord module is imported inside the command that needs it: `nord --help`,
# `nord list` and a refused flag must answer without loading torch, sqlite or matplotlib.


# --- nord run: one flag per RunConfig field ------------------------------------------------------
# (field, flag, type, help). The help says what the setting is; the default is added from
# RunConfig, so the two never disagree. Flags left out of the command line are not in the
# parsed arguments at all, so a --config file can set them.
RUN_FLAGS = (
    ("algorithm", "--algorithm", str, "the search algorithm: {algorithms}"),
    ("algorithm_params", "--params", "json",
     "the algorithm's settings as a JSON object, e.g. '{{\"sample_size\": 5}}' (default: "
     "the algorithm's own)"),
    ("space", "--space", str, "the search space: {spaces}"),
    ("space_params", "--space-params", "json",
     "the space's settings as a JSON object, e.g. '{{\"layers\": 3}}' (default: the "
     "space's own)"),
    ("evaluation", "--evaluation", str,
     "how candidates are evaluated: local (one process per network), data-parallel (all ranks "
     "train each network), distributed (groups of --group-size ranks train networks side by "
     "side), benchmark (NAS-Bench-201 look-ups), zero-cost (untrained networks scored by "
     "--proxy), weight-sharing (one supernet trained by a weight-sharing --algorithm), "
     "supernet (NAS-Bench-201 cells scored with a trained --supernet's weights) (default: "
     "local; benchmark for --space nasbench201; weight-sharing for its methods)"),
    ("proxy", "--proxy", str,
     "(zero-cost) the proxy scoring each untrained network: synflow, snip, grasp, fisher, "
     "grad_norm, jacov, nwot, params, flops (default: synflow)"),
    ("dataset", "--dataset", str,
     "{datasets}; for nasbench201: {benchmark_datasets} (default: digits; cifar10 for "
     "nasbench201)"),
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
    ("search_epochs", "--search-epochs", int,
     "(weight-sharing methods: --algorithm darts-v1, darts-v2, gdas, setn, enas, rsps) epochs "
     "of the supernet's search (default: 50, the benchmark's DARTS setting)"),
    ("supernet_channels", "--supernet-channels", int,
     "(weight sharing) channels of the supernet's first stage, C (default: 16, the "
     "benchmark's)"),
    ("supernet_cells", "--supernet-cells", int,
     "(weight sharing) cells per stage of the supernet, N (default: 5, the benchmark's)"),
    ("final_evaluation", "--final-evaluation", str,
     "(weight sharing) how the final cell is evaluated: table (looked up in NAS-Bench-201, for "
     "its data sets) or train (trained stand-alone with the nasbench201 recipe for --epochs) "
     "(default: table where the data set is the table's, else train)"),
    ("supernet", "--supernet", str,
     "(--evaluation supernet) the journal of a finished weight-sharing search, whose trained "
     "supernet scores each cell with inherited weights (default: none; required by "
     "--evaluation supernet)"),
    ("recipe", "--recipe", str,
     "how candidates are trained: {recipes}; the flags below replace its parts "
     "(docs/recipes.md) (default: default)"),
    ("batch_size", "--batch-size", int,
     "training mini-batch per rank, in samples (default: the recipe's, else 64)"),
    ("lr", "--lr", float, "learning rate, the peak after any warm-up (default: the recipe's)"),
    ("optimizer", "--optimizer", str, "adam, adamw, sgd or rmsprop (default: the recipe's)"),
    ("momentum", "--momentum", float, "SGD's and RMSprop's momentum (default: the recipe's)"),
    ("nesterov", "--nesterov", "bool",
     "Nesterov momentum, for SGD with --momentum (default: the recipe's)"),
    ("weight_decay", "--weight-decay", float, "L2 penalty, decoupled for adamw (default: the "
                                              "recipe's)"),
    ("lr_schedule", "--lr-schedule", str,
     "constant, cosine (down to --min-lr), step (times --decay-rate every --decay-epochs) or "
     "linear (down to --min-lr), stepped after each epoch (default: the recipe's)"),
    ("warmup_epochs", "--warmup-epochs", int,
     "epochs of linear warm-up from --warmup-lr to --lr before the schedule (default: the "
     "recipe's)"),
    ("warmup_lr", "--warmup-lr", float, "the first warm-up epoch's rate (default: the recipe's)"),
    ("min_lr", "--min-lr", float, "where cosine and linear end (default: the recipe's)"),
    ("decay_epochs", "--decay-epochs", int, "the step schedule's period (default: the recipe's)"),
    ("decay_rate", "--decay-rate", float, "the step schedule's factor (default: the recipe's)"),
    ("schedule_span", "--schedule-span", str,
     "under --scheduler, what the schedule spans: max-epochs (one schedule; a promoted "
     "candidate goes on) or leg (each leg its own, retrained from scratch) (default: the "
     "recipe's)"),
    ("augment", "--augment", str,
     "image augmentations of each training batch, comma-separated, per sample: crop "
     "(after padding), flip (horizontal), cutout; or none (default: the recipe's)"),
    ("crop_padding", "--crop-padding", int,
     "pixels padded before the crop (default: the recipe's, else an eighth of the side)"),
    ("cutout_length", "--cutout-length", int,
     "the cutout square's side (default: the recipe's, else half the side)"),
    ("clip_grad", "--clip-grad", float,
     "clip the gradients' norm to this; 0: none (default: the recipe's)"),
    ("label_smoothing", "--label-smoothing", float,
     "label smoothing of the training loss (default: the recipe's)"),
    ("precision", "--precision", str,
     "fp32, bf16 or fp16 (with a loss scaler): training arithmetic on a GPU (default: the "
     "recipe's)"),
    ("memory_format", "--memory-format", str,
     "contiguous or channels-last (default: the recipe's)"),
    ("normalise", "--normalise", str,
     "training-split (the training split's channel statistics) or published (NAS-Bench-201's "
     "for its data sets) (default: the recipe's)"),
    ("max_params", "--max-params", int,
     "refuse networks with more trainable parameters, as failed evaluations, before they are "
     "allocated (default: no limit; a network that would not fit the free memory of its GPU "
     "or host is refused either way)"),
    ("scheduler", "--scheduler", str,
     "stop poor candidates early: {schedulers} (default: none, every candidate trains "
     "--epochs)"),
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
     "how often in a row one candidate's evaluation may kill the run's process (e.g. the "
     "out-of-memory killer's SIGKILL) without finishing an epoch before a resume records it "
     "as failed instead of trying it again"),
    ("checkpoint_every", "--checkpoint-every", int,
     "epochs between the checkpoints of each candidate in training, beside the journal: a "
     "resumed run goes on from them and trains no epoch twice; 0: none (default: 1)"),
    ("journal", "--journal", str,
     "the run's SQLite journal (default: runs/<algorithm>-<date>-<time>.db)"),
    ("plugins", "--plugin", "list",
     "modules to import first, comma-separated, each by name (mypackage.nas) or as the path "
     "of a Python file (./mynas.py): they register your own {registered} (recorded: a resume "
     "imports them too) (default: none)"),
    ("callbacks", "--callbacks", "list",
     "training callbacks whose scalars each epoch records, comma-separated: {callbacks}; or "
     "your own from --plugin; each candidate gets fresh ones, and a scalar named as one of "
     "nord's own figures (train_loss, valid_accuracy, lr, ...) is left out with a diagnostic "
     "(default: none)"),
    ("stop_when", "--stop-when", "rules",
     "a stopping rule, e.g. 'dead_relu > 0.9' or 'not finite(loss)' (repeat the flag for "
     "several): comparisons of recorded scalars (train_loss, valid_accuracy, valid_loss, "
     "epoch, lr, the callbacks') joined by and/or/not, naming at least one; the first that "
     "holds at an epoch's end ends the candidate's training, its result the last validation "
     "figure (default: none)"),
    ("strict_callbacks", "--strict-callbacks", "flag",
     "a training callback that raises (sys.exit included) fails its candidate (default: it "
     "is recorded as a diagnostic of the candidate, whose result stays what it would have "
     "been)"),
)

_METAVARS = {"json": "JSON", "list": "NAMES", int: "N", float: "X", str: "NAME", "data_root": "DIR",
             "augment": "NAMES", "warmup_lr": "RATE", "min_lr": "RATE",
             "data_checksums": "FILE",
             "journal": "FILE", "supernet": "RUN.db", "device": "DEVICE", "lr": "RATE", "valid_fraction": "FRACTION",
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


def plugin_registries():
    """The registries a ``--plugin`` module may add to, in the order its help names them."""
    from nord.architecture.layers import LAYERS
    from nord.data.registry import CURATORS
    from nord.evaluators.callbacks import CALLBACKS
    from nord.nn.recipe import RECIPES
    from nord.search.algorithms.registry import ALGORITHMS
    from nord.search.schedulers import SCHEDULERS
    from nord.search.spaces.registry import SPACES
    return (ALGORITHMS, SPACES, CURATORS, SCHEDULERS, CALLBACKS, RECIPES, LAYERS)


def _registered() -> Dict[str, str]:
    """What the registries hold, as the help texts of RUN_FLAGS name it (their ``{...}``), so
    that a help text never lags a registry."""
    from nord.benchmarks.nasbench201.table import DATASET_NAMES
    algorithms, spaces, datasets, schedulers, callbacks, recipes, _ = plugin_registries()
    kinds = [registry.kind.split(" (")[0] + "s" for registry in plugin_registries()]

    def described(registry) -> str:
        return "; ".join(f"{entry.label}: {entry.description}" for entry in registry.entries())
    from nord.oneshot.registry import METHODS
    return dict(algorithms="; ".join(algorithms.choices()) + "; weight sharing on --space "
                "nasbench201: " + ", ".join(METHODS.choices()), spaces=described(spaces),
                datasets=", ".join(datasets.choices()),
                benchmark_datasets=", ".join(DATASET_NAMES.choices()),
                schedulers=described(schedulers), recipes=described(recipes),
                callbacks=described(callbacks),
                registered=f"{', '.join(kinds[:-1])} or {kinds[-1]}")


def run_arguments():
    """Every ``nord run`` flag but --config, in the order of its help: (name, flag, the
    options of ``add_argument``), where name is the RunConfig field, the ALGORITHM_FLAGS
    shortcut, or 'resume'."""
    registered = _registered()
    for name, flag, kind, text in RUN_FLAGS:
        if kind == "flag":
            yield name, flag, dict(action="store_true", help=text)
            continue
        if kind == "rules":
            yield name, flag, dict(action="append", metavar="RULE", help=text)
            continue
        if kind == "bool":
            yield name, flag, dict(action=argparse.BooleanOptionalAction, help=text)
            continue
        yield name, flag, dict(type=str if kind in ("json", "list") else kind,
                               metavar=_METAVARS.get(name) or _METAVARS[kind],
                               help=_flag_help(name, text.format(**registered)))
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
    known = {name: (flag, options) for name, flag, options in run_arguments()}
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
            value = {**values.get(name, {}), **json_dict(value, flag)}
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


def register(commands) -> None:
    """Add ``nord run`` to the ``nord`` command's subcommands."""
    run = commands.add_parser(
        "run", help="run a search (under mpirun: on every rank)",
        description="Run a search. Every setting has a flag; --config FILE sets any of them "
                    "from a TOML file (keys: the flag names with underscores; "
                    "algorithm_params for --params), and flags given here override the file.",
        argument_default=argparse.SUPPRESS)
    run.add_argument("--config", metavar="FILE",
                     help="a TOML file of settings, e.g. from 'nord config RUN.db'")
    for _, flag, options in run_arguments():
        run.add_argument(flag, **options)
    run.set_defaults(handler=_run_command)
