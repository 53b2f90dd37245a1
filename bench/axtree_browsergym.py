"""BrowserGym's own observation extraction of one page, timed (driven by bench/axtree_capture.py).

    .venv-integrations/bin/python bench/axtree_browsergym.py URL CHROMIUM

Runs in the integrations venv (browsergym-core pins playwright 1.44). Opens ``URL`` in headless
``CHROMIUM`` (1280x720), prints ``ready``, then for each line ``run`` read on stdin times what
``BrowserEnv`` does for an observation's AX tree: ``_pre_extract`` (marking bids),
``extract_dom_snapshot``, ``extract_merged_axtree``, ``extract_dom_extra_properties``,
``_post_extract``, then ``flatten_axtree_to_str`` with the default flags and InlineTextBox
ignored (what the extension sends). Answers each with one JSON line:
``{"ms": total, "phases": {...}, "text": ...}``. The caller interleaves these runs with the
extension's captures, so both see the same machine load.
"""

from __future__ import annotations

import json
import sys
import time

from browsergym.core.observation import (
    _post_extract,
    _pre_extract,
    extract_dom_extra_properties,
    extract_dom_snapshot,
    extract_merged_axtree,
)
from browsergym.utils.obs import IGNORED_AXTREE_ROLES, flatten_axtree_to_str
from playwright.sync_api import Page, sync_playwright

IGNORED_ROLES = [*IGNORED_AXTREE_ROLES, "InlineTextBox"]
PHASES = ("mark", "snapshot", "axtree", "extra", "unmark", "flatten")


def extract(page: Page) -> dict[str, object]:
    """One observation's AX-tree text, timed by phase."""
    marks = [time.perf_counter()]
    _pre_extract(page, tags_to_mark="standard_html", lenient=False)
    marks.append(time.perf_counter())
    dom = extract_dom_snapshot(page)
    marks.append(time.perf_counter())
    axtree = extract_merged_axtree(page)
    marks.append(time.perf_counter())
    extract_dom_extra_properties(dom, scale_factor=1.0)
    marks.append(time.perf_counter())
    _post_extract(page)
    marks.append(time.perf_counter())
    text = flatten_axtree_to_str(axtree, ignored_roles=IGNORED_ROLES)
    marks.append(time.perf_counter())
    phases = {k: (b - a) * 1000 for k, a, b in zip(PHASES, marks, marks[1:], strict=False)}
    return {"ms": (marks[-1] - marks[0]) * 1000, "phases": phases, "text": text}


def main(url: str, chromium: str) -> None:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(headless=True, executable_path=chromium)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(url, wait_until="load")
        print("ready", flush=True)
        for line in sys.stdin:
            if line.strip() != "run":
                break
            print(json.dumps(extract(page)), flush=True)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
