"""ONNX sentence embedder: MiniLM against sentence-transformers (embedded), and a tiny BERT
built from a config (model_dir override, pooling, batching order)."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")

from promem_fast.backends.embed.onnx import OnnxEmbedder, pool, read_pooling_mode
from promem_fast.backends.registry import create_embed
from promem_fast.config import EmbedConfig

SENTENCES = [
    "Melanie signed up for a pottery class last Saturday.",
    "hi",
    "Caroline went to an LGBTQ support group on 7 May 2023 and said it was powerful and "
    "she felt accepted by everyone there, which made her want to help others too.",
]

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + (
    "the a she he went to class dog cat painted sunset lake support group pottery friday "
    "melanie caroline adopted happy tired job new house moved".split()
)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    from transformers import BertConfig, BertModel, BertTokenizerFast

    d = tmp_path_factory.mktemp("tiny_bert")
    (d / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    tok = BertTokenizerFast(str(d / "vocab.txt"), do_lower_case=True)
    tok.save_pretrained(str(d))
    cfg = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64, initializer_range=0.3)
    torch.manual_seed(0)
    BertModel(cfg).eval().save_pretrained(str(d))
    return d


def _torch_mean_pooled(model_dir, texts) -> np.ndarray:
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    out = []
    with torch.no_grad():
        for t in texts:
            enc = tok(t, return_tensors="pt")
            h = model(**enc).last_hidden_state[0].mean(0)
            out.append((h / h.norm()).numpy())
    return np.stack(out)


async def test_tiny_bert_model_dir_matches_torch_mean_pooling(tiny_bert, tmp_path):
    emb = OnnxEmbedder(EmbedConfig(model_dir=str(tiny_bert), batch_size=2), cache_dir=str(tmp_path), provider="cpu")
    assert emb.dim == 16 and emb.pooling == "mean"
    texts = ["she went to the pottery class on friday", "the dog", "melanie painted a sunset at the lake",
             "cat", "the dog", "caroline moved to a new house"]
    got = await emb.encode(texts)
    ref = _torch_mean_pooled(tiny_bert, texts)
    assert got.shape == (6, 16) and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # input order restored although batches run sorted by length (batch_size=2 -> 3 batches)
    assert (got * ref).sum(1).min() > 0.9999
    np.testing.assert_array_equal(got[1], got[4])
    empty = await emb.encode([])
    assert empty.shape == (0, 16) and empty.dtype == np.float32


def test_pooling_modes_and_config(tmp_path):
    hidden = np.array([[[1.0, 0.0], [3.0, 4.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]])
    np.testing.assert_allclose(pool(hidden, mask, "mean"), [[2 / np.hypot(2, 2), 2 / np.hypot(2, 2)]], atol=1e-6)
    np.testing.assert_allclose(pool(hidden, mask, "cls"), [[1.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(pool(hidden, mask, "max"), [[0.6, 0.8]], atol=1e-6)  # padding ignored
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"}]))
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    assert read_pooling_mode(tmp_path) == "cls"
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_weightedmean_tokens": True}))
    with pytest.raises(ValueError, match="pooling mode"):
        read_pooling_mode(tmp_path)


def test_missing_model_dir_names_field(tmp_path):
    with pytest.raises(FileNotFoundError, match="embed.model_dir"):
        OnnxEmbedder(EmbedConfig(model_dir=str(tmp_path / "nope")))


@pytest.mark.embedded
async def test_minilm_matches_sentence_transformers(tmp_path):
    st = pytest.importorskip("sentence_transformers")
    from promem_fast.models import ModelPackageMissing, minilm_model_dir

    try:
        model_dir = minilm_model_dir()
    except ModelPackageMissing as e:
        pytest.skip(str(e))
    emb = create_embed(EmbedConfig(backend="onnx", batch_size=2), cache_dir=str(tmp_path))
    assert emb.dim == 384 and emb.max_length == 256
    got = await emb.encode(SENTENCES)
    ref = st.SentenceTransformer(str(model_dir), device="cpu").encode(SENTENCES, normalize_embeddings=True)
    assert got.shape == (3, 384) and got.dtype == np.float32
    cos = (got * ref).sum(1) / np.linalg.norm(ref, axis=1)
    assert cos.min() > 0.999
    assert (await emb.encode([])).shape == (0, 384)
    # related sentences closer than unrelated ones: a sanity check of the real model
    a, b, c = await emb.encode(["I adopted a puppy.", "I got a new dog.", "The stock market fell today."])
    assert float(a @ b) > float(a @ c) + 0.2
