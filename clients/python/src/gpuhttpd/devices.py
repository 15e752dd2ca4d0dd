"""The server's devices, as ``GET /v1/devices`` describes them: one
:class:`Device` each, whose ``index`` is what every ``device`` argument and
attribute of the client means."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def _count(d: dict[str, Any], key: str) -> int | None:
    return int(d[key]) if key in d else None


@dataclass(frozen=True)
class DeviceMemory:
    """The device's memory, in bytes. ``free`` is None where the server
    keeps it to whom may read its metrics (tenant tokens configured)."""

    total: int
    free: int | None


@dataclass(frozen=True)
class DevicePool:
    """The server's pool on the device: its ``limit`` and ``used`` bytes,
    and the ``buffers`` in it. ``used`` and ``buffers`` sum every tenant's
    buffers: None where the server keeps them to whom may read its metrics
    (tenant tokens configured; a tenant's own figures: ``GET /v1/usage``)."""

    limit: int
    used: int | None
    buffers: int | None


@dataclass(frozen=True)
class Device:
    """One device of the server. ``index``: its place in the server's list
    (what ``device=`` names); ``ordinal``: the CUDA ordinal; ``name``,
    ``uuid``, ``architecture`` (``sm_90``; ``host`` on the host backend);
    ``memory`` and ``pool``; ``state`` (``ready`` or ``lost``);
    ``peer_access``: the indices of the devices it copies to directly."""

    index: int
    ordinal: int
    name: str
    uuid: str
    architecture: str
    memory: DeviceMemory
    pool: DevicePool
    state: str
    peer_access: tuple[int, ...]

    @property
    def ready(self) -> bool:
        """Whether the device serves (its state is ``ready``)."""
        return self.state == "ready"

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Device:
        """A device from its ``GET /v1/devices`` entry."""
        memory, pool = d.get("memory", {}), d.get("pool", {})
        return cls(index=int(d["index"]), ordinal=int(d.get("ordinal", d["index"])),
                   name=str(d.get("name", "")), uuid=str(d.get("uuid", "")),
                   architecture=str(d.get("architecture", "")),
                   memory=DeviceMemory(int(memory.get("total", 0)), _count(memory, "free")),
                   pool=DevicePool(int(pool.get("limit", 0)), _count(pool, "used"),
                                   _count(pool, "buffers")),
                   state=str(d.get("state", "ready")),
                   peer_access=tuple(int(k) for k in d.get("peer_access", [])))
