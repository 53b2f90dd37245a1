"""Generated episodes: every candidate labelled by the shop, the good one ahead of the rest."""

from __future__ import annotations

import random

from webshepherd.daemon.demo.episodes import episode, rows
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import training_variant
from webshepherd.daemon.engine.checklist_parse import parse_checklist
from webshepherd.daemon.offline.training.rows import example_of

SCORE = {"yes": 1.0, "in_progress": 0.5, "no": 0.0}


def test_every_good_candidate_outscores_the_bad_ones_of_its_step() -> None:
    """Except the click on a sold-out decoy listed as the cheapest: the agent cannot see
    from the results that it is sold out, the shop's labels can."""
    shop = training_variant(4)
    decoy = next(p["name"] for p in shop.products if p.get("sold_out"))
    with ShopServer() as server:
        judged = list(episode(server, shop, random.Random(1), explore=0.3))
    steps: dict[int, list] = {}
    for j in judged:
        steps.setdefault(j.step, []).append(j)
    assert len(steps) >= 7
    fooled = 0
    for cands in steps.values():
        good = [sum(SCORE[x] for x in j.labels) for j in cands if j.proposal.good]
        bad = [sum(SCORE[x] for x in j.labels) for j in cands if not j.proposal.good]
        assert len(good) == 1 and bad
        if any(j.proposal.good and f"'{decoy}'" in j.proposal.thought for j in cands):
            fooled += 1
            assert good[0] < max(bad)  # the decoy: No for "open the cheapest"
        else:
            assert good[0] > max(bad)
    assert fooled >= 1


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
