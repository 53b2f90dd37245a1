"""How fast the SDK notices a killed daemon (issue 49): a real ``webshepherd serve`` subprocess
(tiny model, loopback), a paired person's client and an agent's; the agent's ``commit.check``
waits for the person when the daemon is killed with SIGKILL.

```
.venv/bin/python bench/daemon_gone.py [--rounds N] [--json OUT]
```

Per round, in seconds: ``paused`` (from the SIGKILL until the waiting ``commit.check``
raises), ``next`` (a new ``commit.check`` made after that, until it raises: it waits
``reconnect_wait_s`` for a reconnect), and ``back`` (the daemon restarted on the same port and
data dir, from its listening until the same client's next call is answered); then, on that
daemon, ``silent`` (it is stopped with SIGSTOP, its socket open and nothing answering, while a
``commit.check`` waits: until the call raises, by the client's keepalive).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOKEN = "bench-token-webshepherd-0123456789"
OBS = {"url": "http://shop.test/", "axtree": "[1] RootWebArea 'Shop'\n\t[2] button 'Buy'"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _serve(data: Path, port: int) -> subprocess.Popen[bytes]:
    from webshepherd.daemon.dev.tiny_model import ensure_tiny_model
    from websockets.asyncio.client import connect

    env = dict(
        os.environ,
        WEBSHEPHERD_TOKEN=TOKEN,
        WEBSHEPHERD_KEYRING="0",
        WEBSHEPHERD_CONFIG_DIR=str(data / "config"),
        HF_HUB_OFFLINE="1",
    )
    model = str(ensure_tiny_model(progress=False))
    args = ["--model", model, "--device", "cpu", "--port", str(port), "--data-dir", str(data)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "webshepherd.daemon.cli", "serve", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(1200):
        if proc.poll() is not None:
            raise RuntimeError("the daemon exited")
        with contextlib.suppress(OSError):
            async with connect(f"ws://127.0.0.1:{port}/v1", open_timeout=2):
                return proc
        await asyncio.sleep(0.1)
    raise RuntimeError("the daemon did not listen")


async def _round(data: Path) -> dict[str, float]:
    from webshepherd.daemon.server.approvers import Approvers
    from webshepherd.protocol.client import AsyncClient
    from webshepherd.protocol.commits import held_request
    from webshepherd.protocol.errors import ConnectionLostError

    port = _free_port()
    proc = await _serve(data, port)
    url = f"ws://127.0.0.1:{port}/v1"
    person = AsyncClient(url, TOKEN, role="monitor", name="tui")
    agent = AsyncClient(url, TOKEN)
    try:
        await person.connect()
        await person.pair(Approvers(data / "config").create_code("monitor").code, "tui")
        asked = await person.subscribe("*").start()
        await agent.connect()
        session = await agent.start_session(
            "Buy a cable", observation=OBS, checklist="Checklist 1: Buy it", holds="browser"
        )
        post = held_request("POST", "http://shop.test/orders", "write", page_url=OBS["url"])
        paused = asyncio.create_task(session.commit_check(post, timeout=120))
        while (await asked.get(timeout=60)).type != "approval.request":
            pass
        killed = time.perf_counter()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with contextlib.suppress(ConnectionLostError):
            await paused
        t_paused = time.perf_counter() - killed
        start = time.perf_counter()
        with contextlib.suppress(ConnectionLostError):
            await session.commit_check(post, timeout=120)
        t_next = time.perf_counter() - start
        proc = await _serve(data, port)
        listening = time.perf_counter()
        while True:
            try:
                await agent.ping()
                break
            except ConnectionLostError:
                continue
        t_back = time.perf_counter() - listening
        await until_connected(person)
        paused = asyncio.create_task(session.commit_check(post, timeout=600))
        while (await asked.get(timeout=60)).type != "approval.request":
            pass
        stopped = time.perf_counter()
        proc.send_signal(signal.SIGSTOP)  # silent: the socket stays open, nothing answers
        with contextlib.suppress(ConnectionLostError):
            await paused
        t_silent = time.perf_counter() - stopped
        return {"paused": t_paused, "next": t_next, "back": t_back, "silent": t_silent}
    finally:
        await agent.close()
        await person.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


async def until_connected(client: object) -> None:
    """Until ``client`` (an AsyncClient) has reconnected by itself."""
    while not getattr(client, "connected", False):
        await asyncio.sleep(0.05)


async def main_async(rounds: int) -> dict[str, object]:
    out: list[dict[str, float]] = []
    for n in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            out.append(await _round(Path(tmp)))
        print(f"round {n + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in out[-1].items()))
    medians = {k: statistics.median(r[k] for r in out) for k in out[0]}
    print("median: " + ", ".join(f"{k} {v:.2f} s" for k, v in medians.items()))
    return {"rounds": out, "median": medians}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--rounds", type=int, default=3, help="daemons killed, one per round")
    p.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = p.parse_args()
    out = asyncio.run(main_async(args.rounds))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
