"""The SDK without a browser: `python examples/sdk_async.py`.

Needs a running daemon (`webshepherd serve`, at $WEBSHEPHERD_URL or ws://127.0.0.1:8765/v1).
The page is written by hand here (any AX-tree text in BrowserGym's format will do; the quick
start takes it from a real page). Prints the pick (an index into the candidates), the rewards
and the best candidate's feedback; offline, against `webshepherd serve --model "$(webshepherd dev
tiny-model --quiet)"`, roughly::

    best: 0 rewards: [0.02, 0.01]
    feedback: Nothing on this page shows that the action moves the task forward.

The hand-written page is a stub of a shop, so every reward is low; the session ends (success).

With a person paired (a paired `webshepherd tui` or extension connected, the default mode
`ask`), a score whose best reward is below the daemon's threshold (0.3), as here, waits for that
person: the script waits until they decide, or `--approval-timeout` (120 s) passes and
`--approval-default` (reject) applies. With nobody paired, or `serve --mode watch`, nothing
waits.
"""

# --- README ---
import asyncio

from webshepherd.protocol import Observation
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.script import one_line_errors


async def main() -> None:
    async with AsyncClient() as client:  # $WEBSHEPHERD_URL or ws://127.0.0.1:8765/v1, stored token
        page = Observation(
            url="http://shop.local/",
            axtree="RootWebArea 'Shop', focused\n\t[12] searchbox 'Search'",
        )
        session = await client.start_session(
            "Buy the cheapest USB-C cable", start_url=page.url, observation=page
        )
        scored = await session.score(
            [
                ("The search box is [12].", "fill('12', 'usb-c cable')"),
                ("Maybe the deals page.", "click('40')"),
            ]
        )
        rewards = ["none" if r.reward is None else f"{r.reward:.2f}" for r in scored.results]
        print(f"best: {scored.best} rewards: [{', '.join(rewards)}]")
        print("feedback:", scored.results[0].feedback[:200])
        await session.act(scored.decision.action or "noop()")
        await session.end("success")


one_line_errors()  # no daemon, a wrong token: the error's one line, no traceback (-v: with it)
asyncio.run(main())
# --- README ---
