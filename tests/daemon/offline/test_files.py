"""The bounds on files read on a person's behalf: JSON depth, line length, inflated size,
allowed folders (symlinks resolved) and screenshots by their magic bytes. (Through the CLI,
on hostile files: tests/hostile/test_sent_files.py.)"""

from __future__ import annotations

import gzip
import json
import pickle
from pathlib import Path

import pytest
from webshepherd.daemon.dev.screenshots import axtree_png
from webshepherd.daemon.offline import files
from webshepherd.daemon.offline.files import FileLimitError, Folders


def png() -> bytes:
    return axtree_png("[1] link 'x'")


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert files.json_depth('{"a": [[1], {"b": []}]}') == 4
    assert files.json_depth('{"a": "[[[[{{{{", "b": "\\"[[["}') == 1  # escaped quote too
    assert files.json_depth("[]" * 10_000) == 1
    assert files.json_depth("12") == 0
    deep = "[" * 200_000 + "]" * 200_000
    assert files.json_depth(deep) == 200_000


def test_loads_refuses_past_the_limit_naming_where() -> None:
    at_limit = "[" * files.MAX_JSON_DEPTH + "]" * files.MAX_JSON_DEPTH
    assert isinstance(files.loads(at_limit, "x"), list)
    over = "[" * (files.MAX_JSON_DEPTH + 1) + "]" * (files.MAX_JSON_DEPTH + 1)
    with pytest.raises(FileLimitError, match=r"^run\.jsonl:3: JSON nested deeper than 256"):
        files.loads(over, "run.jsonl:3")
    with pytest.raises(json.JSONDecodeError):  # syntax errors stay the caller's to word
        files.loads("{nope", "x")


def test_a_long_line_is_refused_before_it_is_held(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n' + "x" * 50 + "\n" + "y" * 5)
    with path.open() as f:
        assert [n for n, _ in files.lines(f, path, limit=60)] == [1, 2, 3]
    with path.open() as f, pytest.raises(FileLimitError, match=r"rows\.jsonl:2: a line longer"):
        list(files.lines(f, path, limit=20))


def test_a_whole_file_is_refused_past_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text("[" + "1," * 100 + "1]")
    assert len(files.read_json(path)) == 101
    with pytest.raises(FileLimitError, match="larger than 0 MiB"):
        files.read_json(path, limit=100)


def test_gzip_is_inflated_with_a_cap(tmp_path: Path) -> None:
    ok = tmp_path / "ok.pkl.gz"
    with gzip.open(ok, "wb") as f:
        pickle.dump({"x": b"y" * 300_000}, f)
    with files.open_gzip(ok) as f:
        assert len(pickle.Unpickler(f).load()["x"]) == 300_000
    with files.open_gzip(ok, limit=100_000) as f, pytest.raises(FileLimitError, match="inflates"):
        pickle.Unpickler(f).load()
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"\0" * (4 << 20)))  # 4 KiB that inflate to 4 MiB
    with files.open_gzip(bomb, limit=1 << 20) as f, pytest.raises(FileLimitError):
        f.read()


def test_folders_refuse_what_resolves_outside(tmp_path: Path) -> None:
    run, outside = tmp_path / "run", tmp_path / "outside"
    run.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("key")
    (run / "in.png").write_bytes(png())
    (run / "link.png").symlink_to(outside / "secret")
    folders = Folders.of(run / "history.json")
    assert folders.check(run / "in.png") == (run / "in.png").resolve()
    for path in (run / "link.png", run / ".." / "outside" / "secret", outside / "secret"):
        with pytest.raises(FileLimitError, match=r"outside the run.s folder .*--allow-dir"):
            folders.check(path)
    with pytest.raises(FileLimitError, match=r"link\.png \(-> .*secret\)"):
        folders.check(run / "link.png")  # the symlink's target is named
    wider = Folders.of(run, [outside])
    assert wider.check(run / "link.png") == (outside / "secret").resolve()


def test_a_screenshot_is_an_image_by_its_bytes(tmp_path: Path) -> None:
    assert files.image_mime(png()) == "image/png"
    assert files.image_mime(b"\xff\xd8\xff\xe0" + b"\0" * 20) == "image/jpeg"
    assert files.image_mime(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp"
    assert files.image_mime(b"-----BEGIN OPENSSH PRIVATE KEY-----") is None
    (tmp_path / "key.png").write_text("-----BEGIN OPENSSH PRIVATE KEY-----")
    (tmp_path / "ok.jpg").write_bytes(png())  # the bytes decide, not the name
    folders = Folders.of(tmp_path)
    assert folders.read_screenshot(tmp_path / "ok.jpg") == (png(), "image/png")
    with pytest.raises(FileLimitError, match=r"key\.png: not an image"):
        folders.read_screenshot(tmp_path / "key.png")
    big = png() + b"\0" * files.MAX_SCREENSHOT_BYTES
    with pytest.raises(FileLimitError, match="larger than 16 MiB"):
        files.check_image(big, "big.png")


def test_a_number_past_the_digit_limit_is_a_limit_not_a_traceback() -> None:
    with pytest.raises(FileLimitError, match=r"^row 2: a number longer than \d+ digits"):
        files.loads("[" + "1" * 5000 + "]", "row 2")
