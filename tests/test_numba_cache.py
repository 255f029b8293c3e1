"""The numba cache guard: a cached kernel re-compiles when a module it imports changes (numba alone would not)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import smetric.cluster.engine as engine
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
    names = {p.relative_to(Path(engine.__file__).parents[1]).as_posix() for p in module_sources(engine)}
    for needed in ("cluster/load_index.py", "cluster/estimators.py", "cluster/result_raw.py", "cluster/inputs.py",
                   "cluster/kvcache.py", "hardware/kernel.py", "policies/dispatch.py", "policies/smetric_policy.py"):
        assert needed in names
