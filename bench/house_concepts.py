"""bench/house.py's "one of each" figures: files per message kind for every kind, the files a
new mode touches, the origin functions, the shapes of an approval and the modules over 500
lines. The rules are in :func:`one_of_each`'s docstring (printed under the table)."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from house_kind import generated, hand_written, kind_files, type_literal
from house_tree import Tree, classes

#: A new mode is written wherever an existing one is special-cased; ``watch`` is the mode
#: name no other concept of the project uses.
MODE_PROBE = "watch"
#: The wire class an approval is; its shapes are it and the classes sharing this many fields.
APPROVAL = "ApprovalRequest"
SHAPE_FIELDS = 6
SMALL_MODULE = 500
URL_PARTS = {"scheme", "netloc", "hostname", "port", "host", "origin"}
URL_PARSERS = {"urlsplit", "urlparse", "URL", "parse_url"}
TS_MODE = re.compile(rf"""["'`]{MODE_PROBE}["'`]""")


def request_kinds(tree: Tree) -> list[str]:
    """The ``type`` of every request class (protocol/requests.py, or a subclass of
    ``Request``): the message kinds a client sends."""
    found = set()
    for m, c in classes(tree):
        kind = type_literal(c)
        bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in c.bases}
        if (
            kind
            and m.package == "protocol"
            and (m.path.endswith("requests.py") or "Request" in bases)
        ):
            found.add(kind)
    return sorted(found)


def _docstring_nodes(tree: ast.Module) -> set[int]:
    """ids of the string constants that are docstrings (not code)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def mode_files(tree: Tree) -> list[str]:
    """Hand-written files that write the mode name ``watch`` as a string in code (Python:
    a string constant that is not a docstring; TypeScript under extension/src: a quoted
    ``watch``): where a new mode would have to be added."""
    out = []
    for m in sorted(tree.modules.values(), key=lambda m: m.path):
        if not hand_written(m):
            continue
        docs = _docstring_nodes(m.tree)
        if any(
            isinstance(n, ast.Constant) and n.value == MODE_PROBE and id(n) not in docs
            for n in m.nodes
        ):
            out.append(m.path)
    src = tree.root / "extension" / "src"
    for file in sorted(src.rglob("*.ts")) if src.is_dir() else []:
        text = file.read_text(encoding="utf-8")
        if file.name != "protocol.gen.ts" and not generated(text) and TS_MODE.search(text):
            out.append(file.relative_to(tree.root).as_posix())
    return out


def _referenced(fn: ast.AST) -> set[str]:
    names = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute):
            names.add(n.attr)
        elif isinstance(n, ast.Name):
            names.add(n.id)
    return names


def origin_functions(tree: Tree) -> list[str]:
    """Functions (``path:name``) that make an origin from a URL: named for an origin, and
    parsing a URL (``urlsplit``, ``urlparse``, ``URL``) or reading its parts (``scheme``,
    ``netloc``, ``hostname``, ``port``). One that only calls another origin function is a
    caller, not another origin function."""
    found = []
    for m in sorted(tree.modules.values(), key=lambda m: m.path):
        if not hand_written(m):
            continue
        for fn in m.nodes:
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if "origin" not in fn.name.lower():
                continue
            used = _referenced(fn)
            if used & URL_PARSERS or len(used & (URL_PARTS - {"origin"})) >= 2:
                found.append(f"{m.path}:{fn.name}")
    return found


def _fields(c: ast.ClassDef) -> set[str]:
    return {
        s.target.id
        for s in c.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    }


def approval_shapes(tree: Tree) -> list[str]:
    """The wire ``ApprovalRequest`` and every class (wire, record, view) sharing at least
    ``SHAPE_FIELDS`` of its field names: the shapes one approval is written in."""
    every = list(classes(tree))
    wire = [c for m, c in every if m.package == "protocol" and c.name == APPROVAL]
    if not wire:
        return []
    fields = _fields(wire[0])
    return sorted(
        {APPROVAL}
        | {
            f"{c.name} ({m.path})"
            for m, c in every
            if c.name != APPROVAL and len(_fields(c) & fields) >= SHAPE_FIELDS
        }
    )


def big_modules(tree: Tree, limit: int = SMALL_MODULE) -> list[tuple[str, int]]:
    """Modules over ``limit`` lines, longest first."""
    sizes = [(m.path, line_count(m.text)) for m in tree.modules.values()]
    return sorted(((p, n) for p, n in sizes if n > limit), key=lambda p: (-p[1], p[0]))


def line_count(text: str) -> int:
    """Lines as ``wc -l`` counts them, plus an unterminated last line."""
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


@dataclass
class Concepts:
    """One revision's figures."""

    kinds: dict[str, list[str]] = field(default_factory=dict)
    modes: list[str] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    approvals: list[str] = field(default_factory=list)
    big: list[tuple[str, int]] = field(default_factory=list)


def concepts(tree: Tree, kinds: list[str], progress: bool = True) -> Concepts:
    """Every figure of :func:`one_of_each` for one tree (a bar per kind on stderr)."""
    out = Concepts()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(kinds), desc=f"kinds at {tree.rev}", unit="kind", file=sys.stderr)
    mine = set(request_kinds(tree))
    for kind in kinds:
        out.kinds[kind] = kind_files(tree, kind).files if kind in mine else []
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    out.modes = mode_files(tree)
    out.origins = origin_functions(tree)
    out.approvals = approval_shapes(tree)
    out.big = big_modules(tree)
    return out


Table = Callable[[str, list[str], list[list[str]]], str]


def one_of_each(trees: list[Tree], table: Table, progress: bool = True) -> list[str]:
    """Rows of the "every kind" and "one of each" tables, the revisions side by side.

    - Files per message kind: ``--kind``'s rule for every request kind (a kind absent at a
      revision shows -), and the largest.
    - A new mode: hand-written files that write ``watch`` as a string in code.
    - Origin functions: functions named for an origin that parse a URL or read its parts.
    - Approval shapes: ``ApprovalRequest`` and the classes sharing 6 of its field names.
    - Modules over 500 lines.
    """
    revs = [t.rev for t in trees]
    kinds = sorted({k for t in trees for k in request_kinds(t)})
    per = [concepts(t, kinds, progress) for t in trees]
    present = [set(request_kinds(t)) for t in trees]
    rows = [
        [k, *[str(len(c.kinds[k])) if k in p else "-" for c, p in zip(per, present, strict=True)]]
        for k in kinds
    ]
    rows.append(
        ["largest", *[str(max((len(v) for v in c.kinds.values()), default=0)) for c in per]]
    )
    out = [table("Hand-written files per message kind (every request kind)", ["kind", *revs], rows)]
    rows = [
        ["a new mode: files writing 'watch'", *[str(len(c.modes)) for c in per]],
        ["origin functions", *[str(len(c.origins)) for c in per]],
        ["approval shapes", *[str(len(c.approvals)) for c in per]],
        [f"modules > {SMALL_MODULE} lines", *[str(len(c.big)) for c in per]],
    ]
    out.append(table("One of each", ["", *revs], rows))
    for rev, c in zip(revs, per, strict=True):
        out.append(f"at {rev}:")
        out.append(f"  mode files: {', '.join(c.modes) or 'none'}")
        out.append(f"  origin functions: {', '.join(c.origins) or 'none'}")
        out.append(f"  approval shapes: {', '.join(c.approvals) or 'none'}")
        big = ", ".join(f"{p} {n}" for p, n in c.big)
        out.append(f"  modules > {SMALL_MODULE} lines: {big or 'none'}")
    out.append("")
    return out
