"""Builds the optional native extension ``promem_fast._C`` from csrc/ (metadata: pyproject.toml).

No -march=native: the AVX2/FMA micro-kernel is compiled with a function-level target
attribute and picked at runtime, so one wheel runs on any x86-64 (generic path otherwise).
Set PROMEM_NO_EXT=1 to skip the extension (the package then uses the numpy fallback).
"""

import os
import sys

from setuptools import setup

ext_modules = []
cmdclass = {}
if os.environ.get("PROMEM_NO_EXT") != "1":
    from pybind11.setup_helpers import Pybind11Extension, build_ext

    extra = []
    if sys.platform != "win32":
        # -ffp-contract=fast lets the generic path use FMA where the target has it.
        extra = ["-O3", "-ffp-contract=fast", "-fno-math-errno"]
    ext_modules = [
        Pybind11Extension(
            "promem_fast._C",
            sources=["csrc/xref.cpp", "csrc/bindings.cpp"],
            include_dirs=["csrc"],
            depends=["csrc/xref.h"],  # rebuild on header change; ships the header in sdists
            cxx_std=17,
            extra_compile_args=extra,
            extra_link_args=["-pthread"] if sys.platform.startswith("linux") else [],
        )
    ]
    cmdclass = {"build_ext": build_ext}

setup(ext_modules=ext_modules, cmdclass=cmdclass)
