"""Early stopping: a search with the ASHA scheduler against the same search trained in full.

    .venv/bin/python bench/asha.py                           # both data sets, about 16 min
    .venv/bin/python bench/asha.py --quick                   # a smoke test, well under 30 s
    .venv/bin/python bench/asha.py --seeds 0,1,2 --candidates 27 --json runs/asha.json
    .venv/bin/python bench/asha.py --datasets cifar-sized --rungs 3,27,3   # other rungs

For each data set and seed, one search algorithm (random search by default: with the same
seed it proposes the same candidates whatever it is told) runs twice through ``run_search``,
in async mode on one worker: once with ``make_scheduler('asha', min_epochs, max_epochs,
eta)``, once with every candidate trained to ``max_epochs``. The data set is the same for
every seed; the seed changes the candidates and their training (initial weights, batch
order). Printed for each data set:

* **epochs**: training epochs spent, counted as rows of the journal's ``epochs`` table (one
  per candidate and epoch trained), cross-checked against the engine's count;
* **best validation accuracy** (the search signal) and the **test accuracy** of that
  candidate (never shown to the search): under ASHA, the best candidate among those trained
  furthest, as the run's summary and journal report it;
* the **seed-to-seed spread** (sample std) of the full search's best validation accuracy;
* **wall time** of each search (and the seconds spent in epochs, from the journal);
* **why**: from the full search's learning curves, how well the validation accuracy at each
  lower rung ranks the candidates as ``max_epochs`` does (Spearman), and where the full
  search's best candidate stood at each rung.

The target: ASHA's mean best validation accuracy is within the full search's seed-to-seed
spread of its mean (it may be better), while ASHA spends at most a third of its epochs.
Digits uses rungs 1/3/9. On the CIFAR-sized set one epoch ranks candidates little better
than chance (Spearman about +0.2 against epoch 9), so a first cut there is close to random:
with rungs 1/3/9, seeds 0-9 missed the target (-2.17 points against a spread of 2.00). That
set therefore uses rungs 2/6/18: two epochs rank candidates with Spearman +0.56 and six with
+0.94 (against epoch 18), and over seeds 0-9 ASHA's best valid was -0.97 points from the full
search's against a spread of 2.01, at 0.277 of its epochs.

**Checkpoint cost.** A paused candidate is saved when its leg ends and loaded when it is
promoted (``save_checkpoint`` and ``load_checkpoint`` in ``nord.evaluators.checkpoints``). For a
few candidates that ASHA paused at the first rung (the smallest, the median and the largest
by parameters), the first leg is trained again as the engine runs it, leaving a checkpoint;
a save and a load of that checkpoint are then timed (median of several) and divided by the
time of one epoch of that candidate measured in the same leg.

The synthetic set: 3x32x32 images of 10 classes, each class a fixed smooth random pattern,
shifted by a few pixels and buried in Gaussian noise, so that accuracy grows over several
epochs and differs between architectures.
"""
import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nord.data import Digits, TensorCurator  # noqa: E402
from nord.evaluators.checkpoints import load_checkpoint, save_checkpoint  # noqa: E402
from nord.evaluators.local import LocalEvaluator  # noqa: E402
from nord.journal import Journal  # noqa: E402
from nord.nn.network import NeuralNet  # noqa: E402
from nord.search.engine import run_search  # noqa: E402
from nord.search.executors import Task  # noqa: E402
from nord.search.algorithms.registry import make_algorithm  # noqa: E402
from nord.search.schedulers import make_scheduler, rungs  # noqa: E402
from nord.search.spaces import ConvSpace  # noqa: E402

EPOCH_SHARE = 1 / 3
"""ASHA may spend at most this share of the full search's epochs."""

DATASETS = ("digits", "cifar-sized")
"""The data sets benchmarked, in the order they run."""


@dataclass
class Setting:
    """One data set's benchmark: the space searched and how candidates train.

    Attributes:
        dataset: 'digits' or 'cifar-sized'.
        samples: training plus validation samples of the synthetic set (unused for Digits).
        channels, kernel_size: ConvSpace bounds (two layers).
        candidates: the budget of each search.
        min_epochs, max_epochs, eta: ASHA's rungs; the full search trains ``max_epochs``.
        batch_size, lr: training of every candidate (Adam).
        valid_fraction: share of the training split held out for validation (the search
            signal): large enough that a best accuracy is not decided by a sample or two.
        noise: std of the synthetic set's noise (unused for Digits).
    """

    dataset: str
    samples: int
    channels: Sequence[int]
    kernel_size: Sequence[int]
    candidates: int
    min_epochs: int
    max_epochs: int
    eta: int
    batch_size: int = 64
    lr: float = 1e-3
    valid_fraction: float = 0.2
    noise: float = 6.0


def settings(quick: bool, candidates: Optional[int], datasets: Optional[Sequence[str]] = None,
             geometry: Optional[Sequence[int]] = None) -> List[Setting]:
    """The default sizes (with five seeds on two shared cores, about 1 minute for Digits and
    15 for the CIFAR-sized set), or tiny ones; only the named ``datasets`` (all by default),
    with ASHA's ``geometry`` (min_epochs, max_epochs, eta) instead of each set's own where
    given."""
    if quick:
        chosen = [Setting("digits", 0, (2, 8), (1, 3), 6, 1, 3, 3),
                  Setting("cifar-sized", 400, (2, 4), (1, 3), 6, 1, 3, 3, batch_size=100,
                          noise=2.0)]
    else:
        chosen = [Setting("digits", 0, (4, 32), (1, 5), 27, 1, 9, 3),
                  Setting("cifar-sized", 1200, (2, 12), (1, 5), 27, 2, 18, 3, batch_size=32,
                          valid_fraction=0.25)]
    if datasets is not None:
        chosen = [setting for setting in chosen if setting.dataset in datasets]
    for setting in chosen:
        if candidates is not None:
            setting.candidates = candidates
        if geometry is not None:
            setting.min_epochs, setting.max_epochs, setting.eta = geometry
    return chosen


def synthetic_cifar(samples: int, test: int, seed: int = 0, noise: float = 6.0,
                    shift: int = 3, valid_fraction: float = 0.2) -> TensorCurator:
    """3x32x32 images of 10 classes: each class a fixed smooth pattern (random 3x8x8 blocks
    upsampled to 32x32), rolled by up to ``shift`` pixels each way, plus N(0, noise) noise."""
    rng = np.random.default_rng(seed)
    patterns = np.kron(rng.normal(size=(10, 3, 8, 8)), np.ones((1, 1, 4, 4)))
    total = samples + test
    labels = rng.integers(0, 10, total)
    images = np.empty((total, 3, 32, 32), dtype=np.float32)
    moves = rng.integers(-shift, shift + 1, size=(total, 2))
    for index, (label, (down, right)) in enumerate(zip(labels, moves)):
        images[index] = np.roll(patterns[label], (down, right), axis=(1, 2))
    images += rng.normal(scale=noise, size=images.shape).astype(np.float32)
    return TensorCurator(images[:samples], labels[:samples], images[samples:], labels[samples:],
                         name="cifar-sized", valid_fraction=valid_fraction, split_seed=seed)


def curator_for(setting: Setting):
    if setting.dataset == "digits":
        return Digits(seed=0, valid_fraction=setting.valid_fraction)
    return synthetic_cifar(setting.samples, test=400, noise=setting.noise,
                           valid_fraction=setting.valid_fraction)


# --- one search -------------------------------------------------------------------------------
def search(setting: Setting, curator, algorithm: str, seed: int, asha: bool, folder: Path,
           threads: int) -> Dict[str, object]:
    """One search; its epochs (from the journal), best result, wall time."""
    space = ConvSpace(input_shape=curator.input_shape, channels=tuple(setting.channels),
                      kernel_size=tuple(setting.kernel_size))
    evaluator = LocalEvaluator(curator=curator, epochs=setting.max_epochs,
                               batch_size=setting.batch_size, optimizer="adam", lr=setting.lr,
                               seed=seed, threads=threads, device="cpu")
    scheduler = make_scheduler("asha", min_epochs=setting.min_epochs,
                               max_epochs=setting.max_epochs, eta=setting.eta) if asha else None
    journal = folder / f"{'asha' if asha else 'full'}-{seed}.db"
    summary = run_search(make_algorithm(algorithm, space, seed=seed), evaluator,
                         budget=setting.candidates, journal=journal, mode="async",
                         scheduler=scheduler)
    with Journal(journal) as record:
        epochs = len(record.epochs())
        evaluations = record.evaluations()
        legs = record.legs()
        curves = record.epochs()
    trained = [row for row in evaluations if not row["cached"] and row["status"] == "ok"]
    # the engine's own count: the scheduler's epochs, or every trained candidate's epochs
    counted = summary.epochs_trained if asha else sum(row["epochs"] for row in trained)
    best = summary.best_result
    return {
        "epochs": epochs, "epochs_engine": counted, "candidates": summary.evaluations,
        "trained": len(trained), "cached": summary.cached, "failed": summary.failed,
        "best_valid": best.accuracy if best else None,
        "best_test": best.reported_accuracy if best else None,
        "best_epochs": best.epochs if best else None,
        "best_genome": list(summary.best.genome) if summary.best else None,
        "reached_max": sum(1 for leg in legs if leg["target_epochs"] == setting.max_epochs
                           and leg["status"] == "ok") if asha else len(trained),
        "pauses": sum(1 for leg in legs if leg["decision"] == "pause"),
        "promotions": sum(1 for leg in legs if leg["start_epochs"] > 0),
        "wall_s": summary.wall_time,
        "training_s": sum(row["seconds"] for row in curves),
        "journal": str(journal),
        **({} if asha or summary.best is None else
           rung_agreement(curves, summary.best.number, setting)),
    }


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """Ranks from 0, equal values sharing their mean rank."""
    values = np.asarray(values, dtype=float)
    ranks = np.empty(len(values))
    ranks[values.argsort(kind="stable")] = np.arange(len(values))
    for value in np.unique(values):
        ranks[values == value] = ranks[values == value].mean()
    return ranks


def rung_agreement(curves: List[Dict[str, object]], best: int,
                   setting: Setting) -> Dict[str, object]:
    """From the full search's learning curves: how well the validation accuracy at each of
    ASHA's lower rungs ranks the candidates as ``max_epochs`` does (Spearman), and where the
    full search's best candidate stood there (1: first; ties share the better place)."""
    accuracy: Dict[int, Dict[int, float]] = {}
    for row in curves:
        accuracy.setdefault(row["epoch"], {})[row["candidate"]] = row["valid_accuracy"]
    final = accuracy.get(setting.max_epochs, {})
    correlation, place = {}, {}
    for rung in rungs(setting.min_epochs, setting.max_epochs, setting.eta)[:-1]:
        at_rung = accuracy.get(rung, {})
        numbers = sorted(set(at_rung) & set(final))
        if len(numbers) < 3 or best not in at_rung:
            continue
        early = average_ranks([at_rung[n] for n in numbers])
        late = average_ranks([final[n] for n in numbers])
        correlation[str(rung)] = float(np.corrcoef(early, late)[0, 1])
        place[str(rung)] = 1 + sum(1 for n in numbers if at_rung[n] > at_rung[best])
    return {"rung_correlation": correlation, "best_place_at_rung": place}


# --- checkpoint cost --------------------------------------------------------------------------
def paused_at_first_rung(journal: str, space: ConvSpace) -> List[Dict[str, object]]:
    """The candidates whose first leg ended in a pause, with genome and parameter count."""
    with Journal(journal) as record:
        genomes = {row["candidate"]: row["genome"] for row in record.candidates()}
        paused = []
        for leg in record.legs():
            if leg["start_epochs"] == 0 and leg["decision"] == "pause":
                paused.append({"candidate": leg["candidate"],
                               "genome": tuple(genomes[leg["candidate"]]),
                               "n_params": (leg["result"] or {}).get("n_params") or 0})
    return paused


def spread_sample(items: List[Dict[str, object]], count: int) -> List[Dict[str, object]]:
    """Up to ``count`` items evenly spread from the smallest to the largest network."""
    ordered = sorted(items, key=lambda item: item["n_params"])
    if len(ordered) <= count:
        return ordered
    picks = sorted({round(i * (len(ordered) - 1) / (count - 1)) for i in range(count)})
    return [ordered[i] for i in picks]


def checkpoint_cost(setting: Setting, curator, space: ConvSpace, candidate: Dict[str, object],
                    seed: int, folder: Path, threads: int, repeats: int = 5) -> Dict[str, float]:
    """Seconds of one epoch, of a save and of a load of the candidate's paused checkpoint."""
    torch.set_num_threads(threads)
    descriptor = space.decode(candidate["genome"])
    path = str(folder / f"candidate-{candidate['candidate']}.pt")
    evaluator = LocalEvaluator(curator=curator, epochs=setting.max_epochs,
                               batch_size=setting.batch_size, optimizer="adam", lr=setting.lr,
                               seed=seed, threads=threads, device="cpu")
    task = Task(candidate["candidate"], candidate["genome"], descriptor.hash, space, descriptor,
                epochs=setting.min_epochs, checkpoint=path)
    epochs = []
    task.report = lambda record: epochs.append(record.seconds)
    result = evaluator.evaluate_task(task)
    if not result.ok:
        raise RuntimeError(f"candidate {candidate['candidate']} failed to train: {result.error}")
    device = torch.device("cpu")
    model = NeuralNet(descriptor, curator.input_shape, curator.num_classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=setting.lr)
    loads, saves = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        load_checkpoint(path, descriptor, model, optimizer, device)
        loads.append(time.perf_counter() - started)
    again = str(folder / f"again-{candidate['candidate']}.pt")
    for _ in range(repeats):
        started = time.perf_counter()
        save_checkpoint(again, descriptor, model, optimizer, setting.min_epochs)
        saves.append(time.perf_counter() - started)
    epoch = statistics.median(epochs)
    save, load = statistics.median(saves), statistics.median(loads)
    return {"candidate": candidate["candidate"], "genome": list(candidate["genome"]),
            "n_params": result.n_params, "bytes": Path(path).stat().st_size,
            "epoch_s": epoch, "save_s": save, "load_s": load,
            "save_fraction": save / epoch, "load_fraction": load / epoch,
            "pause_fraction": (save + load) / epoch}


# --- figures ----------------------------------------------------------------------------------
def spread(values: List[float]) -> Optional[float]:
    """Sample standard deviation; None with fewer than two values."""
    return statistics.stdev(values) if len(values) >= 2 else None


def side(runs: List[Dict[str, object]], name: str) -> Dict[str, object]:
    valid = [run[name]["best_valid"] for run in runs]
    test = [run[name]["best_test"] for run in runs]
    return {"epochs": sum(run[name]["epochs"] for run in runs),
            "best_valid_mean": statistics.mean(valid), "best_valid_std": spread(valid),
            "best_test_mean": statistics.mean(test), "best_test_std": spread(test),
            "wall_s": sum(run[name]["wall_s"] for run in runs),
            "training_s": sum(run[name]["training_s"] for run in runs)}


def verdict(asha: Dict[str, object], full: Dict[str, object]) -> Dict[str, object]:
    """Whether ASHA met the target on this data set (see the module docstring)."""
    ratio = asha["epochs"] / full["epochs"]
    noise = full["best_valid_std"]
    gap = asha["best_valid_mean"] - full["best_valid_mean"]
    accuracy = None if noise is None else gap >= -noise
    return {"epochs_ratio": ratio, "epochs_ok": ratio <= EPOCH_SHARE, "valid_gap": gap,
            "noise": noise, "accuracy_ok": accuracy,
            "holds": bool(accuracy) and ratio <= EPOCH_SHARE}


def percent(value: Optional[float]) -> str:
    return "  -  " if value is None else f"{100 * value:5.1f}"


def benchmark(setting: Setting, seeds: Sequence[int], algorithm: str, threads: int,
              checkpoint_samples: int) -> Dict[str, object]:
    curator = curator_for(setting).load()
    space = ConvSpace(input_shape=curator.input_shape, channels=tuple(setting.channels),
                      kernel_size=tuple(setting.kernel_size))
    ladder = rungs(setting.min_epochs, setting.max_epochs, setting.eta)
    print(f"\n{setting.dataset}: {curator.n_train} train / {curator.n_valid} valid / "
          f"{curator.n_test} test samples, {curator.input_shape}; {algorithm}, "
          f"{setting.candidates} candidates, channels {tuple(setting.channels)}, kernels "
          f"{tuple(setting.kernel_size)}; ASHA rungs {ladder} (eta {setting.eta}) against "
          f"{setting.max_epochs} epochs each")
    print(f"{'seed':>4s} {'search':6s} {'epochs':>6s} {'valid %':>7s} {'test %':>7s} "
          f"{'at max':>6s} {'wall s':>7s}")
    runs = []
    with tempfile.TemporaryDirectory(prefix="nord-bench-asha-") as scratch:
        folder = Path(scratch)
        for seed in seeds:
            run = {"seed": seed}
            for name, asha in (("asha", True), ("full", False)):   # a refusal comes first
                run[name] = search(setting, curator, algorithm, seed, asha, folder, threads)
                figures = run[name]
                if figures["epochs"] != figures["epochs_engine"]:
                    print(f"  warning: the journal counts {figures['epochs']} epochs, the engine "
                          f"{figures['epochs_engine']}")
                print(f"{seed:4d} {name:6s} {figures['epochs']:6d} "
                      f"{percent(figures['best_valid']):>7s} {percent(figures['best_test']):>7s} "
                      f"{figures['reached_max']:6d} {figures['wall_s']:7.1f}", flush=True)
            runs.append(run)
        paused = paused_at_first_rung(runs[0]["asha"]["journal"], space)
        costs = [checkpoint_cost(setting, curator, space, candidate, seeds[0], folder, threads)
                 for candidate in spread_sample(paused, checkpoint_samples)]
    for run in runs:
        for name in ("full", "asha"):
            del run[name]["journal"]   # gone with the scratch folder
    asha, full = side(runs, "asha"), side(runs, "full")
    result = {"setting": asdict(setting), "rungs": ladder, "data": {
        "train": curator.n_train, "valid": curator.n_valid, "test": curator.n_test,
        "input_shape": list(curator.input_shape)},
        "runs": runs, "asha": asha, "full": full, "target": verdict(asha, full),
        "checkpoint": costs}
    report(setting, result)
    return result


def report(setting: Setting, result: Dict[str, object]) -> None:
    asha, full, target = result["asha"], result["full"], result["target"]
    for name, figures in (("full", full), ("asha", asha)):
        print(f"{name:5s} total {figures['epochs']:5d} epochs, best valid "
              f"{percent(figures['best_valid_mean'])} ± {percent(figures['best_valid_std'])} %, "
              f"its test {percent(figures['best_test_mean'])} ± "
              f"{percent(figures['best_test_std'])} %, wall {figures['wall_s']:.1f} s (in epochs "
              f"{figures['training_s']:.1f} s)")
    noise = ("undefined (one seed)" if target["noise"] is None else
        f"{100 * target['noise']:.2f} points")
    print(f"ASHA / full epochs {target['epochs_ratio']:.3f} (target <= {EPOCH_SHARE:.3f}): "
          f"{'met' if target['epochs_ok'] else 'NOT met'}; best valid ASHA - full "
          f"{100 * target['valid_gap']:+.2f} points, seed-to-seed std of full {noise}: "
          f"{'met' if target['accuracy_ok'] else 'NOT met'}")
    runs = [run["full"] for run in result["runs"] if "rung_correlation" in run["full"]]
    for rung in result["rungs"][:-1]:
        values = [run["rung_correlation"][str(rung)] for run in runs
                  if str(rung) in run["rung_correlation"]]
        places = [run["best_place_at_rung"][str(rung)] for run in runs
                  if str(rung) in run["best_place_at_rung"]]
        if values:
            print(f"at {rung:2d} epoch(s), the full search's learning curves rank candidates "
                  f"as at {setting.max_epochs} with Spearman {statistics.mean(values):+.2f} "
                  f"(per seed {', '.join(f'{v:+.2f}' for v in values)}); its best candidate "
                  f"placed {', '.join(map(str, places))} of {setting.candidates}")
    for cost in result["checkpoint"]:
        print(f"checkpoint of candidate {cost['candidate']:3d} ({cost['n_params']:7,d} params, "
              f"{cost['bytes'] / 1024:7.1f} KiB): epoch {1000 * cost['epoch_s']:7.1f} ms, save "
              f"{1000 * cost['save_s']:5.2f} ms ({cost['save_fraction']:.4f} epoch), load "
              f"{1000 * cost['load_s']:5.2f} ms ({cost['load_fraction']:.4f} epoch)")


def finite(value):
    """JSON without NaN: NaN and infinities become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def main(quick: bool = False, seeds: Optional[Sequence[int]] = None,
         candidates: Optional[int] = None, algorithm: str = "random", threads: int = 1,
         checkpoint_samples: int = 3, json_path: Optional[str] = None,
         only: Optional[Sequence[str]] = None,
         geometry: Optional[Sequence[int]] = None) -> int:
    seeds = list(seeds if seeds is not None else ((0, 1) if quick else (0, 1, 2, 3, 4)))
    torch.set_num_threads(threads)
    started = time.perf_counter()
    print(f"ASHA against full training: seeds {seeds}, {threads} thread(s)"
          + (" (quick: sizes for a smoke test, not for conclusions)" if quick else ""))
    datasets = {setting.dataset: benchmark(setting, seeds, algorithm, threads, checkpoint_samples)
                for setting in settings(quick, candidates, only, geometry)}
    holds = all(result["target"]["holds"] for result in datasets.values())
    wall = time.perf_counter() - started
    print(f"\ntarget (ASHA's best valid within the full search's seed-to-seed std, at most "
          f"{EPOCH_SHARE:.3f} of its epochs) on every data set: {'holds' if holds else 'does NOT hold'}"
          f"; {wall:.0f} s in all")
    if json_path:
        output = {"seeds": seeds, "algorithm": algorithm, "threads": threads, "quick": quick,
                  "epoch_share": EPOCH_SHARE, "datasets": datasets, "holds": holds,
                  "wall_s": wall}
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(finite(output), indent=2, allow_nan=False) + "\n")
        print(f"figures written to {json_path}")
    return 0


def seed_list(text: str) -> List[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--seeds takes comma-separated integers, e.g. 0,1,2; got {text!r}") from None
    if not values or min(values) < 0 or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(
            f"--seeds takes distinct integers >= 0, e.g. 0,1,2; got {text!r}")
    return values


def algorithm_name(text: str) -> str:
    from nord.errors import ConfigurationError
    from nord.search.algorithms.registry import ALGORITHMS
    try:
        return ALGORITHMS.canonical(text)
    except ConfigurationError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def dataset_list(text: str) -> List[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = sorted(set(names) - set(DATASETS))
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"--datasets takes comma-separated names among {', '.join(DATASETS)}; got {text!r}")
    return names


def rung_list(text: str) -> List[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        values = []
    if len(values) != 3 or not 1 <= values[0] < values[1] or values[2] < 2:
        raise argparse.ArgumentTypeError(
            f"--rungs takes MIN,MAX,ETA with 1 <= MIN < MAX and ETA >= 2, e.g. 2,18,3; "
            f"got {text!r}")
    return values


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1; got {text!r}")
    return value


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes for a smoke test (seconds, not conclusions)")
    parser.add_argument("--seeds", type=seed_list, default=None,
                        help="comma-separated seeds (default 0,1,2,3,4; quick 0,1)")
    parser.add_argument("--candidates", type=positive, default=None,
                        help="candidates in each search (default 27; quick 6)")
    parser.add_argument("--algorithm", type=algorithm_name, default="random",
                        help="search algorithm (nord.search.algorithms.registry), the same for both")
    parser.add_argument("--threads", type=positive, default=1, help="torch CPU threads")
    parser.add_argument("--checkpoint-samples", type=positive, default=3,
                        help="paused candidates whose checkpoint cost is measured")
    parser.add_argument("--datasets", type=dataset_list, default=None,
                        help=f"comma-separated data sets to run (default all: "
                             f"{','.join(DATASETS)})")
    parser.add_argument("--rungs", type=rung_list, default=None, metavar="MIN,MAX,ETA",
                        help="ASHA's min_epochs, max_epochs and eta for every data set run "
                             "(the full search trains MAX), instead of each set's default")
    parser.add_argument("--json", dest="json_path", default=None, help="write the figures here")
    args = parser.parse_args()
    from nord.errors import ConfigurationError
    try:
        sys.exit(main(args.quick, args.seeds, args.candidates, args.algorithm, args.threads,
                      args.checkpoint_samples, args.json_path, args.datasets, args.rungs))
    except ConfigurationError as error:   # e.g. an algorithm ASHA cannot serve
        parser.error(str(error))
