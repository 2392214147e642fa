"""Shared fixtures for the pipeline tests: a hand-made session, ScriptedLLM rule builders,
a keyword embedder with controllable cosines, and a fake NLI backend with scripted verdicts."""

from __future__ import annotations

import os
import shutil

# Triton kernels run on CPU tensors in interpreter mode (CI has no GPU); it must be set
# before triton is first imported by any test module.
if shutil.which("nvidia-smi") is None:
    os.environ.setdefault("TRITON_INTERPRET", "1")

import json
import re
from datetime import datetime
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import pytest

from promem_fast.backends.base import LLMRequest, NLIResult
from promem_fast.backends.llm.scripted import ScriptedLLM
from promem_fast.config import Config
from promem_fast.context import Services, SessionContext
from promem_fast.prompts.common import TASK_MARK
from promem_fast.schema import Session, Turn

DAY = datetime(2023, 5, 8, 10, 0)

# Keywords of the KeywordEmbedder: each is one dimension.
KEYWORDS = ["puppy", "max", "park", "training", "job", "acme", "engineer", "bike", "commute"]


def task_text(req: LLMRequest) -> str:
    """The part of the last message after ``### Task`` (what differs between prompts)."""
    content = req.messages[-1]["content"]
    return content.split(TASK_MARK, 1)[1] if TASK_MARK in content else content


def keyed(mapping: Mapping[str, Any]) -> Callable[[LLMRequest], str]:
    """Rule: the value whose key occurs in the request's task text (first match, in order).

    Values that are not strings are JSON-encoded. No match raises KeyError naming the task,
    so a test never passes on a silent default.
    """

    def rule(req: LLMRequest) -> str:
        task = task_text(req)
        for key, value in mapping.items():
            if key in task:
                return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        raise KeyError(f"no scripted answer for stage {req.stage!r}, task {task[:200]!r}")

    return rule


def relation_rule(probes: Mapping[str, Any], answerable: Mapping[str, Any],
                  supported: Mapping[str, Any]) -> Callable[[LLMRequest], str]:
    """Rule of stage relation_verify: a batched probe ("Pair k: ..."), answerability
    ("Question k: ...") or support ("Link k: ...") request answered item by item, each by the
    first key it contains (no match raises KeyError); a probe value is ``{"question": q}``
    or the question itself."""

    def item(line: str, mapping: Mapping[str, Any]) -> Any:
        for key, value in mapping.items():
            if key in line:
                return value
        raise KeyError(f"no scripted answer for relation item {line[:200]!r}")

    def rule(req: LLMRequest) -> str:
        task = task_text(req)
        qs = re.findall(r"Question \d+: (.*)", task)
        if qs:
            return json.dumps([item(q, answerable) for q in qs])
        links = re.findall(r"Link \d+: (.*)", task)
        if links:
            return json.dumps([item(x, supported) for x in links])
        pairs = re.findall(r"Pair \d+: (.*)", task)
        if pairs:
            qs = [item(x, probes) for x in pairs]
            return json.dumps([q["question"] if isinstance(q, dict) else q for q in qs])
        raise KeyError(f"no scripted answer for relation task {task[:200]!r}")

    return rule


def const(value: Any) -> str:
    """Rule: always this JSON value."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class FakeNLI:
    """NLI backend with scripted labels per hypothesis.

    Args:
        verdicts: hypothesis -> label (or (premise substring, hypothesis) -> label).
        default: label for unlisted hypotheses; None = KeyError naming the hypothesis.
    """

    name = "fake-nli"
    model_name = "fake-nli"

    def __init__(self, verdicts: Optional[Mapping[Any, str]] = None, default: Optional[str] = None):
        self.verdicts = dict(verdicts or {})
        self.default = default
        self.pairs: list[tuple[str, str]] = []

    def _label(self, premise: str, hyp: str) -> str:
        for key, label in self.verdicts.items():
            if isinstance(key, tuple) and key[0] in premise and key[1] == hyp:
                return label
        if hyp in self.verdicts:
            return self.verdicts[hyp]
        if self.default is None:
            raise KeyError(f"FakeNLI has no verdict for hypothesis {hyp!r}")
        return self.default

    async def classify(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        out = []
        for p, h in pairs:
            self.pairs.append((p, h))
            lab = self._label(p, h)
            out.append(NLIResult(lab, {lab: 0.9}))
        return out


class KeywordEmbedder:
    """Embeds a text as counts of whole-word keywords (lower-cased); cosines are easy to
    compute by hand. A text with no keyword is the zero vector."""

    name = "keyword"
    model_name = "keyword"

    def __init__(self, keywords: Sequence[str] = KEYWORDS):
        self.keywords = list(keywords)
        self.dim = len(self.keywords)

    def vec(self, text: str) -> np.ndarray:
        words = re.findall(r"\w+", text.lower())
        v = np.array([words.count(k) for k in self.keywords], dtype=np.float32)
        n = np.linalg.norm(v)
        return v / n if n > 0 else v

    async def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def make_session(session_id: str = "s1", user_name: str = "Alice") -> Session:
    """8 turns, 2 topics (puppy t1-t4, job t5-t8); t4 is emoji-only."""
    rows = [
        ("t1", "user", "I adopted a puppy named Max yesterday."),
        ("t2", "assistant", "Congrats! You should take Max to puppy training."),
        ("t3", "user", "Max loves the park near my house."),
        ("t4", "user", "🐶🎉"),
        ("t5", "assistant", "Nice. How is the job?"),
        ("t6", "user", "I started a new job at Acme as a data engineer."),
        ("t7", "assistant", "How is the job going?"),
        ("t8", "user", "The commute to my job at Acme is long, so I bought a bike."),
    ]
    return Session(
        session_id=session_id, user_name=user_name, start_time=DAY,
        turns=[Turn(turn_id=i, role=r, content=c, timestamp=DAY) for i, r, c in rows],
    )


# --- the scripted answers of the full promem run on make_session() -----------------------

DRAFT = [
    {"fact": "Alice adopted a puppy named Max yesterday.", "turns": ["t1"]},
    {"fact": "Alice started a new job at Acme as a data scientist.", "turns": ["t6"]},
    {"fact": "Alice takes puppy training with Max.", "turns": ["t2"]},
    {"fact": "Alice bought a bike.", "turns": ["t8"]},
]
EVENTS = {
    "Turns t1 to t4": [
        {"fact": "Alice adopted a puppy named Max.", "turns": ["t1", "t99"]},
        {"fact": "Alice takes Max to the park.", "turns": ["t3"]},
    ],
    "Turns t5 to t8": [
        {"fact": "Alice started a job at Acme.", "turns": ["t6"]},
        {"fact": "Alice bought a bike because of the long commute.", "turns": []},
    ],
}
DETAILS = {
    "t1, t3": {"t1": ["puppy named Max", "adopted yesterday"], "t3": ["park near house"]},
    "t6, t8": {"t6": ["Acme", "data engineer"], "t8": ["bike"]},
}
RELATIONS = [["E1", "temporal", "E2"], ["E3", "causal", "E4"], ["E1", "causal", "E1"], ["E5", "causal", "E1"]]
DECOMPOSE = {
    "Entry: Alice started a new job at Acme as a data scientist.": [
        "Alice started a new job at Acme.", "Alice is a data scientist.", "Alice earns a high salary.",
    ],
}
ADJUDICATE = {
    "Fact: Alice is a data scientist.": {"action": "REVISE", "revised_fact": "Alice is a data engineer."},
    "Fact: Alice earns a high salary.": {"action": "DISCARD", "revised_fact": None},
}
PROBES = {
    "A: Alice adopted a puppy": {"question": "What did Alice do after adopting Max?"},
    "A: Alice started a new job": {"question": "Why did Alice buy a bike?"},
}
ANSWERABLE = {
    "What did Alice do after adopting Max?": {"answerable": True},
    "Why did Alice buy a bike?": {"answerable": False},
}
SUPPORTED = {"Claim: A leads to B.": True}
# "park near house" (t3) is in no verified entry, so t3 is read again; the answer repeats e2
RECOVER = {"Turn: [t3]": ["Alice takes Max to the park."]}
NLI_VERDICTS = {
    "Alice adopted a puppy named Max yesterday.": "entailment",
    "Alice started a new job at Acme as a data scientist.": "neutral",
    "Alice takes puppy training with Max.": "neutral",
    "Alice bought a bike.": "entailment",
    "Alice takes Max to the park.": "entailment",
    "Alice started a new job at Acme.": "entailment",
    "Alice is a data scientist.": "neutral",
    "Alice earns a high salary.": "neutral",
}


def promem_rules() -> dict[str, Any]:
    return {
        "details": keyed(DETAILS),
        "events": keyed(EVENTS),
        "relations": const(RELATIONS),
        "draft": const(DRAFT),
        "verify": keyed({**DECOMPOSE, **ADJUDICATE}),
        "relation_verify": relation_rule(PROBES, ANSWERABLE, SUPPORTED),
        "recover": keyed(RECOVER),
    }


def make_services(rules=None, nli=None, embed=None) -> Services:
    return Services(
        llm=ScriptedLLM(rules=rules if rules is not None else promem_rules()),
        nli=nli if nli is not None else FakeNLI(NLI_VERDICTS),
        embed=embed if embed is not None else KeywordEmbedder(),
    )


def make_config(**pipeline: Any) -> Config:
    cfg = Config()
    cfg.pipeline = cfg.pipeline.model_copy(update=pipeline)
    return cfg


def make_ctx(session: Optional[Session] = None, services: Optional[Services] = None, **pipeline: Any) -> SessionContext:
    return SessionContext(session=session or make_session(), config=make_config(**pipeline),
                          services=services or make_services())


@pytest.fixture
def session() -> Session:
    return make_session()


@pytest.fixture
def services() -> Services:
    return make_services()
