"""Sandbox origins and the plain words of a hold (sessions/modes.py)."""

from __future__ import annotations

import pytest
from webshepherd.daemon.sessions.modes import (
    commit_headline,
    in_sandbox,
    parse_sandbox,
    place,
    step_headline,
)
from webshepherd.protocol.commits import held_request
from webshepherd.protocol.common import ElementFacts, GuardHit


def test_sandbox_patterns_are_canonical_and_a_star_matches_any_port() -> None:
    assert parse_sandbox("HTTP://Shop.Test:80/") == "http://shop.test"
    assert parse_sandbox("http://127.0.0.1:*") == "http://127.0.0.1:*"
    patterns = (parse_sandbox("http://127.0.0.1:*"), parse_sandbox("https://a.test:8443"))
    assert in_sandbox("http://127.0.0.1:5000", patterns)
    assert in_sandbox("http://127.0.0.1", patterns)
    assert in_sandbox("https://a.test:8443", patterns)
    assert not in_sandbox("https://a.test", patterns)  # another port
    assert not in_sandbox("http://127.0.0.10:5000", patterns)  # another host
    assert not in_sandbox("https://127.0.0.1:5000", patterns)  # another scheme
    assert not in_sandbox(None, patterns)


@pytest.mark.parametrize(
    "bad", ["shop.test", "ftp://a.test", "http://a.test/x", "http://u@a.test", "http://a:1:*"]
)
def test_a_bad_sandbox_origin_says_what_is_wrong(bad: str) -> None:
    with pytest.raises(ValueError, match="sandbox origin"):
        parse_sandbox(bad)


def test_headlines_name_what_would_be_sent_hosts_as_punycode() -> None:
    post = held_request("post", "https://shop.test/orders?x=1", "write")
    assert commit_headline(post) == "Waiting for you: this sends a POST to shop.test/orders"
    away = held_request("GET", "https://pаypal.test/login", "navigation", top_level=True)
    assert commit_headline(away) == (
        "Waiting for you: this opens another site: xn--pypal-4ve.test/login"
    )
    down = held_request("GET", "http://127.0.0.1:8000/f/setup.exe", "download")
    assert commit_headline(down) == "Waiting for you: this downloads 127.0.0.1:8000/f/setup.exe"
    assert place("not a url") == "not a url"


def test_a_held_steps_headline_reads_the_rule_or_the_reward() -> None:
    form = [GuardHit(rule="form_submit", detail="element 4 submits a POST form")]
    facts = ElementFacts(tag="button", submits=True, form_method="post")
    assert step_headline(
        "guarded", form, reward=0.9, threshold=0.3, previous=None, facts=facts,
        destination="http://shop.test/orders",
    ) == "Waiting for you: this submits a POST form to shop.test/orders"  # fmt: skip
    low = step_headline("below_threshold", [], reward=0.12, threshold=0.3, previous=None)
    assert low == "Waiting for you: the judge's reward 0.12 is below 0.3"
    drop = step_headline("reward_drop", [], reward=0.4, threshold=0.3, previous=0.8)
    assert drop == "Waiting for you: the judge's reward fell from 0.80 to 0.40"
    asked = step_headline("always", [], reward=None, threshold=0.3, previous=None)
    assert asked == "Waiting for you: the agent asked for your approval (reward none parsed)"
