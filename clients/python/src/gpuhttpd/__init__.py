"""gpuhttpd: NumPy arrays in a gpuhttpd server's GPU memory, over HTTP.

>>> import numpy as np, gpuhttpd
>>> c = gpuhttpd.Client("http://127.0.0.1:8080")
>>> x = c.asarray(np.arange(4, dtype=np.float32))
>>> y = c.zeros(4, np.float32)
>>> c.run("axpy", a=2.0, x=x, y=y)
>>> y.get()
array([0., 2., 4., 6.], dtype=float32)
"""
from .client import Client, DeviceArray, Pipeline, RunFuture, dtype_name, numpy_dtype
from .errors import (Conflict, GpuhttpdError, InvalidArgument, NotFound, PreconditionFailed,
                     TransferError, Unavailable)

__all__ = ["Client", "DeviceArray", "Pipeline", "RunFuture", "dtype_name", "numpy_dtype",
           "GpuhttpdError", "NotFound", "Conflict", "PreconditionFailed", "InvalidArgument",
           "Unavailable", "TransferError"]
__version__ = "0.1.0"
