"""End to end with the embedded models: Qwen2.5-Coder-1.5B GGUF on llama.cpp, the LLM-judge
NLI and MiniLM on ONNX Runtime. Slow (minutes on 2 CPU cores); marked ``embedded``."""

from __future__ import annotations

from datetime import datetime

import pytest

from promem_fast.config import Config
from promem_fast.schema import MemoryGraph, Session, Turn

pytestmark = pytest.mark.embedded


@pytest.fixture(scope="module")
def embedded_services():
    try:
        import llama_cpp  # noqa: F401

        from promem_fast.backends.embed.onnx import OnnxEmbedder  # noqa: F401
        from promem_fast.backends.llm.llamacpp import LlamaCppLLM  # noqa: F401
        from promem_fast.models import embedded_gguf_path, minilm_model_dir
    except ImportError as e:
        pytest.skip(f"embedded backends not importable yet: {e}")
    try:
        embedded_gguf_path()
        minilm_model_dir()
    except Exception as e:  # ModelPackageMissing / ModelIntegrityError
        pytest.skip(f"embedded model weights unavailable: {e}")
    from promem_fast.context import Services

    svc = Services.from_config(Config())
    yield svc
    close = getattr(svc.llm, "close", None)
    if close:
        close()


def test_embedded_end_to_end_four_turns(embedded_services):
    from promem_fast.extractor import Extractor

    day = datetime(2024, 3, 4, 18, 0)
    session = Session(session_id="e2e", user_name="Nora", start_time=day, turns=[
        Turn(turn_id="t1", role="user", timestamp=day,
             content="I just moved to Lisbon last week for a new job as a nurse."),
        Turn(turn_id="t2", role="assistant", timestamp=day, content="Congratulations! How do you like Lisbon so far?"),
        Turn(turn_id="t3", role="user", timestamp=day,
             content="I love it. I adopted a cat named Pixel yesterday, she is two years old."),
        Turn(turn_id="t4", role="assistant", timestamp=day, content="Pixel sounds adorable!"),
    ])
    g = Extractor(Config(), embedded_services).extract(session)
    g = MemoryGraph.model_validate_json(g.to_json())
    assert len(g.events) >= 1
    ids = {t.turn_id for t in session.turns}
    for e in g.events:
        assert e.source_turn_ids and set(e.source_turn_ids) <= ids
    assert g.stats.llm_calls > 0 and g.stats.stages["draft"].llm_calls >= 1
    assert g.models["llm"] != "scripted"
