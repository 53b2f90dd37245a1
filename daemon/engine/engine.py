"""The engine: prompts in, checklists and Eq. 2 rewards out, identically for every backend."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from webshepherd.daemon.engine.backends.base import Backend, JudgeBatch, JudgeOutput
from webshepherd.daemon.engine.checklist_parse import parse_checklist
from webshepherd.daemon.engine.checklist_parse import parse_reference_checklist as _parse_reference
from webshepherd.daemon.engine.failures import model_error, model_errors
from webshepherd.daemon.engine.labels import UnparsedRule, score_candidate
from webshepherd.daemon.engine.likert import score_likert
from webshepherd.daemon.engine.prompts import (
    PromptStyle,
    checklist_messages,
    judge_fields,
    samples_single,
    split_judge_prompt,
    uses_checklist,
)
from webshepherd.daemon.engine.sampling import Sampling
from webshepherd.daemon.engine.types import (
    EngineStats,
    JudgeInputs,
    ParsedChecklist,
    ProgressCallback,
    StepInput,
    StepScore,
)
from webshepherd.protocol.errors import ModelError, WebShepherdError

_SCORING = "the model failed while scoring"

DEFAULT_MAX_CONTEXT = 10_000  # the authors served the checkpoints with --max-model-len 10000


@dataclass(frozen=True)
class EngineConfig:
    """Decoding settings.

    ``max_context`` caps the backend's context (``None``: the model's own). Generation is not
    capped below the context, as in the authors' pipeline: a judgement runs to ``</answer>``
    or the end of the context (``max_new_tokens`` / ``checklist_max_new_tokens`` set a cap).
    ``output_reserve``: tokens a cut AX tree leaves free for the output when there is no cap.
    ``unparsed``: ``skip`` (default) or ``zero``, see :func:`labels.score_candidate`.
    ``judge_inputs``: ``text+image`` puts a step's screenshot in the judge prompt (the authors'
    multimodal variant; a step without one is judged as text and says so).
    ``prompt``: the prompt style (:data:`prompts.PROMPT_STYLES`): the checkpoints' own
    (``web-shepherd``) or the paper's baseline judges' (``baseline``, ``baseline-likert``),
    each read as the authors read it. One sample is greedy with ``web-shepherd`` and drawn at
    ``temperature`` with the baselines, as the authors' runs; checklists are always greedy.
    """

    max_new_tokens: int | None = None
    checklist_max_new_tokens: int | None = None
    output_reserve: int = 512
    temperature: float = 1.0
    history_steps: int = 10
    context_margin: int = 16
    max_context: int | None = DEFAULT_MAX_CONTEXT
    unparsed: UnparsedRule = "skip"
    judge_inputs: JudgeInputs = "text"
    prompt: PromptStyle = "web-shepherd"


def judging_settings(
    config: EngineConfig, sampling: Sampling, max_context: int | None
) -> dict[str, object]:
    """What decides a judgement, as a session's metadata and ``webshepherd prompt`` show it:
    the prompt style, the temperature (a request's sample count decides greedy or not), the
    checkpoint's sampling settings, the context and the unparsed rule."""
    return {
        "prompt": config.prompt,
        "temperature": config.temperature,
        "one_sample": "sampled at the temperature" if samples_single(config.prompt) else "greedy",
        "checklist": "greedy",
        "sampling": sampling.describe(),
        "max_context": max_context,
        "unparsed": config.unparsed,
        "judge_inputs": config.judge_inputs,
    }


def _no_candidates() -> StepScore:
    return StepScore(candidates=(), prompt_tokens=0, generated_tokens=0, prefix_shared=False)


def _step_score(
    out: JudgeOutput,
    checklist: ParsedChecklist | None,
    config: EngineConfig,
    capped: bool,
) -> StepScore:
    """Eq. 2 rewards of every candidate from the backend's generations (checklist items only;
    ``baseline-likert``: its 1-5 score / 5); ``capped``: the output limit was
    ``config.max_new_tokens``, not the end of the context."""
    listed = checklist.items if checklist is not None else ()
    items = frozenset(it.index for it in listed) or None
    cut_by: Literal["context", "limit"] = "limit" if capped else "context"
    cands = tuple(
        score_candidate(k, gens, out.label_source, items, unparsed=config.unparsed, cut_by=cut_by)
        if uses_checklist(config.prompt)
        else score_likert(k, gens, unparsed=config.unparsed, cut_by=cut_by)
        for k, gens in enumerate(out.generations)
    )
    return StepScore(
        candidates=cands,
        prompt_tokens=out.prefilled_tokens,
        generated_tokens=out.generated_tokens,
        prefix_shared=out.prefix_shared,
    )


def truncation_marker(omitted: int, total: int) -> str:
    """The visible line that replaces the AX tree lines cut to fit the context."""
    return f"[… AXTree truncated: {omitted} of {total} lines omitted to fit the model's context …]"


MAX_CHARS_PER_TOKEN = 64


def fit_axtree(
    axtree: str,
    prompt_tokens: Callable[[str], int],
    context: int,
    keep_free: int,
    rest_chars: int = 0,
) -> tuple[str, bool]:
    """Cut whole lines from the end of ``axtree`` (with a visible marker) until the prompt
    leaves ``keep_free`` of ``context`` tokens free.

    ``prompt_tokens(tree)`` is the token count of the whole prompt with that tree;
    ``rest_chars`` the prompt's length in characters without the tree. Returns ``(tree,
    truncated)``; ``ModelError`` when even an empty tree does not fit. No text much longer
    than the context's worth of characters is tokenized: a rest that cannot fit is refused
    from its length, and of the tree only a head that can fit is measured.
    """
    budget = context - keep_free
    if rest_chars > max(budget, 0) * MAX_CHARS_PER_TOKEN:
        raise ModelError(
            f"the prompt does not fit the model's context of {context} tokens even without "
            f"the accessibility tree: its other parts (intent, checklist, history, candidates) "
            f"are {rest_chars:,} characters"
        )
    total = axtree.count("\n") + 1
    head_chars = max(budget, 1) * MAX_CHARS_PER_TOKEN
    if len(axtree) > head_chars:
        # No token covers more than MAX_CHARS_PER_TOKEN characters, so nothing past the first
        # head_chars can fit: only that head is tokenized (a 30 MB tree costs what a page
        # of the context's size costs, and a heavy step cannot hold the engine for minutes).
        head = axtree[: axtree.rfind("\n", 0, head_chars) + 1].rstrip("\n")
        lines = head.split("\n") if head else []
        whole = prompt_tokens(head)
    else:
        whole = prompt_tokens(axtree)
        if whole <= budget:
            return axtree, False
        lines = axtree.split("\n")

    def cut(keep: int) -> str:
        return "\n".join([*lines[:keep], truncation_marker(total - keep, total)])

    base = prompt_tokens(cut(0))
    if base > budget:
        raise ModelError(
            f"the prompt does not fit the model's context of {context} tokens "
            f"even without the accessibility tree (keeping {keep_free} tokens free)"
        )
    # The largest `keep` that fits lies in [lo, hi]. Start hi near a per-line estimate so
    # the search tokenizes prompts of about the context's size, not the whole huge tree.
    n = len(lines)
    per_line = max(1e-6, (whole - base) / max(n, 1))
    lo, hi = 0, max(0, min(n - 1, 2 * int((budget - base) / per_line) + 16))
    while hi < n - 1 and prompt_tokens(cut(hi)) <= budget:
        lo, hi = hi, min(n - 1, 2 * hi)
    if n and hi == n - 1 and len(axtree) > head_chars and prompt_tokens(cut(n)) <= budget:
        return cut(n), True  # the whole head fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if prompt_tokens(cut(mid)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return cut(lo), True


class Engine:
    """Renders the published prompts, calls the backend, parses checklists, computes rewards.

    No lock of its own around a model call: the backend serialises its model (the daemon
    calls the engine from its scheduler's one engine thread)."""

    def __init__(self, backend: Backend, config: EngineConfig | None = None) -> None:
        self.backend = backend
        self.config = config or EngineConfig()
        self.stats = EngineStats()
        self._stats_lock = threading.Lock()  # the counters only: the model's lock is the backend's

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    @property
    def backend_name(self) -> str:
        return self.backend.name

    @property
    def settings(self) -> dict[str, object]:
        """:func:`judging_settings` of this engine (recorded with every session it scores)."""
        return judging_settings(self.config, self.backend.sampling, self.max_context)

    @property
    def max_context(self) -> int:
        ctx = self.backend.max_context
        return min(ctx, self.config.max_context) if self.config.max_context else ctx

    # -- checklists ----------------------------------------------------------------------

    def make_checklist(self, intent: str, start_url: str, axtree: str) -> ParsedChecklist:
        """Generate a checklist greedily from the start page; ``ModelError`` when none parses."""
        with model_errors("the model failed while writing the checklist"):
            t0 = time.monotonic()
            cap = self.config.checklist_max_new_tokens

            def render(tree: str) -> str:
                return self.backend.render_chat(
                    checklist_messages(intent, start_url, tree, self.config.prompt)
                )

            tree, _ = self.fit_axtree(
                axtree,
                lambda t: self.backend.count_tokens(render(t)),
                self._reserve(cap),
                rest_chars=len(render("")),
            )
            prompt = render(tree)
            prompt_tokens = self.backend.count_tokens(prompt)
            text = self.backend.generate(prompt, self._room(prompt_tokens, cap), temperature=0.0)
            self._account(prompt_tokens, self.backend.count_tokens(text), t0)
        parsed = parse_checklist(text)
        if not parsed.items:
            shown = text.strip()[:120].replace("\n", " ")
            raise ModelError(
                "the model's checklist could not be parsed: no 'Checklist N: …' line in its output "
                f"({len(text)} characters, starting {shown!r})"
            )
        return parsed

    def parse_reference_checklist(self, text: str) -> ParsedChecklist:
        """A user-given checklist, parsed like the model's (else one item per non-empty line)."""
        return _parse_reference(text)

    # -- scoring -------------------------------------------------------------------------

    def score(
        self,
        step: StepInput,
        on_progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> StepScore:
        """Score every candidate of ``step`` (Eq. 2 over ``step.samples`` samples each).

        ``samples == 1`` decodes greedily with the ``web-shepherd`` prompt; other samples are
        drawn at ``config.temperature`` under the checkpoint's sampling settings.
        ``on_progress(candidate, sample, text_delta)`` streams the judge's text;
        setting ``cancel`` stops decoding (unfinished samples are "aborted").
        """
        if not step.candidates:
            return _no_candidates()
        with model_errors(_SCORING):
            t0 = time.monotonic()
            batch = self._judge_batch(step)
            out = self.backend.judge(batch, on_delta=on_progress, cancel=cancel)
            self._account(out.prefilled_tokens, out.generated_tokens, t0)
        return self._step_score(out, step, batch)

    def score_many(
        self,
        steps: Sequence[StepInput],
        on_progress: Sequence[ProgressCallback | None] | None = None,
        cancels: Sequence[threading.Event | None] | None = None,
    ) -> list[StepScore | Exception]:
        """:meth:`score` for independent steps (different sessions) in one backend call
        (``Backend.judge_many``). One entry per step, in order: its score, or the error that
        step alone met (a ``ModelError`` for a model failure; the other steps are unaffected).
        """
        progress = list(on_progress) if on_progress is not None else [None] * len(steps)
        cancel_of = list(cancels) if cancels is not None else [None] * len(steps)
        results: list[StepScore | Exception] = [_no_candidates() for _ in steps]
        todo: list[int] = []
        batches: list[JudgeBatch] = []
        t0 = time.monotonic()
        for i, step in enumerate(steps):
            if not step.candidates:
                continue
            try:
                with model_errors(_SCORING):
                    batch = self._judge_batch(step)
            except WebShepherdError as exc:
                results[i] = exc
                continue
            todo.append(i)
            batches.append(batch)
        if not batches:
            return results
        try:
            with model_errors(_SCORING):
                outs = self.backend.judge_many(
                    batches, [progress[i] for i in todo], [cancel_of[i] for i in todo]
                )
                if len(outs) != len(batches):
                    raise RuntimeError(f"judge_many gave {len(outs)} results for {len(batches)}")
        except WebShepherdError as exc:
            for i in todo:
                results[i] = exc
            return results
        done = [o for o in outs if not isinstance(o, Exception)]
        self._account(
            sum(o.prefilled_tokens for o in done), sum(o.generated_tokens for o in done), t0
        )
        for i, out in zip(todo, outs, strict=True):
            if isinstance(out, Exception):  # that step's failure only
                results[i] = model_error(out, _SCORING, context="one step of a batch")
            else:
                try:
                    with model_errors(_SCORING):
                        results[i] = self._step_score(out, steps[i], batches[todo.index(i)])
                except WebShepherdError as exc:
                    results[i] = exc
        return results

    def _judge_batch(self, step: StepInput) -> JudgeBatch:
        """The step's judge prompts (AX tree cut to fit, visibly) as one batch."""
        if (step.checklist is None or not step.checklist.items) and uses_checklist(
            self.config.prompt
        ):
            raise ModelError("cannot score a step without checklist items")

        with_image = self.config.judge_inputs == "text+image" and bool(step.screenshot)
        image = (
            (step.screenshot_mime or "image/png", step.screenshot)
            if with_image and step.screenshot
            else None
        )

        def parts(tree: str) -> tuple[str, list[str]]:
            return split_judge_prompt(
                self.backend.render_chat,
                **judge_fields(step, self.config.history_steps, tree),
                candidates=step.candidates,
                with_image=with_image,
                style=self.config.prompt,
            )

        measured: dict[str, int] = {}

        def longest(tree: str) -> int:
            if tree not in measured:
                prefix, suffixes = parts(tree)
                measured[tree] = max(self.backend.count_prompt(prefix + s, image) for s in suffixes)
            return measured[tree]

        cap = self.config.max_new_tokens
        prefix, suffixes = parts("")
        rest = len(prefix) + max(len(s) for s in suffixes)  # characters: nothing tokenized
        tree, _ = self.fit_axtree(step.axtree, longest, self._reserve(cap), rest)
        prefix, suffixes = parts(tree)
        return JudgeBatch(
            prefix=prefix,
            suffixes=suffixes,
            samples=max(1, step.samples),
            max_new_tokens=self._room(longest(tree), cap),
            temperature=self.config.temperature,
            greedy=step.samples <= 1 and not samples_single(self.config.prompt),
            image=image,
        )

    def _step_score(self, out: JudgeOutput, step: StepInput, batch: JudgeBatch) -> StepScore:
        cap = self.config.max_new_tokens
        capped = cap is not None and batch.max_new_tokens >= cap
        score = _step_score(out, step.checklist, self.config, capped)
        if batch.image is None:
            return score
        seen = tuple(replace(c, judge_inputs="text+image") for c in score.candidates)
        return replace(score, candidates=seen)

    def judge_prompt_tokens(self, step: StepInput) -> list[int | None]:
        """Each candidate's whole judge prompt in tokens, the AX tree uncut (``None``: longer
        than the context could hold, told from its length without tokenizing it)."""
        with model_errors("the model failed while counting the prompt"):
            with_image = self.config.judge_inputs == "text+image" and bool(step.screenshot)
            image = (
                (step.screenshot_mime or "image/png", step.screenshot)
                if with_image and step.screenshot
                else None
            )
            prefix, suffixes = split_judge_prompt(
                self.backend.render_chat,
                **judge_fields(step, self.config.history_steps),
                candidates=step.candidates,
                with_image=with_image,
                style=self.config.prompt,
            )
            longest = self.max_context * MAX_CHARS_PER_TOKEN
            return [
                None
                if len(prefix) + len(s) > longest
                else self.backend.count_prompt(prefix + s, image)
                for s in suffixes
            ]

    def _reserve(self, cap: int | None) -> int:
        """Output tokens a cut AX tree leaves free: the cap, else ``output_reserve``."""
        return cap if cap is not None else self.config.output_reserve

    def _room(self, prompt_tokens: int, cap: int | None) -> int:
        """The output limit for a prompt: the rest of the context (at most ``cap``)."""
        room = self.max_context - prompt_tokens - self.config.context_margin
        return max(1, room if cap is None else min(cap, room))

    # -- helpers -------------------------------------------------------------------------

    def fit_axtree(
        self,
        axtree: str,
        prompt_tokens: Callable[[str], int],
        reserve: int,
        rest_chars: int = 0,
    ) -> tuple[str, bool]:
        """:func:`fit_axtree` to this engine's context, ``reserve`` tokens kept for the output."""
        return fit_axtree(
            axtree,
            prompt_tokens,
            self.max_context,
            reserve + self.config.context_margin,
            rest_chars,
        )

    def _account(self, prefilled: int, generated: int, t0: float) -> None:
        with self._stats_lock:
            self.stats.prefilled_tokens += prefilled
            self.stats.generated_tokens += generated
            self.stats.busy_s += time.monotonic() - t0
            self.stats.requests += 1

    def health(self) -> dict[str, object]:
        """The backend's health: a remote model server's figures under ``remote`` (the
        daemon's stats show them)."""
        return self.backend.health()

    def close(self) -> None:
        self.backend.close()
