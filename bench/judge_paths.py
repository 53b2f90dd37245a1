"""Step latency and tokens per step of each judge path, on the tiny model, side by side.

One engine per path scores the same steps (2 candidates, greedy), repeats interleaved:

- ``transformers``: the model in this process;
- ``openai``: ``--backend openai`` through the project's own endpoint on loopback
  (``/v1/completions``, all candidates in one request);
- ``openai-chat``: ``--backend openai-chat`` through the same endpoint
  (``/v1/chat/completions``, one request per candidate, streamed);
- ``transformers text+image`` and ``openai-chat text+image``: the same steps with a
  screenshot (a 96x72 PNG drawn from the page), ``--judge-inputs text+image``, on the tiny
  vision model in this process and behind a second endpoint.

Every step is scored in one worker thread, as the daemon's scheduler does (on a loaded 2-core
machine torch's intra-op threads on the main thread made the in-process path several times
slower than the same model answering in the endpoint's thread).

Reported per path: step latency (median and p95 over the steps, ms) and tokens in and out
per step (the backend's counts: the server's ``usage`` for the remote paths).

    .venv/bin/python bench/judge_paths.py [--steps N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from webshepherd.daemon.dev.openai_server import OpenAIServer
from webshepherd.daemon.dev.screenshots import axtree_png
from webshepherd.daemon.dev.tiny_model import ensure_tiny_model
from webshepherd.daemon.dev.tiny_vision import ensure_tiny_vision_model
from webshepherd.daemon.engine.backends.openai_backend import OpenAIBackend
from webshepherd.daemon.engine.backends.openai_chat_backend import OpenAIChatBackend
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.engine.engine import Engine, EngineConfig
from webshepherd.daemon.engine.types import StepInput
from webshepherd.protocol.common import Turn

AXTREE = "RootWebArea 'Shop', focused\n\t[34] textbox 'Search'\n\t[35] button 'Go'"


def _step(engine: Engine, i: int) -> StepInput:
    shot = engine.config.judge_inputs == "text+image"
    return StepInput(
        intent="Buy red shoes",
        current_url=f"http://shop.example.com/{i}",
        axtree=AXTREE,
        checklist=engine.parse_reference_checklist("Checklist 1: Search\nChecklist 2: Buy"),
        history=(Turn("Open the shop.", "goto('http://shop.example.com')"),),
        candidates=(Turn("Search first.", "fill('34', 'red shoes')"), Turn("Go.", "click('35')")),
        screenshot=axtree_png(AXTREE) if shot else None,
        screenshot_mime="image/png" if shot else None,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    local = TransformersBackend.load(str(ensure_tiny_model()), device="cpu")
    seeing = TransformersBackend.load(str(ensure_tiny_vision_model()), device="cpu")
    server, vision_server = OpenAIServer(local), OpenAIServer(seeing)
    server.start()
    vision_server.start()
    config = EngineConfig(max_new_tokens=160)
    with_image = EngineConfig(max_new_tokens=160, judge_inputs="text+image")
    engines = {
        "transformers": Engine(local, config),
        "openai": Engine(
            OpenAIBackend(server.url, local.model_id, tokenizer=local.tokenizer), config
        ),
        "openai-chat": Engine(OpenAIChatBackend(server.url, local.model_id), config),
        "transformers text+image": Engine(seeing, with_image),
        "openai-chat text+image": Engine(
            OpenAIChatBackend(vision_server.url, seeing.model_id), with_image
        ),
    }
    rows: dict[str, list[tuple[float, int, int]]] = {name: [] for name in engines}
    worker = ThreadPoolExecutor(1, "engine")
    try:
        for i in range(args.steps):
            for name, engine in engines.items():
                t0 = time.perf_counter()
                score = worker.submit(engine.score, _step(engine, i)).result()
                ms = (time.perf_counter() - t0) * 1000
                rows[name].append((ms, score.prompt_tokens, score.generated_tokens))
                assert name.endswith("text+image") == all(
                    c.judge_inputs == "text+image" for c in score.candidates
                )
    finally:
        worker.shutdown()
        server.stop()
        vision_server.stop()
    figures = {}
    print(f"tiny models, CPU, {args.steps} steps x 2 candidates, greedy")
    print(f"{'path':<26}{'p50 ms':>9}{'p95 ms':>9}{'in/step':>10}{'out/step':>10}")
    for name, r in rows.items():
        lat = sorted(x[0] for x in r)
        f = {
            "p50_ms": statistics.median(lat),
            "p95_ms": lat[min(len(lat) - 1, round(0.95 * len(lat)))],
            "prompt_tokens_per_step": statistics.mean(x[1] for x in r),
            "completion_tokens_per_step": statistics.mean(x[2] for x in r),
        }
        figures[name] = f
        print(
            f"{name:<26}{f['p50_ms']:>9.0f}{f['p95_ms']:>9.0f}"
            f"{f['prompt_tokens_per_step']:>10.0f}{f['completion_tokens_per_step']:>10.0f}"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
