"""Integrations with other memory systems (optional packages; import the submodule you need).

* :mod:`promem_fast.integrations.mem0` — a Mem0 ``Memory`` that extracts with promem_fast
  (needs ``pip install 'promem-fast[mem0]'``).
"""
