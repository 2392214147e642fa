"""Pipeline throughput, sequential vs batched engine: a thin wrapper over ``promem_fast.bench``.

    python benchmarks/bench_pipeline.py --input /work/shared/data/locomo_dev.json --sessions 16 \\
        --engine sequential,batched --llm scripted --latency-ms 50 --concurrency 16 \\
        --out benchmarks/results/bench_scripted.jsonl

Prints one JSON line per engine and a final line with the ratio batched / sequential.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from promem_fast.bench import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
