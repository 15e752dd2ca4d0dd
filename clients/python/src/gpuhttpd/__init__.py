"""gpuhttpd: NumPy arrays in a gpuhttpd server's GPU memory, over HTTP.

>>> import numpy as np, gpuhttpd
>>> c = gpuhttpd.Client("http://127.0.0.1:8080")
>>> x = c.asarray(np.arange(4, dtype=np.float32))
>>> y = c.zeros(4, np.float32)
>>> c.run("axpy", a=2.0, x=x, y=y)
{'n': 4}
>>> y.get()
array([0., 2., 4., 6.], dtype=float32)

Modules by job: ``client`` (the Client: buffers, transfers, runs),
``arrays`` (DeviceArray, dtypes), ``devices`` (Device), ``runs``
(RunFuture, Pipeline, Kernel, Module), ``regions`` (SharedArray: same-host
shared memory), ``errors`` (one exception class per kind of failure),
``_core`` (the request logic once: operations that yield the requests
they need, run by a blocking or an asyncio driver), ``transport`` (HTTP
through http.client, and MockTransport for tests), ``aio_transport``
(HTTP/1.1 on asyncio streams, a bounded pool), ``progress`` (tqdm bars),
``ops`` (the array operators), ``aio`` (AsyncClient: the Client's
operations awaited on asyncio), ``cli`` (python -m gpuhttpd).
"""

from ._direct import DirectTransport, IncompleteListing
from ._version import __version__
from .aio import AsyncArray, AsyncClient
from .aio_transport import AsyncHTTPTransport, AsyncMockTransport
from .arrays import DeviceArray, LargeDownloadWarning, TransferError, dtype_name, numpy_dtype
from .client import Client
from .devices import Device, DeviceMemory, DevicePool
from .errors import (
    BadRequest,
    Canceled,
    Conflict,
    ConnectionFailed,
    ContentTooLarge,
    Forbidden,
    GpuhttpdError,
    InsufficientStorage,
    InvalidArgument,
    Misdirected,
    NotFound,
    OwnerRestarted,
    PreconditionFailed,
    ServerError,
    Timeout,
    Unauthorized,
    Unavailable,
)
from .progress import ProgressUnavailable
from .regions import SharedArray
from .runs import Kernel, Module, Pipeline, RunFuture, RunResult
from .transport import HTTPTransport, MockTransport, Request, Response, Transport

__all__ = [
    "AsyncArray",
    "AsyncClient",
    "AsyncHTTPTransport",
    "AsyncMockTransport",
    "BadRequest",
    "Canceled",
    "Client",
    "Conflict",
    "ConnectionFailed",
    "ContentTooLarge",
    "Device",
    "DeviceArray",
    "DeviceMemory",
    "DevicePool",
    "DirectTransport",
    "Forbidden",
    "GpuhttpdError",
    "HTTPTransport",
    "IncompleteListing",
    "InsufficientStorage",
    "InvalidArgument",
    "Kernel",
    "LargeDownloadWarning",
    "Misdirected",
    "MockTransport",
    "Module",
    "NotFound",
    "OwnerRestarted",
    "Pipeline",
    "PreconditionFailed",
    "ProgressUnavailable",
    "Request",
    "Response",
    "RunFuture",
    "RunResult",
    "ServerError",
    "SharedArray",
    "Timeout",
    "TransferError",
    "Transport",
    "Unauthorized",
    "Unavailable",
    "__version__",
    "dtype_name",
    "numpy_dtype",
]
