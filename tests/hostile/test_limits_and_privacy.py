"""Memory before authentication (issue 14, item 9) and privacy of the recording (item 10)."""

from __future__ import annotations

import os
import stat

from webshepherd.daemon.server.handshake import PREAUTH_FRAME_BYTES

from tests.fixtures.daemon import OBS, TEST_TOKEN, start_session
from tests.hostile.helpers import close_code, no_tracebacks, still_serving


async def test_a_big_frame_before_hello_is_refused_unread(daemon, caplog):
    c = await daemon.raw()
    await c.send('{"type": "hello", "id": "h", "token": "' + "x" * 1_000_000 + '"}')
    assert await close_code(c.ws) == 1009
    await still_serving(daemon)
    no_tracebacks(caplog)


async def test_a_hello_fits_the_small_limit_and_then_big_frames_are_accepted(daemon, caplog):
    hello = {
        "type": "hello",
        "protocol": 1,
        "token": TEST_TOKEN,
        "client": {"name": "n" * 200, "version": "1.2.3", "role": "agent"},
    }
    c = await daemon.raw()
    welcome = await c.request(hello)
    assert welcome["type"] == "welcome"
    sid = await start_session(c)
    tree = "[9] StaticText 'row'\n" * (3 * PREAUTH_FRAME_BYTES)  # ~1.3 MB, far over 16 KiB
    obs = await c.request({"type": "observe", "session_id": sid, "url": OBS["url"], "axtree": tree})
    assert obs["type"] == "observed"
    no_tracebacks(caplog)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


async def test_the_recording_is_private(start_daemon, tmp_path):
    data = tmp_path / "data"
    daemon = await start_daemon()
    c = await daemon.client()
    await start_session(c)  # something written: WAL and SHM exist
    db = daemon.config.db_path
    assert _mode(data) == 0o700
    files = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
    assert all(p.exists() for p in files)
    assert {p.name: _mode(p) for p in files} == {p.name: 0o600 for p in files}


async def test_an_existing_open_data_dir_and_db_are_narrowed(start_daemon, tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    first = await start_daemon()
    await first.server.stop()
    db = first.config.db_path
    data.chmod(0o755)
    db.chmod(0o644)
    second = await start_daemon()
    c = await second.client()
    await start_session(c)
    assert _mode(data) == 0o700 and _mode(db) == 0o600
