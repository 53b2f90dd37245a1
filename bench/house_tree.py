"""Reading one git revision's ``webshepherd`` packages for bench/house.py (no checkout).

The packages are setup.py's ``{"webshepherd.x": "folder"}`` mapping at that revision.
"""

from __future__ import annotations

import ast
import io
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

DEFAULT_FOLDERS = {
    "webshepherd.protocol": "protocol",
    "webshepherd.daemon": "daemon",
    "webshepherd.tui": "tui",
    "webshepherd.integrations": "integrations",
}


@dataclass
class Module:
    """One Python file of the packages: its module name, path in the tree, text and AST."""

    name: str
    path: str  # relative to the tree's root, e.g. daemon/records.py
    package: str  # top folder, e.g. daemon
    text: str
    tree: ast.Module
    is_package: bool

    @cached_property
    def nodes(self) -> list[ast.AST]:
        """Every node of the module (``ast.walk``, once: the figures walk each module often)."""
        return list(ast.walk(self.tree))

    @property
    def group(self) -> str:
        """``daemon/<sub>`` for a daemon subpackage's module, ``daemon/*.py`` for a top one."""
        parts = self.path.split("/")
        if parts[0] != "daemon":
            return parts[0]
        return f"daemon/{parts[1]}" if len(parts) > 2 else "daemon/*.py"


@dataclass
class Tree:
    """One revision's packages, parsed."""

    rev: str
    root: Path
    modules: dict[str, Module] = field(default_factory=dict)


def git(repo: Path, *args: str) -> bytes:
    """Run git in ``repo``; a failure is a clear error naming the command."""
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {proc.stderr.decode().strip()}")
    return proc.stdout


def folders_of(setup_py: str) -> dict[str, str]:
    """setup.py's ``{"webshepherd.x": "folder"}`` dict literal, else the known layout."""
    try:
        parsed = ast.parse(setup_py)
    except SyntaxError:
        return dict(DEFAULT_FOLDERS)
    for node in ast.walk(parsed):
        if isinstance(node, ast.Dict) and node.keys:
            pairs = [
                (k.value, v.value)
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
            ]
            found = {
                k: v
                for k, v in pairs
                if isinstance(k, str) and isinstance(v, str) and k.startswith("webshepherd.")
            }
            if found:
                return found
    return dict(DEFAULT_FOLDERS)


def read_tree(repo: Path, rev: str, dest: Path) -> Tree:
    """Extract ``rev``'s packages (and extension/src) under ``dest`` and parse them."""
    sha = git(repo, "rev-parse", "--short", f"{rev}^{{commit}}").decode().strip()
    top = set(git(repo, "ls-tree", "--name-only", sha).decode().split())
    setup = git(repo, "show", f"{sha}:setup.py").decode() if "setup.py" in top else ""
    folders = folders_of(setup)
    wanted = sorted({f for f in folders.values() if f in top} | ({"extension"} & top))
    if wanted:
        data = git(repo, "archive", "--format=tar", sha, *wanted)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(dest, filter="data")
    tree = Tree(rev=f"{rev} ({sha})" if rev != sha else sha, root=dest)
    for pkg, folder in folders.items():
        base = dest / folder
        for file in sorted(base.rglob("*.py")) if base.is_dir() else []:
            rel = file.relative_to(base)
            if "__pycache__" in rel.parts:
                continue
            parts = [*rel.parts[:-1], *([] if rel.name == "__init__.py" else [rel.stem])]
            name = ".".join([pkg, *parts])
            text = file.read_text(encoding="utf-8")
            tree.modules[name] = Module(
                name=name,
                path=file.relative_to(dest).as_posix(),
                package=folder,
                text=text,
                tree=ast.parse(text, filename=str(file)),
                is_package=rel.name == "__init__.py",
            )
    return tree


def classes(tree: Tree) -> Iterator[tuple[Module, ast.ClassDef]]:
    """Every class definition of the packages."""
    for m in tree.modules.values():
        for node in m.nodes:
            if isinstance(node, ast.ClassDef):
                yield m, node


_NAMES: dict[int, tuple[ast.AST, frozenset[str]]] = {}


def names_in(node: ast.AST) -> frozenset[str]:
    """Identifiers a node names: ``Name`` ids and ``Attribute`` attrs (remembered per node: the
    node is kept with its names, so its id is not reused)."""
    if (known := _NAMES.get(id(node))) is not None and known[0] is node:
        return known[1]
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
    _NAMES[id(node)] = (node, frozenset(out))
    return _NAMES[id(node)][1]
