"""A recorded session as one self-contained HTML page: no scripts, no network (a CSP forbids
both), screenshots inline as data URIs, figures as inline SVG. Every text goes through the
export's :class:`Redactor`."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable, Sequence

from webshepherd.daemon.offline.export.truth import ProvenBadStep, proven_bad_step
from webshepherd.daemon.offline.report.figures import (
    CANDIDATE_COLOURS,
    DECISION_COLOURS,
    CurvePoint,
    Outline,
    element_boxes,
    heat_strip,
    image_size,
    outlines_svg,
    reward_curve,
)
from webshepherd.daemon.offline.report.tree import CSS as TREE_CSS
from webshepherd.daemon.offline.report.tree import tree_section
from webshepherd.daemon.recorder.timeline import Step, Timeline
from webshepherd.daemon.redact import Redactor, mask_password_lines
from webshepherd.protocol.actions import read_recorded
from webshepherd.protocol.agreement import Agreement, agreement
from webshepherd.protocol.common import ItemProbs, ScoredCandidate
from webshepherd.protocol.progress import (
    FirstBadSteps,
    StepJudgement,
    first_bad_steps,
    item_levels,
)
from webshepherd.protocol.steps import step_label, step_number
from webshepherd.protocol.terminal_text import html_safe

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

CSS = """
:root { font-family: system-ui, sans-serif; color: #1d2330; background: #f6f7f9; }
body { margin: 0 auto; max-width: 1100px; padding: 24px; }
h1 { font-size: 1.4rem; margin: 0 0 8px; }
h2 { font-size: 1.15rem; margin: 0; }
header, section.step, section.page, section.figure { background: #fff; border: 1px solid #e3e6ea;
  border-radius: 8px; padding: 16px; margin-bottom: 16px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dl.meta dt { color: #5c6470; } dl.meta dd { margin: 0; overflow-wrap: anywhere; }
.tick, .legend, .target-label { font-size: 11px; fill: #5c6470; }
.target-label { font-weight: 600; font-size: 14px; }
.step-head { display: flex; gap: 12px; align-items: baseline; flex-wrap: wrap; }
.url { font-family: ui-monospace, monospace; font-size: 0.85rem; color: #3b6fd4;
  overflow-wrap: anywhere; }
.shot { position: relative; display: inline-block; max-width: 100%; margin: 12px 0;
  border: 1px solid #e3e6ea; }
.shot img { display: block; max-width: 100%; height: auto; }
.shot svg.targets { position: absolute; inset: 0; width: 100%; height: 100%; }
table.cands { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
table.cands th, table.cands td { text-align: left; padding: 4px 8px;
  border-bottom: 1px solid #eef0f3; vertical-align: top; }
table.cands code { overflow-wrap: anywhere; }
.bar { display: inline-block; height: 8px; background: #3b6fd4; border-radius: 4px;
  vertical-align: middle; margin-right: 6px; }
.tag { display: inline-block; font-size: 0.75rem; padding: 0 6px; border-radius: 8px;
  margin-right: 4px; color: #fff; }
.tag.best { background: #3b6fd4; } .tag.chosen { background: #9b59b6; }
.tag.executed { background: #2e9e5b; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  margin-right: 4px; }
.approval { border-left: 4px solid #8a8f98; padding: 4px 12px; margin: 8px 0;
  background: #fafbfc; }
.signal.warn { color: #b5361c; } .signal.ok { color: #2e7a4b; }
.feedback { white-space: pre-wrap; font-size: 0.88rem; background: #fafbfc; padding: 8px;
  border-radius: 4px; }
pre.axtree { max-height: 360px; overflow: auto; font-size: 0.78rem; background: #fafbfc;
  padding: 8px; }
.muted { color: #8a8f98; }
nav.steps a { margin-right: 6px; font-size: 0.85rem; }
ol.items { margin: 4px 0 0; padding-left: 22px; font-size: 0.88rem; }
"""


def _e(text: object, *, multiline: bool = False) -> str:
    """Untrusted text shown (invisible characters as escapes, hosts as punycode), HTML-escaped."""
    return html_safe(text, multiline=multiline)


def _r(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def _when(ts: float | None) -> str:
    return "—" if ts is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def _duration(start: float, end: float | None) -> str:
    if end is None:
        return "running (not ended)"
    s = max(end - start, 0.0)
    return f"{int(s // 60)} min {s % 60:.1f} s" if s >= 60 else f"{s:.1f} s"


def step_boxes(step: Step) -> dict[str, tuple[float, float, float, float]]:
    """``bid -> (left, top, right, bottom)`` on the step's screenshot: the boxes the observer
    sent with the observation (the extension does), else coordinates in the AX tree."""
    if step.boxes:
        return {bid: (x, y, x + w, y + h) for bid, (x, y, w, h) in step.boxes.items()}
    return element_boxes(step.axtree)


def executed_candidate(step: Step) -> ScoredCandidate | None:
    """The scored candidate whose action was executed at this step (if one was)."""
    sc = step.scoring
    if sc is None or not step.executed:
        return None
    done = step.executed[-1].action
    return next((c for c in sc.candidates if c.candidate.action == done), None)


def best_candidate(step: Step) -> ScoredCandidate | None:
    sc = step.scoring
    if sc is None or sc.best is None:
        return None
    return next((c for c in sc.candidates if c.result.index == sc.best), None)


def _learn(red: Redactor, steps: Iterable[Step]) -> None:
    """Teach the redactor every value typed into a password field in the session."""
    pairs = []
    for st in steps:
        pairs += [(x.action, st.axtree) for x in st.executed]
        pairs += [(c.candidate.action, st.axtree) for sc in st.scorings for c in sc.candidates]
        pairs += [(a.action, st.axtree) for a in st.approvals if a.action]
    red.learn_passwords(pairs)


def render_report(
    tl: Timeline, redact: Sequence[str] = (), generated_at: float | None = None
) -> str:
    """The whole report as HTML text."""
    red = Redactor(redact)
    _learn(red, tl.steps)
    s = tl.summary
    items = tl.checklist.items if tl.checklist else []
    titles = [red.text(i.title) for i in items]
    scored = [st for st in tl.steps if st.scoring is not None]
    taken = {st.step for st in tl.steps if st.scorings or st.executed}  # protocol/steps.py

    points = []
    for st in scored:
        best, done = best_candidate(st), executed_candidate(st)
        decided = [a.decision or "pending" for a in st.approvals]
        points.append(
            CurvePoint(
                step_number(st.step),
                best.result.reward if best else None,
                done.result.reward if done else None,
                decided[-1] if decided else None,
            )
        )
    labels = []
    for it in items:
        row: list[str | None] = []
        for st in scored:
            cand = executed_candidate(st) or best_candidate(st)
            probs = (
                next((p for p in cand.result.items if p.index == it.index), None) if cand else None
            )
            row.append(probs.likeliest if probs else None)
        labels.append(row)

    agent = s.agent
    head = [
        ("session", s.session_id),
        ("agent", f"{agent.name} ({agent.planning} planning)"),
        ("outcome", s.outcome or s.state),
        ("answer", tl.answer or "—"),
        ("started", _when(s.created_at)),
        ("duration", _duration(s.created_at, s.ended_at)),
        ("model", tl.model or "not recorded"),
        ("backend", tl.backend or "not recorded"),
        ("start URL", s.start_url or "—"),
        ("source", s.source),
        ("steps", f"{len(taken)} ({len(scored)} scored, {len(tl.steps)} pages observed)"),
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>webshepherd · {_e(red.text(s.intent))}</title>",
        f"<style>{CSS}{TREE_CSS if tl.tree else ''}</style></head><body>",
        '<header id="summary">',
        f"<h1>{_e(red.text(s.intent))}</h1>",
        '<dl class="meta">',
        *(f"<dt>{_e(k)}</dt><dd>{_e(red.text(v))}</dd>" for k, v in head),
        "</dl>",
    ]
    if titles:
        parts.append('<ol class="items">')
        parts += [f"<li>{_e(t)}</li>" for t in titles]
        parts.append("</ol>")
    parts.append("</header>")
    parts.append('<section class="figure" id="rewards"><h2>Reward per step</h2>')
    parts.append(reward_curve(points) if points else '<p class="muted">no scored step</p>')
    parts.append("</section>")
    if titles and scored:
        parts.append('<section class="figure" id="checklist"><h2>Checklist progress</h2>')
        parts.append(_legend())
        parts.append('<div style="display:flex;gap:12px;align-items:flex-start">')
        parts.append('<ol class="items" style="margin-top:18px;line-height:20px">')
        parts += [f"<li>{_e(t)}</li>" for t in titles]
        parts.append("</ol>")
        parts.append(heat_strip(titles, [step_number(st.step) for st in scored], labels))
        parts.append("</div></section>")
    parts.append(_first_bad(first_bad_steps(judgements(tl)), red, proven_bad_step(tl)))
    if any(st.approvals for st in tl.steps):
        parts.append(agreement_section(tl))
    if tl.tree is not None:
        parts.append(tree_section(tl.tree, red))
    parts.append('<nav class="steps">steps: ')
    numbers = [step_number(st.step) for st in tl.steps if st.step in taken]
    parts += [f'<a href="#step-{n}">{n}</a>' for n in numbers]
    parts.append("</nav>")
    for st in tl.steps:
        parts.append(_step(st, red, titles, st.step in taken))
    parts.append(
        f'<p class="muted">webshepherd report · generated {_e(_when(generated_at or time.time()))}'
        "</p></body></html>"
    )
    return "\n".join(parts)


def judgements(tl: Timeline) -> list[StepJudgement]:
    """Each scored step's judgement of its executed action (else of its best candidate)."""
    out = []
    for st in tl.steps:
        cand = executed_candidate(st) or best_candidate(st)
        if cand is not None:
            r = cand.result
            out.append(StepJudgement(st.step, r.reward, item_levels(r.items), r.feedback))
    return out


def _first_bad(bad: FirstBadSteps, red: Redactor, proven: ProvenBadStep | None = None) -> str:
    """Where the run first went wrong: proven by replays when ``webshepherd blame`` recorded
    it, then the judge's guesses (protocol/progress.py's rules), with the feedback."""
    rows = []
    if proven is not None:
        rows.append(
            f'<dt>proven</dt><dd><a href="#step-{step_number(proven.step)}">'
            f"{step_label(proven.step)}</a> (proven by replays): "
            f"{_e(red.text(proven.action))} lost; {_e(red.text(proven.proof))}</dd>"
        )
    for label, step in (("checklist progress", bad.progress), ("reward", bad.reward)):
        if proven is not None:
            label = f"judge's guess ({label})"
        if step is None:
            rows.append(f"<dt>{label}</dt><dd>none</dd>")
            continue
        rows.append(
            f'<dt>{label}</dt><dd><a href="#step-{step_number(step.step)}">'
            f"{step_label(step.step)}</a>: "
            f'{_e(red.text(step.detail))}<br><span class="muted">judge\'s feedback:</span> '
            f"{_e(red.text(step.feedback))}</dd>"
        )
    return (
        '<section class="figure" id="first-bad"><h2>First bad step</h2>'
        f'<dl class="meta">{"".join(rows)}</dl></section>'
    )


def agreement_section(tl: Timeline) -> str:
    """Judge–person agreement over the session's decided approvals (protocol/agreement.py):
    only a person's decisions count; the others are named as not counted."""
    got: Agreement = agreement(tl.decisions())
    held = [a for st in tl.steps for a in st.approvals]
    others = sum(1 for a in held if a.decision is not None and not a.by_person)
    pending = sum(1 for a in held if a.decision is None)
    thresholds = sorted({a.threshold for a in held if a.threshold is not None})
    at = ", ".join(f"{t:g}" for t in thresholds) if thresholds else "none recorded"

    def of(k: int, n: int) -> str:
        return f"{k} of {n}"

    rows = [
        (
            "decisions by a person",
            f"{got.decisions} ({got.approved} approved, {got.rejected} rejected, "
            f"{got.edited} edited)",
        ),
        ("judge's top pick approved", of(got.top_approved, got.top_picks)),
        ("high reward rejected or edited", of(got.high_rejected, got.high)),
        ("low reward approved", of(got.low_approved, got.low)),
        ("approval threshold", at),
        ("not a person's (not counted)", f"{others} (timeouts, the daemon's), {pending} pending"),
    ]
    body = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows)
    return (
        '<section class="figure" id="agreement"><h2>Judge–person agreement</h2>'
        f'<dl class="meta">{body}</dl>'
        '<p class="muted">high: a held reward at or above the approval threshold in force; '
        "low: below it, or none parsed. A person's decisions are ground truth for training "
        "(docs/training.md).</p></section>"
    )


def _legend() -> str:
    from webshepherd.daemon.offline.report.figures import LABEL_COLOURS, LABEL_NAMES

    return (
        "<p>"
        + "".join(
            f'<span class="swatch" style="background:{LABEL_COLOURS[k]}"></span>{LABEL_NAMES[k]} '
            for k in ("yes", "in_progress", "no", None)
        )
        + "</p>"
    )


def _step(st: Step, red: Redactor, titles: Sequence[str], taken: bool = True) -> str:
    """One step's section; an index only observed (``taken`` False: nothing scored or done
    there, protocol/steps.py) is a page, not a step, and says so."""
    n = step_number(st.step)
    if taken:
        out = [f'<section class="step" id="step-{n}">']
        heading = f"Step {n}"
    else:
        out = [f'<section class="page" id="page-{n}">']
        heading = "Page only (no step taken here)"
    out.append(
        f'<div class="step-head"><h2>{heading}</h2>'
        f'<span class="url">{_e(red.text(st.url)) or "(no observation)"}</span>'
        f'<span class="muted">{_e(_when(st.observed_at))}</span></div>'
    )
    sc = st.scoring
    cands = sc.candidates if sc else []
    done = executed_candidate(st)
    decision = (sc.decision or {}) if sc else {}
    chosen_index = decision.get("index")
    if st.screenshot:
        mime = st.screenshot_mime or "image/png"
        data = base64.b64encode(st.screenshot).decode("ascii")
        out.append(
            f'<div class="shot"><img alt="screenshot of {_e(heading)}" '
            f'src="data:{_e(mime)};base64,{data}">'
        )
        size = image_size(st.screenshot)
        boxes = step_boxes(st)
        outlines = []
        for c in cands:
            i, action = c.result.index, c.candidate.action
            bid = read_recorded(action).element
            if bid is not None and bid in boxes:
                outlines.append(
                    Outline(
                        f"#{i} {red.action(action, st.axtree)}",
                        boxes[bid],
                        CANDIDATE_COLOURS[i % len(CANDIDATE_COLOURS)],
                        i == chosen_index,
                    )
                )
        if size and outlines:
            out.append(outlines_svg(size, outlines))
        out.append("</div>")
    else:
        out.append('<p class="muted">no screenshot recorded</p>')
    if cands:
        out.append(
            '<table class="cands"><thead><tr><th>#</th><th>reward</th><th>action</th>'
            "<th>thought</th><th></th></tr></thead><tbody>"
        )
        for c in cands:
            i, r = c.result.index, c.result
            tags = []
            if sc and i == sc.best:
                tags.append('<span class="tag best">best</span>')
            if i == chosen_index:
                tags.append(
                    f'<span class="tag chosen">{_e(decision.get("status", "chosen"))}</span>'
                )
            if done is c:
                tags.append('<span class="tag executed">executed</span>')
            width = round((r.reward or 0.0) * 80)
            colour = CANDIDATE_COLOURS[i % len(CANDIDATE_COLOURS)]
            out.append(
                f'<tr class="cand"><td><span class="swatch" style="background:{colour}">'
                f"</span>{i}</td>"
                f'<td><span class="bar" style="width:{width}px"></span>{_r(r.reward)}</td>'
                f"<td><code>{_e(red.action(c.candidate.action, st.axtree))}</code></td>"
                f"<td>{_e(red.text(c.candidate.thought))}</td><td>{''.join(tags)}</td></tr>"
            )
        out.append("</tbody></table>")
        for c in cands:
            is_main = c is (done or best_candidate(st))
            out.append(
                f"<details{' open' if is_main else ''}><summary>feedback on #{c.result.index}"
                f"{' (executed)' if c is done else ''}</summary>"
                f'<div class="feedback">{_e(red.text(c.result.feedback), multiline=True)}</div>'
                f"{_item_list(c.result.items, titles)}</details>"
            )
    elif sc is None:
        out.append('<p class="muted">not scored</p>')
    if st.executed:
        for x in st.executed:
            out.append(
                f"<p>executed ({_e(x.source)}): <code>{_e(red.action(x.action, st.axtree))}"
                f"</code>{' — ' + _e(red.text(x.thought)) if x.thought else ''}</p>"
            )
        if done is None and cands:
            out.append('<p class="muted">the executed action was not among the candidates</p>')
    for a in st.approvals:
        colour = DECISION_COLOURS.get(a.decision, "#8a8f98")
        edited = f"; action: <code>{_e(red.action(a.action, st.axtree))}</code>" if a.action else ""
        out.append(
            f'<div class="approval" style="border-color:{colour}">'
            f"<b>approval</b> of #{a.candidate_index} (reward {_r(a.reward)}, "
            f"{_e(a.reason)}): <b>{_e(a.decision or 'pending')}</b>"
            f" by {_e(red.text(a.decided_by or '—'))}{edited}"
            f"{' · ground truth' if a.by_person else ''}"
            f"{'; note: ' + _e(red.text(a.note)) if a.note else ''}"
            f' <span class="muted">{_e(_when(a.decided_at))}</span></div>'
        )
    if st.signals:
        out.append('<ul class="signals">')
        for sig in st.signals:
            ok = bool(sig.get("ok"))
            extra = ", ".join(
                f"{k} {red.text(str(sig[k]))}"
                for k in ("repeats", "planned", "plan_step", "rate")
                if sig.get(k) is not None
            )
            out.append(
                f'<li class="signal {"ok" if ok else "warn"}">{_e(sig.get("kind", ""))}'
                f"{' (' + _e(extra) + ')' if extra else ''}"
                f"{': ' + _e(red.text(sig.get('detail') or '')) if sig.get('detail') else ''}"
                "</li>"
            )
        out.append("</ul>")
    if st.axtree:
        tree = red.text(mask_password_lines(st.axtree))
        out.append(
            f"<details><summary>AX tree ({len(tree.splitlines())} lines)</summary>"
            f'<pre class="axtree">{_e(tree, multiline=True)}</pre></details>'
        )
    out.append("</section>")
    return "\n".join(out)


def _item_list(items: Sequence[ItemProbs], titles: Sequence[str]) -> str:
    if not items:
        return ""
    rows = []
    for p in items:
        title = titles[p.index - 1] if 0 < p.index <= len(titles) else f"item {p.index}"
        rows.append(
            f"<li>{_e(title)}: <b>{_e(p.likeliest.replace('_', ' '))}</b> "
            f'<span class="muted">(yes {p.yes:.2f}, in progress {p.in_progress:.2f}, '
            f"no {p.no:.2f})</span></li>"
        )
    return '<ul class="items">' + "".join(rows) + "</ul>"
