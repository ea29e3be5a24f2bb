"""Page: a small document (headings, paragraphs, tables, images) rendered as Markdown or HTML.

The report builds its summary once and renders it in the format asked for, so the two
formats always say the same::

    from nord.report.page import Code, Link, Page

    page = Page("Search comparison")
    page.heading("Runs")
    page.paragraph("Read from ", Code("runs/ga.db"), ".")
    page.table(["run", "best accuracy"], [["ga", "93.10 %"], [Link("random", "#random"), "91.00 %"]])
    page.to_markdown()      # GitHub-flavoured Markdown (images are linked files)
    page.to_html(root)      # one self-contained HTML file, images embedded

Details (images, warnings, inline content, the HTML file): docs/report.md.
"""
from __future__ import annotations

import base64
import html
import mimetypes
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

__all__ = ["Page", "Link", "Code", "Inline", "anchor"]


@dataclass(frozen=True)
class Link:
    """A hyperlink: ``text`` pointing at ``href`` (a relative path or an anchor)."""

    text: str
    href: str


@dataclass(frozen=True)
class Code:
    """Inline monospace text (paths, hashes, parameters)."""

    text: str


Inline = Union[str, Link, Code]
Cell = Union[Inline, Sequence[Inline], None]

# Characters that Markdown could read as markup. An underscore inside a word (``ga_seed0``)
# is never emphasis in GitHub-flavoured Markdown, so only the others are escaped, and the
# raw file stays readable.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*\[\]<>|])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|^#")


def _md_text(text: str) -> str:
    return _MARKDOWN_SPECIAL.sub(lambda match: "\\" + match.group(0), text)


def _md_inline(part: Inline, in_table: bool) -> str:
    if isinstance(part, Link):
        return f"[{_md_text(part.text)}]({part.href.replace(' ', '%20')})"
    if isinstance(part, Code):
        text = part.text.replace("\n", " ")
        if in_table:
            text = text.replace("|", "\\|")
        fence = "``" if "`" in text else "`"
        return f"{fence}{text}{fence}" if fence == "`" else f"{fence} {text} {fence}"
    text = _md_text(str(part))
    return text.replace("\n", "<br>") if in_table else text


def _html_inline(part: Inline) -> str:
    if isinstance(part, Link):
        return f'<a href="{html.escape(part.href, quote=True)}">{html.escape(part.text)}</a>'
    if isinstance(part, Code):
        return f"<code>{html.escape(part.text)}</code>"
    return html.escape(str(part)).replace("\n", "<br>")


def _parts(cell: Cell) -> List[Inline]:
    if cell is None:
        return []
    if isinstance(cell, (str, Link, Code)):
        return [cell]
    return list(cell)


def anchor(text: str) -> str:
    """The id GitHub gives a heading: lower case, spaces to '-', punctuation dropped."""
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


class Page:
    """A document of blocks, rendered by :meth:`to_markdown` or :meth:`to_html`.

    Args:
        title: the page title (the first heading).
    """

    def __init__(self, title: str):
        self.title = title
        self.blocks: List[Tuple[str, tuple]] = []

    def heading(self, text: str, level: int = 2) -> str:
        """Add a heading (level 2 to 4); returns its anchor, for links (``'#' + anchor``)."""
        self.blocks.append(("heading", (text, max(2, min(4, level)))))
        return anchor(text)

    def paragraph(self, *parts: Inline) -> None:
        """Add a paragraph made of inline parts."""
        self.blocks.append(("paragraph", (list(parts),)))

    def warning(self, *parts: Inline) -> None:
        """Add a warning that must not be missed (a framed box in HTML, a quote in Markdown)."""
        self.blocks.append(("warning", (list(parts),)))

    def bullets(self, items: Sequence[Cell]) -> None:
        """Add a bulleted list; each item is inline content."""
        self.blocks.append(("bullets", ([_parts(item) for item in items],)))

    def table(self, header: Sequence[Cell], rows: Sequence[Sequence[Cell]],
              align: Optional[Sequence[str]] = None) -> None:
        """Add a table.

        Args:
            header: column titles.
            rows: rows of cells (inline content; None is an empty cell).
            align: per column 'left' or 'right' (default left).
        """
        width = len(header)
        for index, row in enumerate(rows):
            if len(row) != width:
                raise ValueError(f"table row {index} has {len(row)} cells; the header has {width}")
        self.blocks.append(("table", ([_parts(c) for c in header],
                                      [[_parts(c) for c in row] for row in rows],
                                      list(align or ["left"] * width))))

    def image(self, src: str, alt: str, width: Optional[int] = None) -> None:
        """Add an image (``src`` relative to the page), at most ``width`` pixels wide in HTML."""
        self.blocks.append(("image", (src, alt, width)))

    def code(self, text: str, language: str = "") -> None:
        """Add a block of preformatted text."""
        self.blocks.append(("code", (text, language)))

    # --- rendering -------------------------------------------------------------------------
    def to_markdown(self) -> str:
        """GitHub-flavoured Markdown."""
        out = [f"# {_md_text(self.title)}", ""]
        for kind, args in self.blocks:
            if kind == "heading":
                text, level = args
                out += ["#" * level + " " + _md_text(text), ""]
            elif kind == "paragraph":
                out += ["".join(_md_inline(p, False) for p in args[0]), ""]
            elif kind == "warning":
                out += ["> **Warning:** " + "".join(_md_inline(p, False) for p in args[0]), ""]
            elif kind == "bullets":
                out += ["- " + "".join(_md_inline(p, False) for p in item) for item in args[0]]
                out.append("")
            elif kind == "table":
                header, rows, align = args

                def line(cells):
                    return "| " + " | ".join(
                        "".join(_md_inline(p, True) for p in cell) or " " for cell in cells) + " |"

                out.append(line(header))
                out.append("| " + " | ".join("---:" if a == "right" else "---" for a in align) + " |")
                out += [line(row) for row in rows]
                out.append("")
            elif kind == "image":
                src, alt, _ = args
                out += [f"![{_md_text(alt)}]({src.replace(' ', '%20')})", ""]
            elif kind == "code":
                text, language = args
                fence = "````" if "```" in text else "```"
                out += [fence + language, text.rstrip("\n"), fence, ""]
        return "\n".join(out).rstrip("\n") + "\n"

    def to_html(self, root: Optional[Union[str, os.PathLike]] = None) -> str:
        """One HTML5 page with its style sheet and a few lines of script (click a table's
        header to sort by that column), needing no server and nothing from the network.

        Args:
            root: the folder image paths are relative to: each image is read from it and
                embedded as a data URI, so the page is one file. None links the files.
        """
        body: List[str] = [f"<h1>{html.escape(self.title)}</h1>"]
        for kind, args in self.blocks:
            if kind == "heading":
                text, level = args
                body.append(f'<h{level} id="{anchor(text)}">{html.escape(text)}</h{level}>')
            elif kind == "paragraph":
                body.append("<p>" + "".join(_html_inline(p) for p in args[0]) + "</p>")
            elif kind == "warning":
                body.append('<p class="warning" role="alert"><strong>Warning:</strong> '
                            + "".join(_html_inline(p) for p in args[0]) + "</p>")
            elif kind == "bullets":
                items = "".join("<li>" + "".join(_html_inline(p) for p in item) + "</li>"
                                for item in args[0])
                body.append(f"<ul>{items}</ul>")
            elif kind == "table":
                header, rows, align = args

                def cells(row, tag):
                    return "".join(
                        f'<{tag} class="{a}">' + "".join(_html_inline(p) for p in cell) + f"</{tag}>"
                        for cell, a in zip(row, align))

                body.append('<div class="wide"><table class="sortable"><thead><tr>'
                            + cells(header, "th") + "</tr></thead><tbody>"
                            + "".join("<tr>" + cells(row, "td") + "</tr>" for row in rows)
                            + "</tbody></table></div>")
            elif kind == "image":
                src, alt, width = args
                style = f' style="max-width: {int(width)}px"' if width else ""
                data = _data_uri(Path(root) / src) if root is not None else src
                img = (f'<img src="{html.escape(data, quote=True)}" '
                       f'alt="{html.escape(alt, quote=True)}"{style}>')
                body.append(f"<figure>{img}<figcaption>{html.escape(alt)}</figcaption></figure>"
                            if root is not None else
                            f'<p><a href="{html.escape(src, quote=True)}">{img}</a></p>')
            elif kind == "code":
                body.append(f"<pre>{html.escape(args[0].rstrip())}</pre>")
        return _HTML.format(title=html.escape(self.title), body="\n".join(body),
                            script=_SORT_SCRIPT)


def _data_uri(path: Path) -> str:
    """The file as a ``data:`` URI (its type guessed from its name)."""
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{kind};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


# Sorting reads a cell's number when it has one ("93.10 %", "12,345", "4.5 min"), in one unit
# per kind where its unit says so (a duration in seconds: "50 s" before "4.5 min" before
# "2 h"; a size in bytes), and its text otherwise; cells without a number ("n/a") sort last
# either way. A second click reverses the order.
_SORT_SCRIPT = """
var UNITS = {ms: 0.001, s: 1, min: 60, h: 3600, B: 1, kB: 1e3, MB: 1e6, GB: 1e9};
document.querySelectorAll("table.sortable").forEach(function (table) {
  var headers = table.tHead ? table.tHead.rows[0].cells : [];
  Array.prototype.forEach.call(headers, function (header, column) {
    header.title = "click to sort";
    header.addEventListener("click", function () {
      var descending = header.getAttribute("aria-sort") === "ascending";
      Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
      header.setAttribute("aria-sort", descending ? "descending" : "ascending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function key(row) {
        var text = row.cells[column] ? row.cells[column].textContent.trim() : "";
        var plain = text.replace(/,/g, "");
        var number = parseFloat(plain);
        var unit = plain.match(/^[-+0-9.eE]+\\s*([a-zA-Z]+)$/);
        if (!isNaN(number) && unit && UNITS.hasOwnProperty(unit[1])) { number *= UNITS[unit[1]]; }
        return {text: text, number: isNaN(number) ? null : number};
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), order;
        if (x.number !== null && y.number !== null) { order = x.number - y.number; }
        else if (x.number !== null) { return -1; }
        else if (y.number !== null) { return 1; }
        else { order = x.text.localeCompare(y.text); }
        return descending ? -order : order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.4; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.85em; }}
div.wide {{ overflow-x: auto; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; vertical-align: top; }}
th {{ background: #f2f2f2; }}
table.sortable th {{ cursor: pointer; }}
th[aria-sort=ascending]::after {{ content: " \\25B2"; }}
th[aria-sort=descending]::after {{ content: " \\25BC"; }}
.warning {{ border: 2px solid #c62828; background: #fdecea; padding: 0.6em 0.9em; }}
figure {{ margin: 1em 0; }}
figcaption {{ font-size: 0.85em; color: #555; }}
td.right, th.right {{ text-align: right; }}
td.right {{ white-space: nowrap; }}
img {{ max-width: 100%; height: auto; border: 1px solid #eee; }}
code, pre {{ font-family: ui-monospace, monospace; font-size: 0.9em; background: #f6f6f6; }}
pre {{ padding: 0.6em; overflow-x: auto; }}
</style>
</head>
<body>
{body}
<script>{script}</script>
</body>
</html>
"""
