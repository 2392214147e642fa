"""Evaluation building blocks: metrics (LoCoMo F1, HaluMem integrity/accuracy/QA rates,
embedding proxy judge) and the HaluMem output writer. Submodules import lazily."""
