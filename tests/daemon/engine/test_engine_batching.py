"""``Engine.score_many`` on the tiny real model: several sessions' steps scored in one backend
call give the rewards each gives alone (greedy); a failing step fails only itself."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from webshepherd.daemon.engine.engine import Engine
from webshepherd.daemon.engine.types import ParsedChecklist, StepScore
from webshepherd.protocol.common import Turn
from webshepherd.protocol.errors import ModelError

from tests.daemon.engine.test_engine import CANDIDATES, _step

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def engine(tiny_engine: Engine) -> Engine:
    return Engine(tiny_engine.backend, replace(tiny_engine.config, max_new_tokens=40))


def rewards(s: StepScore | Exception) -> list[float | None]:
    assert isinstance(s, StepScore), s
    return [c.reward for c in s.candidates]


def test_steps_scored_together_equal_each_scored_alone(engine: Engine) -> None:
    a = _step(engine)
    b = replace(
        _step(engine, tree="RootWebArea 'Museum'\n\t[7] link 'Opening hours'"),
        intent="When does the museum open?",
        candidates=(Turn("Open the hours page.", "click('7')"),),
    )
    c = replace(a, candidates=CANDIDATES[2:], history=())
    steps = [a, b, c]
    alone = [engine.score(s) for s in steps]
    before = engine.stats.requests
    together = engine.score_many(steps)
    assert engine.stats.requests == before + 1  # one backend call for the three steps
    for t, s in zip(together, alone, strict=True):
        assert isinstance(t, StepScore)
        assert rewards(t) == pytest.approx(rewards(s), abs=1e-6)
        assert (t.prompt_tokens, t.generated_tokens, t.prefix_shared) == (
            s.prompt_tokens,
            s.generated_tokens,
            s.prefix_shared,
        )
        for ct, cs in zip(t.candidates, s.candidates, strict=True):
            assert [x.text for x in ct.samples] == [x.text for x in cs.samples]


def test_a_failing_step_fails_alone(engine: Engine) -> None:
    good = _step(engine)
    no_items = replace(good, checklist=ParsedChecklist(items=(), text=""))
    empty = replace(good, candidates=())
    cancel = threading.Event()
    cancel.set()
    progress: list[int] = []
    out = engine.score_many(
        [good, no_items, empty, good],
        [lambda c, s, t: progress.append(c), None, None, None],
        [None, None, None, cancel],
    )
    assert isinstance(out[1], ModelError) and "checklist" in out[1].message
    assert isinstance(out[2], StepScore) and out[2].candidates == ()
    first, cancelled = out[0], out[3]
    assert isinstance(first, StepScore) and len(first.candidates) == len(CANDIDATES)
    assert set(progress) == set(range(len(CANDIDATES)))  # the first step's progress only
    # the cancelled step stopped before its first token; the first one was not disturbed
    assert isinstance(cancelled, StepScore)
    assert cancelled.generated_tokens == 0 < first.generated_tokens
    assert rewards(first) == pytest.approx(rewards(engine.score(good)), abs=1e-6)
