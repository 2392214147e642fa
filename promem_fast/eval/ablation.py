"""Ablation variants (ProMem Table 2) and the markdown tables of the evaluation report.

Variant names map to :class:`~promem_fast.config.PipelineConfig`:

* ``promem`` / ``one-off`` / ``v1``: ``PipelineConfig.variant``;
* ``no-cc`` / ``no-hv`` / ``no-da`` / ``no-rel``: variant ``promem`` with
  ``completeness_check`` / ``hallucination_verification`` / ``detail_anchoring`` /
  ``relations`` set to False (Table 2's "w/o CC", "w/o HV", "w/o DA", "w/o Rel");
* ``no-detail-recovery``: ``promem`` without this engine's completeness check on details
  (``recover_details``);
* ``no-screen`` / ``no-lexical-nli`` / ``no-dedup``: ``promem`` without the HV screen before
  NLI (``screen_entries``), the lexical entailment fast path (``lexical_entailment``) or the
  dedup after HV (``dedup``);
* ``llm-reread``: ``promem`` whose detail re-read asks the LLM for every turn
  (``recover_by`` "llm") instead of restating English sentences by rule.

Switches the base config already turned off (``--no-cc`` ...) stay off in every variant.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

from ..config import Config

__all__ = ["VARIANTS", "VARIANT_LABELS", "fmt_int", "fmt_sec", "format_table", "parse_variants", "pct", "variant_config"]

VARIANTS: dict[str, dict[str, Any]] = {
    "promem": {"variant": "promem"},
    "one-off": {"variant": "one-off"},
    "v1": {"variant": "v1"},
    "no-cc": {"variant": "promem", "completeness_check": False},
    "no-hv": {"variant": "promem", "hallucination_verification": False},
    "no-da": {"variant": "promem", "detail_anchoring": False},
    "no-rel": {"variant": "promem", "relations": False},
    "no-detail-recovery": {"variant": "promem", "recover_details": False},
    "no-screen": {"variant": "promem", "screen_entries": False},
    "no-lexical-nli": {"variant": "promem", "lexical_entailment": False},
    "no-dedup": {"variant": "promem", "dedup": False},
    "llm-reread": {"variant": "promem", "recover_by": "llm"},
}

VARIANT_LABELS = {
    "promem": "ProMem (Full)", "one-off": "One-off Extract", "v1": "ProMem v1", "no-cc": "w/o CC",
    "no-hv": "w/o HV", "no-da": "w/o DA", "no-rel": "w/o Rel", "no-detail-recovery": "w/o detail recovery",
    "no-screen": "w/o HV screen", "no-lexical-nli": "w/o lexical NLI", "no-dedup": "w/o dedup",
    "llm-reread": "re-read by LLM",
}


def parse_variants(spec: Optional[str]) -> list[str]:
    """``"promem,one-off"`` -> ``["promem", "one-off"]`` (order kept, duplicates dropped).

    Raises ValueError naming an unknown variant and listing the known ones.
    """
    names = [v.strip() for v in (spec or "promem").split(",") if v.strip()]
    if not names:
        raise ValueError("no variant given")
    bad = [n for n in names if n not in VARIANTS]
    if bad:
        raise ValueError(f"unknown variant(s) {bad}; choose from {list(VARIANTS)}")
    return list(dict.fromkeys(names))


def variant_config(base: Config, name: str) -> Config:
    """A deep copy of ``base`` with the pipeline switches of variant ``name``."""
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}; choose from {list(VARIANTS)}")
    cfg = base.model_copy(deep=True)
    cfg.pipeline = cfg.pipeline.model_copy(update=VARIANTS[name])
    return cfg


def pct(x: Optional[float]) -> str:
    """A share in [0, 1] as a percentage with 2 decimals; "-" for None / NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{100 * x:.2f}"


def fmt_int(x: Optional[float]) -> str:
    """A count rounded to an integer; "-" for None / NaN."""
    return "-" if x is None or math.isnan(x) else f"{x:.0f}"


def fmt_sec(x: Optional[float]) -> str:
    """Seconds with 2 decimals; "-" for None / NaN."""
    return "-" if x is None or math.isnan(x) else f"{x:.2f}"


def format_table(rows: Sequence[dict], columns: Sequence[tuple[str, str, Callable[[Any], str]]]) -> str:
    """Markdown table: one row per dict; ``columns`` = (header, key, formatter)."""
    head = "| " + " | ".join(h for h, _, _ in columns) + " |"
    sep = "| " + " | ".join("---" for _ in columns) + " |"
    body = ["| " + " | ".join(fmt(r.get(key)) for _, key, fmt in columns) + " |" for r in rows]
    return "\n".join([head, sep, *body])
