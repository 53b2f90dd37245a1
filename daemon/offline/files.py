"""Reading files someone may have sent you (``rescore``'s runs, ``eval``'s and ``train``'s
data, ``prompt``'s row): every read is bounded, and what breaks a bound is a
:class:`FileLimitError` that names the file and the limit.

- JSON nesting: a fast pre-scan of bracket depth (strings skipped) before ``json.loads``, so
  a deep file is refused instead of ending in a ``RecursionError``.
- Decompressed sizes: gzip is inflated as a stream, capped.
- Lines and whole files: capped before they are held in memory.
- Folders: a file is read only when, symlinks resolved, it lies under one of the allowed
  folders (:class:`Folders`: the run's own, plus those named on the command line).
- Screenshots: an image by its magic bytes (PNG, JPEG, WebP), within a size limit.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import IO, Any, Literal

from webshepherd.protocol.errors import WebShepherdError

#: Deepest JSON nesting read (real runs and datasets nest a dozen levels or so).
MAX_JSON_DEPTH = 256
#: A JSON file read whole (a browser-use history, a result.json).
MAX_JSON_FILE_BYTES = 512 * 1024 * 1024
#: One line of a JSONL file (a step with a base64 screenshot and its page text fits).
MAX_LINE_BYTES = 64 * 1024 * 1024
#: A gzip'd file once inflated (an AgentLab step file: a few screenshots as arrays and text).
MAX_INFLATED_BYTES = 256 * 1024 * 1024
#: A screenshot (it is sent base64 in one frame of at most 32 MiB).
MAX_SCREENSHOT_BYTES = 16 * 1024 * 1024

ImageMime = Literal["image/png", "image/jpeg", "image/webp"]

_MIB = 1024 * 1024
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class FileLimitError(WebShepherdError):
    """A file broke a bound on what is read from it (too deep, too big, outside the allowed
    folders, not an image); the message names the file and the limit."""


def _mib(n: int) -> str:
    return f"{n // _MIB} MiB"


def json_depth(text: str) -> int:
    """The deepest bracket nesting of ``text`` outside its JSON strings."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def loads(text: str, where: object) -> Any:
    """``json.loads`` after the depth pre-scan (``where`` names the file, line or field in the
    error); a syntax error is still ``json.JSONDecodeError``, for the caller to word."""
    if json_depth(text) > MAX_JSON_DEPTH:
        raise FileLimitError(
            f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels (the limit)"
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer past Python's digit limit for str -> int
        digits = sys.get_int_max_str_digits()
        raise FileLimitError(f"{where}: a number longer than {digits} digits (the limit)") from None


def read_text(path: Path, limit: int = MAX_JSON_FILE_BYTES) -> str:
    """The UTF-8 text of ``path``, refused past ``limit`` bytes (OSError and UnicodeDecodeError
    pass through, for the caller to word)."""
    with path.open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileLimitError(f"{path}: larger than {_mib(limit)} (the limit for this file)")
    return data.decode("utf-8")


def read_json(path: Path, limit: int = MAX_JSON_FILE_BYTES) -> Any:
    """A whole JSON file, size and depth bounded."""
    return loads(read_text(path, limit), path)


def lines(f: IO[str], path: Path, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, str]]:
    """``(number, line)`` of an open text file, a line longer than ``limit`` characters
    refused before it is held whole."""
    n = 0
    while True:
        line = f.readline(limit + 1)
        if not line:
            return
        n += 1
        if len(line) > limit and not line.endswith("\n"):
            raise FileLimitError(f"{path}:{n}: a line longer than {_mib(limit)} (the limit)")
        yield n, line


class _Capped(io.RawIOBase):
    """A gzip stream read through, refused once more than ``limit`` bytes came out."""

    def __init__(self, raw: gzip.GzipFile, path: Path, limit: int) -> None:
        self._raw, self._path, self._limit, self._out = raw, path, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(min(len(buffer), _MIB, self._limit + 1 - self._out))
        self._out += len(data)
        if self._out > self._limit:
            raise FileLimitError(
                f"{self._path}: inflates to more than {_mib(self._limit)} (the limit)"
            )
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()


def open_gzip(path: Path, limit: int = MAX_INFLATED_BYTES) -> io.BufferedReader:
    """``path`` inflated as a stream that raises :class:`FileLimitError` past ``limit`` bytes
    (a gzip bomb stops there; close it when done)."""
    return io.BufferedReader(_Capped(gzip.open(path, "rb"), path, limit), _MIB)


GZIP_ERRORS = (OSError, EOFError, zlib.error)


def image_mime(data: bytes) -> ImageMime | None:
    """The image type of ``data`` by its magic bytes (None: not PNG, JPEG or WebP)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def check_image(data: bytes, where: object) -> ImageMime:
    """The mime of a screenshot's bytes; refused when not an image or too big."""
    if len(data) > MAX_SCREENSHOT_BYTES:
        raise FileLimitError(
            f"{where}: a screenshot larger than {_mib(MAX_SCREENSHOT_BYTES)} (the limit)"
        )
    mime = image_mime(data)
    if mime is None:
        raise FileLimitError(f"{where}: not an image (a screenshot is PNG, JPEG or WebP)")
    return mime


@dataclass(frozen=True)
class Folders:
    """The folders files may be read from: the run's own, and any named with ``--allow-dir``
    (each resolved, symlinks followed)."""

    roots: tuple[Path, ...]

    @classmethod
    def of(cls, run: Path, allowed: Iterable[Path] = ()) -> Folders:
        """``run``'s folder (itself, or a file's parent) and ``allowed``."""
        own = run if run.is_dir() else run.parent
        return cls(tuple(p.resolve() for p in (own, *allowed)))

    def check(self, path: Path) -> Path:
        """``path`` resolved, when it lies under an allowed folder; else refused."""
        real = path.resolve()
        if not any(real.is_relative_to(root) for root in self.roots):
            shown = path if real == path.absolute() else f"{path} (-> {real})"
            raise FileLimitError(
                f"{shown}: outside the run's folder {self.roots[0]} (name another folder "
                "with --allow-dir to read from it)"
            )
        return real

    def read_screenshot(self, path: Path) -> tuple[bytes, ImageMime]:
        """A screenshot file under an allowed folder: an image, within the size limit."""
        real = self.check(path)
        with real.open("rb") as f:
            data = f.read(MAX_SCREENSHOT_BYTES + 1)
        return data, check_image(data, path)

    def try_screenshot(self, path: Path) -> tuple[bytes, ImageMime] | str:
        """:meth:`read_screenshot`, or why it is left out (one line) when it may not be read."""
        try:
            return self.read_screenshot(path)
        except FileLimitError as exc:
            return exc.message
        except OSError as exc:
            return f"{path}: {exc.strerror}"
