"""The architecture holds itself (docs/architecture.md): no import circle in ``src/``, no module
past 450 lines in ``src/`` or ``bench/``, and the layers contract that ``lint-imports`` checks is
the one the document lists."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 450


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_circle_finder_finds_circles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": set(), "f": {"f"}}
    assert _circles(edges) == [["a", "b", "c"]]
    assert _circles({"x": {"y"}, "y": set()}) == []


def test_no_import_circle_in_src() -> None:
    # Imports under TYPE_CHECKING and inside functions count: a circle hidden there is one still.
    graph = grimp.build_graph("omnilab", exclude_type_checking_imports=False, cache_dir=None)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    circles = _circles(edges)
    shown = []
    for members in circles:
        inside = set(members)
        hops = [
            f"  {a} -> {b} (l.{', '.join(str(d['line_number']) for d in graph.get_import_details(importer=a, imported=b))})"
            for a in members
            for b in sorted(edges[a] & inside)
        ]
        shown.append(" <-> ".join(members) + "\n" + "\n".join(hops))
    assert not circles, "import circles in src/ (move the shared piece down):\n" + "\n".join(shown)


def _sizes() -> dict[str, int]:
    sizes = {}
    for folder in ("src", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            sizes[str(path.relative_to(ROOT))] = len(text.splitlines())
    return sizes


def test_no_module_over_450_lines() -> None:
    sizes = _sizes()
    assert any(name.startswith("bench/attacks/") for name in sizes)  # packages are walked too
    over = [f"{name}: {n} lines" for name, n in sizes.items() if n > MAX_LINES]
    assert not over, (
        f"modules past {MAX_LINES} lines (split them along a seam that exists):\n" + "\n".join(over)
    )


def _contract_layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = [c for c in contracts if c["type"] == "layers" and c.get("containers") == ["omnilab"]]
    assert len(layers) == 1
    return list(layers[0]["layers"])


def test_the_layers_contract_is_the_one_docs_architecture_lists() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc.split("## The layers, top to bottom", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.DOTALL)
    assert block is not None, "docs/architecture.md lists the layers in a ```text block"
    listed = [line.strip() for line in block.group(1).splitlines() if line.strip()]
    assert listed == _contract_layers()


def test_the_contracts_run_in_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = next(line for line in readme.splitlines() if "pytest -q" in line)
    assert command.rstrip().endswith("&& lint-imports")


def test_every_package_of_src_is_in_a_layer() -> None:
    # A new top-level package or module outside every layer would escape the contract.
    named = {
        name.strip()
        for line in _contract_layers()
        for name in re.split(r"[|:]", line)
        if name.strip()
    }
    package = ROOT / "src" / "omnilab"
    present = {
        p.stem if p.is_file() else p.name
        for p in package.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    assert present - named == set()


def _functions(path: Path) -> list[tuple[str, int, int]]:
    """(name, lines with the signature, lines of the body) of every function in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.name, node.end_lineno - node.lineno + 1, node.end_lineno - node.body[0].lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    ]


def test_cli_commands_parse_call_and_render() -> None:
    # A command's logic lives in the library (omnilab.bench, omnilab.api, ...): no function of
    # the CLI has a body past 120 lines, and `omnilab eval`, once 263 lines of one function, is
    # under 200 lines with no function past 120 (its options are declared in eval_options).
    long = [
        f"{path.name}:{name}: body of {body} lines"
        for path in sorted((ROOT / "src" / "omnilab" / "cli").glob("*.py"))
        for name, _, body in _functions(path)
        if body > 120
    ]
    assert not long, "\n".join(long)
    eval_py = ROOT / "src" / "omnilab" / "cli" / "eval.py"
    assert len(eval_py.read_text(encoding="utf-8").splitlines()) < 200
    assert max(lines for _, lines, _ in _functions(eval_py)) <= 120
