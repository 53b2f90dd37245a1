"""The published checkpoints' prompts, and the paper's baseline judges' prompts, rendered byte
for byte.

Prompt styles (:data:`PROMPT_STYLES`): ``web-shepherd`` (the checkpoints' own prompts:
``templates/judge_*`` and ``templates/checklist_*``, exact copies of the published interface,
``tests/fixtures/data/model-interface/*.template.json``), ``baseline`` (the authors'
``with_checklist`` judge prompt and ``default`` checklist prompt, with which the paper's
GPT-4o(-mini) baselines were run) and ``baseline-likert`` (their ``likert_scale`` judge prompt:
no checklist, a 1-5 score). The baseline templates are the authors' prompt code rendered with
the placeholders as values. Placeholders are replaced in one literal pass (never
``str.format``: AX trees contain braces, and a value that happens to contain ``{checklist}``
must not be substituted again).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from typing import Literal, get_args

from webshepherd.daemon.engine.types import CandidateLike, StepInput
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
# The screenshot block goes after the AX tree, before the next section (checklist or response).
_AFTER_AXTREE = re.compile(r"\{text_observation\}\n(?=## )")

PromptStyle = Literal["web-shepherd", "baseline", "baseline-likert"]
PROMPT_STYLES: tuple[PromptStyle, ...] = get_args(PromptStyle)
_JUDGE = {
    "web-shepherd": "judge",
    "baseline": "baseline_judge",
    "baseline-likert": "baseline_likert_judge",
}
_CHECKLIST = {
    "web-shepherd": "checklist",
    "baseline": "baseline_checklist",
    "baseline-likert": "baseline_checklist",
}
#: How a null thought reads in a prompt: the authors fill their templates with ``str.format``,
#: which writes None as "None" (``THOUGHT: None``, ``Thought 3: None``).
NULL_THOUGHT = "None"


def uses_checklist(style: PromptStyle) -> bool:
    """Whether the style's judge prompt shows the checklist and labels its items
    (``baseline-likert`` gives one 1-5 score instead)."""
    return style != "baseline-likert"


def samples_single(style: PromptStyle) -> bool:
    """Whether one judge sample is drawn at the temperature rather than greedily: the
    authors' baseline runs draw their one sample at T=1.0 (``evaluate_webprm.sh``); the
    checkpoint's single judgement is the greedy one (the paper's "1 prob" row)."""
    return style != "web-shepherd"


@cache
def template(name: str) -> tuple[dict[str, str], ...]:
    """A packaged template: ``"checklist"``, ``"judge"``, ``"baseline_judge"``,
    ``"baseline_likert_judge"`` or ``"baseline_checklist"``."""
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
    return _AFTER_AXTREE.sub(lambda m: m.group(0) + SCREENSHOT_BLOCK, content, count=1)


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


def checklist_messages(
    intent: str, start_url: str, text_observation: str, style: PromptStyle = "web-shepherd"
) -> list[dict[str, str]]:
    """Chat messages asking the model for a checklist (the ``baseline`` prompt shows no AX
    tree, as the authors' ``default`` checklist prompt)."""
    return _render(
        _CHECKLIST[style],
        {"intent": intent, "start_url": start_url, "text_observation": text_observation},
    )


def judge_messages(
    intent: str,
    trajectory: str,
    current_url: str,
    text_observation: str,
    checklist: str,
    thought: str | None,
    action: str,
    with_image: bool = False,
    style: PromptStyle = "web-shepherd",
) -> list[dict[str, str]]:
    """Chat messages asking the model to judge one candidate (``with_image``: the authors'
    multimodal variant, the screenshot's place marked by :data:`IMAGE_PLACEHOLDER`)."""
    return _render(
        _JUDGE[style],
        {
            "intent": intent,
            "trajectory": trajectory,
            "current_url": current_url,
            "text_observation": text_observation,
            "checklist": checklist,
            "thought": NULL_THOUGHT if thought is None else thought,
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
        "checklist": step.checklist.text if step.checklist is not None else "",
    }


def step_judge_messages(
    step: StepInput,
    candidate: int,
    history_steps: int,
    axtree: str | None = None,
    with_image: bool = False,
    style: PromptStyle = "web-shepherd",
) -> list[dict[str, str]]:
    """The chat messages the engine sends to judge candidate ``candidate`` of ``step``."""
    c = step.candidates[candidate]
    return judge_messages(
        **judge_fields(step, history_steps, axtree),
        thought=c.thought,
        action=c.action,
        with_image=with_image,
        style=style,
    )


def split_judge_prompt(
    render_chat: Callable[[Sequence[dict[str, str]]], str],
    *,
    intent: str,
    trajectory: str,
    current_url: str,
    text_observation: str,
    checklist: str,
    candidates: Sequence[CandidateLike],
    with_image: bool = False,
    style: PromptStyle = "web-shepherd",
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
        judge_messages(**common, thought=_SENTINEL, action="", with_image=with_image, style=style)
    )
    fulls = [
        render_chat(
            judge_messages(
                **common, thought=c.thought, action=c.action, with_image=with_image, style=style
            )
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
