#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Lightning preemption test (its callback now registered with the Trainer), then the whole
# tests/python suite on the GPU machine's torch with one line per test as it ends, so a run cut
# short by the budget still names every result. BUDGET (s, default 200).
set -u
B=${BUDGET:-200}
O=/tmp/o; rm -rf $O; mkdir -p $O
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__)'; } > $O/machine.txt 2>&1
timeout 60 python3 -m pytest -q -p no:cacheprovider -rs -s tests/python/test_lightning_preempt.py \
  > $O/pytest-lightning-preempt.log 2>&1; echo "== $(date -u +%T) preempt rc=$?"
tail -5 $O/pytest-lightning-preempt.log | cut -c1-300
N=""; python3 -c 'import xdist' 2>/dev/null && N="-n 12"
timeout $((B - SECONDS - 10)) python3 -m pytest -v -p no:cacheprovider -p no:benchmark --tb=line -rfs $N \
  tests/python --ignore=tests/python/test_package.py --ignore=tests/python/test_wheel.py \
  --deselect tests/python/test_lightning_preempt.py::test_sigterm_mid_epoch_saves_and_resumes \
  > $O/pytest-all.log 2>&1
echo "== $(date -u +%T) pytest rc=$?"; grep -E "FAILED|ERROR" $O/pytest-all.log | cut -c1-250 | head -40
grep -cE "PASSED" $O/pytest-all.log; tail -3 $O/pytest-all.log | cut -c1-250
tar czf $OUT/all.tgz -C $O .
