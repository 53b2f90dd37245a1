"""Attention with shared prefixes kept once: prefix part + row part, merged exactly.

Rows of one decode may share a prompt prefix (the K candidates x n samples of a step) and
several steps may decode together, each with its own prefix. Instead of copying a prefix's
KV cache into every row, each prefix keeps ONE copy (batch 1) and every row's own cache holds
only its suffix and generated tokens. At every layer, a query attends to its group's prefix
(one matrix product per group, the prefix read once) and to its own keys (with the padding
mask); the two softmax parts are merged by their log-sum-exp, which is the same attention
as over the concatenated keys.

:func:`install` registers the function with transformers' ``AttentionInterface`` and sets
it on the model; without a :class:`SharedPrefixes` argument it delegates to the model's own
attention (``sdpa`` or ``eager``), so other calls on the model are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import torch
from webshepherd.daemon.engine.backends.kv_cache import cache_of

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# the keyword argument the model forwards to the attention function
KWARG = "shared_prefixes"
_NAMES = {"sdpa": "webshepherd_split_sdpa", "eager": "webshepherd_split_eager"}


@dataclass
class SharedPrefixes:
    """Per group: the prefix's keys and values of every layer (batch 1) and the group's rows
    (a contiguous range ``[start, end)`` of the batch). Rows outside every group have no
    prefix."""

    keys: list[list[torch.Tensor]] = field(default_factory=list)  # [group][layer]
    values: list[list[torch.Tensor]] = field(default_factory=list)
    rows: list[tuple[int, int]] = field(default_factory=list)
    calls: int = 0  # attention calls that saw these prefixes (the install probe counts them)

    def add(self, cache: Any, start: int, end: int) -> None:
        """A prefix's ``DynamicCache`` (batch 1) for rows ``[start, end)``."""
        self.keys.append([layer.keys for layer in cache.layers])
        self.values.append([layer.values for layer in cache.layers])
        self.rows.append((start, end))


def install(model: PreTrainedModel) -> bool:
    """Route the model's attention through :func:`split_attention`. False (the model keeps
    its own attention) when that is neither ``sdpa`` nor ``eager``, when some layer does not
    attend to the full context (sliding windows), or when the model does not pass the
    prefixes down to every layer."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    config = model.config
    current = config._attn_implementation
    if current in _NAMES.values():
        return True
    name = _NAMES.get(current)
    layer_types = getattr(config, "layer_types", None) or ["full_attention"]
    if (
        name is None
        or getattr(config, "use_sliding_window", False)
        or any(t != "full_attention" for t in layer_types)
    ):
        return False
    AttentionInterface.register(name, split_attention)
    mask_fn: Any = AttentionMaskInterface._global_mapping[current]
    AttentionMaskInterface.register(name, mask_fn)
    model.set_attn_implementation(name)
    if model.config._attn_implementation == name and _routes(model):
        return True
    model.set_attn_implementation(current)
    return False


def _routes(model: PreTrainedModel) -> bool:
    """Whether every layer's attention receives the prefixes (a model that does not pass the
    keyword down would silently attend without them): one 2-token prefix, one token after."""
    dev = next(model.parameters()).device
    try:
        with torch.inference_mode():
            cache = cache_of(
                model(
                    input_ids=torch.tensor([[1, 2]], device=dev), use_cache=True, logits_to_keep=1
                )
            )
            shared = SharedPrefixes()
            shared.add(cache, 0, 1)
            model(
                input_ids=torch.tensor([[3]], device=dev),
                position_ids=torch.tensor([[2]], device=dev),
                attention_mask=torch.ones((1, 1, 1, 1), dtype=torch.bool, device=dev),
                use_cache=True,
                logits_to_keep=1,
                **{KWARG: shared},
            )
    except Exception:
        return False
    return shared.calls == len(shared.keys[0]) > 0


def _delegate(module: Any) -> Callable[..., tuple[torch.Tensor, None]]:
    from transformers import AttentionInterface

    base = next(k for k, v in _NAMES.items() if v == module.config._attn_implementation)
    if base == "eager":
        import importlib

        modeling = importlib.import_module(type(module).__module__)
        eager: Callable[..., tuple[torch.Tensor, None]] = modeling.eager_attention_forward
        return eager
    return cast(
        "Callable[..., tuple[torch.Tensor, None]]", AttentionInterface._global_mapping[base]
    )


def split_attention(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """``query`` (B, H, q, d); ``key``/``value`` (B, Hkv, S, d): the rows' own cache;
    ``attention_mask``: boolean (B, 1, q, S), True where a row's query may see its key."""
    shared: SharedPrefixes | None = kwargs.pop(KWARG, None)
    if shared is None or getattr(module, "layer_idx", None) is None:  # a vision tower: no cache
        return _delegate(module)(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    shared.calls += 1
    b, h, q, d = query.shape
    hkv = key.shape[1]
    g = h // hkv
    scale = scaling if scaling is not None else d**-0.5
    layer = module.layer_idx
    qr = query.reshape(b, hkv, g * q, d)
    # the rows' own part: (B, Hkv, g*q, S), masked per row
    s_own = torch.matmul(qr, key.transpose(-1, -2)).float() * scale
    if attention_mask is not None:
        allowed = attention_mask[:, :, None].expand(b, 1, g, q, key.shape[2])
        s_own = s_own.view(b, hkv, g, q, -1).masked_fill(~allowed, float("-inf"))
        s_own = s_own.view(b, hkv, g * q, -1)
    m_own = s_own.amax(-1, keepdim=True).clamp_min(-1e30)  # a fully masked row: all zeros
    e_own = torch.exp(s_own - m_own)
    l_own = e_own.sum(-1, keepdim=True)
    o_own = torch.matmul(e_own.to(value.dtype), value).float()  # (B, Hkv, g*q, d)
    out = torch.empty_like(o_own)
    alone = [True] * b  # rows with no prefix group
    for gi, (start, end) in enumerate(shared.rows):
        if end <= start:
            continue
        kp, vp = shared.keys[gi][layer][0], shared.values[gi][layer][0]  # (Hkv, P, d)
        n = end - start
        # (Hkv, n*g*q, d): the group's queries side by side, one product per KV head
        qg = qr[start:end].permute(1, 0, 2, 3).reshape(hkv, n * g * q, d)
        s_pre = torch.bmm(qg, kp.transpose(1, 2)).float() * scale
        m_pre = s_pre.amax(-1, keepdim=True)
        e_pre = torch.exp(s_pre - m_pre)
        l_pre = e_pre.sum(-1, keepdim=True)
        o_pre = torch.bmm(e_pre.to(vp.dtype), vp).float()

        def rows_first(t: torch.Tensor, n: int = n) -> torch.Tensor:
            return t.view(hkv, n, g * q, t.shape[-1]).permute(1, 0, 2, 3)

        m_pre, l_pre, o_pre = rows_first(m_pre), rows_first(l_pre), rows_first(o_pre)
        mo, lo, oo = m_own[start:end], l_own[start:end], o_own[start:end]
        m = torch.maximum(m_pre, mo)
        a_pre, a_own = torch.exp(m_pre - m), torch.exp(mo - m)
        out[start:end] = (o_pre * a_pre + oo * a_own) / (l_pre * a_pre + lo * a_own)
        alone[start:end] = [False] * n
    for start, end in _runs(alone):
        out[start:end] = o_own[start:end] / l_own[start:end]
    attn = out.to(query.dtype).view(b, h, q, d).transpose(1, 2).contiguous()
    return attn, None


def _runs(flags: list[bool]) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges where ``flags`` is True."""
    runs: list[tuple[int, int]] = []
    for i, f in enumerate(flags):
        if f:
            if runs and runs[-1][1] == i:
                runs[-1] = (runs[-1][0], i + 1)
            else:
                runs.append((i, i + 1))
    return runs
