"""The registry is discovered: every module of the package that states ``KINDS`` contributes
them, by module name then in the module's order; a module without ``KINDS`` adds none;
importing one kind's module imports no other (the discovery runs on first use)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from webshepherd.daemon import records
from webshepherd.daemon.records import discover, kind_for, kinds
from webshepherd.daemon.records.labels import KIND as LABEL_KIND
from webshepherd.daemon.records.labels import LabelRecord
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.requests import Label

PACKAGE = "planted_kinds"

KIND_MODULE = """
from dataclasses import dataclass
from webshepherd.daemon.records.kind import Record, RecordKind

def write(db, r): ...

{classes}
KINDS = ({kinds})
"""


def _kind_module(*names: str, table: str = "") -> str:
    classes = "".join(
        f"@dataclass(frozen=True)\nclass {n}(Record):\n    op = '{n.lower()}'\n\n" for n in names
    )
    ddl = table or "{n}"
    kinds_ = "".join(
        f"RecordKind({n}, write, 'CREATE TABLE IF NOT EXISTS {ddl.format(n=n.lower())} (x);'), "
        for n in names
    )
    return KIND_MODULE.format(classes=classes, kinds=kinds_)


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty package ``planted_kinds`` on ``sys.path`` (its modules forgotten after)."""
    folder = tmp_path / PACKAGE
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield folder
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def test_every_module_stating_kinds_is_discovered_by_name_then_in_its_order(
    planted: Path,
) -> None:
    (planted / "b_second.py").write_text(_kind_module("Third", "Fourth"))
    (planted / "a_first.py").write_text(_kind_module("First"))
    (planted / "c_helpers.py").write_text("def helper() -> int:\n    return 1\n")
    found = discover([str(planted)], PACKAGE)
    assert [k.record.__name__ for k in found] == ["First", "Third", "Fourth"]
    assert [k.record.__module__ for k in found] == [
        f"{PACKAGE}.a_first",
        f"{PACKAGE}.b_second",
        f"{PACKAGE}.b_second",
    ]
    assert f"{PACKAGE}.c_helpers" in sys.modules  # imported, and added no kind


def test_two_modules_creating_one_table_are_refused_naming_it(planted: Path) -> None:
    (planted / "a_one.py").write_text(_kind_module("One", table="shared"))
    (planted / "b_two.py").write_text(_kind_module("Two", table="shared"))
    with pytest.raises(WebShepherdError, match="table shared is created by One and Two"):
        discover([str(planted)], PACKAGE)


def test_the_package_discovers_its_own_kinds_once() -> None:
    assert kinds() is kinds()  # cached: discovered on first use
    assert kinds() == discover(records.__path__, records.__name__)
    assert LABEL_KIND in kinds()
    label = Label(id="l1", session_id="s1", step=0, action="a", items=["yes"], source="person")
    assert kind_for(LabelRecord(label, "person:ann", 1.0)) is LABEL_KIND


def test_importing_one_kind_module_imports_no_other() -> None:
    code = textwrap.dedent(
        """
        import sys
        import webshepherd.daemon.records.labels
        print(sorted(m for m in sys.modules if m.startswith("webshepherd.daemon.records")))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == str(
        [
            "webshepherd.daemon.records",
            "webshepherd.daemon.records.kind",
            "webshepherd.daemon.records.labels",
        ]
    )


def test_no_kind_module_imports_another_kind() -> None:
    """The lazy discovery's premise, for every module: within the package, a kind's module
    imports only the shared ``kind`` and ``stored``."""
    shared = {"kind", "stored"}
    for path in sorted(Path(records.__file__).parent.glob("*.py")):
        if path.name == "__init__.py":
            continue
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == records.__name__:
                    imported |= {a.name for a in node.names}
                elif node.module.startswith(records.__name__ + "."):
                    imported.add(node.module.rsplit(".", 1)[1])
            elif isinstance(node, ast.Import):
                imported |= {
                    a.name.rsplit(".", 1)[1]
                    for a in node.names
                    if a.name.startswith(records.__name__ + ".")
                }
        assert imported <= shared, (path.name, imported - shared)
