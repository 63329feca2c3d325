#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU machine's part of the Python checks, in one go: the tests that need DCP, CUDA,
# Lightning or transformers (and the rest of tests/python on that torch), then B7 into GPU
# memory, B3 and B8. Usage, from the project root, with libwharf and wharfd found through
# WHARF_BUILD_DIR / WHARF_LIB:
#   bash bench/py/gpu_suite.sh OUTDIR [tests] [b7] [b3] [b8]      (default: all four)
# Each part has its own time limit, so that one hang costs only its part. BOTO3_SITE: a
# directory holding boto3 (and botocore) where the machine's Python has none (B8's baseline).
set -u
OUT=${1:?usage: gpu_suite.sh OUTDIR [parts]}; shift
PARTS=${*:-tests b7 b3 b8}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
echo "== $(date -u +%T) machine"
nvidia-smi -L; nproc; free -g | head -2; df -h /tmp /dev/shm | tail -2
$PY -c 'import torch, sys; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
for part in $PARTS; do
  echo "== $(date -u +%T) $part"
  case $part in
    tests)
      timeout 170 $PY -m pytest -q -p no:cacheprovider -rs -n 8 tests/python \
        --ignore=tests/python/test_package.py 2>&1 | tee "$OUT/pytest-h200.log" | tail -40 ;;
    b7)
      timeout 60 $PY bench/py/tokens.py --device cuda --shards 3 --shard-mib 256 \
        --repeats 2 --results "$OUT" --tag gpu 2>&1 | tail -12 ;;
    b3)
      timeout 120 $PY bench/py/train.py --steps 20 --batch 256 --repeats 4 --workers 8 \
        --no-limits --results "$OUT" 2>&1 | tail -22 ;;
    b8)
      PYTHONPATH="$PYTHONPATH${BOTO3_SITE:+:$BOTO3_SITE}" timeout 230 $PY bench/py/hf_load.py \
        --repeats 2 --boto3-repeats 1 --no-limits --results "$OUT" 2>&1 | tail -16 ;;
  esac
done
echo "== $(date -u +%T) done"
