"""The ``baseline-likert`` judge's output into rewards, as the authors read it (sans I/O).

Their ``likert_scale`` prompt asks for ``REASON: …`` then ``SCORE: [1-5]``; their
``get_score`` takes the first integer on the line after the first ``SCORE:`` (in the whole
text when ``SCORE`` appears without the colon) and scores 0 when there is none. A sample's
reward here is that integer / 5, so a 1-5 score lies in [0.2, 1] like the checklist judges'
rewards and every ranking (MRR, accuracies) is the authors'. A sample without a score is
unparsed: left out (``skip``) or 0 (``zero``, the authors' rule).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from webshepherd.daemon.engine.backends.base import Generation
from webshepherd.daemon.engine.labels import UnparsedRule
from webshepherd.daemon.engine.types import CandidateScore, SampleScore
from webshepherd.protocol.common import UnparsedReason

SCALE = 5  # the prompt's 1-5 scale: a reward is the score / SCALE
_INTEGER = re.compile(r"-?\d+")


def likert_score(text: str) -> int | None:
    """The integer the authors read from one response, or None where they read none."""
    if "SCORE" not in text:
        return None
    line = text.split("SCORE:")[1].split("\n")[0] if "SCORE:" in text else text
    m = _INTEGER.search(line)
    return int(m.group()) if m else None


def _unparsed(g: Generation, score: int | None, cut_by: str) -> UnparsedReason | None:
    if g.finish_reason == "aborted":
        return "aborted"
    if score is not None:
        return None
    if g.finish_reason == "length":
        return "cut_by_context" if cut_by == "context" else "cut_by_limit"
    return "no_label" if "SCORE" in g.text else "no_answer"


def feedback(text: str) -> str:
    """The judge's reason: the text before ``SCORE``, without its ``REASON:`` head."""
    head = text.split("SCORE")[0].strip()
    return head.removeprefix("REASON:").strip()


def score_likert(
    index: int,
    gens: Sequence[Generation],
    *,
    unparsed: UnparsedRule = "skip",
    cut_by: str = "context",
) -> CandidateScore:
    """One candidate's samples: mean of score / 5 over parsed samples (``skip``) or over all,
    an unparsed one as 0 (``zero``). A score the judge gave before its output was cut counts."""
    samples: list[SampleScore] = []
    for g in gens:
        score = likert_score(g.text)
        why = _unparsed(g, score, cut_by)
        got = score / SCALE if why is None and score is not None else None
        samples.append(SampleScore(text=g.text, items=(), reward=got, unparsed=why))
    parsed = [s for s in samples if s.reward is not None]
    if unparsed == "zero" and samples:
        reward: float | None = sum(s.reward or 0.0 for s in samples) / len(samples)
    elif parsed:
        reward = sum(s.reward for s in parsed if s.reward is not None) / len(parsed)
    else:
        reward = None
    if parsed:
        said = feedback(parsed[0].text)
    else:
        n = len(samples)
        said = f"no SCORE line in {n} sample{'s' if n != 1 else ''} of the 1-5 judge"
    return CandidateScore(
        index=index,
        reward=reward,
        items=(),
        feedback=said,
        samples=tuple(samples),
        parsed_samples=len(parsed),
        label_source="full",
        unparsed_samples=len(samples) - len(parsed),
    )
