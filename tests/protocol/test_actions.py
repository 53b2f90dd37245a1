"""BrowserGym action strings: parsed into typed actions (clear errors for those that cannot
run), and recorded ones read as text."""

from __future__ import annotations

import pytest
from webshepherd.protocol.actions import SIGNATURES, from_browser_use, parse_action, read_recorded
from webshepherd.protocol.agents.environment import ActionError
from webshepherd.protocol.errors import WebShepherdError


@pytest.mark.parametrize(
    ("text", "name", "args"),
    [
        ("click('12')", "click", {"bid": "12", "button": "left", "modifiers": ()}),
        ("click('12', button='right')", "click", {"bid": "12", "button": "right", "modifiers": ()}),
        (
            "click('a3', 'middle', ['Shift', 'Alt'])",
            "click",
            {"bid": "a3", "button": "middle", "modifiers": ("Shift", "Alt")},
        ),
        ("dblclick(bid='7')", "dblclick", {"bid": "7", "button": "left", "modifiers": ()}),
        ("hover('bA12')", "hover", {"bid": "bA12"}),
        ("fill('45', 'usb-c cable')", "fill", {"bid": "45", "value": "usb-c cable"}),
        ('fill("45", "it\'s \\"quoted\\"")', "fill", {"bid": "45", "value": 'it\'s "quoted"'}),
        ("fill('45', value='')", "fill", {"bid": "45", "value": ""}),
        ("select_option('5', 'Blue')", "select_option", {"bid": "5", "options": "Blue"}),
        ("select_option('5', ['a','b'])", "select_option", {"bid": "5", "options": ("a", "b")}),
        ("press('45', 'Enter')", "press", {"bid": "45", "key_comb": "Enter"}),
        ("scroll(0, 200)", "scroll", {"delta_x": 0, "delta_y": 200}),
        ("scroll(-10.5, 0)", "scroll", {"delta_x": -10.5, "delta_y": 0}),
        ("scroll(delta_y=300, delta_x=0)", "scroll", {"delta_x": 0, "delta_y": 300}),
        ("keyboard_press('Enter')", "keyboard_press", {"key": "Enter"}),
        ("keyboard_press('ControlOrMeta+a')", "keyboard_press", {"key": "ControlOrMeta+a"}),
        ("keyboard_type('hello')", "keyboard_type", {"text": "hello"}),
        ("goto('http://127.0.0.1:8000/cart')", "goto", {"url": "http://127.0.0.1:8000/cart"}),
        ("go_back()", "go_back", {}),
        ("go_forward()", "go_forward", {}),
        ("noop()", "noop", {"wait_ms": 1000}),
        ("noop(250)", "noop", {"wait_ms": 250}),
        (
            "send_msg_to_user('The order is VW-1001')",
            "send_msg_to_user",
            {"text": "The order is VW-1001"},
        ),
        (
            "report_infeasible('no such product')",
            "report_infeasible",
            {"reason": "no such product"},
        ),
        ("  check('3')  \n", "check", {"bid": "3"}),
        ("uncheck('3')", "uncheck", {"bid": "3"}),
        ("clear('3')", "clear", {"bid": "3"}),
        ("focus('3')", "focus", {"bid": "3"}),
    ],
)
def test_valid_actions(text, name, args):
    action = parse_action(text)
    assert action.name == name
    assert dict(action.args) == args
    assert action.text == text.strip()
    assert action.bid == args.get("bid")


def test_terminal_actions():
    assert parse_action("send_msg_to_user('x')").terminal
    assert parse_action("report_infeasible('x')").terminal
    assert not parse_action("click('1')").terminal


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty action"),
        ("   ", "empty action"),
        ("click('1'", "not a function call"),
        ("click", "not a function call"),
        ("x = click('1')", "not a function call"),
        ("'12'", "not a function call"),
        ("click('1'); fill('2', 'a')", "one action per step, got 2"),
        ("click('1')\nclick('2')", "one action per step, got 2"),
        ("page.click('1')", "plain action name"),
        ("__import__('os')", "unknown action '__import__'"),
        ("type('1', 'x')", "unknown action 'type'"),
        ("click()", "missing 'bid'"),
        ("fill('1')", "missing 'value'"),
        ("scroll(0)", "missing 'delta_y'"),
        ("go_back(1)", "takes at most 0 arguments, got 1"),
        ("hover('1', '2')", "takes at most 1 arguments, got 2"),
        ("click(12)", "'bid' must be a string, got 12 (write '12')"),
        ("fill('1', 3)", "'value' must be a string"),
        ("scroll('0', 200)", "'delta_x' must be a number"),
        ("scroll(True, 200)", "'delta_x' must be a number"),
        ("click('1', button='double')", "'button' must be one of left, middle, right"),
        ("click('1', modifiers=['Super'])", "'modifiers' must be a list of"),
        ("select_option('5', [])", "non-empty list of strings"),
        ("select_option('5', ['a', 1])", "non-empty list of strings"),
        ("click('')", "'bid' is empty"),
        ("click('1', force=True)", "click() has no argument 'force'"),
        ("click('1', bid='2')", "got argument 'bid' twice"),
        ("click(*['1'])", "*args are not allowed"),
        ("click(**{'bid': '1'})", "**kwargs are not allowed"),
        ("fill('1', name)", "must be a literal, not 'name'"),
        ("fill('1', open('/etc/passwd').read())", "must be a literal"),
        ("goto('http://x/' + 'y')", "must be a literal"),
        ("fill('1', f'{x}')", "must be a literal"),
    ],
)
def test_errors_say_what_is_wrong(text, message):
    with pytest.raises(ActionError) as info:
        parse_action(text)
    assert message in info.value.message
    assert isinstance(info.value, WebShepherdError)


def test_unknown_action_lists_the_known_ones():
    with pytest.raises(ActionError) as info:
        parse_action("teleport('1')")
    for name in SIGNATURES:
        assert name in info.value.message


def test_the_string_is_never_evaluated(tmp_path):
    marker = tmp_path / "ran"
    with pytest.raises(ActionError):
        parse_action(f"fill('1', open({str(marker)!r}, 'w').write('x'))")
    assert not marker.exists()


def test_recorded_browsergym_and_webarena_actions_read_as_text():
    p = read_recorded("fill('12', 'usb-c, \\'cable\\'')")
    assert (p.op, p.element, p.text) == ("fill", "12", "usb-c, 'cable'")
    p = read_recorded("type [522] [AMC Waterfront] [1]")
    assert (p.op, p.element, p.text) == ("type", "522", "AMC Waterfront")
    assert read_recorded("scroll(0, 200)").element is None
    assert read_recorded("send_msg_to_user('It costs $4')").args == ("It costs $4",)
    assert read_recorded("stop [N/A]").op == "stop"
    assert read_recorded("weird words here").op == "weird"


@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        ("click", {"index": 3}, "click('b3')"),
        ("input", {"index": 3, "text": "usb-c"}, "fill('b3', 'usb-c')"),
        ("navigate", {"url": "https://a.test/"}, "goto('https://a.test/')"),
        (
            "navigate",
            {"url": "https://a.test/", "new_tab": True},
            "new_tab()\ngoto('https://a.test/')",
        ),
        ("scroll", {"down": False, "pages": 0.5}, "scroll(0, -300)"),
        ("send_keys", {"keys": "Enter"}, "keyboard_press('Enter')"),
        ("done", {"text": "ordered"}, "send_msg_to_user('ordered')"),
        ("click", {"index": 9}, None),  # an index the page's map does not name
        ("extract_structured_data", {"query": "x"}, None),  # no BrowserGym counterpart
    ],
)
def test_browser_use_actions_as_browsergym_strings(
    name: str, params: dict[str, object], expected: str | None
) -> None:
    assert from_browser_use(name, params, {3: "b3"}) == expected
