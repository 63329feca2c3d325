# SPDX-License-Identifier: Apache-2.0
"""wharf.data: the datasets moved to wharf.torch.data (they import torch); this name stays
importable and is that very module."""
import sys

from .torch import data as _data

sys.modules[__name__] = _data
