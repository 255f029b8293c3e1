"""Shared by the notebook generators: write a set of notebooks (name -> cells) into notebooks/."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_notebook

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def write_notebooks(notebooks: dict) -> None:
    """Write ``notebooks/<name>.ipynb`` for every ``name -> cells`` entry (Python 3 kernel)."""
    out_dir = Path(__file__).resolve().parents[1]
    for name, cells in notebooks.items():
        nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC}), out_dir / f"{name}.ipynb")
        print(f"wrote {out_dir / name}.ipynb")
