"""BrowserGym's action-space description for the actions the harness executes.

Laid out as BrowserGym's ``HighLevelActionSet.describe()`` prints it (signature,
``Description:``, ``Examples:``), for the eleven actions of issue #7: the chat and
infeasibility actions, the element (bid) actions, and navigation. It fills the
"[Description of Action space]" slot of the policy prompts.
"""

from __future__ import annotations

ACTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "send_msg_to_user(text: str)",
        "Sends a message to the user.",
        ("send_msg_to_user('Based on the results of my search, the city was built in 1751.')",),
    ),
    (
        "report_infeasible(reason: str)",
        "Notifies the user that their instructions are infeasible.",
        (
            "report_infeasible('I cannot follow these instructions because there is no email "
            "field in this form.')",
        ),
    ),
    (
        "scroll(delta_x: float, delta_y: float)",
        "Scroll horizontally and vertically. Amounts in pixels, positive for right or down "
        "scrolling, negative for left or up scrolling. Dispatches a wheel event.",
        ("scroll(0, 200)", "scroll(-50.2, -100.5)"),
    ),
    (
        "fill(bid: str, value: str)",
        "Fill out a form field. It focuses the element and triggers an input event with the "
        "entered text. It works for <input>, <textarea> and [contenteditable] elements.",
        ("fill('237', 'example value')", "fill('45', 'multi-line\\nexample')"),
    ),
    (
        "select_option(bid: str, options: str | list[str])",
        "Select one or multiple options in a <select> element. You can specify option value "
        "or label to select. Multiple options can be selected.",
        ("select_option('a48', 'blue')", "select_option('c48', ['red', 'green', 'blue'])"),
    ),
    (
        "click(bid: str, button: Literal['left', 'middle', 'right'] = 'left', "
        "modifiers: list[Literal['Alt', 'Control', 'ControlOrMeta', 'Meta', 'Shift']] = [])",
        "Click an element.",
        ("click('a51')", "click('b22', button='right')"),
    ),
    ("hover(bid: str)", "Hover over an element.", ("hover('b8')",)),
    (
        "keyboard_press(key: str)",
        "Press a combination of keys. Accepts the logical key names of keyboard events "
        "(Enter, Tab, Backspace, Escape, ArrowDown, PageDown, KeyA - KeyZ, ...) or a single "
        "character such as 'a' or '#', with the modifiers Shift, Control, Alt, Meta and "
        "ControlOrMeta.",
        ("keyboard_press('Backspace')", "keyboard_press('ControlOrMeta+a')"),
    ),
    ("goto(url: str)", "Navigate to a url.", ("goto('http://www.example.com')",)),
    ("go_back()", "Navigate to the previous page in history.", ("go_back()",)),
    ("go_forward()", "Navigate to the next page in history.", ("go_forward()",)),
)


def describe(actions: tuple[tuple[str, str, tuple[str, ...]], ...] = ACTIONS) -> str:
    """The description text, one block per action, ending with the single-action rule."""
    out = [f"{len(actions)} different types of actions are available.\n"]
    for signature, description, examples in actions:
        out.append(f"{signature}\n    Description: {description}\n    Examples:")
        out.extend(f"        {e}\n" for e in examples)
    out.append("Only a single action can be provided at once. Example:\nfill('a12', 'example')")
    return "\n".join(out)


ACTION_SPACE = describe()
"""What fills the prompts' "[Description of Action space]"."""
