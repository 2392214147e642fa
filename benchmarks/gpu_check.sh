#!/usr/bin/env bash
# One prepared run for a lent GPU machine (the `device` tool: one H200, Python 3.12 with torch
# and triton, nothing fetched there): the Triton cross-reference kernel's GPU tests and its
# benchmark against torch matmul + max. Results land in $OUT (what the device tool brings back).
#
# Before the run, here (pydantic is the only missing import of promem_fast.kernels there):
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
#     pydantic==2.12.5 pydantic-core==2.41.5 annotated-types==0.7.0 typing-inspection==0.4.2
# Then: run(command="bash benchmarks/gpu_check.sh", carry=[".whl"], timeout_s=420).
# vLLM, onnxruntime-gpu and faiss-gpu are not on that image and too large to carry (64 MiB), so
# their paths stay tested against fakes (tests/test_vllm_adapter.py) and on CPU.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/promem_gpu_out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
if ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/site:$PWD"
else
  export PYTHONPATH="$PWD"
fi
export PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1
  "$PY" -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.cuda.is_available())"
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
# The C++ kernel for the CPU rows of the benchmark (_C*.so is not carried: built for 3.11 here).
"$PY" setup.py -q build_ext --inplace > "$OUT/build_ext.log" 2>&1 || echo "C++ extension not built (numpy fallback); see build_ext.log"
# --noconftest: tests/conftest.py imports the whole pipeline (openai, dateparser, ...), which
# the kernel tests do not need.
"$PY" -m pytest -q --noconftest -p no:cacheprovider tests/test_xref_triton.py 2>&1 | tee "$OUT/test_xref_triton.log"
tests_rc=${PIPESTATUS[0]}
# H200 HBM3e peak: 4.8 TB/s (NVIDIA's data sheet).
"$PY" benchmarks/bench_xref.py --quick --peak-bw-gbs 4800 2>&1 | tail -n 40 | tee "$OUT/bench_xref.log"
cp benchmarks/results/xref_gpu.jsonl "$OUT/" 2>/dev/null || echo "no xref_gpu.jsonl written" | tee -a "$OUT/bench_xref.log"
exit "$tests_rc"
