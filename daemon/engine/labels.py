"""Label positions and Eq. 2, sans I/O: pure Python, no torch.

A label position is a generated token inside the judgement region (after
``<answer>`` or ``CHECKLIST EVALUATION:``, up to ``</answer>``) whose
vocabulary entry is one of the paper's label variants (Appendix C.2) and that
forms a whole word (``Incomplete`` split as ``In`` + ``complete`` is not a
label; ``In`` counts only as the start of ``In Progress`` / ``InProgress``, so
the ``In`` of an echoed title such as ``Log In`` is not one). One label counts
per line: on a ``Checklist N:`` line the last of the prompt's own labels (Yes, No,
In Progress), else the last label word (the label follows any echoed title:
``Checklist 1: Log In - Yes`` is Yes, ``Checklist 2: Mark as Done - No`` is No,
``Checklist 3: Yes - Not yet paid`` is Yes); on other lines the first label word.

A sample is *unparsed* when it has no label of a checklist item, or when its
judgement was cut (by the context or an explicit output limit) before it ended.
The authors' pipeline scores such a sample 0 and averages it in (``zero``); the
daemon's default leaves it out of the mean (``skip``); both report it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from webshepherd.daemon.engine.backends.base import IN_PROGRESS, NO, YES, GeneratedToken, Generation
from webshepherd.daemon.engine.types import (
    CandidateScore,
    ItemScore,
    LabelProbs,
    LabelSource,
    SampleScore,
)
from webshepherd.protocol.common import UnparsedReason

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

UnparsedRule = Literal["skip", "zero"]
UNPARSED_RULES: tuple[UnparsedRule, ...] = ("skip", "zero")

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

# The three labels the judge prompt names ("In" only ever counts as "In Progress").
_PROMPT_WORDS = frozenset({"Yes", "No", "In"})
_START_MARKERS = ("<answer>", "CHECKLIST EVALUATION:")
_END_MARKER = "</answer>"
_ITEM_LINE = re.compile(
    r"^[\s*\-#>]*checklist\s*(?:item\s*)?#?\s*(\d+)\s*\**\s*[:.)\-–]", re.IGNORECASE
)


def label_token_ids(tokenizer: PreTrainedTokenizerBase) -> dict[int, int]:
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
    if word == "In":  # only as "In Progress" / "InProgress" (split as In + Progress)
        return re.match(r" ?Progress(?![\w])", text[end:]) is not None
    return end >= len(text) or not (text[end].isalnum() or text[end] == "_")


def extract_labels(tokens: Sequence[GeneratedToken]) -> list[tuple[int | None, LabelProbs]]:
    """Label positions of one generation: ``(item N from a "Checklist N:" line or None, probs)``."""
    text = "".join(t.piece for t in tokens)
    region = _region(text)
    if region is None:
        return []
    r_start, r_end = region
    chosen: dict[int, tuple[int | None, LabelProbs]] = {}  # line start -> its label
    named: set[int] = set()  # lines whose label is one of the prompt's own three words
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
        m = _ITEM_LINE.match(text[line_start:begin])
        if line_start in chosen and m is None:
            continue  # not an item line: its first label counts
        own = word in _PROMPT_WORDS
        if line_start in named and not own:
            continue  # a synonym after Yes / No / In Progress is not the label
        if own:
            named.add(line_start)
        chosen[line_start] = (int(m.group(1)) if m else None, _normalize(tok.mass, tok.group))
    return [chosen[k] for k in sorted(chosen)]


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


def _sample_unparsed(g: Generation, found: int, kept: int, cut_by: str) -> UnparsedReason | None:
    """Why one sample is unparsed, or None when it is parsed."""
    if g.finish_reason == "aborted":
        return "aborted"
    if g.finish_reason == "length":
        return "cut_by_context" if cut_by == "context" else "cut_by_limit"
    if kept:
        return None
    if found:
        return "off_checklist"
    return "no_label" if _region(g.text) else "no_answer"


_WHY = {
    "aborted": "scoring was aborted before a label was written",
    "cut_by_context": "the judgement was cut by the model's context before it ended",
    "cut_by_limit": "the judgement was cut at the output limit (max_new_tokens) before it ended",
    "off_checklist": "the <answer> block labelled only items that are not on the checklist",
    "no_label": "the <answer> block held no Yes / In Progress / No label",
    "no_answer": "the model wrote no <answer> block",
}


def _why_unparsed(reasons: Sequence[UnparsedReason]) -> str:
    n = len(reasons)
    head = f"no label found in {n} sample{'s' if n != 1 else ''}: "
    return head + "; ".join(_WHY[r] for r in dict.fromkeys(reasons))


def on_checklist(
    labels: Sequence[tuple[int | None, LabelProbs]], items: Collection[int] | None
) -> list[tuple[int | None, LabelProbs]]:
    """The labels of checklist items only, each with the item it stands for: a "Checklist N:"
    line naming no item is dropped (an unnumbered label stands for the item of its order).
    When the checklist's numbers have gaps (1, 3), a judge that counts its labels 1, 2 keeps
    them: a number that is no item's but within the item count names the item at that place
    (the authors count every label). ``items=None`` keeps them all."""
    if items is None:
        return list(labels)
    ordered = sorted(items)
    gaps = ordered != list(range(1, len(ordered) + 1))
    out: list[tuple[int | None, LabelProbs]] = []
    for order, (idx, probs) in enumerate(labels, start=1):
        n = idx if idx is not None else order
        if n in items:
            out.append((n if idx is not None else None, probs))
        elif gaps and 1 <= n <= len(ordered):
            out.append((ordered[n - 1], probs))
    return out


def score_candidate(
    index: int,
    gens: Sequence[Generation],
    label_source: LabelSource = "full",
    checklist_items: Collection[int] | None = None,
    *,
    unparsed: UnparsedRule = "skip",
    cut_by: Literal["context", "limit"] = "context",
) -> CandidateScore:
    """Aggregate one candidate's samples (Eq. 2 averaged over samples).

    ``checklist_items``: the checklist's item numbers; labels of other numbers do not count.
    ``unparsed``: ``skip`` averages the parsed samples only (``reward`` None when none is
    parsed, with the reason in ``feedback``); ``zero`` averages every sample, an unparsed
    one as 0, as the authors' pipeline does. ``cut_by``: what a "length" finish ran into.
    """
    samples: list[SampleScore] = []
    for g in gens:
        found = extract_labels(g.tokens)
        labels = on_checklist(found, checklist_items)
        why = _sample_unparsed(g, len(found), len(labels), cut_by)
        samples.append(
            SampleScore(
                text=g.text,
                items=sample_items(labels) if why is None else (),
                reward=sample_reward(labels) if why is None else None,
                unparsed=why,
            )
        )
    parsed = [s for s in samples if s.reward is not None]
    n_unparsed = len(samples) - len(parsed)
    if unparsed == "zero" and samples:
        reward: float | None = sum(s.reward or 0.0 for s in samples) / len(samples)
    elif parsed:
        reward = sum(s.reward for s in parsed if s.reward is not None) / len(parsed)
    else:
        reward = None
    if not parsed:
        return CandidateScore(
            index=index,
            reward=reward,
            items=(),
            feedback=_why_unparsed([s.unparsed for s in samples if s.unparsed]),
            samples=tuple(samples),
            parsed_samples=0,
            label_source=label_source,
            unparsed_samples=n_unparsed,
        )
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
        unparsed_samples=n_unparsed,
    )
