"""The one place a model's unexpected failure becomes a ``ModelError``.

The engine, its backends and the daemon's engine runner call :func:`model_error` (or
:func:`model_errors` around a block) wherever something the model, a chat template, a
tokenizer or a callback raised must reach a client: a ``WebShepherdError`` (a backend's own
clear message, an overload) passes as it is; anything else is logged here with its traceback
and becomes a ``ModelError`` that names what failed and the exception's type, never its text
(which may hold paths or internals)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from webshepherd.protocol.errors import ModelError, WebShepherdError

log = logging.getLogger(__name__)

#: What failed, as a backend's generation reports it.
GENERATING = "the model failed while generating"


def model_error(exc: Exception, failed: str, *, context: str = "") -> WebShepherdError:
    """``exc`` as the client sees it: itself when a ``WebShepherdError``, else
    ``ModelError("<failed> (<its type>)")``, logged with ``context`` (e.g. the request)."""
    if isinstance(exc, WebShepherdError):
        return exc
    log.error("%s%s", failed, f" ({context})" if context else "", exc_info=exc)
    return ModelError(f"{failed} ({type(exc).__name__})")


@contextmanager
def model_errors(failed: str, *, context: str = "") -> Iterator[None]:
    """What the block raises, as :func:`model_error` makes it."""
    try:
        yield
    except WebShepherdError:
        raise
    except Exception as e:
        raise model_error(e, failed, context=context) from e
