"""The README stays true: its first example runs, and its map names every module of nord."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


@pytest.mark.processes
def test_first_example_runs():
    example = re.findall(r"```python\n(.*?)```", README, re.S)[0]
    done = subprocess.run([sys.executable, "-c", example], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("ok: accuracy") == 2, done.stderr


def test_map_of_the_code_names_every_module():
    code_map = README.split("## Map of the code", 1)[1]
    modules = [p for p in (REPO / "nord").rglob("*.py") if p.name != "__init__.py"]
    top_level = {p.name for p in modules if p.parent == REPO / "nord"}
    packages = {p.parent.name for p in modules if p.parent != REPO / "nord"}
    missing = [name for name in sorted(top_level | {f"{pkg}/" for pkg in packages})
               if name not in code_map]
    assert not missing, f"README's map of the code does not mention {missing}"
    for mentioned in re.findall(r"^\s+(\w+\.py)\s", code_map, re.M):
        assert list((REPO / "nord").rglob(mentioned)), f"the map names {mentioned}, which is gone"


def test_the_two_commands_are_make_targets():
    makefile = (REPO / "Makefile").read_text()
    assert "make demo" in README and "make test" in README
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (REPO / ".ci" / "run").read_text()
