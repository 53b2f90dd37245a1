"""The remote backends' table entries: ``openai`` (an OpenAI-compatible completions server
with logprobs, such as ``vllm serve``) and ``openai-chat`` (any chat-completions API with
logprobs), both probed at start-up (``GET /models``), and their options."""

from __future__ import annotations

import functools
import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any, NoReturn

from webshepherd.daemon.engine.backends.model_files import offline, short_error
from webshepherd.daemon.engine.backends.table import BackendKind, BackendOption
from webshepherd.daemon.engine.sampling import read_sampling
from webshepherd.protocol.errors import ModelUnavailableError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase
    from webshepherd.daemon.engine.backends.base import Backend
    from webshepherd.daemon.engine.backends.openai_backend import OpenAIBackend

__all__ = ["CHAT_ENTRY", "ENTRY", "OPTIONS", "api_root", "load_openai_backend", "probe_models"]

log = logging.getLogger(__name__)


def api_root(base_url: str) -> str:
    """``http://host:port`` or ``…/v1`` -> the API root ending in the version (``…/v1``)."""
    url = urllib.parse.urlsplit(base_url.strip())
    if url.scheme not in ("http", "https") or not url.netloc:
        raise ModelUnavailableError(
            f"--base-url {base_url!r} is not an http(s) URL (e.g. http://127.0.0.1:8000/v1)"
        )
    path = url.path.rstrip("/") or "/v1"
    return urllib.parse.urlunsplit((url.scheme, url.netloc, path, "", ""))


#: How long ``serve`` waits for a model server that refuses connections (one started with ``&``
#: on the line above is still loading its model) before it says the server cannot be reached.
SERVER_WAIT_S = 60.0


def _refused(e: BaseException) -> bool:
    reason = getattr(e, "reason", e)
    return isinstance(reason, ConnectionRefusedError)


def probe_models(
    root: str,
    api_key: str | None,
    timeout_s: float = 5.0,
    *,
    wait_s: float = SERVER_WAIT_S,
    poll_s: float = 0.5,
) -> list[dict[str, Any]]:
    """``GET {root}/models``: the served models, or ``ModelUnavailableError`` saying why not.
    A server that refuses connections is asked again every ``poll_s`` for up to ``wait_s``
    seconds (it may be starting), said once in the log; any other failure is raised at once."""
    req = urllib.request.Request(
        f"{root}/models", headers={"Authorization": f"Bearer {api_key}"} if api_key else {}
    )
    deadline = time.monotonic() + wait_s
    said = False
    while True:
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                reply = json.loads(resp.read())
            break
        except (urllib.error.URLError, OSError) as e:
            if isinstance(e, urllib.error.HTTPError) or not _refused(e):
                return _probe_error(root, e)
            if time.monotonic() + poll_s > deadline:
                return _probe_error(root, e)
            if not said:
                log.warning("waiting for the model server at %s (up to %g s) ...", root, wait_s)
                said = True
            time.sleep(poll_s)
        except (TimeoutError, ValueError) as e:
            return _probe_error(root, e)
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list):
        raise ModelUnavailableError(
            f"the server at {root} is not an OpenAI-compatible API (GET /models has no 'data')"
        )
    return [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


def _probe_error(root: str, error: BaseException) -> NoReturn:
    """The probe's failure in words: what the server answered, or why it cannot be reached."""
    try:
        raise error
    except urllib.error.HTTPError as e:
        hint = (
            ": it wants an API key (--api-key-env VAR names the environment variable holding it)"
            if e.code in (401, 403)
            else ""
        )
        raise ModelUnavailableError(
            f"the model server at {root} answered HTTP {e.code} to GET /models{hint}"
        ) from e
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise ModelUnavailableError(
            f"cannot reach the model server at {root} ({reason}): start it "
            "(e.g. `vllm serve MODEL` or "
            "`python -m webshepherd.daemon.dev.openai_server --model MODEL`) "
            "or fix --base-url"
        ) from e
    except ValueError as e:
        raise ModelUnavailableError(
            f"the server at {root} is not an OpenAI-compatible API (GET /models is not JSON)"
        ) from e


def _tokenizer(model: str) -> PreTrainedTokenizerBase | None:
    """The chat template and tokenizer of ``model`` when they can be had, else None."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        return None
    tries = [True] if offline() else [True, False]
    for local in tries:
        try:
            return AutoTokenizer.from_pretrained(model, local_files_only=local)
        except Exception as e:
            last = e
    log.warning(
        "no tokenizer for %s (%s): prompts use ChatML and token counts are estimates",
        model,
        short_error(last),
    )
    return None


def load_openai_backend(
    model: str,
    *,
    base_url: str | None,
    api_key: str | None = None,
    remote_model: str | None = None,
    probe_timeout_s: float = 5.0,
    server_wait: float = SERVER_WAIT_S,
    chat: bool = False,
    **options: Any,
) -> OpenAIBackend:
    """An :class:`~webshepherd.daemon.engine.backends.openai_backend.OpenAIBackend` on a server that
    answers ``GET /models``. ``model`` names the tokenizer / chat template; ``remote_model``
    the server's model name (default: ``model``, or the only model the server has). With
    ``chat``, an :class:`~webshepherd.daemon.engine.backends.openai_chat_backend.OpenAIChatBackend`
    (no tokenizer is looked for)."""
    from webshepherd.daemon.engine.backends.openai_backend import OpenAIBackend
    from webshepherd.daemon.engine.backends.openai_chat_backend import OpenAIChatBackend

    kind = "openai-chat" if chat else "openai"
    if not base_url:
        raise ModelUnavailableError(
            f"the {kind} backend needs the server's URL: --base-url http://HOST:PORT/v1"
        )
    root = api_root(base_url)
    served = probe_models(root, api_key, probe_timeout_s, wait_s=server_wait)
    ids = [str(m["id"]) for m in served]
    name = remote_model or model
    if name not in ids:
        if remote_model is None and len(ids) == 1:
            log.info("the server at %s serves %s: scoring with it", root, ids[0])
            name = ids[0]
        else:
            listed = ", ".join(ids) if ids else "no model"
            raise ModelUnavailableError(
                f"the server at {root} does not serve {name!r} (it serves {listed}): "
                "name one with --remote-model"
            )
    card = served[ids.index(name)]
    tokenizer = _tokenizer(model) if chat is False else None
    max_len = card.get("max_model_len")
    if isinstance(max_len, int) and max_len > 0:
        options.setdefault("max_context", max_len)
    if chat:
        return OpenAIChatBackend(root, name, api_key=api_key, **options)
    options.setdefault("sampling", read_sampling(model, local_files_only=offline()))
    return OpenAIBackend(root, name, api_key=api_key, tokenizer=tokenizer, **options)


def _served(
    model: str,
    device: str,
    context: int | None,
    base_url: str | None = None,
    api_key: str | None = None,
    remote_model: str | None = None,
    server_wait: float | None = None,
    *,
    chat: bool,
) -> Backend:
    """Either remote backend's table loader (``chat``: openai-chat, which judges with the
    server's model, so ``remote_model`` names it)."""
    loaded = load_openai_backend(
        (remote_model or model) if chat else model,
        base_url=base_url,
        api_key=api_key,
        remote_model=remote_model,
        server_wait=SERVER_WAIT_S if server_wait is None else server_wait,
        chat=chat,
    )
    what = "judging with the chat model" if chat else "scoring with"
    log.info("%s %s at %s", what, loaded.model_id, base_url)
    return loaded


_REMOTE = "with --backend openai/openai-chat: "

#: the remote backends' options, in ``serve --help``'s order
OPTIONS: dict[str, BackendOption] = {
    "base_url": BackendOption(
        "--base-url",
        _REMOTE + "the server's API root, e.g. http://127.0.0.1:8000/v1",
        metavar="URL",
    ),
    "api_key_env": BackendOption(
        "--api-key-env",
        _REMOTE + "the environment variable that holds the server's API key (never the key "
        "itself: it would show in `ps`)",
        metavar="VAR",
        secret="api_key",
    ),
    "remote_model": BackendOption(
        "--remote-model",
        _REMOTE + "the server's name for the model (default: --model, or the only model the "
        "server has); with openai, --model still names the tokenizer and chat template",
        metavar="NAME",
    ),
    "server_wait": BackendOption(
        "--server-wait",
        _REMOTE + "seconds to wait for a server that refuses connections (one still loading "
        f"its model) before giving up (default {SERVER_WAIT_S:g}; 0: fail at once)",
        metavar="SECONDS",
        type=float,
    ),
}
_SERVED = ("base_url", "api_key_env", "remote_model", "server_wait")

ENTRY = BackendKind(
    "an OpenAI-compatible completions server such as `vllm serve`",
    functools.partial(_served, chat=False),
    _SERVED,
    remote=True,
)
CHAT_ENTRY = BackendKind(
    "any chat-completions API returning logprobs: no GPU, no local files",
    functools.partial(_served, chat=True),
    _SERVED,
    remote=True,
    judges_remote_model=True,
)
