"""A ``nord compare --json`` result as the view shows it: per algorithm its summary, and the
anytime curve with its band where the comparison ran in simulated time.

    view = comparison_view(entry)   # {"algorithms": {name: {"summary", "curve"}}, ...}
"""
from __future__ import annotations

import json
from typing import Any, Dict

from nord.serve.catalogue import Entry
from nord.serve.runs import json_ready

__all__ = ["comparison_view"]


def comparison_view(entry: Entry) -> Dict[str, Any]:
    """The comparison's settings, and each algorithm's summary and anytime curve (the
    seeds' runs are left out: one page need not carry thousands of them)."""
    try:
        data = json.loads(entry.path.read_text(encoding="utf-8"))
        algorithms = data["algorithms"]
        view = {name: {"summary": (value or {}).get("summary"), "curve": (value or {}).get("curve"),
                       "description": (value or {}).get("description", "")}
                for name, value in algorithms.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        return {"path": str(entry.path), "error": f"'{entry.path}' cannot be read as a "
                                                  f"comparison: {error}"}
    settings = {key: data.get(key) for key in ("benchmark", "dataset", "budget", "seeds",
                                               "base_seed", "protocol", "simulation")}
    return json_ready({"path": str(entry.path), "settings": settings, "algorithms": view})
