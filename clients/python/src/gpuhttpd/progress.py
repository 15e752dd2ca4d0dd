"""Progress bars for transfers, drawn by tqdm when it is installed
(``pip install 'gpuhttpd[progress]'``)."""

from __future__ import annotations

import warnings
from typing import Any


class ProgressUnavailable(UserWarning):
    """``progress=True`` was asked for, but tqdm is not installed: no bar is drawn."""


class Progress:
    """A byte counter from ``initial`` to ``total`` that a tqdm bar follows
    (nothing when ``enabled`` is False). :meth:`moveto` sets the position,
    backwards too (a piece that is sent again)."""

    def __init__(self, total: int, enabled: bool, desc: str, initial: int = 0) -> None:
        self.pos = initial
        self.bar: Any = None
        if not enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            warnings.warn("progress=True draws its bar with tqdm, which is not installed: "
                          "pip install 'gpuhttpd[progress]' (or tqdm)", ProgressUnavailable,
                          stacklevel=4)
            return
        self.bar = tqdm(total=total, initial=initial, unit="B", unit_scale=True, desc=desc)

    def moveto(self, pos: int) -> None:
        """Sets the position to ``pos`` bytes."""
        if self.bar is not None and pos != self.pos:
            self.bar.update(pos - self.pos)
        self.pos = pos

    def close(self) -> None:
        """Ends the bar."""
        if self.bar is not None:
            self.bar.close()
