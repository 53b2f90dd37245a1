"""``webshepherd prompt``: the exact messages (and token count) the model gets for a row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from webshepherd.daemon.cli import main

from tests.fixtures.data import WEBPRM_ROWS

LONG = WEBPRM_ROWS / "long-history.row.json"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["prompt", *argv]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("path", sorted(WEBPRM_ROWS.glob("*.row.json")), ids=lambda p: p.stem)
def test_printed_messages_equal_the_authors_pipeline(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = json.loads(path.with_name(path.name.replace(".row", ".expected")).read_text("utf-8"))
    row = json.loads(path.read_text("utf-8"))
    assert isinstance(row["step_id"], str)  # the official schema's string step ids are read
    assert _run(capsys, "judge", "--row", str(path))["messages"] == expected["chosen"]
    for k in range(len(row["rejected"])):
        got = _run(capsys, "judge", "--row", str(path), "--candidate", f"rejected:{k}")
        assert got["messages"] == expected[f"rejected:{k}"]
    assert _run(capsys, "checklist", "--row", str(path))["messages"] == expected["checklist"]
    base = json.loads(path.with_name(path.name.replace(".row", ".baselines.expected")).read_text())
    for style in ("baseline", "baseline-likert"):
        got = _run(capsys, "judge", "--row", str(path), "--prompt", style)
        assert got["messages"] == base[style]["chosen"]
        assert got["settings"]["prompt"] == style
        assert got["settings"]["one_sample"] == "sampled at the temperature"
        checklist = _run(capsys, "checklist", "--row", str(path), "--prompt", style)
        assert checklist["messages"] == base[style]["checklist"]


@pytest.mark.model
def test_prompt_tokens_from_the_model_and_the_engines_cut(
    capsys: pytest.CaptureFixture[str], tiny_engine, tiny_model_path: Path
) -> None:
    got = _run(capsys, "judge", "--row", str(LONG), "--model", str(tiny_model_path))
    backend = tiny_engine.backend
    assert got["prompt_tokens"] == backend.count_tokens(backend.render_chat(got["messages"]))
    assert got["truncated_axtree"] is False
    small = got["prompt_tokens"] + 512 + 16 - 5  # five tokens short: the tree loses lines
    cut = _run(
        capsys,
        "judge",
        "--row",
        str(LONG),
        "--model",
        str(tiny_model_path),
        "--max-context",
        str(small),
    )
    assert cut["truncated_axtree"] is True and cut["prompt_tokens"] <= small - 512 - 16
    assert "[… AXTree truncated: " in cut["messages"][1]["content"]


def test_bad_arguments_say_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prompt", "judge", "--row", str(LONG), "--candidate", "rejected:2"]) == 1
    assert "the row has 2 rejected actions" in capsys.readouterr().err
    assert main(["prompt", "judge", "--row", str(LONG), "--candidate", "best"]) == 1
    assert "chosen or rejected:K" in capsys.readouterr().err
    two = tmp_path / "two.jsonl"
    line = json.dumps(json.loads(LONG.read_text("utf-8")))
    two.write_text(f"{line}\n{line}\n", encoding="utf-8")
    assert main(["prompt", "checklist", "--row", str(two)]) == 1
    assert "holds 2 rows; --row needs exactly one" in capsys.readouterr().err
    one = tmp_path / "one.jsonl"
    one.write_text(line + "\n", encoding="utf-8")
    assert main(["prompt", "checklist", "--row", str(one)]) == 0


@pytest.mark.model
def test_the_settings_shown_are_the_checkpoints(
    capsys: pytest.CaptureFixture[str], tiny_model_path: Path, tmp_path: Path
) -> None:
    """With --model the sampling settings come from its generation_config.json."""
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_model_path, model)
    config = json.loads((model / "generation_config.json").read_text())
    config.update(top_k=20, top_p=0.95, temperature=0.6)
    (model / "generation_config.json").write_text(json.dumps(config))
    got = _run(capsys, "judge", "--row", str(LONG), "--model", str(model))
    sampling = got["settings"]["sampling"]
    assert (sampling["top_k"], sampling["top_p"], sampling["repetition_penalty"]) == (
        20,
        0.95,
        None,
    )
    assert got["settings"]["temperature"] == 1.0  # the request's, not the file's 0.6
    assert got["settings"]["one_sample"] == "greedy"
