#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole tests/python suite on the GPU machine's torch (DCP, Lightning, transformers, CUDA),
# then the Lightning preemption test alone with its output. Run from the repo root after
# `source build-device/env.sh`; the logs land in $OUT.
set -u
{ date -u; nvidia-smi -L; python3 -c 'import torch, sys; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
  python3 -c 'import lightning; print("lightning", lightning.__version__)' 2>&1 | tail -1
  python3 -c 'import transformers; print("transformers", transformers.__version__)' 2>&1 | tail -1; } | tee $OUT/machine.txt
timeout 330 python3 -m pytest -q -p no:cacheprovider -rs -n 8 tests/python \
  --ignore=tests/python/test_package.py --ignore=tests/python/test_wheel.py > $OUT/pytest-all.log 2>&1
echo "== pytest rc=$?"; tail -25 $OUT/pytest-all.log
timeout 150 python3 -m pytest -q -p no:cacheprovider -rs -s tests/python/test_lightning_preempt.py \
  > $OUT/pytest-lightning-preempt.log 2>&1
echo "== preempt rc=$?"; tail -15 $OUT/pytest-lightning-preempt.log
