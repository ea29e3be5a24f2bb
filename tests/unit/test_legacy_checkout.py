"""The one line ``import nord.legacy`` inside a NORD 2018 checkout: a script run from the
checkout's folder, as 2018's README said, next to what that folder may hold.

The layouts are written here: files named as 2018's, holding only the names 2018's files
define (never 2018's code); each module file of the "2018 package" raises when it runs, so a
script that reaches one fails. Each script runs in a fresh interpreter, as a user runs it.
"""
import pytest

from tests.helpers.legacy import FAILS, package_2018, run_python, utils_2018, write

pytestmark = pytest.mark.processes   # each test runs a 2018 script in its own interpreter

SCRIPT = """import nord.legacy
from neural_nets import NeuralDescriptor, NeuralEvaluator
import neural_nets.layers.layer_types
from neural_nets.distributed import Environment
from utils import get_logger
import neural_nets, utils
print(neural_nets.__name__, neural_nets.layers.layer_types.__name__, utils.__name__)
"""
NORD = "nord.legacy.neural_nets nord.legacy.neural_nets.layers.layer_types nord.legacy.utils\n"


def run_script(folder, script=SCRIPT):
    (folder / "example.py").write_text(script)
    return run_python(["example.py"], folder, timeout=120)


def announcements(done):
    return [line for line in done.stderr.splitlines() if line.startswith("nord.legacy:")]


@pytest.mark.parametrize("files", [
    {"neural_nets/layers/layer_types.py": FAILS.format("layer_types.py")},
    {"neural_nets/data/cifar-10-batches-py/test_batch": "not python"},
    {"neural_nets/local/neural_evaluator.py": FAILS.format("neural_evaluator.py"),
     "neural_nets/distributed/environment.py": FAILS.format("environment.py")},
], ids=["only-layers", "data-folder", "partial-copy"])
def test_a_2018_folder_without_init_is_ignored(tmp_path, files):
    write(tmp_path, files)
    done = run_script(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == NORD and not announcements(done), done.stderr


def test_nord_2018s_own_package_and_utils_are_replaced_and_one_line_says_so(tmp_path):
    write(tmp_path, {**package_2018(), **utils_2018()})
    done = run_script(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == NORD
    assert announcements(done) == [
        f"nord.legacy: NORD 2018's own neural_nets/ and utils.py in {tmp_path} replaced by "
        "nord's port (their files do not run, so edits to them have no effect)"], done.stderr


def test_2018s_package_alone_is_named_alone(tmp_path):
    write(tmp_path, package_2018())
    done = run_script(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == NORD
    assert [line.split(" in ")[0] for line in announcements(done)] == [
        "nord.legacy: NORD 2018's own neural_nets/"]


@pytest.mark.parametrize("files, check", [
    ({"neural_nets/__init__.py": "OWN = True\n"},
     "import neural_nets; assert neural_nets.OWN; import utils\n"
     "assert utils.__name__ == 'nord.legacy.utils'"),
    ({"utils.py": "def get_logger(name):\n    return 'own'\n"},
     "from utils import get_logger; assert get_logger('x') == 'own'"),
    ({**package_2018(extra_imports=[("mine", "Mine")], runs=True),
      "neural_nets/mine.py": "Mine = 1\n"},
     "import neural_nets; assert neural_nets.Mine == 1 and neural_nets.NeuralDescriptor == 'own'"),
    (utils_2018(extra=["mine"]),
     "import utils; assert utils.__name__ == 'utils' and hasattr(utils, 'mine')"),
], ids=["own-package", "own-utils", "2018-package-extended", "2018-utils-extended"])
def test_a_module_of_the_users_own_comes_first(tmp_path, files, check):
    write(tmp_path, files)
    done = run_script(tmp_path, "import nord.legacy\n" + check + "\nprint('own')\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "own\n" and not announcements(done), done.stderr
