"""Pipeline stages (ProMem §3), one module per step; ``pipeline.run_pipeline`` composes them."""

from .pipeline import run_pipeline

__all__ = ["run_pipeline"]
