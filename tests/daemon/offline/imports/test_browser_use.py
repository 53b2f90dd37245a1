"""A browser-use history of the wrong shape reads as far as it makes sense, never a traceback:
an action whose parameters are not what browser-use writes is scored as ``noop()`` with the
original in the thought. (Screenshots refused by folder or type: tests/hostile/
test_sent_files.py; a history browser-use itself saved: tests/integrations/.)"""

from __future__ import annotations

import json
from pathlib import Path

from webshepherd.daemon.offline.imports import load_run


def test_parameters_of_the_wrong_shape_are_noop(tmp_path: Path) -> None:
    asked = "<user_request>Buy</user_request><browser_state>[3]<a>x</a></browser_state>"
    steps = [
        {"navigate": True},  # no url
        {"scroll": {"pages": "many"}},  # not a number
        {"click": {"index": 3}},
    ]
    history = {
        "history": [
            {"model_output": {"action": [a]}, "state": None, "state_message": asked, "result": 5}
            for a in steps
        ]
    }
    (tmp_path / "h.json").write_text(json.dumps(history))
    run = load_run(tmp_path / "h.json")
    assert [s.action for s in run.steps] == ["noop()", "noop()", "click('3')"]
    assert "has no BrowserGym form" in run.steps[0].thought
    assert run.start_url is None and run.warnings == []
