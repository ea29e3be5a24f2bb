"""Page: a small document (headings, paragraphs, tables, images) rendered as Markdown or HTML.

The report builds its summary once and renders it in the format asked for, so the two
formats always say the same::

    from nord.report.page import Code, Link, Page

    page = Page("Search comparison")
    page.heading("Runs")
    page.paragraph("Read from ", Code("runs/ga.db"), ".")
    page.table(["run", "best accuracy"], [["ga", "93.10 %"], [Link("random", "#random"), "91.00 %"]])
    page.image("accuracy.png", "accuracy per generation")
    page.to_markdown()      # GitHub-flavoured Markdown
    page.to_html()          # one self-contained HTML file (images linked, not embedded)

Inline content is a sequence of plain strings (escaped for the format), :class:`Code`
(monospace) and :class:`Link` parts.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
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

    def to_html(self) -> str:
        """One HTML5 page with a small embedded style sheet (images are linked files)."""
        body: List[str] = [f"<h1>{html.escape(self.title)}</h1>"]
        for kind, args in self.blocks:
            if kind == "heading":
                text, level = args
                body.append(f'<h{level} id="{anchor(text)}">{html.escape(text)}</h{level}>')
            elif kind == "paragraph":
                body.append("<p>" + "".join(_html_inline(p) for p in args[0]) + "</p>")
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

                body.append("<table><thead><tr>" + cells(header, "th") + "</tr></thead><tbody>"
                            + "".join("<tr>" + cells(row, "td") + "</tr>" for row in rows)
                            + "</tbody></table>")
            elif kind == "image":
                src, alt, width = args
                style = f' style="max-width: {int(width)}px"' if width else ""
                body.append(f'<p><a href="{html.escape(src, quote=True)}"><img src="'
                            f'{html.escape(src, quote=True)}" alt="{html.escape(alt, quote=True)}"'
                            f"{style}></a></p>")
            elif kind == "code":
                body.append(f"<pre>{html.escape(args[0].rstrip())}</pre>")
        return _HTML.format(title=html.escape(self.title), body="\n".join(body))


_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.4; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; vertical-align: top; }}
th {{ background: #f2f2f2; }}
td.right, th.right {{ text-align: right; }}
img {{ max-width: 100%; height: auto; border: 1px solid #eee; }}
code, pre {{ font-family: ui-monospace, monospace; font-size: 0.9em; background: #f6f6f6; }}
pre {{ padding: 0.6em; overflow-x: auto; }}
</style>
</head>
<body>
{body}
</body>
</html>
"""
