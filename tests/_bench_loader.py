"""Load a script of ``benchmarks/`` (no package) as a module for a test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a fresh module named ``name``, registered in
    ``sys.modules`` as an import would be (dataclasses under ``from __future__ import
    annotations`` look their module up there). ``benchmarks/`` is on ``sys.path`` only while
    it runs, so its imports of sibling scripts resolve.

    Raises:
        FileNotFoundError: no such script.
    """
    path = BENCHMARKS / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"load_benchmark: {path} not found")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        sys.path.remove(str(BENCHMARKS))
    return mod
