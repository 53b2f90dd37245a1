"""Owner-only folders and files: the config dir (the pairing token, approver credentials and
codes, ``serve``'s starting marker) and the recording's folder are 0700, their files 0600,
whichever command makes them first."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)


def private_dir(path: Path) -> Path:
    """``path``, a folder only its owner may enter: created 0700 (whatever the umask), and an
    existing one this user owns narrowed to 0700 unless it is a shared (sticky) folder such as
    /tmp. Returns ``path``."""
    try:
        path.mkdir(mode=0o700, parents=True)
        path.chmod(0o700)  # mkdir's mode is masked by the umask; 0700 either way
    except FileExistsError:
        st = path.stat()
        if st.st_mode & 0o077 and not st.st_mode & stat.S_ISVTX and st.st_uid == os.getuid():
            log.info("narrowing %s to 0700 (owner only)", path)
            path.chmod(0o700)
    return path


def write_private(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` owner-only (0600), atomically, in a private folder (made so
    with :func:`private_dir`). Returns ``path``."""
    private_dir(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)  # an existing .tmp keeps its mode through O_CREAT
    os.replace(tmp, path)
    return path
