"""The documentation site: MkDocs hooks (``mkdocs.yml``'s ``hooks``) and the build command behind ``make docs``.

The site is the README (as its home page), the pages under ``docs/``, ``CHANGELOG.md`` and the committed figure
notebooks with their stored outputs (rendered by mkdocs-jupyter, never executed). The README, the changelog and
the notebooks live outside ``docs/``: :func:`on_files` adds them, :func:`on_config` lists the notebooks in the
navigation, and :func:`on_page_markdown` turns the repository-relative links that read right on a code host
(``docs/results.md`` from the README, ``../notebooks/x.ipynb`` from a page) into the site's paths. Everything
builds offline from installed packages (the theme's web fonts are off).

``python -m smetric.docs_site [--site DIR] [--notebooks GLOB]`` runs ``mkdocs build --strict`` (a warning, such as a
broken link between pages, fails the build).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

__all__ = ["ROOT", "EXTRA_PAGES", "NOTEBOOKS", "notebooks", "on_config", "on_files", "on_page_markdown", "build",
           "main"]

ROOT = Path(__file__).resolve().parents[1]
#: Files outside ``docs/`` that are pages of the site: repository path -> site path.
EXTRA_PAGES = {"README.md": "index.md", "CHANGELOG.md": "changelog.md"}
#: The environment variable holding the glob of the notebooks to include (default ``fig*``: all of them; a quick
#: build names one).
NOTEBOOKS = "SMETRIC_DOCS_NOTEBOOKS"


def notebooks() -> list[Path]:
    """The committed figure notebooks that match :data:`NOTEBOOKS` (``.ipynb`` added)."""
    return sorted((ROOT / "notebooks").glob(os.environ.get(NOTEBOOKS, "fig*") + ".ipynb"))


def on_config(config):
    """List the notebooks under "Notebooks" in the navigation."""
    books = notebooks()
    if books and config.nav is not None:
        config.nav.append({"Notebooks": [{b.stem: f"notebooks/{b.name}"} for b in books]})
    return config


@event_priority(100)  # before mkdocs-jupyter's on_files, which wraps the notebooks it finds
def on_files(files, config):
    """Add the README, the changelog and the notebooks, read in place from the repository."""
    for src, uri in EXTRA_PAGES.items():
        files.append(File.generated(config, uri, abs_src_path=str(ROOT / src)))
    for book in notebooks():  # a file under the root (not a generated one): mkdocs-jupyter reads it by its src_dir
        files.append(File(f"notebooks/{book.name}", src_dir=str(ROOT), dest_dir=config.site_dir,
                          use_directory_urls=config.use_directory_urls))
    return files


_README_LINKS = ((re.compile(r"\]\(docs/"), "]("), (re.compile(r"\]\(CHANGELOG\.md"), "](changelog.md"))
_PAGE_LINKS = ((re.compile(r"\]\(\.\./README\.md"), "](index.md"),
               (re.compile(r"\]\(\.\./CHANGELOG\.md"), "](changelog.md"))
_NOTEBOOK_LINK = re.compile(r"\[([^\]]*)\]\((?:\.\./)?notebooks/([\w.-]+\.ipynb)\)")


def on_page_markdown(markdown, page, config, files):
    """Rewrite repository-relative links into site paths (see the module docstring); a link to a notebook left out
    of this build (:data:`NOTEBOOKS`) keeps its text only."""
    rules = _README_LINKS if page.file.src_uri == "index.md" else _PAGE_LINKS
    for pattern, repl in rules:
        markdown = pattern.sub(repl, markdown)
    built = {b.name for b in notebooks()}

    def notebook(match: re.Match) -> str:  # every page sits at the site's top level, beside notebooks/
        text, name = match.groups()
        return f"[{text}](notebooks/{name})" if name in built else text

    return _NOTEBOOK_LINK.sub(notebook, markdown)


def build(site: str | Path, *, notebooks: str = "fig*") -> float:
    """``mkdocs build --strict`` of ``mkdocs.yml`` into ``site`` with the notebooks matching the glob ``notebooks``;
    returns the seconds it took. Raises ``RuntimeError`` with mkdocs' output when the build fails (a warning
    fails it)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", NOTEBOOKS: notebooks}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                           str(ROOT / "mkdocs.yml"), "-d", str(Path(site).resolve())],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"mkdocs build failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """``python -m smetric.docs_site``: build the site (default ``build/site``)."""
    ap = argparse.ArgumentParser(prog="python -m smetric.docs_site", description=main.__doc__)
    ap.add_argument("--site", default=str(ROOT / "build" / "site"), help="output folder (default: %(default)s)")
    ap.add_argument("--notebooks", default="fig*", metavar="GLOB",
                    help="only the notebooks matching GLOB (default: %(default)s, all; a quick build names one)")
    args = ap.parse_args(argv)
    try:
        seconds = build(args.site, notebooks=args.notebooks)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"site built in {seconds:.1f} s: {Path(args.site).resolve() / 'index.html'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
