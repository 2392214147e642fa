"""promem_fast: proactive, verified memory extraction (ProMem) as a throughput engine.

Public API::

    from promem_fast import Extractor, Config, PipelineConfig, MemoryGraph, load_sessions
    graph = Extractor(Config()).extract(session)
"""

from .config import Config, EmbedConfig, EngineConfig, LLMConfig, NLIConfig, PipelineConfig
from .schema import Detail, Event, MemoryGraph, Relation, Session, Turn

__version__ = "0.1.0"


def __getattr__(name):  # heavy modules load on first use
    if name == "Extractor":
        from .extractor import Extractor

        return Extractor
    if name == "load_sessions":
        from .io import load_sessions

        return load_sessions
    raise AttributeError(name)


__all__ = [
    "Config", "Detail", "EmbedConfig", "EngineConfig", "Event", "Extractor", "LLMConfig",
    "MemoryGraph", "NLIConfig", "PipelineConfig", "Relation", "Session", "Turn", "load_sessions",
]
