"""Generated episodes: every candidate labelled by the shop, the good one ahead of the rest."""

from __future__ import annotations

import itertools
import random

from webshepherd.daemon.demo.episodes import episode, rows
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import training_variant
from webshepherd.daemon.engine.checklist_parse import parse_checklist
from webshepherd.daemon.offline.training.rows import example_of

SCORE = {"yes": 1.0, "in_progress": 0.5, "no": 0.0}


def _steps(index: int, seed: int, to_answer: bool = False) -> dict[int, list]:
    shop, rng = training_variant(index), random.Random(seed)
    with ShopServer() as server:
        judged = list(episode(server, shop, rng, explore=0.3, to_answer=to_answer))
    steps: dict[int, list] = {}
    for j in judged:
        steps.setdefault(j.step, []).append(j)
    return steps


def _scores(cands: list) -> tuple[float, float]:
    good = [sum(SCORE[x] for x in j.labels) for j in cands if j.proposal.good]
    bad = [sum(SCORE[x] for x in j.labels) for j in cands if not j.proposal.good]
    assert len(good) == 1 and bad
    return good[0], max(bad)


def test_every_good_candidate_outscores_the_bad_ones_of_its_step() -> None:
    """Going back from a wrong page advances nothing: there it ties with the rest; so does
    the answer on the confirmation page, where the task is done whatever runs."""
    steps = _steps(4, 1, to_answer=True)
    assert len(steps) >= 8
    ahead = 0
    for cands in steps.values():
        good, bad = _scores(cands)
        back = any(j.proposal.good and "back to the results" in j.proposal.thought for j in cands)
        done = all("/order/" in j.url for j in cands)
        assert good > bad or ((back or done) and good == bad)
        ahead += good > bad
    assert ahead >= 7


def test_an_episode_goes_on_to_the_answer_on_the_confirmation_page() -> None:
    assert not any("/order/" in j.url for c in _steps(4, 1).values() for j in c)  # by default
    steps = _steps(4, 1, to_answer=True)
    last = steps[max(steps)]
    assert all("/order/" in j.url for j in last)
    answer = next(j for j in last if j.proposal.good)
    assert answer.proposal.action.startswith("send_msg_to_user('Order VW-")
    assert all(j.labels == ("yes",) * 4 and j.done_before == (True,) * 4 for j in last)


def test_chromium_episodes_are_the_same_episodes_in_chromiums_tree() -> None:
    """One seed, the two renderings: the same pages, candidates and labels; the trees and
    bids are Chromium's (links with their URL, list markers, bids from <html> on)."""
    with ShopServer() as server:
        text = list(episode(server, training_variant(3), random.Random(2)))
        chromium = list(episode(server, training_variant(3), random.Random(2), chromium=True))
    assert [(j.step, j.url, j.labels, j.proposal.good) for j in text] == [
        (j.step, j.url, j.labels, j.proposal.good) for j in chromium
    ]
    assert all("ListMarker" not in j.axtree for j in text)
    home = chromium[0].axtree
    assert "ListMarker '•'" in home and "[6] banner ''" in home and ", url='http://" in home


def test_a_sold_out_decoy_fools_the_agent_not_the_labels() -> None:
    """A training shop whose cheapest listing is sold out: the agent opens it (it cannot tell
    from the results), the shop's labels say No, and the agent goes back for the target."""
    shop = training_variant(1)
    decoy = next(p["name"] for p in shop.products if p.get("sold_out"))
    steps = _steps(1, 0)
    fooled = [c for c in steps.values() if any(j.proposal.good and f"'{decoy}'" in
                                               j.proposal.thought for j in c)]  # fmt: skip
    assert fooled
    for cands in fooled:
        good, bad = _scores(cands)
        assert good <= bad
    on_decoy = [j for c in steps.values() for j in c if "/product/d1" in j.url]
    assert on_decoy and all(j.labels[1:] == ("no", "no", "no") for j in on_decoy)


def test_rows_are_the_served_prompts_with_targets_the_parsers_read() -> None:
    with ShopServer() as server:
        made = list(rows(server, training_variant(2), random.Random(0)))
        again = list(rows(server, training_variant(2), random.Random(0)))
    assert [r["conversations"] for r in made] == [r["conversations"] for r in again]
    first = example_of(made[0])
    assert "generating structured checklists" in first.messages[-1]["content"]
    assert next(it.title for it in parse_checklist(first.answer).items).startswith("Search for")
    judge = example_of(made[1])
    assert "## Agent's Response" in judge.messages[-1]["content"]
    assert judge.answer.rstrip().endswith("</answer>")
    assert judge.answer.count("Checklist ") >= 4


def test_rows_do_not_depend_on_the_port_the_shop_serves_on() -> None:
    """Two servers, two ephemeral ports: one seed gives the same rows, at a seeded address."""
    with ShopServer() as a, ShopServer() as b:
        assert a.url != b.url
        rows_a = list(rows(a, training_variant(2), random.Random(5)))
        rows_b = list(rows(b, training_variant(2), random.Random(5)))
    assert rows_a == rows_b
    text = repr(rows_a)
    assert "http://127.0.0.1:" in text and a.url not in text and b.url not in text


def test_dwells_stay_on_the_page_and_progress_nothing() -> None:
    """With ``dwell``, detours may stay on their page for a few in-place steps: the history
    grows (runs of scrolls and title clicks) while the page and the progress stay as they
    were, so a judge trained on them cannot read progress off the history's length."""
    shop = training_variant(4)
    runs, longest, in_place = 0, 0, 0
    with ShopServer() as server:
        for seed in range(6):
            judged = list(episode(server, shop, random.Random(seed), dwell=1.0, to_answer=True))
            steps: dict[int, list] = {}
            for j in judged:
                steps.setdefault(j.step, []).append(j)
            order, run = sorted(steps), 0
            for a, b in itertools.pairwise(order):
                before, after = steps[a][0], steps[b][0]
                ran = after.history[-1].action
                if (before.url, before.axtree) != (after.url, after.axtree):
                    runs, run = runs + (run > 1), 0
                    continue
                # an in-place step: nothing done, and where the ran action was judged, its
                # labels say so (Yes for what was done before, No for the rest)
                assert after.done_before == before.done_before
                kept = tuple("yes" if d else "no" for d in before.done_before)
                for j in steps[a]:
                    if j.proposal.action == ran:
                        assert j.labels == kept, (ran, j.labels)
                        in_place += 1
                run += 1
                longest = max(longest, run)
    assert runs >= 3 and longest >= 3 and in_place >= 5, (runs, longest, in_place)
