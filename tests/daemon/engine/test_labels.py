"""Whole-token label positions and Eq. 2 on crafted token streams."""

from __future__ import annotations

import pytest
from webshepherd.daemon.engine.backends.base import IN_PROGRESS, NO, YES, GeneratedToken, Generation
from webshepherd.daemon.engine.labels import (
    LABEL_VARIANTS,
    extract_labels,
    sample_reward,
    score_candidate,
)
from webshepherd.daemon.engine.types import LabelProbs

# Groups as a byte-level vocabulary would give them: the piece's WHOLE entry decides.
_GROUP = {w: g for g, ws in LABEL_VARIANTS.items() for w in ws}


def _toks(*pieces: str, mass: tuple[float, float, float] = (0.6, 0.3, 0.1)) -> list[GeneratedToken]:
    out = []
    for p in pieces:
        entry = p.replace(" ", "Ġ").replace("\n", "Ċ")
        out.append(GeneratedToken(piece=p, group=_GROUP.get(entry), mass=mass))
    return out


def _stream() -> list[GeneratedToken]:
    return [
        *_toks(
            "The",
            " agent",
            " did",
            " Not",
            " finish",
            ".",
            " Yes",
            "\n\n",
            "<",
            "answer",
            ">",
            "\n",
        ),
        *_toks(
            "Checklist", " 1", ":", " Yes", "\n", mass=(0.5, 0.25, 0.0)
        ),  # normalized 2/3, 1/3, 0
        *_toks("Checklist", " 2", ":", " In", " Progress", " In", "\n", mass=(0.1, 0.8, 0.1)),
        *_toks("Not", "e", ":", " In", "complete", " data", "\n"),
        *_toks("**", "Checklist", " 3", "**", ":", " No", " None", "\n", mass=(0.0, 0.0, 2.0)),
        *_toks("Un", "known", " Not", "able", "\n"),
        *_toks("- ", "Checklist", " 4", ":", " Not", " satisfied", "\n", mass=(0.2, 0.2, 0.6)),
        *_toks("</", "answer", ">", "\n", "Checklist", " 5", ":", " Yes"),
    ]


def test_traps_are_skipped_and_each_label_counted_once() -> None:
    labels = extract_labels(_stream())
    assert [i for i, _ in labels] == [1, 2, 3, 4]
    (_, p1), (_, p2), (_, p3), (_, p4) = labels
    assert p1 == pytest.approx(LabelProbs(yes=2 / 3, in_progress=1 / 3, no=0.0))
    assert p2.in_progress == pytest.approx(0.8)
    assert p3 == LabelProbs(yes=0.0, in_progress=0.0, no=1.0)
    assert p4.no == pytest.approx(0.6)


def test_in_followed_by_progress_is_a_label_but_in_alone_mid_word_is_not() -> None:
    assert len(extract_labels(_toks("<answer>", "\n", "In", "Progress", "\n"))) == 1
    assert extract_labels(_toks("<answer>", "\n", "In", "complete", "\n")) == []
    assert extract_labels(_toks("<answer>", "\n", "In", "put", " Yes")) != []  # Yes counts, not In


def test_no_region_no_labels_and_checklist_evaluation_marker() -> None:
    assert extract_labels(_toks("Checklist", " 1", ":", " Yes", "\n")) == []
    labels = extract_labels(_toks("CHECKLIST", " EVALUATION", ":", "\n", "Yes", "\n", "No", "\n"))
    assert [i for i, _ in labels] == [None, None]
    assert [round(p.reward, 3) for _, p in labels] == [0.75, 0.75]


def test_eq2_on_known_distributions() -> None:
    labels = [
        (1, LabelProbs(1.0, 0.0, 0.0)),
        (2, LabelProbs(0.0, 1.0, 0.0)),
        (3, LabelProbs(0.0, 0.0, 1.0)),
    ]
    assert sample_reward(labels) == pytest.approx(0.5)
    assert sample_reward([(1, LabelProbs(0.2, 0.6, 0.2))]) == pytest.approx(0.5)
    assert sample_reward([]) is None


def _gen(pieces: list[GeneratedToken], finish: str = "stop") -> Generation:
    return Generation(
        text="".join(t.piece for t in pieces), tokens=tuple(pieces), finish_reason=finish
    )


def test_candidate_mean_over_parsed_samples_only() -> None:
    yes = _toks(
        "Good",
        " step",
        ".",
        "\n\n",
        "<answer>",
        "\n",
        "Checklist",
        " 1",
        ":",
        " Yes",
        "\n",
        "Checklist",
        " 2",
        ":",
        " No",
        "\n",
        "</answer>",
        mass=(1.0, 0.0, 0.0),
    )
    half = _toks(
        "Meh",
        ".",
        "\n",
        "<answer>",
        "\n",
        "Checklist",
        " 1",
        ":",
        " In",
        " Progress",
        "\n",
        "</answer>",
        mass=(0.0, 1.0, 0.0),
    )
    junk = _toks("no", " answer", " here")
    score = score_candidate(0, [_gen(yes), _gen(junk, "length"), _gen(half)])
    assert score.parsed_samples == 2
    assert score.reward == pytest.approx((1.0 + 0.5) / 2)  # sample 1: both items read P(Yes)=1
    assert score.feedback == "Good step."
    assert [i.index for i in score.items] == [1, 2]
    assert score.items[0].probs.yes == pytest.approx(0.5)  # mean of 1.0 and 0.0
    assert score.samples[1].reward is None


def test_nothing_parses_gives_none_and_an_explanation() -> None:
    score = score_candidate(3, [_gen(_toks("just", " text")), _gen(_toks("more"), "length")])
    assert score.reward is None and score.parsed_samples == 0 and score.items == ()
    assert "no label found in 2 samples" in score.feedback and "<answer>" in score.feedback
    empty = score_candidate(0, [_gen(_toks("<answer>", "\n", "maybe", "\n", "</answer>"))])
    assert empty.reward is None and "held no" in empty.feedback


def test_variant_lists_follow_the_paper() -> None:
    assert len(LABEL_VARIANTS[YES]) == 18 and len(LABEL_VARIANTS[NO]) == 21
    assert len(LABEL_VARIANTS[IN_PROGRESS]) == 15
    assert {"ĠYes", "ĊDone", "Correct"} <= set(LABEL_VARIANTS[YES])
    assert {"ĠNot", "Un", "ĊNope"} <= set(LABEL_VARIANTS[NO])
    assert {"ĠIn", "InProgress", "ĊPartial"} <= set(LABEL_VARIANTS[IN_PROGRESS])


def test_labels_of_items_not_on_the_checklist_do_not_count() -> None:
    on = _toks("<answer>", "\n", "Checklist", " 1", ":", " Yes", "\n", mass=(1.0, 0.0, 0.0))
    off = _toks("Checklist", " 7", ":", " No", "\n", "</answer>", mass=(0.0, 0.0, 1.0))
    score = score_candidate(0, [_gen([*on, *off])], checklist_items={1, 2})
    assert score.reward == pytest.approx(1.0)
    assert [i.index for i in score.items] == [1]
    assert score_candidate(0, [_gen([*on, *off])]).reward == pytest.approx(0.5)  # all counted
    only_off = _toks("<answer>", "\n", *[t.piece for t in off])
    none = score_candidate(0, [_gen(only_off)], checklist_items={1, 2})
    assert none.reward is None and "not on the checklist" in none.feedback


def _line(*pieces: str, mass: tuple[float, float, float]) -> list[GeneratedToken]:
    return _toks(*pieces, "\n", mass=mass)


def test_a_title_echoed_on_the_label_line_does_not_count_as_the_label() -> None:
    """Judges often repeat the item's title before its label. On a ``Checklist N:`` line the
    label is the last label word; ``In`` is a label only as the start of ``In Progress``."""
    stream = [
        *_toks("The", " agent", " logged", " in", ".", "\n", "<answer>", "\n", mass=(0, 0, 0)),
        *_line("Checklist", " 1", ":", " Log", " In", " -", " Yes", mass=(0.9, 0.05, 0.05)),
        *_toks("Checklist", " 2", ":", " Mark", " as", mass=(0, 0, 0)),
        *_toks(" Done", mass=(1.0, 0.0, 0.0)),  # a Yes word inside the echoed title
        *_line(" -", " No", mass=(0.1, 0.1, 0.8)),
        *_line(
            "Checklist",
            " 3",
            ":",
            " Not",
            " a",
            " trap",
            ":",
            " In",
            " Progress",
            mass=(0.2, 0.6, 0.2),
        ),
        *_line("Checklist", " 4", ":", " Sign", " In", mass=(0.3, 0.3, 0.4)),
        # the prompt's own label first, then a synonym in an explanation: the label is Yes
        *_toks("Checklist", " 5", ":", " Yes", mass=(0.7, 0.2, 0.1)),
        *_line(" -", " Not", " yet", " paid", mass=(0.0, 0.0, 1.0)),
        *_toks("</answer>", mass=(0, 0, 0)),
    ]
    labels = extract_labels(stream)
    # item 4 echoes a title with no label after it: no label position on that line
    assert [i for i, _ in labels] == [1, 2, 3, 5]
    # Yes, No, In Progress, Yes
    assert [round(p.reward, 3) for _, p in labels] == [0.925, 0.15, 0.5, 0.8]
    score = score_candidate(0, [_gen(stream)], checklist_items={1, 2, 3, 4, 5})
    assert score.reward == pytest.approx((0.925 + 0.15 + 0.5 + 0.8) / 4)


def _answer(mass: tuple[float, float, float]) -> list[GeneratedToken]:
    return _toks(
        "Ok",
        ".",
        "\n",
        "<answer>",
        "\n",
        "Checklist",
        " 1",
        ":",
        " Yes",
        "\n",
        "</answer>",
        mass=mass,
    )


def test_unparsed_rule_zero_averages_unparsed_samples_in_as_the_authors() -> None:
    gens = [
        _gen(_answer((1.0, 0.0, 0.0))),  # reward 1
        _gen(_toks("no", " answer")),  # no <answer> block
        _gen(_answer((1.0, 0.0, 0.0))[:-3], "length"),  # labels written, then cut
    ]
    skip = score_candidate(0, gens)
    zero = score_candidate(0, gens, unparsed="zero")
    assert skip.reward == pytest.approx(1.0) and zero.reward == pytest.approx(1 / 3)
    for s in (skip, zero):
        assert s.parsed_samples == 1 and s.unparsed_samples == 2
        assert [x.unparsed for x in s.samples] == [None, "no_answer", "cut_by_context"]
        assert s.items[0].probs.yes == pytest.approx(1.0)  # items: parsed samples only
    capped = score_candidate(0, gens, cut_by="limit")
    assert capped.samples[2].unparsed == "cut_by_limit"


def test_zero_rule_with_nothing_parsed_is_zero_and_says_why() -> None:
    gens = [_gen(_toks("<answer>", "\n", "Check", "list"), "length"), _gen(_toks("x"), "aborted")]
    zero = score_candidate(0, gens, unparsed="zero")
    assert zero.reward == 0.0 and zero.parsed_samples == 0 and zero.unparsed_samples == 2
    assert "cut by the model's context" in zero.feedback and "aborted" in zero.feedback
    assert score_candidate(0, gens).reward is None


def test_a_checklist_numbered_with_gaps_keeps_the_judges_count_of_labels() -> None:
    """Items 1 and 3: a judge that numbers its labels 1, 2 (its own count) keeps both, the
    second standing for item 3; the authors count every label after the marker."""
    stream = [
        *_toks("<answer>", "\n"),
        *_toks("Checklist", " 1", ":", " Yes", "\n", mass=(1.0, 0.0, 0.0)),
        *_toks("Checklist", " 2", ":", " No", "\n", mass=(0.0, 0.0, 1.0)),
        *_toks("</answer>"),
    ]
    score = score_candidate(0, [_gen(stream)], checklist_items={1, 3})
    assert score.reward == pytest.approx(0.5)
    assert [i.index for i in score.items] == [1, 3]
    assert score.items[1].probs.no == pytest.approx(1.0)
    # numbered as the checklist: each label its item; a number beyond the items still drops
    same = [
        *_toks("<answer>", "\n"),
        *_toks("Checklist", " 3", ":", " In", " Progress", "\n", mass=(0.0, 1.0, 0.0)),
        *_toks("Checklist", " 9", ":", " No", "\n", mass=(0.0, 0.0, 1.0)),
    ]
    kept = score_candidate(0, [_gen(same)], checklist_items={1, 3})
    assert kept.reward == pytest.approx(0.5) and [i.index for i in kept.items] == [3]
