"""REINFORCE: the policy learns the rewarded choice, settings are checked, runs are seeded,
registered, and resume to the uninterrupted run's policy."""
import numpy as np
import pytest

from nord.app.cli import main
from nord.errors import ConfigurationError, SearchSpaceError
from nord.evaluators.result import EvaluationResult
from nord.journal import Journal
from nord.search.algorithms.registry import make_algorithm
from nord.search.algorithms.reinforce import Reinforce
from nord.search.engine import run_search
from nord.search.spaces.base import SearchSpace
from tests.helpers.toy import Interrupting, ToyEvaluator, ToySpace, ask_and_tell, journal_rows

pytestmark = pytest.mark.timeout(60)


class Pair(SearchSpace):
    """Two genes: one of three values, one of four (offset, to check the bounds' lower end)."""

    lower = (0, 2)
    upper = (2, 5)


def rewarded(genome) -> EvaluationResult:
    """Accuracy 0.9 when the first gene is 1, else 0.1; the second gene does not matter."""
    return EvaluationResult(accuracy=0.9 if genome[0] == 1 else 0.1)


def test_the_policy_starts_uniform_and_moves_toward_the_rewarded_choice():
    algorithm = Reinforce(Pair(), seed=0, learning_rate=0.05)
    first, second = algorithm.probabilities()
    assert np.allclose(first, 1 / 3) and np.allclose(second, 1 / 4)
    asked = ask_and_tell(algorithm, rewarded, 150)
    first, second = algorithm.probabilities()
    assert first[1] > 0.8 and first.argmax() == 1
    assert second.max() < 0.6          # the unrewarded gene stays spread out
    assert [g[0] for g in asked[-30:]].count(1) > [g[0] for g in asked[:30]].count(1)


def test_failures_get_the_worst_reward_and_are_avoided():
    def fails_unless_two(genome):
        if genome[0] != 2:
            return EvaluationResult.failure("does not build")
        return EvaluationResult(accuracy=0.05)

    algorithm = Reinforce(Pair(), seed=1, learning_rate=0.05)
    ask_and_tell(algorithm, fails_unless_two, 150)
    assert algorithm.probabilities()[0].argmax() == 2


def test_a_zero_learning_rate_keeps_the_policy_uniform():
    algorithm = Reinforce(Pair(), seed=0, learning_rate=0)
    ask_and_tell(algorithm, rewarded, 20)
    assert np.allclose(algorithm.probabilities()[0], 1 / 3)


def test_the_baseline_is_a_moving_average_of_the_rewards():
    algorithm = Reinforce(Pair(), seed=0, momentum=0.5)
    for accuracy in (0.4, 0.8):
        algorithm.tell(algorithm.ask(), EvaluationResult(accuracy=accuracy))
    assert algorithm.baseline == pytest.approx(0.6)


@pytest.mark.parametrize("settings, words", [
    ({"learning_rate": -0.01}, "learning_rate must be a finite number >= 0"),
    ({"learning_rate": float("nan")}, "learning_rate must be a finite number >= 0"),
    ({"learning_rate": float("inf")}, "learning_rate must be a finite number >= 0"),
    ({"learning_rate": "0.01"}, "learning_rate must be"),
    ({"momentum": 1.0}, "momentum (of the reward baseline) must be a number in [0, 1)"),
    ({"momentum": -0.1}, "momentum (of the reward baseline) must be a number in [0, 1)"),
    ({"momentum": True}, "momentum (of the reward baseline) must be")])
def test_bad_settings_are_refused_with_the_parameter_and_the_rule(settings, words):
    with pytest.raises(ConfigurationError) as error:
        Reinforce(Pair(), seed=0, **settings)
    assert words in str(error.value)


def test_a_space_with_a_real_valued_gene_is_refused_clearly():
    class Mixed(SearchSpace):
        lower, upper, integer = (0, 0.0), (3, 1.0), (True, False)

    with pytest.raises(SearchSpaceError, match=r"real-valued genes \(positions \[1\]\)"):
        Reinforce(Mixed(), seed=0)


def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    def run(seed):
        algorithm = Reinforce(Pair(), seed=seed)
        return ask_and_tell(algorithm, rewarded, 40), algorithm.logits.tolist()

    assert run(3) == run(3)
    assert run(3)[0] != run(4)[0]


def test_it_is_registered_with_an_alias_and_takes_its_settings():
    algorithm = make_algorithm("rl", Pair(), seed=2, learning_rate=0.1, momentum=0.5)
    assert isinstance(algorithm, Reinforce) and isinstance(make_algorithm("REINFORCE", Pair()),
                                                           Reinforce)
    assert algorithm.parameters() == {"algorithm": "reinforce", "seed": 2,
                                      "learning_rate": 0.1, "momentum": 0.5}


def test_nord_run_and_compare_take_it(tmp_path, capsys):
    journal = tmp_path / "rl.db"
    assert main(["run", "--space", "nasbench201", "--algorithm", "reinforce", "--budget", "12",
                 "--seed", "1", "--journal", str(journal)]) == 0
    with Journal(journal) as record:
        assert len(record.evaluations()) == 12
    assert main(["run", "--space", "nasbench201", "--algorithm", "reinforce", "--budget", "5",
                 "--params", '{"learning_rate": -1}', "--journal", str(tmp_path / "x.db")]) == 2
    assert "learning_rate must be a finite number >= 0" in capsys.readouterr().err
    assert main(["compare", "--algorithms", "random,rea,reinforce", "--budget", "10",
                 "--seeds", "2"]) == 0
    assert "reinforce" in capsys.readouterr().out


# --- through the engine ------------------------------------------------------------------
@pytest.mark.parametrize("mode, workers", [("sync", 1), ("async", 1), ("sync", 3)])
def test_a_run_resumed_half_way_rebuilds_the_uninterrupted_policy(tmp_path, mode, workers):
    """ToySpace has an undecodable genome and a failing one: both are failures told."""
    settings = dict(budget=30, mode=mode, batch_size=workers)
    whole = Reinforce(ToySpace(), seed=0, learning_rate=0.1)
    run_search(whole, ToyEvaluator(), journal=tmp_path / "whole.db", **settings)
    with pytest.raises(KeyboardInterrupt):
        run_search(Reinforce(ToySpace(), seed=0, learning_rate=0.1), Interrupting(13),
                   journal=tmp_path / "cut.db", **settings)
    resumed = Reinforce(ToySpace(), seed=0, learning_rate=0.1)
    summary = run_search(resumed, ToyEvaluator(), journal=tmp_path / "cut.db", resume=True,
                         **settings)
    assert summary.replayed >= 10
    assert journal_rows(tmp_path / "cut.db") == journal_rows(tmp_path / "whole.db")
    assert resumed.logits.tolist() == whole.logits.tolist()
    assert resumed.baseline == whole.baseline and resumed.steps == whole.steps == 30
