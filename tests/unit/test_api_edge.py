"""The Python API's edge: a wrong kind of argument to run_search, make_algorithm, make_space or
LocalEvaluator is a ConfigurationError naming the parameter, what it takes and what was given
(never an AttributeError or TypeError from deep inside), and nothing is written; an algorithm
serves one run; keys nord gives the space and the algorithm itself are refused in the words of
the flag that set them; a plug-in algorithm's runs carry the name it was registered under."""
import pytest

from nord.app.cli import main
from nord.app.evaluation import evaluation_of
from nord.app.settings import RunConfig
from nord.data import Digits
from nord.errors import ConfigurationError
from nord.evaluators.callbacks import GradientNorms
from nord.evaluators.local import LocalEvaluator
from nord.journal import Journal
from nord.journal.listing import list_runs
from nord.report.runs import algorithm_name, load_run
from nord.search.algorithms import (GeneticAlgorithm, RandomSearch, RegularizedEvolution,
                                    make_algorithm, register_algorithm)
from nord.search.algorithms.registry import ALGORITHMS
from nord.search.engine import RunInfo, run_search
from nord.search.executors import SerialExecutor
from nord.search.schedulers import make_scheduler
from nord.search.spaces import ConvSpace, make_space
from nord.serve.catalogue import Catalogue
from nord.serve.runs import run_line
from tests.helpers.toy import ToyCurves, ToyEvaluator, ToySpace


def refused(call, *words):
    """The ConfigurationError of ``call``, whose message holds every one of ``words``."""
    with pytest.raises(ConfigurationError) as error:
        call()
    message = str(error.value)
    assert all(word in message for word in words), message
    return message


# --- run_search ------------------------------------------------------------------------------
RUN_SEARCH_MISTAKES = [
    (dict(algorithm="rea"), ("algorithm takes a SearchAlgorithm", "str: 'rea'")),
    (dict(algorithm=RandomSearch), ("algorithm takes", "the class RandomSearch", "RandomSearch(")),
    (dict(algorithm=None), ("algorithm takes", "NoneType")),
    (dict(algorithm=[RandomSearch]), ("algorithm takes", "list")),
    (dict(evaluator=ToyEvaluator), ("evaluator takes an Evaluator", "the class ToyEvaluator")),
    (dict(evaluator="local"), ("evaluator takes an Evaluator", "str: 'local'")),
    (dict(evaluator=None), ("evaluator takes an Evaluator", "NoneType")),
    (dict(evaluator=[ToyEvaluator()]), ("evaluator takes", "list")),
    (dict(executor="serial"), ("executor takes an Executor", "str: 'serial'")),
    (dict(executor=SerialExecutor), ("executor takes", "the class SerialExecutor")),
    (dict(budget="10"), ("budget", "'10'")),
    (dict(budget=0), ("budget", "got 0")),
    (dict(budget=None), ("budget", "None")),
    (dict(budget=2.5), ("budget", "2.5")),
    (dict(resume="no"), ("resume takes True or False", "str: 'no'")),
    (dict(resume=None), ("resume takes True or False", "None")),
    (dict(mode=["sync"]), ("mode must be one of",)),
    (dict(on_result="print"), ("on_result takes a function", "str: 'print'")),
    (dict(on_epoch=3), ("on_epoch takes a function", "int: 3")),
    (dict(info={"dataset": "digits"}), ("info takes a RunInfo", "dict")),
    (dict(info=RunInfo), ("info takes a RunInfo", "the class RunInfo")),
    (dict(scheduler="asha"), ("scheduler must be a Scheduler", "'asha'")),
    (dict(max_attempts="2"), ("max_attempts", "'2'")),
    (dict(batch_size=[2]), ("batch_size", "[2]")),
    (dict(journal=3), ("journal must be a path", "int: 3")),
]


@pytest.mark.parametrize("changes, words", RUN_SEARCH_MISTAKES,
                         ids=[f"{next(iter(c))}={c[next(iter(c))]!r}"[:40]
                              for c, _ in RUN_SEARCH_MISTAKES])
def test_run_search_names_the_parameter_given_the_wrong_kind(tmp_path, changes, words):
    arguments = dict(algorithm=RandomSearch(ToySpace(), seed=0), evaluator=ToyEvaluator(),
                     budget=3, journal=str(tmp_path / "run.db"))
    arguments.update(changes)
    algorithm, evaluator = arguments.pop("algorithm"), arguments.pop("evaluator")
    if "journal" in changes:
        arguments["journal"] = changes["journal"]
    refused(lambda: run_search(algorithm, evaluator, **arguments), *words)
    assert list(tmp_path.iterdir()) == []   # nothing written


def test_run_search_still_takes_an_executor_in_place_of_the_evaluator(tmp_path):
    summary = run_search(RandomSearch(ToySpace(), seed=0),
                         executor=SerialExecutor(ToyEvaluator()), budget=3)
    assert summary.evaluations == 3


def test_a_budget_of_zero_is_refused_by_run_search_as_by_the_configuration():
    """One rule for both: no run of zero evaluations."""
    refused(lambda: run_search(RandomSearch(ToySpace(), seed=0), ToyEvaluator(), budget=0),
            "budget", "got 0")
    refused(lambda: RunConfig(budget=0), "budget", "got 0")


# --- an algorithm serves one run -------------------------------------------------------------
def toy_algorithm(name, seed):
    return make_algorithm(name, ToySpace(), seed=seed)


@pytest.mark.parametrize("name, seed", [("random", 0), ("regularized_evolution", 3),
                                        ("genetic", 1), ("local_search", 5), ("reinforce", 2),
                                        ("ls", 7)])
def test_an_algorithm_that_served_a_run_is_refused_for_another(tmp_path, name, seed):
    algorithm = toy_algorithm(name, seed)
    first = tmp_path / "first.db"
    run_search(algorithm, ToyEvaluator(), budget=6, journal=str(first))
    second = tmp_path / "second.db"
    message = refused(lambda: run_search(algorithm, ToyEvaluator(), budget=6,
                                         journal=str(second)),
                      "an algorithm serves one run", "already proposed 6 candidates",
                      "Make a fresh one", f"seed={seed}")
    assert algorithm.name in message
    assert not second.exists()
    # its own journal resumed with it, as the trial did: refused alike, the journal untouched
    with Journal(first) as journal:
        before = (journal.count(), journal.metadata()["resumed"])
    refused(lambda: run_search(algorithm, ToyEvaluator(), budget=8, journal=str(first),
                               resume=True), "an algorithm serves one run")
    with Journal(first) as journal:
        assert (journal.count(), journal.metadata()["resumed"]) == before
    # a fresh one of the same settings resumes it
    summary = run_search(toy_algorithm(name, seed), ToyEvaluator(), budget=8, journal=str(first),
                         resume=True)
    assert summary.evaluations == 8


def test_an_algorithm_asked_by_hand_is_refused_too(tmp_path):
    """BOHB (under hyperband) asked once outside any run: its state is not a fresh run's."""
    algorithm = make_algorithm("bohb", ToySpace(), seed=4)
    algorithm.ask()
    refused(lambda: run_search(algorithm, ToyCurves(), budget=4, journal=str(tmp_path / "b.db"),
                               scheduler=make_scheduler("hyperband", min_epochs=1,
                                                        max_epochs=3)),
            "this bohb algorithm has already proposed 1 candidates")
    assert list(tmp_path.iterdir()) == []


# --- make_algorithm and make_space ------------------------------------------------------------
@pytest.mark.parametrize("name", ["random", "rea", "genetic", "local_search", "reinforce", "bohb",
                                  "bananas", "tpe", "pygmo", "nsga2"])
@pytest.mark.parametrize("space, words", [
    (None, ("space takes a SearchSpace", "NoneType")),
    (ConvSpace, ("space takes a SearchSpace", "the class ConvSpace", "ConvSpace(")),
    ("conv", ("space takes a SearchSpace", "str: 'conv'")),
    ([ToySpace()], ("space takes a SearchSpace", "list")),
], ids=["None", "class", "name", "list"])
def test_make_algorithm_names_a_space_of_the_wrong_kind(name, space, words):
    refused(lambda: make_algorithm(name, space, seed=0, budget=20), *words)


@pytest.mark.parametrize("seed", ["0", 1.5, -1, [0], 2 ** 32, True])
def test_make_algorithm_names_a_bad_seed(seed):
    refused(lambda: make_algorithm("rea", ToySpace(), seed=seed), "seed must be an integer",
            "or None", repr(seed) if not isinstance(seed, int) or isinstance(seed, bool)
            else str(seed))


def test_make_algorithm_still_takes_numpy_seeding():
    import numpy as np
    for seed in (np.random.default_rng(0), np.random.PCG64(1), np.random.SeedSequence(2), None,
                 4294967295):
        assert make_algorithm("random", ToySpace(), seed=seed).ask() is not None


def test_the_algorithm_classes_check_space_and_seed_themselves():
    refused(lambda: RegularizedEvolution(None, seed=0), "space takes a SearchSpace")
    refused(lambda: RandomSearch(ToySpace(), seed="3"), "seed must be an integer", "'3'")


@pytest.mark.parametrize("name", [None, RandomSearch, 3, ["rea"]])
def test_make_algorithm_names_a_name_that_is_not_a_string(name):
    refused(lambda: make_algorithm(name, ToySpace(), seed=0),
            "a search algorithm is chosen by its name, a string", "regularized_evolution")


@pytest.mark.parametrize("budget", ["100", 0, 1.5, [10]])
def test_make_algorithm_names_a_bad_budget(budget):
    refused(lambda: make_algorithm("pygmo", ToySpace(), seed=0, budget=budget), "budget")


@pytest.mark.parametrize("name", [None, ConvSpace, 1])
def test_make_space_names_a_name_that_is_not_a_string(name):
    refused(lambda: make_space(name), "a search space is chosen by its name, a string")


@pytest.mark.parametrize("params, words", [
    ({"input_shape": None}, ("input_shape=(channels, height, width)", "None")),
    ({"input_shape": 8}, ("input_shape=(channels, height, width)", "8")),
    ({"activation": ["relu"]}, ("activation takes a layer type's name", "list")),
    ({"activation": 1}, ("activation takes a layer type's name", "int: 1")),
    ({"repair": "no"}, ("repair takes True or False", "str: 'no'")),
    ({"repair": None}, ("repair takes True or False", "None")),
    ({"layers": "3"}, ("layers must be an integer", "'3'")),
])
def test_make_space_names_a_space_parameter_of_the_wrong_kind(params, words):
    refused(lambda: make_space("conv", **params), *words)


def test_make_space_takes_a_parameter_called_name_as_any_other_parameter():
    refused(lambda: make_space("conv", name="x"), "does not take name", "layers")


# --- LocalEvaluator ---------------------------------------------------------------------------
@pytest.mark.parametrize("changes, words", [
    (dict(curator="digits"), ("curator takes a DataCurator", "str: 'digits'")),
    (dict(curator=Digits), ("curator takes a DataCurator", "the class Digits", "Digits(")),
    (dict(curator=[Digits()]), ("curator takes a DataCurator", "list")),
    (dict(callbacks="grad_norm"), ("callbacks takes a list", "str: 'grad_norm'")),
    (dict(callbacks=GradientNorms), ("callbacks takes a list", "GradientNorms")),
    (dict(callbacks=None), ("callbacks takes a list", "None")),
    (dict(seed="0"), ("seed must be an integer", "'0'")),
    (dict(seed=None), ("seed must be an integer", "None")),
    (dict(seed=0.5), ("seed must be an integer", "0.5")),
    (dict(epochs="2"), ("epochs", "'2'")),
    (dict(data_fraction="0.5"), ("data_fraction must be a number in (0, 1]", "str: '0.5'")),
    (dict(data_fraction=None), ("data_fraction", "None")),
    (dict(data_fraction=0), ("data_fraction", "got 0")),
    (dict(optimizer=3), ("optimizer takes a name", "int: 3")),
    (dict(optimizer_kwargs=[("betas", (0.5, 0.9))]), ("optimizer_kwargs takes a dict", "list")),
    (dict(progress="no"), ("progress takes True or False", "str: 'no'")),
    (dict(keep_model=None), ("keep_model takes True or False", "None")),
    (dict(strict_callbacks=1), ("strict_callbacks takes True or False", "int: 1")),
    (dict(stop_rules=5), ("stop_rules takes a list of rules", "int: 5")),
    (dict(stop_rules=None), ("stop_rules takes a list of rules", "None")),
    (dict(check_every="1"), ("check_every", "'1'")),
    (dict(threads="1"), ("threads", "'1'")),
    (dict(test_batch_size=None), ("test_batch_size", "None")),
])
def test_local_evaluator_names_the_parameter_given_the_wrong_kind(changes, words):
    refused(lambda: LocalEvaluator(**changes), *words)


def test_local_evaluator_still_takes_its_documented_forms():
    evaluator = LocalEvaluator(curator=Digits(), callbacks=[GradientNorms], seed=3,
                               stop_rules="grad_norm > 1e9", data_fraction=0.5, epochs=0,
                               optimizer_kwargs={"betas": (0.5, 0.9)}, check_every=2)
    assert (evaluator.seed, evaluator.epochs, len(evaluator.stop_rules)) == (3, 0, 1)


# --- keys nord gives the space and the algorithm itself ---------------------------------------
@pytest.mark.parametrize("space_params", [
    {"input_shape": [1, 8, 8]}, {"input_shape": (3, 32, 32), "layers": 2}, {"input_shape": None}])
def test_space_params_may_not_set_the_input_shape_the_data_gives(tmp_path, capsys, space_params):
    import json
    refused(lambda: RunConfig(space_params=space_params), "--space-params (space_params=)",
            "'input_shape'", "--dataset digits")
    journal = tmp_path / "run.db"
    assert main(["run", "--budget", "2", "--space-params", json.dumps(space_params),
                 "--journal", str(journal)]) == 2
    assert "--space-params (space_params=) sets 'input_shape'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("key, flag", [("space", "--space"), ("budget", "--budget"),
                                       ("name", "--algorithm")])
def test_algorithm_params_may_not_set_what_nord_gives_the_algorithm(tmp_path, capsys, key, flag):
    refused(lambda: RunConfig(algorithm_params={key: 3}), "--params (algorithm_params=)",
            f"'{key}'", flag)
    assert main(["run", "--budget", "2", "--params", f'{{"{key}": 3}}',
                 "--journal", str(tmp_path / "run.db")]) == 2
    assert f"--params (algorithm_params=) sets '{key}'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


# --- settings a researcher would not mean -----------------------------------------------------
@pytest.mark.parametrize("evaluation", ["local", "data-parallel", "distributed"])
def test_zero_epochs_are_refused_where_candidates_train(evaluation):
    refused(lambda: RunConfig(evaluation=evaluation, epochs=0), "--epochs 0",
            f"evaluation={evaluation!r}", "--epochs 1 or more", "--evaluation zero-cost")


@pytest.mark.parametrize("evaluation, flag", [("data-parallel", "--evaluation data-parallel"),
                                              ("distributed", "--evaluation distributed")])
def test_a_launch_of_one_process_is_said_for_the_ways_that_use_several(evaluation, flag):
    way = evaluation_of(RunConfig(evaluation=evaluation))
    warning = way.launch_warning(1)
    assert flag in warning and "one process" in warning and "mpirun -np N" in warning
    assert way.launch_warning(3) is None
    assert evaluation_of(RunConfig(evaluation="local")).launch_warning(1) is None


@pytest.mark.parametrize("population", [1, 2])
def test_a_small_population_is_blamed_not_the_default_sample_size(population):
    message = refused(lambda: make_algorithm("rea", ToySpace(), seed=0,
                                             population_size=population),
                      "population_size (--population) must be at least 3",
                      f"got {population}", "default sample_size=3")
    assert "sample_size must" not in message
    refused(lambda: make_algorithm("rea", ToySpace(), seed=0, population_size=population,
                                   sample_size=population + 1),
            "sample_size must be an integer in", f"got {population + 1}")
    assert make_algorithm("rea", ToySpace(), seed=0, population_size=population,
                          sample_size=population).sample_size == population


def test_a_population_of_one_is_blamed_not_the_default_elitism():
    message = refused(lambda: make_algorithm("genetic", ToySpace(), seed=0, population_size=1),
                      "population_size (--population) must be at least 2", "got 1",
                      "default elitism=1")
    assert "elitism must" not in message
    assert isinstance(make_algorithm("ga", ToySpace(), seed=0, population_size=1, elitism=0),
                      GeneticAlgorithm)


def test_the_cli_blames_the_population_given(tmp_path, capsys):
    assert main(["run", "--budget", "2", "--population", "2",
                 "--journal", str(tmp_path / "r.db")]) == 2
    err = capsys.readouterr().err
    assert "population_size (--population) must be at least 3" in err and "got 2" in err
    assert list(tmp_path.iterdir()) == []


# --- a plug-in algorithm's name ----------------------------------------------------------------
PLUGIN = '''
from nord.search.algorithms import {base}, register_algorithm


@register_algorithm("{name}", description="a plug-in that extends {base}")
class Mine({base}):
    """{base}, under another name."""
'''


@pytest.mark.parametrize("name, base", [("my_rea", "RegularizedEvolution"),
                                        ("lucky-random", "RandomSearch"),
                                        ("Evo2", "GeneticAlgorithm")])
def test_a_plug_in_algorithm_runs_under_its_registered_name(tmp_path, capsys, name, base):
    plugin = tmp_path / f"plugin_{name.replace('-', '_').lower()}.py"
    plugin.write_text(PLUGIN.format(name=name, base=base))
    journal = tmp_path / "mine.db"
    try:
        assert main(["run", "--plugin", str(plugin), "--algorithm", name, "--space",
                     "nasbench201", "--budget", "4", "--journal", str(journal)]) == 0, (
            capsys.readouterr().err)
        with Journal(journal) as record:
            metadata = record.metadata()
        assert metadata["algorithm"] == name and metadata["config"]["algorithm"] == name
        assert metadata["parameters"]["algorithm"] == name
        assert list_runs(str(journal))[0][0]["algorithm"] == name          # nord list
        capsys.readouterr()
        assert main(["list", str(tmp_path)]) == 0
        assert name in capsys.readouterr().out
        entry = Catalogue([tmp_path]).entries()[0]                       # nord serve
        assert run_line(entry)["algorithm"] == name
        assert algorithm_name(load_run(journal).metadata) == name       # the report
        assert main(["resume", str(journal), "--budget", "6"]) == 0, capsys.readouterr().err
    finally:
        ALGORITHMS.unregister(name)


def test_a_registered_subclass_made_directly_has_its_registered_name():
    class Renamed(RegularizedEvolution):
        pass

    try:
        register_algorithm("renamed_rea", Renamed)
        assert Renamed(ToySpace(), seed=0).parameters()["algorithm"] == "renamed_rea"
        assert make_algorithm("renamed-rea", ToySpace(), seed=0).name == "renamed_rea"
        assert RegularizedEvolution.name == "regularized_evolution"   # the parent keeps its own
    finally:
        ALGORITHMS.unregister("renamed_rea")


def test_no_algorithm_is_refused_where_the_search_runs(tmp_path):
    """None will do on MPI ranks that only evaluate; a serial executor runs the search."""
    refused(lambda: run_search(None, executor=SerialExecutor(ToyEvaluator()), budget=2,
                               journal=str(tmp_path / "run.db")),
            "algorithm takes a SearchAlgorithm", "got None on the rank that runs the search")
    assert list(tmp_path.iterdir()) == []


def test_an_algorithm_registered_by_its_dotted_path_is_registered_lazily():
    """A dotted path is registered without importing it (no class yet to give a name)."""
    from nord.search.algorithms.registry import ALGORITHMS, register_algorithm
    try:
        register_algorithm("lazy_random", "nord.search.algorithms.random_search.RandomSearch")
        assert ALGORITHMS.canonical("lazy_random") == "lazy_random"
    finally:
        ALGORITHMS.unregister("lazy_random")
