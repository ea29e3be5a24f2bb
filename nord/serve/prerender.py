"""The numbers a page shows, written into its HTML by the server, so that they are there
before any script runs (a reader without JavaScript, or one that reads the page as loaded);
the page's script then keeps them up to date. Every journal string is HTML-escaped.

    html = runs_table(template, [run_line(entry) for entry in catalogue.entries()])
"""
from __future__ import annotations

import datetime
import html
from typing import Any, Dict, Iterable, Optional

__all__ = ["runs_table", "run_facts", "state_text", "percent", "duration"]


def state_text(line: Dict[str, Any]) -> str:
    """A run's state as the pages write it."""
    return ("killed (crashed: its writer stopped)" if line["state"] == "killed"
            else line["state"])


def percent(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.2f} %"


def duration(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
    seconds = max(0.0, seconds)
    for limit, unit, size in ((90, "s", 1), (5400, "min", 60), (172800, "h", 3600)):
        if seconds < limit:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds / 86400:.1f} d"


def _evaluations(line: Dict[str, Any]) -> str:
    """The list's progress: evaluations of the budget, or a search's epochs of its own."""
    search = line.get("search")
    if search is not None:
        return f"{search['epochs']}/{search['of'] or '?'} epochs"
    if line.get("evaluations") is None:
        return "-"
    return f"{line['evaluations']}/{line.get('budget') or '?'}"


def _cell(field: Optional[str], text: Any, css: str = "") -> str:
    attributes = (f' data-field="{field}"' if field else "") + (f' class="{css}"' if css else "")
    return f"<td{attributes}>{html.escape(str(text))}</td>"


def runs_table(template: str, lines: Iterable[Dict[str, Any]]) -> str:
    """``template`` (runs.html) with the runs table's rows filled in."""
    rows = []
    for line in lines:
        created = line.get("created")
        created = ("-" if not created else datetime.datetime.fromtimestamp(
            created, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"))
        path = html.escape(line["path"])
        link = (path if line["state"] == "unreadable"
                else f'<a href="/run/{line["id"]}">{path}</a>')
        rows.append(
            f'<tr data-run="{line["id"]}"><td></td><td data-field="path">{link}</td>'
            + _cell("algorithm", line.get("algorithm") or line["kind"])
            + _cell("state", state_text(line), f"state-{html.escape(line['state'])}")
            + _cell("evaluations", _evaluations(line), "num")
            + _cell("failed", line.get("failed", "-"), "num")
            + _cell("best", percent(line.get("best")) if "best" in line else "-", "num")
            + _cell("elapsed", duration(line.get("elapsed")), "num")
            + _cell("time_left", duration(line.get("time_left")), "num")
            + _cell(None, created) + "</tr>")
    return template.replace("<tbody></tbody>", f"<tbody>{''.join(rows)}</tbody>", 1)


def run_facts(template: str, line: Dict[str, Any]) -> str:
    """``template`` (run.html) with the run's facts and title filled in; for a weight-sharing
    search, its own facts, the sentence saying where it stands, and the black-box panels
    (``class="black-box"``) and what trains now (its final cell, later) hidden."""
    search = line.get("search")
    if search is not None:
        return _search_facts(template, line, search)
    facts = [("journal", line["path"]), ("state", state_text(line)),
             ("algorithm", line.get("algorithm") or "-"), ("evaluations", (
                 f"{line['evaluations']} of {line.get('budget') or '?'}"
                 if line.get("evaluations") is not None else "-")),
             ("failed", line.get("failed", "-")), ("best", percent(line.get("best"))),
             ("elapsed", duration(line.get("elapsed"))),
             ("time left", duration(line.get("time_left"))),
             ("mode", line.get("mode") or "-"), ("data", line.get("dataset") or "-")]
    return _with_facts(template, line, facts)


def _search_facts(template: str, line: Dict[str, Any], search: Dict[str, Any]) -> str:
    facts = ([("journal", line["path"]), ("state", state_text(line))]
             + [tuple(fact) for fact in search["facts"]]
             + [("elapsed", duration(line.get("elapsed"))),
                ("time left", duration(line.get("time_left"))),
                ("data", line.get("dataset") or "-")])
    page = _with_facts(template, line, facts).replace(
        '<p id="detail" class="muted"></p>',
        f'<p id="detail" class="muted">{html.escape(search["progress"])}</p>', 1)
    return (page.replace('class="black-box"', 'class="black-box" hidden')
            .replace('<section id="training-now">', '<section id="training-now" hidden>', 1))


def _with_facts(template: str, line: Dict[str, Any], facts) -> str:
    items = "".join(f'<dt>{name}</dt><dd data-field="{name}">{html.escape(str(value))}</dd>'
                    for name, value in facts)
    title = html.escape(f"{line.get('algorithm') or 'run'}: {line['path']}")
    return (template.replace('<dl id="summary" class="facts"></dl>',
                             f'<dl id="summary" class="facts">{items}</dl>', 1)
            .replace('<h1 id="title">run</h1>', f'<h1 id="title">{title}</h1>', 1))
