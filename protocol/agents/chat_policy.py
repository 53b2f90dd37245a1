"""A policy behind an OpenAI-compatible ``/v1/chat/completions`` endpoint (stdlib HTTP).

Proposals: ``samples`` answers at temperature 1.0 (the paper's setting) to the proposal
prompt, each parsed from ``<think>…</think><action>…</action>``; unparsable answers are
dropped. Refinement: one answer to the paper's refinement prompt (Figure 23). Plan: one
answer to the planning-framework paper's plan prompt, parsed into numbered steps.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from webshepherd.protocol.agents.environment import PageState
from webshepherd.protocol.agents.policy import (
    PolicyContext,
    PolicyError,
    RefineRequest,
    parse_answer,
    parse_plan,
)
from webshepherd.protocol.agents.prompts import plan_messages
from webshepherd.protocol.common import Candidate

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def completions_url(base_url: str) -> str:
    """``…/v1/chat/completions`` from a base URL given with or without its ``/v1``."""
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    return f"{base}/chat/completions" if base.endswith("/v1") else f"{base}/v1/chat/completions"


class ChatPolicy:
    """``ChatPolicy("http://127.0.0.1:8000", "gpt-4o-mini", api_key=None)``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        temperature: float = 1.0,
        max_tokens: int | None = 1024,
        timeout_s: float = 120.0,
    ) -> None:
        self.url = completions_url(base_url)
        self.model = model
        self.api_key = api_key
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        host = urlsplit(self.url).hostname or ""
        handlers = [urllib.request.ProxyHandler({})] if host in _LOOPBACK else []
        self._opener = urllib.request.build_opener(*handlers)

    # -- the three policy methods -------------------------------------------------
    async def propose(self, state: PageState, context: PolicyContext) -> list[Candidate]:
        messages = [{"role": "user", "content": context.prompt(state)}]
        texts = await self.complete(messages, context.samples)
        out = [c for c in map(parse_answer, texts) if c is not None]
        if not out:
            raise PolicyError(f"none of the {len(texts)} answers held an <action>…</action> block")
        return out

    async def refine(self, request: RefineRequest) -> Candidate | None:
        texts = await self.complete([{"role": "user", "content": request.prompt()}], 1)
        return parse_answer(texts[0]) if texts else None

    async def plan(self, intent: str, state: PageState) -> list[str]:
        texts = await self.complete(plan_messages(intent, state.url, state.axtree), 1)
        steps = parse_plan(texts[0]) if texts else []
        if not steps:
            raise PolicyError("the model's plan held no numbered step")
        return steps

    # -- HTTP ---------------------------------------------------------------------
    def body(self, messages: list[dict[str, str]], n: int) -> dict[str, Any]:
        """The request body for ``n`` answers."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "n": n,
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body

    async def complete(self, messages: list[dict[str, str]], n: int) -> list[str]:
        """``n`` answers; asks again for the rest when a server returns fewer choices."""
        texts: list[str] = []
        while len(texts) < n:
            got = await asyncio.to_thread(self._post, self.body(messages, n - len(texts)))
            if not got:
                raise PolicyError(f"{self.url} returned no choices")
            texts.extend(got)
        return texts[:n]

    def _post(self, body: dict[str, Any]) -> list[str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with self._opener.open(req, timeout=self.timeout_s) as resp:
                reply = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as err:
            detail = err.read().decode("utf-8", "replace")[:300]
            raise PolicyError(f"{self.url} answered HTTP {err.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as err:
            raise PolicyError(f"cannot reach the policy model at {self.url}: {err}") from None
        except ValueError as err:
            raise PolicyError(f"{self.url} did not answer JSON: {err}") from None
        try:
            return [c["message"]["content"] or "" for c in reply["choices"]]
        except (KeyError, TypeError) as err:
            raise PolicyError(f"{self.url} answered without choices[].message.content") from err
