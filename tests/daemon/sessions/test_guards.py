"""The guard policy, without sockets: each rule from the page's facts and the action string."""

from __future__ import annotations

import pytest
from webshepherd.daemon.sessions.guards import (
    ALL_RULES,
    DEFAULT_WORDS,
    GuardPolicy,
    coordinate_notes,
    describe_guards,
    guard_hits,
    parse_rules,
    session_origin,
)
from webshepherd.protocol.commits import url_origin
from webshepherd.protocol.common import ElementFacts

ORIGIN = "http://shop.test:8000"
URL = f"{ORIGIN}/checkout"
AXTREE = "\n".join(
    [
        "RootWebArea 'Checkout', focused, url='http://shop.test:8000/checkout'",
        "\t[10] link 'Orders'",
        "\t[11] textbox 'Name' value='Ada'",
        "\t[12] button 'Place order'",
        "\t[13] button 'Search'",
        "\t[14] link 'Partner site'",
        "\t[15] link 'Manual'",
        "\t[16] link 'Report.csv'",
        "\t[17] button 'Save'",
        "\t[18] button 'Repay\u200bment'",
        "\t[19] button 'PAY NOW'",
        '\t[20] button "Don\'t cancel"',
        "\t[21] button 'Sign in'",
        "\t[22] button 'Sign   up'",
        "\t[23] button 'P\u200bay'",
        "\t[24] textbox 'Comment', focused",
        "\t[25] button 'Go'",
    ]
)
ELEMENTS = {
    "10": ElementFacts(tag="a", href=f"{ORIGIN}/orders"),
    "11": ElementFacts(tag="input", submits=True, form_method="POST", form_action=f"{ORIGIN}/o"),
    "12": ElementFacts(tag="button", submits=True, form_method="POST", form_action=f"{ORIGIN}/o"),
    "13": ElementFacts(
        tag="button", submits=True, form_method="GET", form_action=f"{ORIGIN}/search"
    ),
    "14": ElementFacts(tag="a", href="https://partner.example/"),
    "15": ElementFacts(tag="a", href=f"{ORIGIN}/files/manual.PDF"),
    "16": ElementFacts(tag="a", href=f"{ORIGIN}/export", download=True),
    "17": ElementFacts(tag="button", submits=True, form_method="DIALOG"),
    "24": ElementFacts(tag="textarea"),
    "25": ElementFacts(
        tag="button", submits=True, form_method="GET", form_action="https://evil.example/q"
    ),
}


#: the stricter policy (serve --guard-names): every rule, names too (the default has no names)
STRICT = GuardPolicy(rules=frozenset(ALL_RULES))


def rules(action: str, policy: GuardPolicy | None = None, **kw: object) -> list[str]:
    args: dict[str, object] = {
        "url": URL,
        "axtree": AXTREE,
        "elements": ELEMENTS,
        "origin": ORIGIN,
    }
    args.update(kw)
    hits = guard_hits(policy or STRICT, action, **args)  # type: ignore[arg-type]
    return [h.rule for h in hits]


def test_post_form_submit_by_click_and_by_enter_in_its_field() -> None:
    assert rules("click('12')") == ["name_match", "form_submit"]
    assert rules("press('11', 'Enter')") == ["form_submit"]
    assert rules("press('12', ' ')") == ["name_match", "form_submit"]


def test_get_and_dialog_forms_are_not_form_submits() -> None:
    assert rules("click('13')") == []
    assert rules("click('17')") == []


def test_typing_into_a_post_form_commits_nothing() -> None:
    assert rules("fill('11', 'Ada')") == []
    assert rules("press('11', 'a')") == []
    assert rules("hover('12')") == []
    assert rules("focus('12')") == []


def test_the_focused_element_takes_keyboard_press_and_a_typed_newline() -> None:
    focused = AXTREE.replace("\t[24] textbox 'Comment', focused", "\t[24] textbox 'Comment'")
    focused = focused.replace("[11] textbox 'Name' value='Ada'", "[11] textbox 'Name', focused")
    assert rules("keyboard_press('Enter')", axtree=focused) == ["form_submit"]
    assert rules("keyboard_type('Ada\\n')", axtree=focused) == ["form_submit"]
    assert rules("keyboard_type('Ada')", axtree=focused) == []
    assert rules("keyboard_press('Enter')") == []  # the focused textarea submits nothing


@pytest.mark.parametrize(
    ("bid", "matched"),
    [
        ("10", False),  # "Orders": not the word "order"
        ("18", False),  # "Repay\u200bment" folds to "repayment": no whole word
        ("19", True),  # upper case
        ("20", True),  # double-quoted name
        ("21", False),  # "sign" alone is not a word of the default
        ("22", True),  # "Sign   up": the phrase across any spaces
        ("23", True),  # a zero-width space does not split "Pay"
    ],
)
def test_name_match_whole_words_any_case(bid: str, matched: bool) -> None:
    assert ("name_match" in rules(f"click('{bid}')")) is matched


def test_words_are_configurable() -> None:
    policy = GuardPolicy(STRICT.rules, words=("orders",))
    assert rules("click('10')", policy) == ["name_match"]
    assert rules("click('19')", policy) == []


def test_leaving_the_origin_by_goto_link_or_form_action() -> None:
    assert rules("goto('https://evil.example/pay')") == ["leaves_origin"]
    assert rules("goto('/cart')") == []  # relative: the page's origin
    assert rules("goto('http://shop.test:8000/cart')") == []
    assert rules("goto('http://shop.test:8001/cart')") == ["leaves_origin"]  # another port
    assert rules("goto('https://shop.test:8000/cart')") == ["leaves_origin"]  # another scheme
    assert rules("click('14')") == ["leaves_origin"]
    assert rules("click('25')") == ["leaves_origin"]
    assert rules("click('10')") == []


def test_downloads_by_attribute_or_extension() -> None:
    assert rules("click('15')") == ["download"]  # .PDF, any case
    assert rules("click('16')") == ["download"]
    assert rules("goto('/files/setup.exe')") == ["download"]
    assert rules("goto('https://evil.example/setup.exe')") == ["leaves_origin", "download"]


def test_without_facts_only_the_name_decides() -> None:
    assert rules("click('12')", elements=None) == ["name_match"]
    assert rules("click('14')", elements={}) == []


def test_an_unknown_origin_leaves_nothing() -> None:
    assert rules("goto('https://evil.example/')", origin=None) == []


def test_other_syntaxes_are_read_loosely() -> None:
    assert rules("click [12]") == ["name_match", "form_submit"]
    assert rules("goto [https://evil.example/]") == ["leaves_origin"]


def test_rules_can_be_turned_off_one_by_one_or_all() -> None:
    assert rules("click('12')", GuardPolicy()) == ["form_submit"]  # a name alone: opt-in
    assert rules("click('12')", GuardPolicy().without("name_match")) == ["form_submit"]
    assert rules("click('12')", GuardPolicy(rules=frozenset())) == []
    with pytest.raises(ValueError, match="unknown guard rule 'forms'"):
        GuardPolicy().without("forms")
    with pytest.raises(ValueError, match="unknown guard rule"):
        parse_rules(["download", "nope"])
    assert parse_rules(["download"]) == frozenset({"download"})


def test_hits_say_what_on_the_page_met_the_rule() -> None:
    hits = guard_hits(
        STRICT, "click('12')", url=URL, axtree=AXTREE, elements=ELEMENTS, origin=ORIGIN
    )
    assert [h.detail for h in hits] == [
        "element 12 (button 'Place order') is named with 'order'",
        "element 12 (button 'Place order') submits a POST form to http://shop.test:8000/o",
    ]


def test_origins() -> None:
    assert url_origin("HTTP://Shop.Test:80/x?y") == "http://shop.test"
    assert url_origin("https://a.test:443/") == "https://a.test"
    assert url_origin("about:blank") is None
    assert url_origin("http://[::1]:9/") == "http://[::1]:9"
    assert session_origin("about:blank", "http://a.test/x") == "http://a.test"
    assert session_origin(None, None) is None


def test_the_policy_in_one_line() -> None:
    line = describe_guards(STRICT)
    for word in DEFAULT_WORDS:
        assert word in line
    assert "GET" in line and "origin" in line and "downloads" in line
    assert "refused at once" in line
    assert describe_guards(GuardPolicy(rules=frozenset())).startswith("guards: off")
    assert set(ALL_RULES) == {
        "form_submit", "name_match", "leaves_origin", "download", "commit_get",
    }  # fmt: skip
    assert "sends a GET that commits" in describe_guards(GuardPolicy())


# -- issue 49.4: GETs that commit ---------------------------------------------------------------

GETS_AXTREE = "\n".join(
    [
        "RootWebArea 'Cart', focused",
        "\t[30] link 'Remove'",
        "\t[31] link 'Continue shopping'",
        "\t[32] button 'Confirm'",
        "\t[33] link 'Cancel'",
        "\t[34] link 'Details'",
        "\t[35] button 'Delete'",
        "\t[36] link 'R\u200bemove'",
    ]
)
GETS_ELEMENTS = {
    "30": ElementFacts(tag="a", href=f"{ORIGIN}/cart/remove?item=3"),
    "31": ElementFacts(tag="a", href=f"{ORIGIN}/shop"),
    "32": ElementFacts(tag="button", submits=True, form_method="GET", form_action="/unsub"),
    "33": ElementFacts(tag="a", href=f"{ORIGIN}/cart"),
    "34": ElementFacts(tag="a", href=f"{ORIGIN}\\cart\\drop?item=3"),
    "35": ElementFacts(tag="button", submits=True, form_method="POST", form_action="/del"),
    "36": ElementFacts(tag="a", href=f"{ORIGIN}/cart/x"),
}
DROP = "GET http://shop.test:8000/cart/drop*"


def get_hits(action: str, commits: tuple[str, ...] = ()) -> list[str]:
    hits = guard_hits(
        GuardPolicy(), action, url=f"{ORIGIN}/cart", axtree=GETS_AXTREE,
        elements=GETS_ELEMENTS, origin=ORIGIN, commits=commits,
    )  # fmt: skip
    return [h.detail for h in hits if h.rule == "commit_get"]


def test_a_link_or_get_form_named_for_deleting_or_confirming_is_predicted_to_commit() -> None:
    assert get_hits("click('30')") == [
        "element 30 (link 'Remove') is a link to http://shop.test:8000/cart/remove?item=3 "
        "named with 'remove': predicted to commit"
    ]
    (confirm,) = get_hits("press('32', 'Enter')")
    assert "submits a GET form to http://shop.test:8000/unsub named with 'confirm'" in confirm
    assert get_hits("click('36')") != []  # a hidden character does not hide the word
    assert get_hits("click('31')") == [] and get_hits("click('33')") == []  # "Cancel" alone
    assert get_hits("click('35')") == []  # a POST form: form_submit's, not a GET
    assert get_hits("hover('30')") == []
    assert get_hits("click('30')", ()) == get_hits("click('30')")


def test_a_get_the_operator_names_is_predicted_whatever_its_name() -> None:
    # the link's href read as the browser reads it: backslashes are slashes
    (hit,) = get_hits("click('34')", (DROP,))
    assert hit.endswith(f"a GET that commits ({DROP})") and "cart/drop?item=3" in hit
    assert get_hits("click('34')") == []  # not named by the operator, no word: not predicted
    (goto,) = get_hits("goto('/cart/drop?item=9')", (DROP,))
    assert goto.startswith("goes to http://shop.test:8000/cart/drop?item=9")
    assert get_hits("goto('/cart/other')", (DROP,)) == []
    off = GuardPolicy().without("commit_get")
    hits = guard_hits(
        off, "click('30')", url=URL, axtree=GETS_AXTREE, elements=GETS_ELEMENTS, origin=ORIGIN,
        commits=(DROP,),
    )  # fmt: skip
    assert hits == []


# -- issue 41: the hostile probe's classes ----------------------------------------------------


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://evil.test\\@shop.test/", "http://evil.test"),  # a backslash is a slash
        ("http://evil.test\\\\shop.test/", "http://evil.test"),
        ("http:\\\\evil.test/", "http://evil.test"),
        ("http://shop.test@evil.test/", "http://evil.test"),  # userinfo dropped
        (" \t\x01http://EVIL.test:80/\n", "http://evil.test"),  # C0 and spaces stripped
        ("ht\ttp://ev\nil.test/", "http://evil.test"),  # tabs and newlines removed
        ("https://b\u00fccher.test:443/", "https://xn--bcher-kva.test"),  # IDNA, default port
        ("http://0x7f.1/", "http://127.0.0.1"),  # IPv4 in hex
        ("file:///tmp/miniwob/click-test.html", "file://"),
        ("FILE://host/share/x.html", "file://"),
        ("about:blank", None),
        ("data:text/html,hi", None),
        ("http://a b/", None),  # no URL: None
    ],
)
def test_origins_are_the_browsers(url: str, origin: str | None) -> None:
    assert url_origin(url) == origin


def test_a_goto_is_read_as_the_browser_reads_it() -> None:
    assert rules("goto('http://evil.test\\\\@shop.test:8000/')") == ["leaves_origin"]
    assert rules("goto('/\\\\evil.test/x')") == ["leaves_origin"]  # "/\" is "//": another host
    assert rules("goto('http://x@shop.test:8000/cart')") == []  # same origin, userinfo aside
    assert rules("goto('  http://shop.test:8000/setup.e\\txe')") == ["download"]
    links = {"14": ElementFacts(tag="a", href="http://evil.test\\@shop.test:8000/")}
    assert rules("click('14')", elements=links) == ["leaves_origin"]


def test_a_file_page_leaves_its_origin_for_the_web() -> None:
    page = "file:///tmp/miniwob/click-test.html"
    origin = session_origin(page)
    assert origin == "file://"
    assert rules("goto('http://evil.test/')", url=page, origin=origin) == ["leaves_origin"]
    assert rules("goto('other.html')", url=page, origin=origin) == []


@pytest.mark.parametrize(
    "name",
    [
        "P\u034fay",  # combining grapheme joiner
        "Pa\ufe0fy",  # variation selector
        "Pa\U000e0101y",  # supplementary variation selector
        "P\u00aday",  # soft hyphen
        "P\u180eay",  # Mongolian vowel separator
        "P\U000e0061ay",  # a tag character
        "\u0412U\u04ae",  # Cyrillic "В" and "Ү" (B and Y look-alikes)
        "\u0432uy",  # Cyrillic small "в": its capital is "B"'s look-alike
        "\u039frder",  # Greek capital omicron
        "\u03bfrder",  # Greek small omicron
        "\u0420\u0430\u0443",  # Cyrillic "Рау"
        "\uff30\uff21\uff39",  # full-width "ＰＡＹ"
        "0rder",  # a zero for an O
        "Subm1t",
        "SUBMlT",
        "Subrnit",  # "rn" for "m"
        "Sign\nup",  # a newline is a space
    ],
)
def test_a_hidden_or_look_alike_word_still_matches(name: str) -> None:
    tree = f"RootWebArea 'x', focused\n\t[30] button {name!r}"
    assert rules("click('30')", axtree=tree, elements={}) == ["name_match"]


@pytest.mark.parametrize("name", ["Repayment", "Payload", "Orders", "Sign in", "Subway"])
def test_look_alike_folding_keeps_whole_words(name: str) -> None:
    tree = f"RootWebArea 'x', focused\n\t[30] button {name!r}"
    assert rules("click('30')", axtree=tree, elements={}) == []


def test_every_call_of_a_multi_action_string_is_judged() -> None:
    assert rules("fill('11', 'Ada')\nclick('12')") == ["name_match", "form_submit"]
    assert rules("fill('11', 'Ada'); click('14')") == ["leaves_origin"]
    assert rules("click('14')\nclick('15')\ngoto('/a.zip')") == ["leaves_origin", "download"]
    assert rules("for _ in range(1):\n    click('12')", GuardPolicy()) == ["form_submit"]
    assert rules("x = click('25')") == ["leaves_origin"]
    assert rules("fill('11', 'Ada')\nhover('12')") == []


BOXES = {
    "12": [100.0, 200.0, 80.0, 30.0],
    "14": [0.0, 0.0, 800.0, 600.0],  # a link over the page, under the button
    "13": [300.0, 200.0, 80.0, 30.0],
}


@pytest.mark.parametrize(
    "action",
    [
        "mouse_click(120, 210)",
        "mouse_dblclick(x=179.5, y=229)",
        "mouse_down(100, 200)",
        "mouse_up(150, 215, button='left')",
        "mouse_drag_and_drop(900, 900, 120, 210)",
    ],
)
def test_a_coordinate_action_acts_on_the_innermost_box(action: str) -> None:
    assert rules(action, GuardPolicy(), boxes=BOXES) == ["form_submit"]


def test_a_coordinate_action_outside_the_button_meets_what_is_there() -> None:
    assert rules("mouse_click(320, 210)", boxes=BOXES) == []  # 13: a GET form
    assert rules("mouse_click(10, 10)", boxes=BOXES) == ["leaves_origin"]
    assert rules("mouse_move(120, 210)", boxes=BOXES) == []
    hits = guard_hits(
        GuardPolicy(),
        "mouse_click(120, 210)",
        url=URL,
        axtree=AXTREE,
        elements=ELEMENTS,
        origin=ORIGIN,
        boxes=BOXES,
    )
    assert hits[0].detail.startswith("element 12 (button 'Place order') at (120, 210) submits")


def test_a_coordinate_action_without_boxes_says_its_target_is_unknown() -> None:
    assert rules("mouse_click(120, 210)") == []
    assert coordinate_notes("mouse_click(120, 210)", None) == [
        "mouse_click at (120, 210): target unknown (no element boxes were sent)"
    ]
    assert coordinate_notes("mouse_click(9000, 9000)", BOXES) == [
        "mouse_click at (9000, 9000): target unknown (no element box holds it)"
    ]
    assert coordinate_notes("mouse_click(120, 210)", BOXES) == []
    assert coordinate_notes("click('12')", None) == []
