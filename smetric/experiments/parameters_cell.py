"""Each notebook's ``parameters`` cell, generated from its figure's ``Params``.

The cell declares ``quick`` and one line per ``Params`` field -- ``name: type = None  # help`` -- so papermill
(``-p name value``, ``--help-notebook``) and a researcher editing the notebook see exactly the parameters the
figure takes. :func:`parameters_source` writes the cell's text; :func:`write_parameters` puts it into
``notebooks/<figure>.py`` and its ``.ipynb`` twin, touching a file only when its cell changes (the notebook's
outputs stay as they are). ``python -m smetric.experiments.parameters_cell`` refreshes every notebook;
``--check`` lists the stale ones and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path
from types import ModuleType

from ..context import run_context
from .figures import figure_module, figure_modules, figure_name

__all__ = ["parameters_source", "write_parameters", "stale_notebooks", "main"]

_HEADER = (
    "quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick",
    "# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).",
    "# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.",
)
_MARKER = '# %% tags=["parameters"]'


def _type_name(annotation: str) -> str:
    """The annotation papermill shows: a tuple is passed as a list, ``X | None`` as ``X``."""
    name = annotation.split(" | ")[0]
    return "list" if name.startswith("tuple") else name


def parameters_source(module: ModuleType) -> str:
    """The ``parameters`` cell of the figure's notebook (no trailing newline, as notebooks store it)."""
    declared = [f"{f.name}: {_type_name(str(f.type))} = None  # {f.metadata['doc']}" for f in fields(module.Params)]
    return "\n".join([*_HEADER, *declared])


def _notebooks(module: ModuleType) -> tuple[Path, Path]:
    folder = run_context().notebooks_dir
    return folder / f"{figure_name(module)}.py", folder / f"{figure_name(module)}.ipynb"


def _with_text_cell(text: str, source: str) -> str:
    """The py:percent text with its parameters cell (the marker line up to the blank line before the next cell)
    replaced by ``source``."""
    start = text.index(_MARKER) + len(_MARKER) + 1
    end = text.index("\n\n# %%", start)
    return text[:start] + source + text[end:]


def _with_notebook_cell(text: str, source: str) -> str:
    """The ``.ipynb`` JSON with its parameters cell's source replaced (written as nbformat writes it)."""
    book = json.loads(text)
    cell = next(c for c in book["cells"] if "parameters" in c["metadata"].get("tags", []))
    cell["source"] = source.splitlines(keepends=True)
    return json.dumps(book, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def write_parameters(module: ModuleType, check: bool = False) -> list[Path]:
    """The figure's notebook files whose parameters cell is stale; rewritten unless ``check``."""
    source = parameters_source(module)
    stale = []
    for path, rewrite in zip(_notebooks(module), (_with_text_cell, _with_notebook_cell)):
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, source)
        if new != text:
            stale.append(path)
            if not check:
                path.write_text(new, encoding="utf-8")
    return stale


def stale_notebooks() -> list[Path]:
    """Every notebook file whose parameters cell differs from its figure's ``Params``."""
    return [path for module in figure_modules().values() for path in write_parameters(module, check=True)]


def main(argv: list[str] | None = None) -> int:
    """Refresh (default) or ``--check`` the parameters cells of the figures named (default: all)."""
    parser = argparse.ArgumentParser(prog="python -m smetric.experiments.parameters_cell",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("figures", nargs="*", metavar="FIG", help="figure prefixes, e.g. fig06 (default: all)")
    parser.add_argument("--check", action="store_true", help="list stale notebooks and exit 1 instead of writing")
    args = parser.parse_args(argv)
    modules = [figure_module(f) for f in args.figures] if args.figures else list(figure_modules().values())
    stale = [path for module in modules for path in write_parameters(module, check=args.check)]
    for path in stale:
        print(f"{'stale' if args.check else 'wrote'} {path}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
