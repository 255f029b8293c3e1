"""The numba cache guard: a cached kernel re-compiles when a module it imports changes (numba alone would not)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import smetric
from smetric.cluster.engine import loop
from smetric.numba_cache import module_sources

_KERNEL = textwrap.dedent("""
    import sys

    from numba import njit

    from .callee import SCALE, scaled
    from smetric.numba_cache import refresh_module


    @njit(cache=True)
    def kernel(x):
        return scaled(x) + SCALE


    refresh_module(sys.modules[__name__])
""")


def _run_kernel(root: Path, cache: Path) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": f"{root}{os.pathsep}{Path.cwd()}"}
    code = "from guardpkg.kern import kernel; print(kernel(2.0))"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_cached_kernel_follows_an_edited_callee_module(tmp_path):
    pkg = tmp_path / "src" / "guardpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "kern.py").write_text(_KERNEL)
    callee = pkg / "callee.py"
    callee.write_text("from numba import njit\n\nSCALE = 1.0\n\n\n@njit\ndef scaled(x):\n    return 10.0 * x\n")
    cache = tmp_path / "cache"
    assert _run_kernel(tmp_path / "src", cache) == "21.0"
    assert list(cache.rglob("*.nbi"))  # the kernel was cached on disk
    callee.write_text("from numba import njit\n\nSCALE = 3.0\n\n\n@njit\ndef scaled(x):\n    return 100.0 * x\n")
    assert _run_kernel(tmp_path / "src", cache) == "203.0"  # numba alone would print the cached 21.0


def test_engine_guard_covers_every_module_its_kernels_use():
    root = Path(smetric.__file__).parent
    names = {p.relative_to(root).as_posix() for p in module_sources(loop)}
    engine_modules = {f"cluster/engine/{p.name}" for p in Path(loop.__file__).parent.glob("*.py")}
    for needed in ("cluster/load_index.py", "cluster/estimators.py", "cluster/result_raw.py", "cluster/queueing.py",
                   "cluster/kvcache.py", "hardware/kernel.py", "policies/dispatch.py", "policies/smetric_policy.py",
                   *(engine_modules - {"cluster/engine/__init__.py", "cluster/engine/driver.py"})):
        assert needed in names


def test_every_engine_module_with_cached_kernels_ends_with_the_guard():
    kernel_modules = [p for p in sorted(Path(loop.__file__).parent.glob("*.py")) if "@njit(cache=True" in p.read_text()]
    assert len(kernel_modules) >= 10
    for path in kernel_modules:
        assert path.read_text().rstrip().endswith("refresh_module(sys.modules[__name__])"), path.name


def test_module_sources_resolves_relative_imports_inside_a_subpackage(tmp_path, monkeypatch):
    pkg = tmp_path / "scanpkg"
    sub = pkg / "sub"
    sub.mkdir(parents=True)
    files = {
        pkg / "__init__.py": "",
        pkg / "top.py": "X = 1\n",
        pkg / "unused.py": "",
        sub / "__init__.py": "from .a import f\nfrom ..top import X\n",
        sub / "a.py": "from . import b\nfrom .c import (\n    g,\n)\n\n\ndef f():\n    from ..top import X\n",
        sub / "b.py": "import scanpkg.sub.d\n",
        sub / "c.py": "def g():\n    pass\n",
        sub / "d.py": "",
    }
    for path, text in files.items():
        path.write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    a = importlib.import_module("scanpkg.sub.a")
    init = importlib.import_module("scanpkg.sub")
    rel = lambda m: {p.relative_to(pkg).as_posix() for p in module_sources(m)}  # noqa: E731
    # ``from . import b`` runs the subpackage's __init__ too; unused.py is imported by nobody
    assert rel(a) == rel(init) == {"sub/__init__.py", "sub/a.py", "sub/b.py", "sub/c.py", "sub/d.py", "top.py"}
    assert rel(importlib.import_module("scanpkg.sub.c")) == {"sub/c.py"}
