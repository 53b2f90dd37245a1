"""The published checkpoints' prompts, rendered byte for byte.

The two templates under ``templates/`` are exact copies of the published interface
(``tests/fixtures/data/model-interface/*.template.json``). Placeholders are replaced in
one literal pass (never ``str.format``: AX trees contain braces, and a value
that happens to contain ``{checklist}`` must not be substituted again).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources

from webshepherd.daemon.engine.types import StepInput
from webshepherd.protocol.common import Turn

_PLACEHOLDER = re.compile(
    r"\{(intent|start_url|text_observation|trajectory|current_url|checklist|thought|action)\}"
)
# Marks the agent's THOUGHT while rendering, to find the shared-prefix boundary in the chat text.
_SENTINEL = "\x00WEBSHEPHERD-THOUGHT\x00"

# The authors' multimodal variant (``text+image``): the screenshot block follows the AX tree in
# "## Current State", and the user message is split at the placeholder around the image.
IMAGE_PLACEHOLDER = "<IMAGE_PLACEHOLDER>"
SCREENSHOT_BLOCK = (
    "### SOM Image Screenshot\n"
    "Here is a current image screenshot of the page, it is annotated with bounding boxes "
    f"and corresponding bids:\n{IMAGE_PLACEHOLDER}\n"
)
_AFTER_AXTREE = "{text_observation}\n## Checklist\n"


@cache
def template(name: str) -> tuple[dict[str, str], ...]:
    """A packaged template: ``"checklist"`` or ``"judge"``."""
    text = (
        resources.files(__package__)
        .joinpath(f"templates/{name}_messages.template.json")
        .read_text("utf-8")
    )
    return tuple(json.loads(text))


def template_bytes(name: str) -> bytes:
    """The packaged template file's raw bytes (tests compare them with the shared copy)."""
    return (
        resources.files(__package__)
        .joinpath(f"templates/{name}_messages.template.json")
        .read_bytes()
    )


def _fill(text: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(
        lambda m: values[m.group(1)] if m.group(1) in values else m.group(0), text
    )


def _with_screenshot(content: str) -> str:
    """A judge template message with the screenshot block after the AX tree (if it has one)."""
    if _AFTER_AXTREE not in content:
        return content
    head, _, tail = content.partition(_AFTER_AXTREE)
    return head + "{text_observation}\n" + SCREENSHOT_BLOCK + "## Checklist\n" + tail


def _render(name: str, values: dict[str, str], with_image: bool = False) -> list[dict[str, str]]:
    return [
        {
            "role": m["role"],
            "content": _fill(
                _with_screenshot(m["content"]) if with_image else m["content"], values
            ),
        }
        for m in template(name)
    ]


def image_content(content: str, image_url: str) -> list[dict[str, object]]:
    """A ``text+image`` user message's content as the authors send it: the text before the
    image placeholder, the image (``detail: low``), the text after it."""
    cut = content.find(SCREENSHOT_BLOCK)
    if cut < 0:
        return [{"type": "text", "text": content}]
    cut += len(SCREENSHOT_BLOCK) - len(IMAGE_PLACEHOLDER) - 1
    return [
        {"type": "text", "text": content[:cut]},
        {"type": "image_url", "image_url": {"url": image_url, "detail": "low"}},
        {"type": "text", "text": content[cut + len(IMAGE_PLACEHOLDER) :]},
    ]


def checklist_messages(intent: str, start_url: str, text_observation: str) -> list[dict[str, str]]:
    """Chat messages asking the model for a checklist."""
    return _render(
        "checklist",
        {"intent": intent, "start_url": start_url, "text_observation": text_observation},
    )


def judge_messages(
    intent: str,
    trajectory: str,
    current_url: str,
    text_observation: str,
    checklist: str,
    thought: str,
    action: str,
    with_image: bool = False,
) -> list[dict[str, str]]:
    """Chat messages asking the model to judge one candidate (``with_image``: the authors'
    multimodal variant, the screenshot's place marked by :data:`IMAGE_PLACEHOLDER`)."""
    return _render(
        "judge",
        {
            "intent": intent,
            "trajectory": trajectory,
            "current_url": current_url,
            "text_observation": text_observation,
            "checklist": checklist,
            "thought": thought,
            "action": action,
        },
        with_image,
    )


def format_trajectory(history: Sequence[Turn], last: int = 10) -> str:
    """Past steps as the authors' benchmark writes them (``get_trajectory``): the last
    ``last`` kept, numbered by their real step, a blank line after each; ``""`` at step 0."""
    start = max(0, len(history) - last)
    return "".join(
        f"Thought {i}: {t.thought}\nAction {i}: {t.action}\n\n"
        for i, t in enumerate(history[start:], start=start + 1)
    )


def judge_fields(step: StepInput, history_steps: int, axtree: str | None = None) -> dict[str, str]:
    """The judge prompt's values for ``step`` but the candidate (``axtree``: a cut tree)."""
    return {
        "intent": step.intent,
        "trajectory": format_trajectory(step.history, history_steps),
        "current_url": step.current_url,
        "text_observation": step.axtree if axtree is None else axtree,
        "checklist": step.checklist.text,
    }


def step_judge_messages(
    step: StepInput,
    candidate: int,
    history_steps: int,
    axtree: str | None = None,
    with_image: bool = False,
) -> list[dict[str, str]]:
    """The chat messages the engine sends to judge candidate ``candidate`` of ``step``."""
    c = step.candidates[candidate]
    return judge_messages(
        **judge_fields(step, history_steps, axtree),
        thought=c.thought,
        action=c.action,
        with_image=with_image,
    )


def split_judge_prompt(
    render_chat: Callable[[Sequence[dict[str, str]]], str],
    *,
    intent: str,
    trajectory: str,
    current_url: str,
    text_observation: str,
    checklist: str,
    candidates: Sequence[Turn],
    with_image: bool = False,
) -> tuple[str, list[str]]:
    """Rendered judge prompts as ``(shared prefix, per-candidate suffixes)``.

    The prefix is the rendered chat text up to and including ``THOUGHT: `` of
    the agent's response; ``prefix + suffixes[k]`` is exactly candidate k's
    full rendered prompt. When the chat template does not keep the prefix
    stable across candidates, the prefix is ``""`` and suffixes are the full
    prompts.
    """
    common = {
        "intent": intent,
        "trajectory": trajectory,
        "current_url": current_url,
        "text_observation": text_observation,
        "checklist": checklist,
    }
    marked = render_chat(
        judge_messages(**common, thought=_SENTINEL, action="", with_image=with_image)
    )
    fulls = [
        render_chat(
            judge_messages(**common, thought=c.thought, action=c.action, with_image=with_image)
        )
        for c in candidates
    ]
    cut = marked.find(_SENTINEL)
    if cut < 0 or marked.count(_SENTINEL) != 1:
        return "", fulls
    prefix = marked[:cut]
    if not prefix.endswith("THOUGHT: ") or not all(f.startswith(prefix) for f in fulls):
        return "", fulls
    return prefix, [f[len(prefix) :] for f in fulls]
