"""The one place a model's unexpected failure becomes a ``ModelError``: its type and what
failed, never its text; the project's own errors pass as they are; and the engine, whose
backend throws, answers with it."""

from __future__ import annotations

import logging

import pytest
from webshepherd.daemon.engine.engine import Engine
from webshepherd.daemon.engine.failures import model_error, model_errors
from webshepherd.daemon.engine.types import ChecklistItem, ParsedChecklist, StepInput, Turn
from webshepherd.protocol.errors import ModelError, OverloadedError


def test_an_unexpected_failure_is_a_model_error_with_its_type_not_its_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = RuntimeError("CUDA error at /secret/path/kernel.cu:42")
    with caplog.at_level(logging.ERROR, logger="webshepherd"):
        err = model_error(secret, "the model failed while scoring", context="request r1")
    assert isinstance(err, ModelError)
    assert err.message == "the model failed while scoring (RuntimeError)"
    (rec,) = caplog.records
    assert rec.getMessage() == "the model failed while scoring (request r1)"
    assert rec.exc_info is not None and rec.exc_info[1] is secret  # the traceback, in the log


def test_the_projects_own_error_passes_unchanged_and_unlogged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    busy = OverloadedError("the model server is rate-limiting")
    with caplog.at_level(logging.DEBUG, logger="webshepherd"):
        assert model_error(busy, "the model failed while scoring") is busy
        with pytest.raises(OverloadedError) as raised, model_errors("the model failed"):
            raise busy
    assert raised.value is busy and raised.value.__cause__ is None
    assert not caplog.records


def test_the_block_form_chains_the_cause() -> None:
    failed = "the prompt could not be tokenized"
    with pytest.raises(ModelError, match=rf"^{failed} \(KeyError\)$") as e, model_errors(failed):
        raise KeyError("tok")
    assert isinstance(e.value.__cause__, KeyError)


class _Throws:
    """A backend whose every call throws (as a broken model would)."""

    name, model_id, max_context = "throws", "throws", 4096

    def __getattr__(self, attr: str) -> object:
        def fail(*a: object, **kw: object) -> object:
            raise ValueError(f"{attr} broke at /secret/path")

        return fail


def test_the_engine_answers_a_throwing_backend_with_a_model_error() -> None:
    engine = Engine(_Throws())  # type: ignore[arg-type]
    step = StepInput(
        intent="buy",
        current_url="http://shop/",
        axtree="[1] RootWebArea 'Shop'",
        checklist=ParsedChecklist((ChecklistItem(1, "Search"),), "Checklist 1: Search"),
        history=(),
        candidates=(Turn("t", "click('1')"),),
    )
    with pytest.raises(ModelError, match=r"^the model failed while scoring \(ValueError\)$"):
        engine.score(step)
    (out,) = engine.score_many([step])
    assert isinstance(out, ModelError) and "/secret/path" not in out.message
    with pytest.raises(ModelError, match=r"writing the checklist \(ValueError\)$"):
        engine.make_checklist("buy", "http://shop/", "[1] RootWebArea 'Shop'")
