"""Files: the header of a .npy file a transfer streams, and notes added
to an exception on its way up."""

from __future__ import annotations

import warnings
from typing import Any, BinaryIO

import numpy as np


def add_note(e: BaseException, note: str) -> None:
    if hasattr(e, "add_note"):  # Python 3.11 on: shown under the traceback
        e.add_note(note)
    else:
        warnings.warn(note, stacklevel=3)


def npy_header(f: BinaryIO) -> tuple[int, tuple[int, ...], np.dtype[Any] | None]:
    """(data offset, shape, dtype) of a .npy file; (0, (), None) for other files."""
    magic = f.read(6)
    f.seek(0)
    if magic != b"\x93NUMPY":
        return 0, (), None
    fmt = np.lib.format
    version = fmt.read_magic(f)
    read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, fortran, dtype = read(f)
    if fortran and len(shape) > 1:
        raise ValueError("Fortran-order .npy files are not supported; save np.ascontiguousarray(a)")
    return f.tell(), tuple(shape), dtype
