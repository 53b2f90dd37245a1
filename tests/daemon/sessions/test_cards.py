"""The approval card, read from a step's observation and results (sans-I/O)."""

from __future__ import annotations

import base64
import io

from webshepherd.daemon.engine.checklist_parse import parse_reference_checklist
from webshepherd.daemon.sessions.cards import (
    CROP_MAX,
    CausingStep,
    approval_card,
    axtree_element,
    causing_step,
    commit_card,
    commit_why,
    field_labels,
    nearby_amounts,
)
from webshepherd.daemon.sessions.state import LiveSession
from webshepherd.protocol.common import (
    CandidateResult,
    CardJudge,
    ElementFacts,
    FieldLabel,
    HeldRequest,
    RequestField,
    SessionHeader,
    Turn,
)

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


# ---- a paused request's card: the step that caused it, in the task's words (issue 51.2)

SHOP = "\n".join(
    [
        "[1] RootWebArea 'Shop', focused",
        "\t[20] heading 'USB-C cable'",
        "\t\tStaticText 'Price:'",
        "\t\tStaticText '$4.99'",
        "\t[21] spinbutton 'Quantity' value='2'",
        "\t[22] textbox 'Coupon' value='2'",
        "\t[23] textbox 'Gift note' value='for Sam'",
        "\t[18] button 'Add to cart'",
        "\t\tStaticText 'Order total: 9.98 EUR'",
        "\t[24] link 'Shipping to Berlin'",
    ]
)


def _png(width: int, height: int) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (250, 250, 250)).save(out, format="PNG")
    return out.getvalue()


def _request(**kw: object) -> HeldRequest:
    fields = [RequestField(name="id", value="c2"), RequestField(name="note", value="for Sam")]
    fields.append(RequestField(name="qty", value="2"))
    base = {"method": "POST", "url": "http://shop.test/cart/add", "kind": "write"}
    return HeldRequest.model_validate({**base, "fields": fields, **kw})


def _step(bid: str | None = "18", **kw: object) -> CausingStep:
    base: dict[str, object] = {
        "step": 3,
        "bid": bid,
        "axtree": SHOP,
        "boxes": {"18": [300, 400, 120, 40]},
        "screenshot": _png(1280, 720),
        "screenshot_mime": "image/png",
        "judge": CardJudge(step=3, reward=0.81, item=2, item_title="Add the cable to the cart"),
    }
    return CausingStep(**{**base, **kw})  # type: ignore[arg-type]


def test_a_paused_requests_card_names_the_element_crops_it_and_reads_the_page() -> None:
    req = _request(trigger="click('18')", element="18")
    c = commit_card(
        req, "Waiting for you", why=commit_why(req, "ask"), step=_step(), expires_at=1000.5
    )
    assert c.target is not None
    assert (c.target.bid, c.target.role, c.target.name) == ("18", "button", "Add to cart")
    assert c.target.box == [16.0, 16.0, 120.0, 40.0]  # within the crop, its margin around it
    assert c.screenshot is not None and c.screenshot.mime == "image/png"
    from PIL import Image

    with Image.open(io.BytesIO(base64.b64decode(c.screenshot.data or ""))) as crop:
        assert crop.size == (152, 72)
    # the page's amounts near the button, nearest first, a bare amount with its label
    assert c.amounts == ["Order total: 9.98 EUR", "Price: $4.99"]
    # a field whose value one control shows gets its name; '2' is shown by two controls
    assert [(f.name, f.label) for f in c.labels] == [("note", "Gift note")]
    assert c.judge is not None and (c.judge.reward, c.judge.item) == (0.81, 2)
    assert c.expires_at == 1000.5
    assert c.why == (
        "The session's mode is 'ask': a request that sends data to keep waits for a person "
        "before it leaves, and this one is a POST to shop.test/cart/add."
    )
    assert c.on_approve is not None and "POST once" in c.on_approve
    assert c.on_reject is not None and c.on_reject.startswith("Nothing is sent")
    assert c.request == req and c.destination == req.url


def test_a_big_target_is_scaled_into_the_crops_bound() -> None:
    step = _step(boxes={"18": [0, 0, 1200, 700]})
    c = commit_card(_request(trigger="click('18')"), "h", step=step)
    assert c.screenshot is not None and c.target is not None and c.target.box is not None
    from PIL import Image

    with Image.open(io.BytesIO(base64.b64decode(c.screenshot.data or ""))) as crop:
        assert crop.width <= CROP_MAX[0] and crop.height <= CROP_MAX[1]
        assert crop.width == CROP_MAX[0] or crop.height == CROP_MAX[1]
    assert c.target.box[2] <= CROP_MAX[0] and c.target.box[3] <= CROP_MAX[1]


def test_a_paused_request_without_a_known_step_has_no_target_but_says_what_each_answer_does() -> (
    None
):
    req = _request(kind="navigation", method="GET", url="https://other.test/x")
    c = commit_card(req, "h", why=commit_why(req, "ask"))
    assert c.target is None and c.screenshot is None and c.judge is None and c.amounts == []
    assert c.on_approve == "The browser opens other.test/x once, and the agent goes on."
    assert c.why is not None and "opens another site" in c.why
    # an image that does not decode: the target without a crop, the screenshot not sent as one
    bad = commit_card(req, "h", step=_step(screenshot=b"not an image", screenshot_mime="image/png"))
    assert bad.target is not None and bad.target.box == [300, 400, 120, 40]
    assert bad.screenshot is not None  # the whole (undecodable) screenshot, the box on it


def test_nearby_amounts_and_field_labels_read_only_the_observation() -> None:
    assert nearby_amounts(SHOP, "99") == []
    assert nearby_amounts(SHOP, "24", limit=1) == ["Order total: 9.98 EUR"]
    assert field_labels(SHOP, [("q", "2"), ("n", "for Sam "), ("x", "")]) == [
        FieldLabel(name="n", label="Gift note")
    ]


def test_the_causing_step_is_the_latest_observation_its_trigger_scored_there() -> None:
    header = SessionHeader(
        session_id="s1", intent="Buy a cable", start_url="http://shop.test/", created_at=1.0
    )
    st = LiveSession(header, step=2, url="http://shop.test/p/2", axtree=SHOP)
    st.checklist = parse_reference_checklist("Checklist 1: Find it\nChecklist 2: Add it")
    st.history = [Turn(thought="", action="click('20')")]
    st.acted_steps = {1}
    st.step_progress = {1: {"click('20')": {1: 2}}, 2: {"click('18')": {1: 2, 2: 1}}}
    st.step_candidates = {2: [("click('18')", 0.7), ("go_back()", 0.1)]}
    req = _request(trigger="click('18')", page_url="http://shop.test/p/2")
    step = causing_step(st, req)
    assert step is not None and (step.step, step.bid) == (2, "18")
    # item 1 was done at an earlier executed step: the click serves item 2, in progress
    assert step.judge == CardJudge(step=2, reward=0.7, item=2, item_title="Add it")
    unscored = causing_step(st, _request(trigger="click('24')"))
    assert unscored is not None and unscored.bid == "24" and unscored.judge is None
    assert causing_step(st, _request()) is None  # the page sent it by itself
    elsewhere = _request(trigger="click('18')", page_url="https://other.test/")
    assert causing_step(st, elsewhere) is None
    st.axtree = None
    assert causing_step(st, req) is None  # no observation yet
