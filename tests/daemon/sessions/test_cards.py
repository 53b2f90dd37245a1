"""The approval card, read from a step's observation and results (sans-I/O)."""

from __future__ import annotations

import base64

from webshepherd.daemon.sessions.cards import approval_card, axtree_element
from webshepherd.protocol.common import CandidateResult, ElementFacts, Turn

AXTREE = "\n".join(
    [
        "[1] RootWebArea 'Shop'",
        "\t[12] textbox 'Search products'",
        "\t[13] button 'Place order'",
        "\t[14] link 'Cables \\u2014 \"USB-C\"'",
        "\t[15] StaticText",
        "\t[130] button 'Not 13'",
    ]
)
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


def results(*rewards: float | None) -> list[CandidateResult]:
    return [
        CandidateResult(
            index=i, reward=r, feedback=f"why {i}", parsed_samples=1 if r is not None else 0
        )
        for i, r in enumerate(rewards)
    ]


def card(actions: list[str], rewards: list[float | None], index: int = 0, **kw):
    cands = [Turn(thought=f"thought {i}", action=a) for i, a in enumerate(actions)]
    return approval_card(cands, results(*rewards), index, axtree=AXTREE, **kw)


def test_axtree_element_reads_role_and_name_of_exactly_that_bid() -> None:
    assert axtree_element(AXTREE, "13") == ("button", "Place order")
    assert axtree_element(AXTREE, "130") == ("button", "Not 13")
    assert axtree_element(AXTREE, "14") == ("link", 'Cables \u2014 "USB-C"')
    assert axtree_element(AXTREE, "15") == ("StaticText", None)
    assert axtree_element(AXTREE, "99") is None


def test_click_names_the_target_its_box_the_form_it_submits_and_ships_the_screenshot() -> None:
    facts = {
        "13": ElementFacts(
            tag="button", submits=True, form_method="POST", form_action="http://shop/checkout"
        )
    }
    c = card(
        ["click('13')", "go_back()", "fill('12', 'x')"],
        [0.2, 0.9, None],
        boxes={"13": [10, 20, 100, 30]},
        elements=facts,
        screenshot=PNG,
        screenshot_mime="image/png",
    )
    assert c.target is not None
    assert (c.target.bid, c.target.role, c.target.name) == ("13", "button", "Place order")
    assert c.target.box == [10, 20, 100, 30]
    assert c.destination == "http://shop/checkout"
    assert c.typed is None
    assert (c.thought, c.feedback) == ("thought 0", "why 0")
    # the others, best first, the unscored last
    assert [(o.index, o.action, o.reward) for o in c.others] == [
        (1, "go_back()", 0.9),
        (2, "fill('12', 'x')", None),
    ]
    assert c.screenshot is not None and c.screenshot.mime == "image/png"
    assert base64.b64decode(c.screenshot.data or "") == PNG


def test_no_screenshot_without_the_targets_box() -> None:
    c = card(["click('13')"], [0.1], screenshot=PNG, screenshot_mime="image/png")
    assert c.target is not None and c.target.box is None
    assert c.screenshot is None


def test_link_click_leads_to_its_href_and_goto_to_its_url() -> None:
    facts = {"14": ElementFacts(tag="a", href="https://xn--pypal-4ve.com/pay")}
    assert card(["click('14')"], [0.1], elements=facts).destination == (
        "https://xn--pypal-4ve.com/pay"
    )
    goto = card(["goto('https://p\u0430ypal.com/')"], [0.1])
    assert goto.destination == "https://p\u0430ypal.com/"  # raw: the clients escape it
    assert goto.target is None


def test_pressing_enter_in_a_form_field_leads_where_the_form_submits() -> None:
    facts = {
        "12": ElementFacts(
            tag="input", submits=True, form_method="GET", form_action="http://shop/search"
        )
    }
    assert card(["press('12', 'Enter')"], [0.1], elements=facts).destination == (
        "http://shop/search"
    )
    assert card(["press('12', 'a')"], [0.1], elements=facts).destination is None
    assert card(["hover('12')"], [0.1], elements=facts).destination is None


def test_typed_text_of_fill_keyboard_type_and_select_option() -> None:
    hidden = "usb-c\u200bcable\U000e0041"
    c = card([f"fill('12', {hidden!r})"], [0.1])
    assert c.typed == hidden  # the exact characters; shown escaped by the clients
    assert c.target is not None and c.target.name == "Search products"
    assert card(["keyboard_type('hello')"], [0.1]).typed == "hello"
    assert card(["select_option('12', ['a', 'b'])"], [0.1]).typed == "a, b"
    assert card(["click('12')"], [0.1]).typed is None


def test_unknown_bid_and_unparseable_action_still_make_a_card() -> None:
    c = card(["click('777')"], [0.1])
    assert c.target is not None
    assert (c.target.bid, c.target.role, c.target.name) == ("777", None, None)
    bad = card(["type [13] [hello] [1]", "click('13')"], [0.1, 0.5])
    assert bad.target is not None and bad.target.role == "button"  # the recorded text's bid
    assert [o.index for o in bad.others] == [1]
    nothing = card(["this is not an action"], [None])
    assert nothing.target is None and nothing.destination is None and nothing.typed is None


def test_the_held_candidate_may_be_any_index() -> None:
    c = card(["click('13')", "click('12')", "go_back()"], [0.5, 0.1, 0.5], index=1)
    assert c.target is not None and c.target.bid == "12"
    assert c.feedback == "why 1"
    assert [o.index for o in c.others] == [0, 2]  # equal rewards: the earlier first


# -- over real sockets: a held step's approval.request carries the card ----------------------

LIVE_AXTREE = "[1] RootWebArea 'Shop', focused\n\t[3] button 'Pay now'\n\t[4] link 'Help'"
#: what the card says of each candidate's target, whichever the judge holds
LIVE_TARGETS = {
    "3": (
        {"bid": "3", "role": "button", "name": "Pay now", "box": [40, 50, 120, 24]},
        "http://shop.local/pay",
    ),
    "4": (
        {"bid": "4", "role": "link", "name": "Help", "box": [200, 10, 30, 12]},
        "http://help.example/",
    ),
}


async def test_a_held_steps_approval_request_carries_the_card(daemon) -> None:
    from tests.fixtures.daemon import REFERENCE

    agent = await daemon.client(name="agent-1")
    monitor = await daemon.client(role="monitor", name="tui")
    started = await agent.request(
        {
            "type": "session.start",
            "intent": "Buy the cheapest USB-C cable",
            "start_url": "http://shop.local/",
            "checklist": REFERENCE,
        }
    )
    sid = started["session_id"]
    shot = base64.b64encode(PNG).decode()
    observation = {
        "url": "http://shop.local/cart",
        "axtree": LIVE_AXTREE,
        "screenshot": {"mime": "image/png", "data": shot},
        "boxes": {"3": [40, 50, 120, 24], "4": [200, 10, 30, 12]},
        "elements": {
            "3": {
                "tag": "button",
                "submits": True,
                "form_method": "POST",
                "form_action": "http://shop.local/pay",
            },
            "4": {"tag": "a", "href": "http://help.example/"},
        },
    }
    cands = [
        {"thought": "Pay for the cable.", "action": "click('3')"},
        {"thought": "Read the help.", "action": "click('4')"},
    ]
    await agent.send(
        {
            "type": "score",
            "id": "c1",
            "session_id": sid,
            "observation": observation,
            "candidates": cands,
            "samples": 1,
            "approval": "always",
        }
    )
    req = await monitor.wait_for("approval.request", timeout=60)
    card = req["card"]
    held = req["candidate_index"]
    target, destination = LIVE_TARGETS[cands[held]["action"][7]]
    assert card["target"] == target
    assert card["destination"] == destination and card["typed"] is None
    assert card["screenshot"] == {"mime": "image/png", "data": shot}
    assert card["thought"] == cands[held]["thought"]
    assert card["feedback"] == req["feedback"] and "<answer>" not in card["feedback"]
    assert [(o["index"], o["action"]) for o in card["others"]] == [
        (1 - held, cands[1 - held]["action"])
    ]
    # the recording keeps the card, not the screenshot's bytes again
    history = await monitor.request({"type": "session.get", "session_id": sid})
    (recorded,) = [e for e in history["events"] if e["type"] == "approval.request"]
    assert recorded["card"]["target"] == target
    assert recorded["card"]["screenshot"] == {"mime": "image/png"}


def test_a_coordinate_click_names_the_element_under_the_point_not_a_number() -> None:
    facts = {
        "13": ElementFacts(
            tag="button", submits=True, form_method="POST", form_action="http://shop/checkout"
        )
    }
    boxes = {"1": [0, 0, 800, 600], "13": [10, 20, 100, 30], "130": [300, 20, 100, 30]}
    c = card(["mouse_click(130, 30)"], [0.5], boxes=boxes)
    assert c.target is not None and c.target.bid == "1"  # under the point; 130 is its x
    c = card(["mouse_click(50, 30)"], [0.5], boxes=boxes, elements=facts)
    assert c.target is not None and (c.target.bid, c.target.name) == ("13", "Place order")
    assert c.destination == "http://shop/checkout"
    assert card(["mouse_click(50, 30)"], [0.5]).target is None  # no boxes: target unknown


def test_a_multi_action_card_names_the_call_that_activates() -> None:
    c = card(["fill('12', 'x')\nclick('13')"], [0.5])
    assert c.target is not None and c.target.bid == "13"
