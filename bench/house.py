"""The house's structural figures for one or more git revisions, side by side (no assertions).

    .venv/bin/python bench/house.py --rev d4436cb --rev HEAD [--kind label] [--compare NAME=DIR]

Each revision's tree is read with ``git archive`` into a temporary directory (the checkout is
never touched). The packages are the folders of setup.py's ``webshepherd.*`` mapping
(protocol/, daemon/, tui/, integrations/); tests are never read. Figures, one table each:

1. Largest modules: the 10 longest Python modules (lines) and how many are over 600 lines.
2. ``Any`` per package: AST ``Name`` nodes ``Any`` plus ``typing.Any`` attributes (strings and
   comments do not count), per top package and per daemon subpackage.
3. Import loops: strongly connected components (more than one module; self-imports dropped) of
   the module import graph, parsed with ``ast`` (``webshepherd.*`` absolute and relative
   imports; ``from p import m`` is an edge to module ``p.m`` when it exists, else to ``p``).
   Counted three ways: every import (``if TYPE_CHECKING:`` ones too), runtime imports (module
   level and inside functions), module-level imports only; the TYPE_CHECKING imports are
   counted apart. Each loop is listed with the narrowest of the three that still closes it.
4. Functions over 80 lines (``def`` line to last line, methods and nested ones included): their
   share per package; ``--compare NAME=DIR`` adds another source tree's share (websockets, vLLM).
5. Files per message kind (``--kind``, default ``label``). The rule: the kind's classes are
   (a) protocol/'s classes whose field ``type`` is ``Literal["KIND"]`` (the request), (b) the
   replies: wire classes named in the return annotation of a protocol/ function that constructs
   a request class, or whose docstring starts "Reply to ``KIND``", (c) the records: classes
   outside protocol/ with a field annotated with a request class. The op methods are the names
   of the protocol/ functions that construct a request class; their owners, the hand-written
   classes defining a method of that name that names a kind class. The tables are those a
   function taking a record inserts into (``INSERT INTO t``, or a created table's name passed
   as a string), and (d) the reads: classes of a record's module named in the return annotation
   of its functions that select from those tables. A hand-written Python file of the
   packages counts when it defines a kind class, imports one from a webshepherd module or uses
   one as ``module.Class``, uses ``Owner.method``, or holds SQL naming a table (``FROM``,
   ``INTO``, ``JOIN``, ``UPDATE``, ``TABLE``); a hand-written extension/src/*.ts file counts
   when it imports a kind class from protocol.gen. Not hand-written: protocol/schema/,
   extension/src/protocol.gen.ts, and any file whose first 5 lines say it is generated or not
   to be edited. The derived classes, methods, tables and files are printed per revision.
6. One of each (bench/house_concepts.py): files per message kind by the rule of 5 for every
   request kind; the files a new mode touches (hand-written files writing the mode name
   ``watch`` as a string in code); origin functions (named for an origin, parsing a URL or
   reading its parts); the shapes of an approval (``ApprovalRequest`` and the classes sharing 6
   of its field names); the modules over 500 lines.
7. Twins: dataclass / pydantic classes whose own field names overlap another's by 6 or more.
"""

from __future__ import annotations

import argparse
import ast
import shlex
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from house_concepts import line_count, one_of_each
from house_kind import kind_files, wire_kinds
from house_tree import Module, Tree, classes, names_in, read_tree

REPO = Path(__file__).resolve().parents[1]
BIG_MODULE = 600
LONG_FUNCTION = 80
TWIN_FIELDS = 6


# --- 1. largest modules ---------------------------------------------------------------------


def largest(tree: Tree, top: int = 10) -> tuple[list[tuple[str, int]], int, int]:
    """The ``top`` longest modules, the number over 600 lines and the number of modules."""
    sizes = sorted(
        ((m.path, line_count(m.text)) for m in tree.modules.values()), key=lambda p: (-p[1], p[0])
    )
    return sizes[:top], sum(n > BIG_MODULE for _, n in sizes), len(sizes)


# --- 2. Any ---------------------------------------------------------------------------------


def any_count(module: ast.Module) -> int:
    """``Any`` used as a name, and ``typing.Any`` (or an alias of typing) as an attribute."""
    typing = {"typing", "typing_extensions"}
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            typing |= {a.asname for a in node.names if a.name in typing and a.asname}
    return sum(
        (isinstance(node, ast.Name) and node.id == "Any")
        or (
            isinstance(node, ast.Attribute)
            and node.attr == "Any"
            and isinstance(node.value, ast.Name)
            and node.value.id in typing
        )
        for node in ast.walk(module)
    )


def any_per_group(tree: Tree) -> dict[str, int]:
    """``Any`` per top package and per daemon subpackage."""
    counts: Counter[str] = Counter()
    for m in tree.modules.values():
        n = any_count(m.tree)
        counts[m.package] += n
        if m.package == "daemon":
            counts[m.group] += n
    return dict(counts)


# --- 3. import loops ------------------------------------------------------------------------


def is_type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_nodes(node: ast.AST, where: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with where it runs: ``module``, ``function`` or ``typing``."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node, where
    elif isinstance(node, ast.If) and is_type_checking(node.test):
        for stmt in node.body:
            yield from import_nodes(stmt, "typing")
        for stmt in node.orelse:
            yield from import_nodes(stmt, where)
    else:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and where == "module":
            where = "function"
        for child in ast.iter_child_nodes(node):
            yield from import_nodes(child, where)


def nearest(name: str, modules: dict[str, Module]) -> str | None:
    """``name`` or its longest prefix that is a module of the tree."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in modules:
            return ".".join(parts)
        parts.pop()
    return None


def edges_of(m: Module, modules: dict[str, Module]) -> Iterator[tuple[str, str]]:
    """``(imported module, where)`` for each webshepherd import of ``m``."""
    for stmt, where in import_nodes(m.tree, "module"):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name.startswith("webshepherd.") and (t := nearest(alias.name, modules)):
                    yield t, where
            continue
        if stmt.level:
            base = m.name.split(".")
            if not m.is_package:
                base = base[:-1]
            base = base[: len(base) - (stmt.level - 1)] if stmt.level > 1 else base
            target = ".".join([*base, *([stmt.module] if stmt.module else [])])
        elif stmt.module and stmt.module.startswith("webshepherd"):
            target = stmt.module
        else:
            continue
        for alias in stmt.names:
            full = f"{target}.{alias.name}"
            t = full if full in modules else nearest(target, modules)
            if t:
                yield t, where


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Components of more than one node (each sorted), largest first."""
    reach: dict[str, set[str]] = {}
    for start in graph:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            if (node := todo.pop()) not in seen:
                seen.add(node)
                todo += graph.get(node, ())
        reach[start] = seen
    comps = {frozenset({n} | {u for u in reach[n] if n in reach.get(u, ())}) for n in graph}
    return sorted((sorted(c) for c in comps if len(c) > 1), key=lambda c: (-len(c), c))


@dataclass
class Loops:
    """The import graph's loops over every import (``TYPE_CHECKING`` ones too), over runtime
    imports (module level and in functions) and over module-level ones only; and the number of
    TYPE_CHECKING imports."""

    every: list[list[str]]
    runtime: list[list[str]]
    module_level: list[list[str]]
    typing_edges: int


def loops(tree: Tree) -> Loops:
    """Strongly connected components of the module import graph (self-loops excluded)."""
    graphs: dict[str, dict[str, set[str]]] = {
        g: {n: set() for n in tree.modules} for g in ("every", "runtime", "module")
    }
    typing_edges = 0

    for m in tree.modules.values():
        for target, where in edges_of(m, tree.modules):
            if target == m.name:
                continue
            graphs["every"][m.name].add(target)
            if where == "typing":
                typing_edges += 1
                continue
            graphs["runtime"][m.name].add(target)
            if where == "module":
                graphs["module"][m.name].add(target)
    return Loops(
        every=strongly_connected(graphs["every"]),
        runtime=strongly_connected(graphs["runtime"]),
        module_level=strongly_connected(graphs["module"]),
        typing_edges=typing_edges,
    )


# --- 4. long functions ----------------------------------------------------------------------


def function_lengths(module: ast.Module) -> list[int]:
    """Length of every function and method, ``def`` line to last line."""
    return [
        (node.end_lineno or node.lineno) - node.lineno + 1
        for node in ast.walk(module)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def long_share(lengths: list[int]) -> str:
    """``long/all (percent)``."""
    long = sum(n > LONG_FUNCTION for n in lengths)
    return f"{long}/{len(lengths)} ({100 * long / len(lengths):.1f}%)" if lengths else "0/0"


def long_functions(tree: Tree) -> dict[str, str]:
    """Share of functions over 80 lines per top package and daemon subpackage."""
    lengths: dict[str, list[int]] = {}
    for m in tree.modules.values():
        ls = function_lengths(m.tree)
        lengths.setdefault(m.package, []).extend(ls)
        if m.package == "daemon":
            lengths.setdefault(m.group, []).extend(ls)
    return {k: long_share(v) for k, v in lengths.items()}


def external_share(directory: Path) -> str:
    """The same share for another project's source tree (files that do not parse skipped)."""
    lengths: list[int] = []
    for file in sorted(directory.rglob("*.py")):
        try:
            lengths += function_lengths(ast.parse(file.read_bytes()))
        except (SyntaxError, ValueError):
            continue
    return long_share(lengths)


# --- 6. twins -------------------------------------------------------------------------------


def decorated_dataclass(c: ast.ClassDef) -> bool:
    """``@dataclass``, ``@dataclass(...)``, ``@dataclasses.dataclass``."""
    for d in c.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
        if name == "dataclass":
            return True
    return False


def twins(tree: Tree) -> list[tuple[str, str, int]]:
    """Pairs of dataclass/pydantic classes sharing 6 or more own field names, most first; a
    class is named by its name, with its path only where two classes of the tree share it."""
    every = list(classes(tree))
    models = {"BaseModel", "RootModel"}
    while True:  # pydantic by inheritance, resolved by class name across the packages
        more = {c.name for _, c in every if names_in(ast.Tuple(elts=c.bases)) & models} - models
        if not more:
            break
        models |= more
    found: list[tuple[Module, ast.ClassDef]] = [
        (m, c) for m, c in every if c.name in models or decorated_dataclass(c)
    ]
    twice = {n for n, k in Counter(c.name for _, c in found).items() if k > 1}
    fields: dict[str, set[str]] = {}
    for m, c in found:
        key = f"{c.name} ({m.path})" if c.name in twice else c.name
        fields[key] = {
            s.target.id
            for s in c.body
            if isinstance(s, ast.AnnAssign)
            and isinstance(s.target, ast.Name)
            and "ClassVar" not in names_in(s.annotation)
        }
    keys = sorted(fields)
    pairs = [
        (a, b, len(fields[a] & fields[b]))
        for i, a in enumerate(keys)
        for b in keys[i + 1 :]
        if len(fields[a] & fields[b]) >= TWIN_FIELDS
    ]
    return sorted(pairs, key=lambda p: (-p[2], p[0], p[1]))


# --- output ---------------------------------------------------------------------------------


def table(title: str, header: list[str], rows: list[list[str]]) -> str:
    """A plain-text table with a title line."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    rule = "  ".join("-" * w for w in widths)
    return "\n".join([f"## {title}", line(header), rule, *map(line, rows), ""])


def report(trees: list[Tree], kind: str, compare: dict[str, Path], progress: bool = False) -> str:
    """Every figure, one table each, the revisions side by side."""
    revs = [t.rev for t in trees]
    out: list[str] = []

    sizes = [largest(t) for t in trees]
    rows = [
        [f"{i + 1}", *[f"{s[0][i][0]} {s[0][i][1]}" if i < len(s[0]) else "" for s in sizes]]
        for i in range(10)
    ]
    rows.append([f"> {BIG_MODULE} lines", *[f"{s[1]} of {s[2]} modules" for s in sizes]])
    out.append(table("Largest modules (lines)", ["rank", *revs], rows))

    anys = [any_per_group(t) for t in trees]
    groups = ["protocol", "daemon", "tui", "integrations"]
    subs = sorted({g for a in anys for g in a if g.startswith("daemon/")})
    rows = [[g, *[str(a.get(g, "-")) for a in anys]] for g in [*groups, *subs]]
    out.append(table("`Any` as a type (Name + typing.Any)", ["package", *revs], rows))

    lps = [loops(t) for t in trees]

    def stats(label: str, pick: Callable[[Loops], list[list[str]]]) -> list[list[str]]:
        return [
            [f"{label}: loops", *[str(len(pick(lp))) for lp in lps]],
            [f"{label}: modules in them", *[str(sum(map(len, pick(lp)))) for lp in lps]],
        ]

    rows = [
        *stats("every import", lambda lp: lp.every),
        *stats("runtime imports (no TYPE_CHECKING)", lambda lp: lp.runtime),
        *stats("module-level imports only", lambda lp: lp.module_level),
        ["TYPE_CHECKING imports", *[str(lp.typing_edges) for lp in lps]],
    ]
    out.append(table("Import loops (strongly connected components, size > 1)", ["", *revs], rows))
    for rev, lp in zip(revs, lps, strict=True):
        out.append(f"loops at {rev} (every import), by what closes them: [module] module-level")
        out.append(
            "  imports, [function] only with imports in functions, [TYPE_CHECKING] only with those:"
        )
        module_level, runtime = [set(c) for c in lp.module_level], [set(c) for c in lp.runtime]
        for comp in lp.every:
            how = (
                "module"
                if set(comp) in module_level
                else "function"
                if set(comp) in runtime
                else "TYPE_CHECKING"
            )
            short = [n.removeprefix("webshepherd.") for n in comp]
            out.append(f"  {len(comp)} [{how}]: {', '.join(short)}")
        out.append("")

    longs = [long_functions(t) for t in trees]
    keys = [*groups, *sorted({g for lg in longs for g in lg if g.startswith("daemon/")})]
    rows = [[g, *[lg.get(g, "-") for lg in longs]] for g in keys]
    out.append(table(f"Functions over {LONG_FUNCTION} lines (share)", ["package", *revs], rows))
    for name, directory in compare.items():
        out.append(f"for comparison, {name} ({directory}): {external_share(directory)}")
    if compare:
        out.append("")

    kinds = [kind_files(t, kind) for t in trees]
    if not any(k.requests for k in kinds):
        known = sorted({w for t in trees for w in wire_kinds(t)})
        raise SystemExit(f"--kind {kind!r}: no wire class has that type; known: {', '.join(known)}")
    every_file = sorted({f for k in kinds for f in k.files})
    rows = [[f, *["x" if f in k.files else "-" for k in kinds]] for f in every_file]
    rows.append(["files", *[str(len(k.files)) for k in kinds]])
    out.append(table(f"Files per message kind: {kind!r}", ["file", *revs], rows))
    for rev, k in zip(revs, kinds, strict=True):
        out.append(
            f"derived at {rev}: requests {sorted(k.requests)}, replies {sorted(k.replies)}, "
            f"records {sorted(k.records)}, methods {sorted(k.methods)} on {sorted(k.owners)}, "
            f"tables {sorted(k.tables)}, reads {sorted(k.reads)}"
        )
    out.append("")
    out.extend(one_of_each(trees, table, progress))

    tws = [{(a, b): n for a, b, n in twins(t)} for t in trees]
    pairs = sorted(
        {p for tw in tws for p in tw}, key=lambda p: (-max(tw.get(p, 0) for tw in tws), p)
    )
    rows = [[f"{a} ~ {b}", *[str(tw.get((a, b), "-")) for tw in tws]] for a, b in pairs]
    rows.append(["pairs", *[str(len(tw)) for tw in tws]])
    out.append(table(f"Twins (>= {TWIN_FIELDS} shared field names)", ["pair", *revs], rows))
    return "\n".join(out)


def compare_arg(text: str) -> tuple[str, Path]:
    """``NAME=DIR`` of an existing directory."""
    name, sep, directory = text.partition("=")
    if not sep or not name or not Path(directory).is_dir():
        raise argparse.ArgumentTypeError(f"expected NAME=DIR of an existing directory: {text!r}")
    return name, Path(directory)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--rev", action="append", help="a git revision (repeat: side by side)")
    parser.add_argument("--repo", type=Path, default=REPO, help="the git repository (this one)")
    parser.add_argument("--kind", default="label", help="the wire message kind (default: label)")
    parser.add_argument(
        "--compare",
        type=compare_arg,
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="another source tree for the long-functions share (e.g. websockets=...)",
    )
    parser.add_argument("--out", type=Path, help="also write the output to this file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="house-") as tmp:
        trees = []
        for i, rev in enumerate(args.rev or ["HEAD"]):
            dest = Path(tmp) / str(i)
            dest.mkdir()
            trees.append(read_tree(args.repo, rev, dest))
        command = shlex.join(["bench/house.py", *(sys.argv[1:] if argv is None else argv)])
        text = f"$ {command}\n(a package or group absent at a revision shows -)\n\n" + report(
            trees, args.kind, dict(args.compare), progress=not args.quiet
        )
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
