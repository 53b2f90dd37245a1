"""Downloads of a gated context (:mod:`webshepherd.integrations.commit_gate`): Chromium saves
every download (an attachment, the ``download`` attribute on any type, ``data:`` and ``blob:``
URLs) into the gate's private folder; once the file is complete the gate asks about it (its
name, type and size, and the page it came from) and moves it out only when approved."""

from __future__ import annotations

import contextlib
import mimetypes
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict
from urllib.parse import unquote

from webshepherd.daemon.browser.chromium import Steps
from webshepherd.integrations.commit_gate_parts import Holds
from webshepherd.protocol.commits import url_origin
from webshepherd.protocol.common import HeldRequest, RequestField

__all__ = ["DownloadHolds"]


class DownloadBegins(TypedDict, total=False):
    """CDP's ``Browser.downloadWillBegin``, the fields the gate reads."""

    frameId: str
    guid: str
    url: str
    suggestedFilename: str


class DownloadProgress(TypedDict, total=False):
    """CDP's ``Browser.downloadProgress``, the fields the gate reads."""

    guid: str
    totalBytes: float
    receivedBytes: float
    state: str


class DownloadHolds(Holds):
    """Each download the gate's page sessions report, held in the private folder until
    asked about."""

    _held_dir: Path | None
    _downloads: dict[str, _Download]
    _downloads_dir: Path | None
    saved: list[Path]  # approved downloads, where they were moved

    @property
    def downloads_dir(self) -> Path:
        """Where approved downloads go (made on first use when not given)."""
        if self._downloads_dir is None:
            self._downloads_dir = Path(tempfile.mkdtemp(prefix="webshepherd-downloads-"))
        return self._downloads_dir

    def _download_begins(self, event: DownloadBegins) -> None:
        guid = str(event.get("guid") or "")
        if not guid or guid in self._downloads or self._held_dir is None:
            return  # each page's session reports it: the first is kept
        frame = str(event.get("frameId") or "")
        page = next((tab.page for tab in self._tabs if tab.target == frame), None)
        self._downloads[guid] = _Download(
            guid=guid,
            url=str(event.get("url") or ""),
            name=str(event.get("suggestedFilename") or "download"),
            page_url=(page.url if page is not None else None) or None,
            trigger=self._trigger,
            element=self._element,
            folder=self._held_dir,
        )

    def _download_moves(self, event: DownloadProgress) -> Steps[None]:
        state = event.get("state")
        download = self._downloads.get(str(event.get("guid") or ""))
        if download is None or state not in ("completed", "canceled") or download.asked:
            return
        if state == "canceled":
            del self._downloads[download.guid]
            download.discard()
            return
        download.asked = True
        size = int(event.get("totalBytes") or event.get("receivedBytes") or 0)
        with contextlib.suppress(OSError):
            size = download.path.stat().st_size
        approved = yield from self._decided(download.request(size))
        self._downloads.pop(download.guid, None)
        if approved and download.path.is_file():
            self.saved.append(download.release(self.downloads_dir))
        else:
            download.discard()


@dataclass
class _Download:
    """A download Chromium is saving into the gate's held folder (named by its guid)."""

    guid: str
    url: str
    name: str
    page_url: str | None
    trigger: str | None
    element: str | None
    folder: Path
    asked: bool = False

    @property
    def path(self) -> Path:
        return self.folder / self.guid

    def mime(self) -> str:
        if self.url.startswith("data:"):
            head = unquote(self.url[5:].split(",", 1)[0]).split(";")[0].strip().lower()
            if head:
                return head[:128]
        return mimetypes.guess_type(self.name)[0] or "application/octet-stream"

    def request(self, size: int) -> HeldRequest:
        """What the card shows: the file's name, type and size, and the page it came from."""
        fields = [
            RequestField(name="file", value=self.name[:512]),
            RequestField(name="type", value=self.mime()),
            RequestField(name="size", value=f"{size} bytes"),
        ]
        return HeldRequest(
            method="GET",
            url=self.url[:8192],
            kind="download",
            origin=url_origin(self.url),
            fields=fields,
            page_url=self.page_url[:8192] if self.page_url else None,
            trigger=self.trigger,
            element=self.element,
        )

    def release(self, folder: Path) -> Path:
        """Move the file to ``folder`` under its own name (a free one: ``name (2).ext``)."""
        folder.mkdir(parents=True, exist_ok=True)
        name = Path(self.name.replace("\\", "/")).name.lstrip(".") or "download"
        target = folder / name
        stem, suffix = Path(name).stem, Path(name).suffix
        n = 1
        while target.exists():
            n += 1
            target = folder / f"{stem} ({n}){suffix}"
        shutil.move(str(self.path), target)
        return target

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()
