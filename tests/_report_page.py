"""A report's explorer page read back in Python as its script reads it (`explorer_static.js`).

The page stores each distinct piece of HTML once and draws details and the step sections from
those pieces when it loads; these helpers join them the same way, so a test can read what the
page shows without a browser (the browser tests read it in chromium).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from workbench.notebook.explorer_page import HOLE, WHERE


def page_data(html: str) -> dict[str, Any]:
    """The data a report's explorer page inlines."""
    start = html.index('<script type="application/json" id="wb-explorer-data">')
    payload = html[html.index(">", start) + 1 : html.index("</script>", start)]
    data: dict[str, Any] = json.loads(payload)
    return data


def page_piece(data: dict[str, Any], number: int) -> str:
    """A piece of the page's table: HTML, or the runs of markup, ids and text it is made of."""
    stored = data["shared"][number]
    if isinstance(stored, str):
        return stored
    return "".join(data["runs"][i] for i in filled(data["piece_templates"], stored))


def page_parent(data: dict[str, Any], position: int) -> int:
    """A span's parent as the page reads it off the depths (-1: a root).

    The spans are in depth-first order: the parent is the nearest span before it less deep.
    """
    depths = data["spans"]["depth"]
    before = (p for p in range(position - 1, -1, -1) if depths[p] < depths[position])
    return next(before, -1)


def page_where(data: dict[str, Any], position: int) -> str:
    """A span's line of times and ids as the page draws it from its row (its columns)."""
    spans = data["spans"]
    in_progress = spans["kinds"][spans["kind"][position]][3]
    parent = page_parent(data, position)
    return (
        f"<span class='wbx-where'>start {spans['start'][position]:.3f} ms · "
        f"{spans['duration'][position]:.3f} ms{' so far' if in_progress else ''} · "
        f"span <code>{spans['id'][position]}</code>"
        f" · parent <code>{'—' if parent < 0 else spans['id'][parent]}</code>"
    )


def numbers(items: list[Any]) -> list[int]:
    """Items as numbers: a number each, a ``[start, end)`` range of them."""
    return [n for item in items for n in ([item] if isinstance(item, int) else range(*item))]


def joined(data: dict[str, Any], items: list[Any], position: int = -1) -> str:
    """The HTML of items, pieces of the page's table (`WHERE`: the span's line)."""
    return "".join(
        page_where(data, position) if n == WHERE else page_piece(data, n) for n in numbers(items)
    )


def filled(templates: list[Any], stored: list[Any]) -> list[int]:
    """A template's numbers (``stored[0]``), its holes filled with the rest of ``stored``."""
    template, *own = stored
    holes = iter(numbers(own))
    out = [next(holes) if n == HOLE else n for n in numbers(templates[template])]
    assert next(holes, None) is None  # as many numbers of its own as its template has holes
    return out


def detail_numbers(data: dict[str, Any], position: int) -> list[int]:
    """The numbers of a span's detail: its template's, its own ones in the template's holes."""
    return filled(data["templates"], data["details"][position])


def page_detail(data: dict[str, Any], position: int) -> str:
    """A span's detail as the page's model joins it from the one table of pieces."""
    return joined(data, detail_numbers(data, position), position)


_FILLED = re.compile(r'<(\w+)([^>]*) data-pieces="([^"]*)"([^>]*)>(.*?)</\1>', re.S)


def drawn(html: str) -> str:
    """The report as the page shows it once loaded: each ``data-pieces`` element filled."""
    data = page_data(html)

    def fill(match: re.Match[str]) -> str:
        tag, before, items, after, inner = match.groups()
        return f"<{tag}{before}{after}>{inner}{joined(data, json.loads(items))}</{tag}>"

    return _FILLED.sub(fill, html)


def page_table(html: str, element_id: str) -> list[list[str]]:
    """A report's table (``wb-steps``, ``wb-agents``): its header, then its rows' cells as text."""
    start = html.index(f'<script type="application/json" id="{element_id}-data">')
    payload = html[html.index(">", start) + 1 : html.index("</script>", start)]
    table = json.loads(payload)
    columns = [
        [_shown(v, three) for v in values]
        for values, three in zip(table["columns"], table["decimals"], strict=True)
    ]
    return [table["names"], *(list(row) for row in zip(*columns, strict=True))]


def _shown(value: Any, decimals: bool) -> str:
    """A table's value as its cell says it (``shown`` in report_tables.js): three decimals, or
    two significant digits when three would read 0 for a number that is not (down to 1e-6,
    where the page's ``toPrecision`` turns to an exponent)."""
    if value is None:
        return ""
    if not decimals:
        return str(value)
    text = f"{value:.3f}"
    if float(text) == 0 and value != 0:
        return f"{value:.{1 - math.floor(math.log10(abs(value)))}f}"
    return text
