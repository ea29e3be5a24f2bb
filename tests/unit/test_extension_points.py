"""Every extension point works the way its base class's docstring says: the example there is
run as written, registered with ``register_<thing>``, and used by name. Then the idiom shared
by all of them (a decorator too, a list function, an error naming the register function),
dotted paths imported on first use, and plug-ins found through entry points."""
import importlib.metadata
import os
import subprocess
import sys
import textwrap
from collections import OrderedDict
from pathlib import Path

import pytest
import torch

import nord.data.registry
import nord.evaluators.callbacks
import nord.search.algorithms.registry
import nord.search.schedulers
import nord.search.spaces.registry
from nord.architecture import layers
from nord.data import DataCurator
from nord.errors import ConfigurationError
from nord.evaluators.callbacks import GradientNorms, TrainingCallback, TrainingState
from nord.evaluators.result import EvaluationResult
from nord.registry import Registry
from nord.search.algorithms import SearchAlgorithm
from nord.search.schedulers import CONTINUE, DONE, STOP, Scheduler
from nord.search.spaces import ConvSpace, SearchSpace

REPO = Path(__file__).resolve().parents[2]

# module holding the registry, its attribute, the register function, the list function
POINTS = {
    "space": (nord.search.spaces.registry, "SPACES", "register_space", "list_spaces"),
    "algorithm": (nord.search.algorithms.registry, "ALGORITHMS", "register_algorithm",
                  "list_algorithms"),
    "scheduler": (nord.search.schedulers, "SCHEDULERS", "register_scheduler", "list_schedulers"),
    "callback": (nord.evaluators.callbacks, "CALLBACKS", "register_callback", "list_callbacks"),
    "data set": (nord.data.registry, "CURATORS", "register_curator", "list_curators"),
}


@pytest.fixture
def private_registries(monkeypatch):
    """A copy of every registry, so that what a test registers does not leak."""
    for module, attribute, _, _ in POINTS.values():
        monkeypatch.setattr(module, attribute, getattr(module, attribute).copy())
    monkeypatch.setattr(layers, "LAYERS", layers.LAYERS.copy())


def example_code(cls) -> str:
    """The code block of ``cls``'s docstring (the one after '::'), as written."""
    doc = textwrap.dedent("\n".join(cls.__doc__.split("\n")[1:]))
    block = doc.split("::\n", 1)[1]
    lines = []
    for line in block.split("\n")[1:]:
        if line and not line.startswith(" "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines))


def run_example(cls, **names):
    """Run the code block of ``cls``'s docstring; its namespace."""
    namespace = dict(names)
    exec(compile(example_code(cls), f"<{cls.__name__} docstring>", "exec"), namespace)
    return namespace


# --- each base class's example, run as written ---------------------------------------------
def test_the_search_space_example_is_made_by_name(private_registries):
    example = run_example(SearchSpace)
    space = example["space"]
    assert isinstance(space, example["WidthDepth"])
    assert "width-depth" in nord.search.spaces.registry.list_spaces()
    descriptor = space.to_descriptor((8, 2))
    assert [layer.type for layer in descriptor.layers.values()] == ["conv2d", "relu"] * 2
    assert isinstance(nord.search.spaces.registry.make_space("Width_Depth"), example["WidthDepth"])


def test_the_search_algorithm_example_asks_and_is_told(private_registries):
    example = run_example(SearchAlgorithm, space=ConvSpace(input_shape=(1, 8, 8)))
    algorithm = example["algorithm"]
    assert isinstance(algorithm, example["Uniform"]) and algorithm.seed == 0
    candidate = algorithm.ask()
    algorithm.tell(candidate, EvaluationResult(accuracy=0.5))
    assert algorithm.best is candidate and candidate.number == 0
    entry = nord.search.algorithms.registry.ALGORITHMS.entry("uniform")
    assert entry.description == "uniformly random genomes"


def test_the_scheduler_example_decides_at_each_rung(private_registries):
    example = run_example(Scheduler)
    scheduler = example["scheduler"]
    assert isinstance(scheduler, example["Threshold"]) and scheduler.accuracy == 0.6
    scheduler.prepare(budget=2, mode="async")
    assert scheduler.first_epochs(0) == 1 and scheduler.first_epochs(1) == 1
    assert scheduler.report(0, 1, 0.7) == CONTINUE
    assert scheduler.report(1, 1, 0.5) == STOP
    assert scheduler.report(0, 9, 0.8) == DONE
    assert "threshold" in nord.search.schedulers.list_schedulers()


def test_the_training_callback_example_reports_the_learning_rate(private_registries):
    example = run_example(TrainingCallback)
    grad_norm, learning_rate = example["callbacks"]
    assert isinstance(grad_norm, GradientNorms)
    assert isinstance(learning_rate, example["LearningRate"])
    model = torch.nn.Linear(2, 1)
    state = TrainingState(epoch=1, step=0, model=model,
                          optimizer=torch.optim.SGD(model.parameters(), lr=0.05))
    assert learning_rate.on_epoch_end(state) == {"epoch_lr": 0.05}   # not "lr": nord's own figure


def test_the_data_curator_example_loads_by_name(private_registries):
    example = run_example(DataCurator)
    data = example["data"]
    assert isinstance(data, example["Noise"])
    assert data.input_shape == (3, 8, 8) and data.num_classes == 4
    assert data.n_train + data.n_valid == 100 and data.n_test == 20
    assert "noise" in nord.data.registry.list_curators()


# --- one idiom for every extension point ----------------------------------------------------
@pytest.mark.parametrize("point", POINTS)
def test_an_unknown_name_names_the_register_function(point):
    module, attribute, register, _ = POINTS[point]
    with pytest.raises(ConfigurationError, match=f"unknown .*{point} 'no-such-thing'") as error:
        getattr(module, attribute).get("no-such-thing")
    assert f".{register}(name, cls)" in str(error.value).split("Register yours with ")[1]


@pytest.mark.parametrize("point", POINTS)
def test_the_list_function_lists_the_registered_names(point):
    module, attribute, _, list_names = POINTS[point]
    assert getattr(module, list_names)() == getattr(module, attribute).names()
    assert getattr(module, list_names)() == sorted(getattr(module, list_names)())


def own_class(point):
    """A minimal class an extension point accepts."""
    base = {"space": SearchSpace, "algorithm": SearchAlgorithm, "scheduler": Scheduler,
            "callback": TrainingCallback, "data set": DataCurator}[point]
    return type("Mine", (base,), {"__doc__": "mine, for a test"})


def registered_class(point, name):
    """The class registered as ``name`` (an algorithm's entry wraps it with its preset)."""
    module, attribute, _, _ = POINTS[point]
    value = getattr(module, attribute).load(name)
    return value.cls if point == "algorithm" else value


@pytest.mark.parametrize("point", POINTS)
def test_register_returns_the_class_with_or_without_a_decorator(private_registries, point):
    module, attribute, register, _ = POINTS[point]
    registry = getattr(module, attribute)
    called, decorated = own_class(point), own_class(point)
    register = getattr(module, register)
    assert register("called", called, aliases=("by-call",)) is called
    assert register("decorated", description="by decorator")(decorated) is decorated
    assert registered_class(point, "BY_CALL") is called
    assert registry.entry("called").description == "mine, for a test"
    assert registry.entry("decorated").description == "by decorator"


@pytest.mark.parametrize("point", POINTS)
def test_a_name_taken_by_another_class_needs_overwrite(private_registries, point):
    module, attribute, register, _ = POINTS[point]
    register = getattr(module, register)
    first, second = own_class(point), own_class(point)
    register("twice", first)
    register("twice", first)      # the same class again: a module imported twice
    with pytest.raises(ConfigurationError, match="overwrite=True"):
        register("twice", second)
    register("twice", second, overwrite=True)
    assert registered_class(point, "twice") is second


@pytest.mark.parametrize("point", ["space", "algorithm", "scheduler", "callback"])
def test_only_subclasses_of_the_base_class_are_registered(private_registries, point):
    module, _, register, _ = POINTS[point]
    with pytest.raises(ConfigurationError, match="subclasses can be registered"):
        getattr(module, register)("dict", dict)


def test_register_layer_follows_the_idiom(private_registries):
    @layers.register_layer("doubled", params=[("factor", 2.0)])
    class Doubled(torch.nn.Module):
        def __init__(self, factor=2.0):
            super().__init__()
            self.factor = factor

    assert isinstance(Doubled, type) and layers.get_layer_spec("doubled").resolve() is Doubled
    layers.register_layer("doubled", Doubled, params=[("factor", 2.0)])   # again, as it is
    assert layers.register_layer("softsign_too", "torch.nn.Softsign") == "torch.nn.Softsign"
    assert "doubled" in layers.list_layers()


# --- dotted paths, imported on first use ----------------------------------------------------
def test_a_dotted_path_is_imported_when_it_is_loaded():
    registry = Registry("thing")
    registry.register("ordered", "collections.OrderedDict")
    assert registry.get("ordered") == "collections.OrderedDict"
    assert registry.load("ordered") is OrderedDict


def test_a_space_registered_by_its_path_is_made_by_name(private_registries):
    nord.search.spaces.registry.register_space("lazy", "nord.search.spaces.conv.ConvSpace")
    assert nord.search.spaces.registry.space_class("lazy") is ConvSpace
    assert isinstance(nord.search.spaces.registry.make_space("lazy", layers=1), ConvSpace)


# --- plug-ins: entry points loaded on the first miss ------------------------------------------
def fake_entry_points(points, calls):
    def entry_points(group):
        calls.append(group)
        return [importlib.metadata.EntryPoint(name, value, group) for name, value in points]
    return entry_points


def test_a_miss_loads_the_entry_points_once(monkeypatch):
    calls = []
    monkeypatch.setattr("importlib.metadata.entry_points", fake_entry_points(
        [("ordered", "collections:OrderedDict"), ("broken", "no_such_module_here:Thing")], calls))
    registry = Registry("thing", plugins="test.things")
    registry.register("listed", list)
    assert registry.get("listed") is list and calls == []     # a hit reads no entry points
    assert registry.get("Ordered") is OrderedDict and calls == ["test.things"]
    with pytest.raises(ConfigurationError, match="'broken'"):   # logged and left out
        registry.get("broken")
    assert registry.names() == ["listed", "ordered"] and calls == ["test.things"]


def test_a_listing_includes_the_plug_ins(monkeypatch):
    calls = []
    monkeypatch.setattr("importlib.metadata.entry_points",
                        fake_entry_points([("ordered", "collections:OrderedDict")], calls))
    assert Registry("thing", plugins="test.things").names() == ["ordered"]


def test_an_algorithm_plug_in_is_adopted_through_register_algorithm(private_registries,
                                                                   monkeypatch):
    monkeypatch.setattr("importlib.metadata.entry_points", fake_entry_points(
        [("plugged", "nord.search.algorithms.random_search:RandomSearch")], []))
    nord.search.algorithms.registry.ALGORITHMS.load_plugins()   # this process read them already
    algorithm = nord.search.algorithms.registry.make_algorithm(
        "plugged", ConvSpace(input_shape=(1, 8, 8)), seed=0)
    assert type(algorithm).__name__ == "RandomSearch"


def run_python(code, *args):
    return subprocess.run([sys.executable, *args] if not code else [sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=120, cwd=REPO)


@pytest.mark.processes
def test_the_benchmark_space_is_found_without_importing_the_benchmark():
    done = run_python(textwrap.dedent("""
        import sys
        from nord.search.spaces import SPACES, make_space
        assert not [m for m in sys.modules if m.startswith("nord.benchmarks")]
        space = make_space("nasbench201")
        print(type(space).__module__)
        print(SPACES.entry("nas-bench-201").label)
    """))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["nord.benchmarks.nasbench201.space",
                                        "nasbench201 (nas-bench-201, nats-tss)"]


@pytest.mark.processes
def test_nord_run_finds_the_benchmark_space_in_a_fresh_process(tmp_path):
    done = run_python(None, "-m", "nord", "run", "--space", "nasbench201", "--algorithm", "random",
                      "--budget", "2", "--journal", str(tmp_path / "run.db"))
    assert done.returncode == 0, done.stderr
    assert "done: 2 evaluations" in done.stdout


def test_the_evaluator_example_scores_what_a_search_asks():
    from nord.evaluators.base import Evaluator
    from nord.search import RandomSearch, run_search

    space = ConvSpace(input_shape=(1, 8, 8))
    example = run_example(Evaluator, Evaluator=Evaluator, EvaluationResult=EvaluationResult,
                          run_search=run_search, algorithm=RandomSearch(space, seed=0))
    summary = example["summary"]
    assert summary.evaluations == 10 and summary.failed == 0
    best = space.to_descriptor(summary.best.genome)
    channels = sum(layer.params["out_channels"] for layer in best.layers.values()
                   if layer.type == "conv2d")
    assert summary.best_result.accuracy == pytest.approx(channels / 1000)


def test_the_executor_example_runs_a_search():
    from nord.search import RandomSearch, run_search
    from nord.search.executors.base import Executor, run_task

    space = ConvSpace(input_shape=(1, 8, 8))
    order = []

    class Recording:
        def evaluate_task(self, task):
            order.append(task.number)
            return EvaluationResult(accuracy=0.5)

    example = run_example(Executor, Executor=Executor, run_task=run_task, run_search=run_search,
                          algorithm=RandomSearch(space, seed=0), evaluator=Recording())
    assert example["summary"].evaluations == 10
    assert sorted(order) == list(range(10))


@pytest.mark.processes
def test_the_search_space_example_runs_under_nord_run_as_a_plug_in(tmp_path):
    """The docstring's space, saved as a module as written, is searched by ``nord run
    --plugin`` (in a process of its own: registering it would change this one's catalogue):
    a space without a constructor of its own is not handed the data's shape."""
    (tmp_path / "width_depth_plugin.py").write_text(example_code(SearchSpace))
    done = subprocess.run([sys.executable, "-m", "nord", "run", "--plugin", "width_depth_plugin",
                           "--space", "width-depth", "--budget", "2", "--epochs", "1",
                           "--journal", str(tmp_path / "r.db")], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "done: 2 evaluations (2 evaluated; 0 failed)" in done.stdout
