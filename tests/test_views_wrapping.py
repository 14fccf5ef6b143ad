"""A `<pre>` the views wrap keeps its words whole in a notebook's output.

JupyterLab's output area styles every ``pre`` with ``word-break: break-all``, so a wrapped
``<pre>`` of ours broke anywhere, mid-word at the output's edge ('a re-run of a f' over 'rom
step 1' in the RerunPanel's diff, a streamed answer in the Stepper): each says
``word-break:break-word`` (or takes ``html._PRE``, which does). The journey
test_a_narrow_window sees the RerunPanel's in the browser; this finds any other.
"""

from __future__ import annotations

import re
from pathlib import Path

import workbench.notebook

PRE_WRAP = re.compile(r"<pre\b[^>]*white-space:\s*pre-wrap[^>]*>", re.S)


def test_every_wrapped_pre_of_the_views_keeps_its_words_whole() -> None:
    folder = Path(workbench.notebook.__file__).parent
    found = {}
    for source in sorted(folder.glob("*.py")):
        text = re.sub(r"['\"]\s*\n\s*f?['\"]", "", source.read_text())  # joined string pieces
        for tag in PRE_WRAP.findall(text):
            if "word-break:break-word" not in tag.replace(" ", ""):
                found[source.name] = tag
    assert found == {}
