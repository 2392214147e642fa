"""ONNX NLI backend and batching engine on a tiny randomly initialised RoBERTa (no hub).

The model is built from a RobertaConfig in the test, with a byte-level BPE tokenizer trained
in memory, and an id2label order different from roberta-large-mnli's, so the label mapping
is really exercised.
"""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")
tokenizers = pytest.importorskip("tokenizers")

from promem_fast.backends.nli.batching import (
    BatchPolicy,
    NLIBatchEngine,
    label_index_from_config,
    padded_length,
    plan_batches,
)
from promem_fast.backends.nli.onnx import OnnxNLI
from promem_fast.backends.registry import create_nli
from promem_fast.config import NLIConfig
from promem_fast.onnx_export import export_onnx, model_fingerprint

ID2LABEL = {0: "NEUTRAL", 1: "CONTRADICTION", 2: "ENTAILMENT"}
WORDS = (
    "melanie caroline adopted dog cat painted sunset lake camping trip sister birthday went "
    "yesterday pottery class support group friday concert tickets moved house job interview "
    "because the a and to of in on with for was is she he they we".split()
)


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def build_tiny_roberta(path, id2label=ID2LABEL, seed: int = 0) -> None:
    """Save a 2-layer, hidden-32 RoBERTa classifier and its tokenizer to ``path``."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import (
        RobertaConfig,
        RobertaForSequenceClassification,
        RobertaTokenizerFast,
    )

    rng = random.Random(seed)
    corpus = [_sentence(rng, 12) for _ in range(200)]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        corpus, vocab_size=400, min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    )
    path.mkdir(parents=True, exist_ok=True)
    bpe.save_model(str(path))
    tok = RobertaTokenizerFast(str(path / "vocab.json"), str(path / "merges.txt"), model_max_length=128)
    tok.save_pretrained(str(path))
    cfg = RobertaConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=130, type_vocab_size=1,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        id2label=dict(id2label), label2id={v: k for k, v in id2label.items()}, initializer_range=0.2,
    )
    torch.manual_seed(seed)
    model = RobertaForSequenceClassification(cfg).eval()
    model.save_pretrained(str(path))


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny_roberta_nli")
    build_tiny_roberta(d)
    return d


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx_cache")


@pytest.fixture(scope="module")
def nli_fp32(tiny_dir, cache):
    cfg = NLIConfig(backend="onnx", model_dir=str(tiny_dir), quantize=False, provider="cpu")
    return create_nli(cfg, cache_dir=str(cache))


@pytest.fixture(scope="module")
def nli_int8(tiny_dir, cache, nli_fp32):
    cfg = NLIConfig(backend="onnx", model_dir=str(tiny_dir), quantize=True, provider="cpu")
    return OnnxNLI(cfg, cache_dir=str(cache))


def _pairs(n: int, seed: int = 1, premise_words=(5, 30)) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [(_sentence(rng, rng.randint(*premise_words)), _sentence(rng, rng.randint(3, 8))) for _ in range(n)]


def _torch_probs(model_dir, pairs) -> np.ndarray:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    out = []
    with torch.no_grad():
        for p, h in pairs:
            logits = model(**tok(p, h, return_tensors="pt")).logits
            out.append(torch.softmax(logits, -1)[0].numpy())
    return np.stack(out)


# --- export, label mapping, numerics ---------------------------------------------------


@pytest.mark.parametrize("fuse", [True, False])
async def test_onnx_probs_match_torch_and_labels_map_by_name(tiny_dir, cache, fuse):
    cfg = NLIConfig(backend="onnx", model_dir=str(tiny_dir), quantize=False, provider="cpu")
    nli = OnnxNLI(cfg, cache_dir=str(cache), fuse=fuse)
    assert nli.fused is fuse and nli.onnx_path.name == ("model_fused.onnx" if fuse else "model.onnx")
    pairs = _pairs(12)
    results = await nli.classify(pairs)
    ref = _torch_probs(tiny_dir, pairs)  # columns in ID2LABEL order
    assert len(results) == len(pairs)
    for r, row in zip(results, ref):
        for col, name in ID2LABEL.items():
            assert r.probs[name.lower()] == pytest.approx(float(row[col]), abs=1e-4)
        assert r.label == ID2LABEL[int(row.argmax())].lower()
        assert sum(r.probs.values()) == pytest.approx(1.0, abs=1e-5)
    # the random head must not be constant, or the mapping check above proves little
    assert len({r.label for r in results}) >= 2 or np.ptp(ref, axis=0).max() > 0.05


def test_label_index_from_config_any_case_and_order():
    assert label_index_from_config(ID2LABEL) == {"neutral": 0, "contradiction": 1, "entailment": 2}
    assert label_index_from_config({"0": "contradiction", "1": "Neutral", "2": "entailment"}) == {
        "contradiction": 0, "neutral": 1, "entailment": 2,
    }
    with pytest.raises(ValueError, match="not a 3-way NLI head"):
        label_index_from_config({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(ValueError, match="not a 3-way NLI head"):
        label_index_from_config({0: "entailment", 1: "not_entailment"})


def test_non_nli_head_is_rejected_before_export(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "roberta", "id2label": {"0": "LABEL_0", "1": "LABEL_1"}}))
    with pytest.raises(ValueError, match="not a 3-way NLI head"):
        OnnxNLI(NLIConfig(backend="onnx", model_dir=str(d), provider="cpu"), cache_dir=str(tmp_path / "c"))
    with pytest.raises(FileNotFoundError, match="nli.model_dir"):
        OnnxNLI(NLIConfig(backend="onnx", model_dir=str(tmp_path / "absent"), provider="cpu"))
    with pytest.raises(ValueError, match="model_dir is required"):
        OnnxNLI(NLIConfig(backend="onnx", provider="cpu"))


def test_export_is_cached_and_keyed_on_weights(nli_fp32, tiny_dir, cache):
    path = nli_fp32.fp32_path
    mtime = path.stat().st_mtime_ns
    again = export_onnx(tiny_dir, "text-classification", cache_dir=cache)
    assert again == path and again.stat().st_mtime_ns == mtime  # not re-exported
    key = model_fingerprint(tiny_dir)
    weights = tiny_dir / "model.safetensors"
    st = weights.stat()
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    try:
        assert model_fingerprint(tiny_dir) != key
    finally:
        os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert model_fingerprint(tiny_dir) == key


def test_int8_logits_close_to_fp32(nli_fp32, nli_int8):
    assert nli_int8.quantized and nli_int8.onnx_path.name == "model_fused_int8.onnx"
    pairs = _pairs(16, seed=3)
    a = nli_fp32.logits(pairs)
    b = nli_int8.logits(pairs)
    assert a.shape == b.shape == (16, 3)
    spread = float(np.abs(a).max())
    # dynamic int8 error on this tiny model: well under 10% of the logit range
    assert float(np.abs(a - b).max()) <= 0.1 * spread + 0.02
    assert not np.array_equal(a, b)  # it really is a different (quantised) graph


async def test_empty_and_bad_input(nli_fp32):
    assert await nli_fp32.classify([]) == []
    with pytest.raises(TypeError, match="NLI pair 1"):
        await nli_fp32.classify([("a premise", "a hypothesis"), ("only premise",)])


# --- premise windowing -----------------------------------------------------------------


def test_long_premise_is_split_into_overlapping_windows(nli_fp32):
    tok = nli_fp32.engine.tokenizer
    engine = NLIBatchEngine(tok, nli_fp32.runner, nli_fp32.engine.label_index, max_length=32, window_stride=6)
    premise = _sentence(random.Random(5), 80)
    hyp = "she adopted a dog"
    win = engine.encode([(premise, hyp)])
    p_ids = tok(premise, add_special_tokens=False)["input_ids"]
    h_ids = tok(hyp, add_special_tokens=False)["input_ids"]
    assert len(p_ids) + len(h_ids) + engine.n_specials > 32
    assert len(win.input_ids) >= 3 and set(win.owner) == {0}
    room = 32 - engine.n_specials - len(h_ids)
    pieces = []
    for ids in win.input_ids:
        assert len(ids) <= 32
        # each window is <s> premise-piece </s></s> hypothesis </s>
        assert ids[-len(h_ids) - 1 : -1] == h_ids
        pieces.append(ids[1 : len(ids) - len(h_ids) - 3])
    assert all(len(p) == room for p in pieces[:-1])
    for a, b in zip(pieces, pieces[1:]):
        assert a[-6:] == b[:6]  # stride = overlap in tokens
    rebuilt = pieces[0] + [t for p in pieces[1:] for t in p[6:]]
    assert rebuilt == p_ids


async def test_hypothesis_entailed_only_by_last_window_is_entailed(nli_fp32, monkeypatch):
    tok = nli_fp32.engine.tokenizer
    marker = tok("zebra", add_special_tokens=False)["input_ids"]
    li = nli_fp32.engine.label_index
    seen_rows = []

    def scorer(feed):
        ids = feed["input_ids"]
        out = np.zeros((ids.shape[0], 3), dtype=np.float32)
        for j, row in enumerate(ids.tolist()):
            seen_rows.append(row)
            has = any(row[k : k + len(marker)] == marker for k in range(len(row)))
            out[j, li["entailment" if has else "contradiction"]] = 10.0
        return out

    monkeypatch.setattr(nli_fp32.engine, "max_length", 32)
    monkeypatch.setattr(nli_fp32.engine, "window_stride", 4)
    monkeypatch.setattr(nli_fp32.engine, "scorer", scorer)
    long_premise = _sentence(random.Random(9), 90) + " zebra"
    pairs = [(long_premise, "the cat"), ("the cat went home", "the cat")]
    res = await nli_fp32.classify(pairs)
    assert res[0].label == "entailment" and res[0].probs["entailment"] > 0.99
    assert res[1].label == "contradiction"
    windows_with_marker = [r for r in seen_rows if any(r[k : k + len(marker)] == marker for k in range(len(r)))]
    assert len(windows_with_marker) == 1 and len(seen_rows) >= 4  # only the last window holds it


# --- batching --------------------------------------------------------------------------


def test_plan_batches_budget_and_coverage():
    rng = random.Random(0)
    lengths = [rng.randint(5, 300) for _ in range(200)]
    pol = BatchPolicy(batch_tokens=2048, max_batch=16, pad_multiple=8)
    batches = plan_batches(lengths, pol, cap=512)
    assert sorted(i for b in batches for i in b) == list(range(200))
    for b in batches:
        width = padded_length(max(lengths[i] for i in b), 8, 512)
        assert width % 8 == 0
        assert len(b) <= 16 and (len(b) == 1 or len(b) * width <= 2048)
    assert padded_length(509, 8, cap=512) == 512 and padded_length(510, 8, cap=510) == 510
    # length bucketing: no row in a batch is more than 15% padding
    bucketed = plan_batches(lengths, BatchPolicy(batch_tokens=8192, max_batch=16, pad_multiple=1, max_pad_fraction=0.15))
    assert sorted(i for b in bucketed for i in b) == list(range(200))
    for b in bucketed:
        width = max(lengths[i] for i in b)
        assert min(lengths[i] for i in b) >= 0.85 * width
    assert len(bucketed) > len(plan_batches(lengths, BatchPolicy(batch_tokens=8192, max_batch=16, pad_multiple=1)))
    with pytest.raises(ValueError, match="max_pad_fraction"):
        BatchPolicy(max_pad_fraction=1.5)


async def test_batched_equals_one_at_a_time_with_duplicates(nli_fp32, monkeypatch):
    base = _pairs(10, seed=7, premise_words=(3, 60))
    pairs = base + [base[3], base[0], base[3]] + base[:2]
    rows_scored = []
    real = nli_fp32.engine.scorer

    def counting(feed):
        rows_scored.append(feed["input_ids"].shape[0])
        return real(feed)

    monkeypatch.setattr(nli_fp32.engine, "scorer", counting)
    monkeypatch.setattr(nli_fp32.engine, "policy", BatchPolicy(batch_tokens=4096, max_batch=8, pad_multiple=8))
    batched = await nli_fp32.classify(pairs)
    assert sum(rows_scored) == 10 and max(rows_scored) > 1  # dedup: 10 unique pairs, real batches
    singles = [(await nli_fp32.classify([p]))[0] for p in pairs]
    assert [r.label for r in batched] == [r.label for r in singles]
    for a, b in zip(batched, singles):
        for k in a.probs:
            assert a.probs[k] == pytest.approx(b.probs[k], abs=1e-4)
    assert batched[10].probs == batched[3].probs and batched[11].probs == batched[0].probs


async def test_out_of_memory_halves_batch_and_retries(nli_fp32, monkeypatch):
    pairs = _pairs(9, seed=11)
    expected = await nli_fp32.classify(pairs)
    real = nli_fp32.engine.scorer

    def small_memory(feed):
        if feed["input_ids"].shape[0] > 2:
            raise RuntimeError("[ONNXRuntimeError] : 6 : Failed to allocate memory for requested buffer")
        return real(feed)

    monkeypatch.setattr(nli_fp32.engine, "scorer", small_memory)
    monkeypatch.setattr(nli_fp32.engine, "policy", BatchPolicy(batch_tokens=1 << 20, max_batch=16, pad_multiple=8))
    before = nli_fp32.engine.stats["oom_splits"]
    got = await nli_fp32.classify(pairs)
    assert [r.label for r in got] == [r.label for r in expected]
    assert nli_fp32.engine.stats["oom_splits"] > before
    assert nli_fp32.engine.policy.max_batch <= 2  # later batches start small

    def broken(feed):
        raise RuntimeError("shape mismatch")  # not an OOM: surfaces unchanged

    monkeypatch.setattr(nli_fp32.engine, "scorer", broken)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        await nli_fp32.classify(pairs[:2])
