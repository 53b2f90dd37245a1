"""Label positions and Eq. 2, sans I/O: pure Python, no torch.

A label position is a generated token inside the judgement region (after
``<answer>`` or ``CHECKLIST EVALUATION:``, up to ``</answer>``) whose
vocabulary entry is one of the paper's label variants (Appendix C.2) and that
forms a whole word (``Incomplete`` split as ``In`` + ``complete`` is not a
label). At most one label counts per line.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from webshepherd.daemon.engine.backends.base import IN_PROGRESS, NO, YES, GeneratedToken, Generation
from webshepherd.daemon.engine.types import (
    CandidateScore,
    ItemScore,
    LabelProbs,
    LabelSource,
    SampleScore,
)

_WORDS: dict[int, tuple[str, ...]] = {
    YES: ("Yes", "yes", "YES", "Done", "Completed", "Correct"),
    NO: ("No", "NO", "Not", "None", "Nope", "Un", "Wrong"),
    IN_PROGRESS: ("In", "Pending", "Part", "Partial", "InProgress"),
}
# Byte-level BPE spelling of each variant: plain, leading space (Ġ), leading newline (Ċ).
LABEL_VARIANTS: dict[int, tuple[str, ...]] = {
    g: tuple(p + w for w in words for p in ("Ġ", "", "Ċ")) for g, words in _WORDS.items()
}
GROUP_NAMES = {YES: "Yes", IN_PROGRESS: "In Progress", NO: "No"}

_START_MARKERS = ("<answer>", "CHECKLIST EVALUATION:")
_END_MARKER = "</answer>"
_ITEM_LINE = re.compile(
    r"^[\s*\-#>]*checklist\s*(?:item\s*)?#?\s*(\d+)\s*\**\s*[:.)\-–]", re.IGNORECASE
)


def label_token_ids(tokenizer: Any) -> dict[int, int]:
    """Token id -> label group, for variants that are WHOLE entries of the vocabulary."""
    vocab: Mapping[str, int] = tokenizer.get_vocab()
    out: dict[int, int] = {}
    for group, variants in LABEL_VARIANTS.items():
        for v in variants:
            tid = vocab.get(v)
            if tid is not None:
                out[tid] = group
    return out


def _region(text: str) -> tuple[int, int] | None:
    hits = [(i, m) for m in _START_MARKERS if (i := text.find(m)) >= 0]
    if not hits:
        return None
    i, m = min(hits)
    start = i + len(m)
    end = text.find(_END_MARKER, start)
    return start, (len(text) if end < 0 else end)


def _normalize(mass: tuple[float, float, float], group: int) -> LabelProbs:
    total = sum(mass)
    if total <= 0:  # top-k backends may miss every variant: fall back to the sampled label
        probs = [1.0 if g == group else 0.0 for g in range(3)]
    else:
        probs = [m / total for m in mass]
    return LabelProbs(yes=probs[YES], in_progress=probs[IN_PROGRESS], no=probs[NO])


def _is_word(text: str, begin: int, end: int, word: str) -> bool:
    """Whether ``text[begin:end]`` (the stripped piece ``word``) is a whole word."""
    if begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] == "_"):
        return False
    if end >= len(text) or not (text[end].isalnum() or text[end] == "_"):
        return True
    if word == "In":  # "In Progress" / "InProgress" split as In + Progress
        m = re.match(r" ?Progress(?![\w])", text[end:])
        return m is not None
    return False


def extract_labels(tokens: Sequence[GeneratedToken]) -> list[tuple[int | None, LabelProbs]]:
    """Label positions of one generation: ``(item N from a "Checklist N:" line or None, probs)``."""
    text = "".join(t.piece for t in tokens)
    region = _region(text)
    if region is None:
        return []
    r_start, r_end = region
    out: list[tuple[int | None, LabelProbs]] = []
    seen_lines: set[int] = set()
    pos = 0
    for tok in tokens:
        start, pos = pos, pos + len(tok.piece)
        if tok.group is None or start < r_start or pos > r_end:
            continue
        word = tok.piece.lstrip()
        begin = pos - len(word)
        if not word or not _is_word(text, begin, pos, word):
            continue
        line_start = text.rfind("\n", 0, begin) + 1
        if line_start in seen_lines:
            continue
        seen_lines.add(line_start)
        m = _ITEM_LINE.match(text[line_start:begin])
        out.append((int(m.group(1)) if m else None, _normalize(tok.mass, tok.group)))
    return out


def sample_items(labels: Sequence[tuple[int | None, LabelProbs]]) -> tuple[ItemScore, ...]:
    """Per-item probabilities of one sample; unnumbered labels take their order (1-based)."""
    items: dict[int, LabelProbs] = {}
    for order, (idx, probs) in enumerate(labels, start=1):
        items.setdefault(idx if idx is not None else order, probs)
    return tuple(ItemScore(i, p) for i, p in sorted(items.items()))


def sample_reward(labels: Sequence[tuple[int | None, LabelProbs]]) -> float | None:
    """Eq. 2 for one sample: mean over label positions of P(Yes) + 0.5 P(In Progress), or None."""
    if not labels:
        return None
    return sum(p.reward for _, p in labels) / len(labels)


def feedback_text(text: str) -> str:
    """The feedback paragraph: what precedes the judgement region."""
    hits = [i for m in _START_MARKERS if (i := text.find(m)) >= 0]
    return (text[: min(hits)] if hits else text).strip()


def _why_unparsed(gens: Sequence[Generation], off_list: bool = False) -> str:
    n = len(gens)
    head = f"no label found in {n} sample{'s' if n != 1 else ''}: "
    if gens and all(g.finish_reason == "aborted" for g in gens):
        return head + "scoring was aborted before a label was written"
    if not any(_region(g.text) for g in gens):
        cut = " (cut at max_new_tokens)" if any(g.finish_reason == "length" for g in gens) else ""
        return head + f"the model wrote no <answer> block{cut}"
    if off_list:
        return head + "the <answer> block labelled only items that are not on the checklist"
    return head + "the <answer> block held no Yes / In Progress / No label"


def on_checklist(
    labels: Sequence[tuple[int | None, LabelProbs]], items: Collection[int] | None
) -> list[tuple[int | None, LabelProbs]]:
    """The labels of checklist items only: a "Checklist N:" line naming no item is dropped
    (an unnumbered label stands for the item of its order). ``items=None`` keeps them all."""
    if items is None:
        return list(labels)
    return [
        (idx, probs)
        for order, (idx, probs) in enumerate(labels, start=1)
        if (idx if idx is not None else order) in items
    ]


def score_candidate(
    index: int,
    gens: Sequence[Generation],
    label_source: LabelSource = "full",
    checklist_items: Collection[int] | None = None,
) -> CandidateScore:
    """Aggregate one candidate's samples: reward = mean over parsed samples (never a silent 0).

    ``checklist_items``: the checklist's item numbers; labels of other numbers do not count.
    """
    samples: list[SampleScore] = []
    off_list = False
    for g in gens:
        found = extract_labels(g.tokens)
        labels = on_checklist(found, checklist_items)
        off_list = off_list or len(labels) < len(found)
        samples.append(
            SampleScore(text=g.text, items=sample_items(labels), reward=sample_reward(labels))
        )
    parsed = [s for s in samples if s.reward is not None]
    if not parsed:
        return CandidateScore(
            index=index,
            reward=None,
            items=(),
            feedback=_why_unparsed(gens, off_list),
            samples=tuple(samples),
            parsed_samples=0,
            label_source=label_source,
        )
    reward = sum(s.reward for s in parsed if s.reward is not None) / len(parsed)
    per_item: dict[int, list[LabelProbs]] = {}
    for s in parsed:
        for it in s.items:
            per_item.setdefault(it.index, []).append(it.probs)
    items = tuple(
        ItemScore(
            i,
            LabelProbs(
                yes=sum(p.yes for p in ps) / len(ps),
                in_progress=sum(p.in_progress for p in ps) / len(ps),
                no=sum(p.no for p in ps) / len(ps),
            ),
        )
        for i, ps in sorted(per_item.items())
    )
    return CandidateScore(
        index=index,
        reward=reward,
        items=items,
        feedback=feedback_text(parsed[0].text),
        samples=tuple(samples),
        parsed_samples=len(parsed),
        label_source=label_source,
    )
