"""What a paused request commits, its fields and its digest (protocol/commits.py)."""

from __future__ import annotations

import re

import pytest
from webshepherd.protocol.commits import (
    commit_kind,
    held_request,
    matching_commit,
    parse_commit_pattern,
    request_digest,
    request_fields,
    url_origin,
)


@pytest.mark.parametrize("method", ["POST", "put", "DELETE", "PATCH"])
def test_a_method_that_is_not_safe_writes(method: str) -> None:
    kind = commit_kind(method, "http://a.test/x", top_level_navigation=False, session_origin=None)
    assert kind == "write"


@pytest.mark.parametrize("method", ["GET", "head", "OPTIONS"])
def test_a_safe_method_on_the_session_origin_commits_nothing(method: str) -> None:
    kind = commit_kind(
        method, "http://a.test/x", top_level_navigation=True, session_origin="http://a.test"
    )
    assert kind is None


def test_only_a_top_level_navigation_to_another_origin_commits() -> None:
    other = "https://b.test/"
    assert commit_kind("GET", other, top_level_navigation=True, session_origin="http://a.test") == (
        "navigation"
    )
    # a frame or a fetch reading another origin is not the page leaving
    assert (
        commit_kind("GET", other, top_level_navigation=False, session_origin="http://a.test")
        is None
    )


def test_a_file_page_leaving_for_http_commits_and_file_pages_share_one_origin() -> None:
    assert url_origin("file:///tmp/miniwob/click-button.html") == "file://"
    kind = commit_kind(
        "GET", "http://127.0.0.1:9/x", top_level_navigation=True, session_origin="file://"
    )
    assert kind == "navigation"
    same = commit_kind(
        "GET", "file:///tmp/other.html", top_level_navigation=True, session_origin="file://"
    )
    assert same is None


def test_a_download_commits_whatever_its_method() -> None:
    kind = commit_kind(
        "GET",
        "http://a.test/f",
        top_level_navigation=True,
        session_origin="http://a.test",
        download=True,
    )
    assert kind == "download"


def test_origins_drop_default_ports_and_keep_others() -> None:
    assert url_origin("HTTP://Shop.Test:80/a") == "http://shop.test"
    assert url_origin("https://shop.test:8443/a") == "https://shop.test:8443"
    assert url_origin("data:text/html,hi") is None


def test_form_json_and_multipart_fields_are_read_and_cut() -> None:
    fields, size = request_fields(b"q=usb&qty=2", "application/x-www-form-urlencoded")
    assert [(f.name, f.value) for f in fields] == [("q", "usb"), ("qty", "2")] and size == 11
    fields, _ = request_fields(b'{"card": "4111", "n": 3}', "application/json")
    assert [(f.name, f.value) for f in fields] == [("card", "4111"), ("n", "3")]
    body = (
        b'--XY\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n'
        b'--XY\r\nContent-Disposition: form-data; name="f"; filename="a.txt"\r\n\r\n'
        b"zz\r\n--XY--\r\n"
    )
    fields, _ = request_fields(body, "multipart/form-data; boundary=XY")
    assert [(f.name, f.value) for f in fields] == [("note", "hello"), ("f", "(file a.txt)")]
    long, _ = request_fields(b"a=" + b"x" * 2000, "application/x-www-form-urlencoded")
    assert len(long[0].value) == 512 and long[0].value.endswith("…")


def test_the_digest_binds_the_exact_request() -> None:
    one = held_request(
        "post",
        "http://a.test/orders",
        "write",
        body=b"item=1",
        content_type="application/x-www-form-urlencoded",
    )
    same = held_request(
        "POST",
        "http://a.test/orders",
        "write",
        body=b"item=1",
        content_type="application/x-www-form-urlencoded",
        trigger="click('3')",
    )
    other = held_request(
        "POST",
        "http://a.test/orders",
        "write",
        body=b"item=2",
        content_type="application/x-www-form-urlencoded",
    )
    assert len(request_digest(one)) == 64
    assert request_digest(one) == request_digest(same)  # who caused it is not what is sent
    assert request_digest(one) != request_digest(other)


def _vectors() -> dict:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "protocol" / "vectors" / "commits.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_shared_vectors_are_what_this_module_gives() -> None:
    """protocol/vectors/commits.json, which the extension's gate is held to
    (extension/test/commit-hold.test.ts): origins, kinds, fields, held requests and digests."""
    import base64

    from webshepherd.protocol.common import HeldRequest

    v = _vectors()
    for o in v["origins"]:
        assert url_origin(o["url"]) == o["origin"], o
    for k in v["kinds"]:
        got = commit_kind(
            k["method"],
            k["url"],
            top_level_navigation=k["top_level_navigation"],
            session_origin=k["session_origin"],
            download=k["download"],
        )
        assert got == k["kind"], k
    for f in v["fields"]:
        fields, size = request_fields(base64.b64decode(f["body_b64"]), f["content_type"])
        assert [x.model_dump() for x in fields] == f["fields"] and size == f["body_bytes"], f
    assert len(v["held"]) >= 3
    table = v["patterns"]
    assert len(table["cases"]) >= 10
    for c in table["cases"]:
        matched = matching_commit(c["method"], c["url"], table["patterns"])
        assert (matched is not None) == c["matches"], c
        kind = commit_kind(
            c["method"], c["url"], top_level_navigation=False, session_origin=None,
            commits=table["patterns"],
        )  # fmt: skip
        assert kind == c["kind"], c
    for h in v["held"]:
        i = dict(h["input"])
        body = i.pop("body_b64")
        req = held_request(body=None if body is None else base64.b64decode(body), **i)
        assert req.model_dump(mode="json") == h["request"]
        assert request_digest(HeldRequest.model_validate(h["request"])) == h["digest"]


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("GET https://shop.example/cart/remove*", "GET https://shop.example/cart/remove*"),
        ("get HTTPS://Shop.Example:443/Cart/remove*", "GET https://shop.example/Cart/remove*"),
        ("  GET   https://shop.example  ", "GET https://shop.example/"),
        ("HEAD http://127.0.0.1:8000/x", "HEAD http://127.0.0.1:8000/x"),
        ("GET https://bücher.example/del*", "GET https://xn--bcher-kva.example/del*"),
        ("GET https://*.shop.example/unsubscribe*", "GET https://*.shop.example/unsubscribe*"),
        ("OPTIONS https://a.test/*", "OPTIONS https://a.test/*"),
    ],
)
def test_an_operators_pattern_is_made_canonical_as_the_browser_sends_a_url(
    text: str, canonical: str
) -> None:
    assert parse_commit_pattern(text) == canonical


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "expected 'METHOD URL'"),
        ("https://shop.example/cart/remove*", "expected 'METHOD URL'"),
        ("GET https://a.test/x extra", "expected 'METHOD URL'"),
        ("POST https://shop.example/orders", "POST requests commit already"),
        ("DELETE https://shop.example/x", "DELETE requests commit already"),
        ("G=T https://shop.example/x", "is not a method"),
        ("GET shop.example/cart/remove*", "must start with http:// or https://"),
        ("GET ftp://shop.example/x", "must start with http:// or https://"),
        ("GET https:///x", "no host"),
        ("GET https://:80/x", "no host"),
        ("GET https://user@shop.example/x", "a user name"),
        ("GET https://shop.example:99999/x", "is not a host[:port]"),
        ("GET https://" + "a" * 3000, "longer than"),
    ],
)
def test_a_bad_pattern_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        parse_commit_pattern(text)


def test_only_the_named_method_and_url_commit_and_other_gets_do_not() -> None:
    pats = [parse_commit_pattern("GET https://shop.example/cart/remove*")]

    def kind(method: str, url: str) -> str | None:
        return commit_kind(
            method, url, top_level_navigation=False, session_origin=None, commits=pats
        )

    assert kind("GET", "https://shop.example/cart/remove?id=3") == "write"
    assert matching_commit("GET", "https://shop.example/cart/remove", pats) == pats[0]
    assert kind("GET", "https://shop.example/cart/view") is None  # other GETs: not held
    assert kind("HEAD", "https://shop.example/cart/remove?id=3") is None  # another method
    assert kind("GET", "https://evil.test/?u=https://shop.example/cart/remove") is None
    assert kind("POST", "https://shop.example/cart/view") == "write"  # writes as before
    no_pats = commit_kind(
        "GET", "https://shop.example/cart/remove", top_level_navigation=False, session_origin=None
    )
    assert no_pats is None
