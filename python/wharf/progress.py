# SPDX-License-Identifier: Apache-2.0
"""progress=True for long loads and saves: a tqdm bar where tqdm is installed, else a plain
line on stderr at most every `every_s` seconds and at the end. Thread-safe (fetch threads
report their bytes as they land)."""
import sys
import threading
import time
from typing import Any, Optional, TextIO


class Progress:
    def __init__(self, total: int, desc: str, enabled: bool = True, every_s: float = 2.0,
                 file: Optional[TextIO] = None) -> None:
        self.total, self.desc, self.enabled = int(total), desc, bool(enabled)
        self.done = 0
        self._lock = threading.Lock()
        self._bar = None
        self._t0 = self._last = time.perf_counter()
        self._every = every_s
        self._file = file or sys.stderr
        if not self.enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            self._bar = tqdm(total=self.total, desc=desc, unit="B", unit_scale=True,
                             unit_divisor=1024, file=self._file)

    def update(self, n: int) -> None:
        if not self.enabled or not n:
            return
        with self._lock:
            self.done += int(n)
            if self._bar is not None:
                self._bar.update(int(n))
                return
            now = time.perf_counter()
            if now - self._last >= self._every:
                self._last = now
                self._line(now)

    def _line(self, now: float) -> None:
        dt = max(now - self._t0, 1e-9)
        pct = 100.0 * self.done / self.total if self.total else 100.0
        print(f"{self.desc}: {self.done / 1e9:.2f} of {self.total / 1e9:.2f} GB "
              f"({pct:.0f}%), {self.done / dt / 1e9:.2f} GB/s", file=self._file, flush=True)

    def close(self) -> None:
        if not self.enabled:
            return
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            else:
                self._line(time.perf_counter())
            self.enabled = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
