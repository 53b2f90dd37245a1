"""Replays of a recorded MiniWoB++ run (real envs, a real daemon with the tiny judge): the
recording knows how to reset its env, a replay reaches the recorded pages and outcome, a page
that differs is reported as drift, a write to an origin outside the sandbox is refused (and
one inside it let go), and a session that cannot be reset is refused in one sentence. The
same on the bundled shop's trap as a BrowserGym task (a real shop, real writes): the shop's
writes refused and counted unless its origin is a sandbox origin, a replay on another shop
drifts, and blame proves the trap's step."""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.integrations.replay import CannotReset, Replayer, load, stop_mode
from webshepherd.protocol.client.sync import Client
from webshepherd.protocol.common import HeldRequest

from tests.fixtures import shop_agent
from tests.fixtures.miniwob_agent import pages_url, record_faulted
from tests.integrations.conftest import Daemon, daemon_process

pytest.importorskip("browsergym.miniwob")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, str]]:
    """enter-text, seed 1: the right text filled, then a wrong one over it (step 2), then
    Submit: the env ends the episode lost."""
    os.environ["MINIWOB_URL"] = pages_url()
    with daemon_process(tmp_path_factory.mktemp("replay")) as daemon:
        sid, won, _ = record_faulted(
            daemon.url, daemon.token, daemon.data_dir, "enter-text", 1, fault_at=1
        )
        assert won is False
        yield daemon, sid


@pytest.mark.timeout(600)
def test_a_replay_reaches_the_recorded_pages_and_outcome_and_a_differing_page_drifts(
    recorded: tuple[Daemon, str],
) -> None:
    daemon, sid = recorded
    rec = load(sid, daemon.data_dir)
    assert (rec.environment.task, rec.environment.seed) == ("browsergym/miniwob.enter-text", 1)
    assert rec.outcome == "failure" and len(rec.steps) == 3
    assert rec.actions[1] == "fill('14', 'wrong')"
    with Replayer(rec) as replayer:
        whole = replayer.run(3, None, None)
        got = (whole.terminated, whole.won, whole.drift, whole.refused)
        assert got == (True, False, [], 0), whole.as_dict()
        fixed = replayer.run(1, rec.steps[1].candidates[0][0], None)  # Submit, by the judge
        assert fixed.won and fixed.drift == []
        # a recording whose page at step 2 is not the one the env shows: reported as drift
        # (another seed would not do: enter-text's pages do not show the text to enter)
        page = rec.steps[1].page.replace("textbox", "searchbox")
        steps = [rec.steps[0], dataclasses.replace(rec.steps[1], page=page), rec.steps[2]]
        replayer.recorded = dataclasses.replace(rec, steps=steps)
        moved = replayer.run(2, None, None)
        assert [d.step for d in moved.drift] == [1]
        assert 0.5 < moved.drift[0].similarity < 1
        assert replayer.replays == 3


@pytest.mark.timeout(600)
def test_a_replay_refuses_a_write_outside_the_sandbox_and_lets_one_inside_go(
    recorded: tuple[Daemon, str],
) -> None:
    daemon, sid = recorded
    rec = load(sid, daemon.data_dir)
    with ShopServer() as shop, Replayer(rec) as replayer:
        away = replayer.run(1, f"goto('{shop.url}')", None)  # leaves the file:// page
        assert away.refused == 1 and not away.won
        replayer.sandbox = (shop.url,)
        inside = replayer.run(1, f"goto('{shop.url}')", None)
        assert inside.refused == 0
        assert replayer.refused == 1
    post = HeldRequest(method="POST", url="https://shop.example/cart", kind="write")
    decided = stop_mode("s", ["https://shop.example"])(post)
    assert decided.decision.status == "approved" and decided.flagged
    refused = stop_mode("s")(post).decision
    assert (refused.status, refused.decider, refused.mode) == ("rejected", "mode", "stop")


def test_a_session_that_cannot_be_reset_is_refused_in_one_sentence(
    recorded: tuple[Daemon, str],
) -> None:
    daemon, _ = recorded
    with Client(daemon.url, daemon.token) as client:
        plain = client.start_session("no environment")
        plain.end()
        unseeded = client.start_session(
            "no seed", environment={"task": "browsergym/miniwob.enter-text"}
        )
        unseeded.end()
    with pytest.raises(CannotReset, match=r"^this session's environment cannot be reset: .*one"):
        load(plain.session_id, daemon.data_dir)
    with pytest.raises(CannotReset, match="without a seed"):
        load(unseeded.session_id, daemon.data_dir)
    with pytest.raises(Exception, match="no session nope"):
        load("nope", Path(daemon.data_dir))


@pytest.fixture(scope="module")
def trap(recorded: tuple[Daemon, str]) -> tuple[Daemon, str, str]:
    """The shop agent on the trap shop (a BrowserGym task served at a free port): it searches,
    falls into the trap (injected: it opens the cheapest listed, the sold-out decoy, step 3)
    and gives up there, lost."""
    daemon, _ = recorded
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    shop = f"http://127.0.0.1:{port}/"
    os.environ["WEBSHEPHERD_SHOP_URL"] = shop
    sid, won = shop_agent.record(
        daemon.url, daemon.token, daemon.data_dir, "browsergym/webshepherd.shop-trap",
        shop_agent.TRAP_PAGE,
    )  # fmt: skip
    assert won is False
    return daemon, sid, shop


@pytest.mark.timeout(600)
def test_a_shop_replay_refuses_the_shops_writes_unless_sandboxed_and_drifts_on_another_shop(
    trap: tuple[Daemon, str, str],
) -> None:
    import gymnasium as gym

    daemon, sid, shop = trap
    rec = load(sid, daemon.data_dir)
    env = rec.environment
    assert (env.task, env.seed, rec.outcome) == ("browsergym/webshepherd.shop-trap", 0, "failure")
    k = shop_agent.decoy_step(rec)
    decoy, weighed = rec.steps[k].action, rec.steps[k].candidates
    other = next(a for a, _ in weighed if a != decoy)  # the cheapest that can be ordered
    with Replayer(rec) as replayer:
        held = replayer.run(k, other, shop_agent.make)  # Add to cart: a POST to the shop
        assert held.refused >= 1 and not held.won and held.drift == [], held.as_dict()
        replayer.sandbox = (shop,)
        bought = replayer.run(k, other, shop_agent.make)
        assert (bought.won, bought.refused, bought.drift) == (True, 0, []), bought.as_dict()
        assert replayer.refused == held.refused
    # the same recording replayed on the original shop (no decoy): its results page drifts
    with Replayer(rec, env=gym.make("browsergym/webshepherd.shop", headless=True)) as moved:
        drifted = moved.run(k + 1, None, None)
    assert [d.step for d in drifted.drift][:1] == [k], drifted.as_dict()
    assert 0.5 < drifted.drift[0].similarity < 1


@pytest.mark.timeout(600)
def test_blame_proves_the_trap_shops_step_with_the_shop_as_the_sandbox(
    trap: tuple[Daemon, str, str],
) -> None:
    from webshepherd.integrations.blame import blame

    daemon, sid, shop = trap
    got = blame(sid, shop_agent.make, data_dir=daemon.data_dir, sandbox=[shop])
    k = shop_agent.decoy_step(load(sid, daemon.data_dir))
    assert (got.first_bad_step, got.proven, got.reproduced) == (k, True, True), got.as_dict()
    assert got.refused_writes == 0 and got.replays <= 2 * got.budget + 1
