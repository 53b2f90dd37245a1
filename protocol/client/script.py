"""A script's expected errors as one line: no daemon, a wrong token, a wrong URL.

Every error webshepherd raises on purpose is a :class:`~webshepherd.protocol.errors.
WebShepherdError` whose message says what to do; its traceback tells a person nothing more.
:func:`one_line_errors`, called at the top of a script (the examples do), prints such an error
that ends the script as ``<script>: <message>`` on stderr, exit status 1, as ``webshepherd``
does; ``-v`` among the script's arguments shows the traceback too. Any other
exception ends the script as Python ends it, traceback and all.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.terminal_text import terminal_safe

#: The arguments that ask for an expected error's traceback too (``webshepherd -v`` does).
VERBOSE_FLAGS = ("-v", "--verbose")

Hook = Callable[[type[BaseException], BaseException, TracebackType | None], object]


def error_line(prog: str, exc: WebShepherdError) -> str:
    """How an expected error is shown to a person: ``<prog>: <message>``, the message made
    safe for a terminal (it may quote a page or a URL)."""
    return f"{prog}: {terminal_safe(exc.message, multiline=True)}"


def one_line_errors(argv: list[str] | None = None) -> bool:
    """From now on, a :class:`WebShepherdError` that ends this script prints its one line
    (:func:`error_line`), not a traceback, unless ``-v`` or ``--verbose`` is among the
    arguments (``argv``, default ``sys.argv``): then it is taken out of them, so the script's
    own parsing never sees it, and the traceback is printed as Python prints it. Returns
    whether it was given."""
    args = sys.argv if argv is None else argv
    verbose = any(a in VERBOSE_FLAGS for a in args[1:])
    args[1:] = [a for a in args[1:] if a not in VERBOSE_FLAGS]
    prog = Path(args[0]).name if args and args[0] else "python"
    previous: Hook = sys.excepthook

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if isinstance(exc, WebShepherdError) and not verbose:
            print(error_line(prog, exc), file=sys.stderr)
        else:
            previous(kind, exc, tb)

    sys.excepthook = hook
    return verbose
