"""Print the shape of the cgplan package: files and lines per top-level unit, and the import edges
between top-level units (a subpackage such as `core/` or a flat module such as `config.py`).

    python scripts/tree_stats.py            # the summary and every edge
    python scripts/tree_stats.py --summary  # the totals only

It also prints the import cycles between units (none is the goal). Edges count every
`import cgplan.X` / `from cgplan.X import ...` / `from cgplan import X` in the
package, lazy ones inside functions included (they are dependencies all the same), resolved
relative imports included; an edge from a unit to itself is not counted. Used for issue 15's closing
note (the tree before and after the restructuring).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cgplan"


def unit_of(module: str) -> str:
    """`cgplan.core.plan.build` -> `core`; `cgplan.io.config` -> `config`; `cgplan` -> `__init__`."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "cgplan")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base.split(".")[0] != "cgplan":
                continue
            if base == "cgplan":  # from cgplan import config (a module) or __version__ (a name)
                for alias in node.names:
                    is_module = (PACKAGE / alias.name).is_dir() or (PACKAGE / f"{alias.name}.py").is_file()
                    found.add(f"cgplan.{alias.name}" if is_module else "cgplan")
            else:
                found.add(base)
    return found


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Each strongly connected group of two or more units (an import loop), as a closed path."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    found: list[list[str]] = []
    seen: set[str] = set()
    for start in sorted(graph):
        if start in seen:
            continue
        # start's strongly connected group: what it reaches that reaches it back
        group = sorted(u for u in _reachable(graph, start) if start in _reachable(graph, u))
        seen.update(group)
        if len(group) > 1:
            found.append([*group, group[0]])
    return found


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    reach, stack = {start}, [start]
    while stack:
        for nxt in graph[stack.pop()]:
            if nxt not in reach:
                reach.add(nxt)
                stack.append(nxt)
    return reach


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--summary", action="store_true", help="totals only")
    args = parser.parse_args()
    files: dict[str, int] = defaultdict(int)
    lines: dict[str, int] = defaultdict(int)
    edges: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        unit = unit_of(module_name(path))
        files[unit] += 1
        lines[unit] += len(path.read_text(encoding="utf-8").splitlines())
        for target in imported_modules(path):
            other = unit_of(target)
            if other != unit:
                edges.add((unit, other))
    units = sorted(files, key=lambda u: (not (PACKAGE / u).is_dir(), u))
    print(f"{'unit':<20} {'files':>5} {'lines':>6}")
    for unit in units:
        kind = "/" if (PACKAGE / unit).is_dir() else ".py"
        print(f"{unit + kind:<20} {files[unit]:>5} {lines[unit]:>6}")
    print(f"{'total':<20} {sum(files.values()):>5} {sum(lines.values()):>6}")
    print(f"top-level units: {len(units)}; import edges between them: {len(edges)}")
    loops = cycles(edges)
    print("import cycles between units: " + ("; ".join(" -> ".join(c) for c in loops) or "none"))
    if not args.summary:
        for source in units:
            targets = sorted(t for s, t in edges if s == source)
            if targets:
                print(f"  {source} -> {', '.join(targets)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
