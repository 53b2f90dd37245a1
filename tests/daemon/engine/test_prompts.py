"""Prompt rendering is byte-identical to the published model interface."""

from __future__ import annotations

import json

import pytest
from webshepherd.daemon.dev.tiny_model import CHAT_TEMPLATE
from webshepherd.daemon.engine.prompts import (
    checklist_messages,
    format_trajectory,
    judge_messages,
    split_judge_prompt,
    template_bytes,
)
from webshepherd.protocol.common import Turn

from tests.fixtures.data import MODEL_INTERFACE

TREE = "RootWebArea 'Shop {x}'\n\t[12] textbox 'Search {checklist}' focused\n\t[13] button 'Go'"


def _shared(name: str) -> list[dict[str, str]]:
    return json.loads((MODEL_INTERFACE / f"{name}_messages.template.json").read_text("utf-8"))


def _expected(name: str, values: dict[str, str]) -> list[dict[str, str]]:
    out = []
    for m in _shared(name):
        content = m["content"]
        for key, value in values.items():  # the sample values hold no placeholder of a later key
            content = content.replace("{" + key + "}", value)
        out.append({"role": m["role"], "content": content})
    return out


@pytest.mark.parametrize("name", ["checklist", "judge"])
def test_packaged_templates_are_byte_identical(name: str) -> None:
    _shared(name)
    assert template_bytes(name) == (MODEL_INTERFACE / f"{name}_messages.template.json").read_bytes()


def test_checklist_messages_match_template() -> None:
    got = checklist_messages("Buy red shoes", "http://shop.example.com", "[1] link 'Home'")
    values = {
        "intent": "Buy red shoes",
        "start_url": "http://shop.example.com",
        "text_observation": "[1] link 'Home'",
    }
    assert got == _expected("checklist", values)
    assert got[0] == {"role": "system", "content": ""}


def test_judge_messages_match_template_with_trajectory() -> None:
    history = (Turn("I search.", "fill('12', 'shoes')"), Turn("I open it.", "click('40')"))
    trajectory = format_trajectory(history)
    assert trajectory == (
        "Thought 1: I search.\nAction 1: fill('12', 'shoes')\n\n"
        "Thought 2: I open it.\nAction 2: click('40')\n\n"
    )
    values = {
        "intent": "Buy red shoes",
        "trajectory": trajectory,
        "current_url": "http://shop/x",
        "text_observation": "[1] link 'Home'",
        "checklist": "Checklist 1: Search\n- Goal: type",
        "thought": "I add it.",
        "action": "click('7')",
    }
    got = judge_messages(**values)
    assert got == _expected("judge", values)
    assert "## Trajectory\nThought 1: I search." in got[1]["content"]
    assert "Action 2: click('40')\n\n## Current State" in got[1]["content"]


def test_placeholders_in_values_stay_literal() -> None:
    got = judge_messages("a {intent}", "", "u", TREE, "Checklist 1: x", "t {action}", "a")
    content = got[1]["content"]
    assert "'Search {checklist}' focused" in content and "Shop {x}" in content
    assert "THOUGHT: t {action}\nACTION: a\n\n" in content
    assert "## User Instruction\na {intent}\n## Trajectory\n## Current State" in content


def test_trajectory_keeps_last_ten_numbered_by_real_step() -> None:
    history = tuple(Turn(f"t{i}", f"a{i}") for i in range(1, 13))
    text = format_trajectory(history)
    assert text.startswith("Thought 3: t3\nAction 3: a3\n\n")
    assert text.endswith("Thought 12: t12\nAction 12: a12\n\n")
    assert text.count("Thought ") == 10
    assert format_trajectory(()) == ""


def _chatml(messages: list[dict[str, str]]) -> str:
    from jinja2 import Template

    return Template(CHAT_TEMPLATE).render(messages=messages, add_generation_prompt=True)


def test_split_judge_prompt_on_rendered_chat_text() -> None:
    cands = [Turn("I add it.", "click('7')"), Turn("Hmm {x}", "scroll(0, 1)")]
    kw = {
        "intent": "Buy",
        "trajectory": "",
        "current_url": "u",
        "text_observation": TREE,
        "checklist": "Checklist 1: x",
    }
    prefix, suffixes = split_judge_prompt(_chatml, candidates=cands, **kw)
    assert prefix.startswith("<|im_start|>system\n<|im_end|>\n<|im_start|>user\nYou are an expert")
    assert prefix.endswith("## Agent's Response\nTHOUGHT: ")
    for cand, suffix in zip(cands, suffixes, strict=True):
        full = _chatml(judge_messages(**kw, thought=cand.thought, action=cand.action))
        assert prefix + suffix == full
        assert (
            suffix
            == f"{cand.thought}\nACTION: {cand.action}\n\n<|im_end|>\n<|im_start|>assistant\n"
        )


def test_split_falls_back_when_template_is_unstable() -> None:
    calls = iter(range(100))

    def unstable(messages: list[dict[str, str]]) -> str:  # a template that stamps each render
        return f"[{next(calls)}]" + _chatml(messages)

    prefix, suffixes = split_judge_prompt(
        unstable,
        intent="i",
        trajectory="",
        current_url="u",
        text_observation="t",
        checklist="c",
        candidates=[Turn("a", "b")],
    )
    assert prefix == "" and suffixes[0].startswith("[1]<|im_start|>system")
