"""st.trace(): record the memory-lifetime events of the C++ core (storages, tensors, copies, AOTI handles)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields

__all__ = ["Event", "StorageLife", "TensorLife", "Trace", "TraceSummary", "trace", "EVENT_KINDS"]

EVENT_KINDS = (
    "storage_alloc",
    "storage_free",
    "tensor_create",
    "tensor_destroy",
    "copy",
    "handle_create",
    "handle_delete",
    "device_event",
)


@dataclass(frozen=True)
class Event:
    """One event of the core. Times are monotonic nanoseconds; sizes and strides are in elements.

    kind: one of EVENT_KINDS. id: the storage id (storage_*), tensor id (tensor_*) or handle id
    (handle_*). storage_id: the storage a tensor, handle or copy destination lives in. op: the operation
    that made a tensor ("empty", "permute", ...), or for a borrowed storage_alloc the type of its owner.
    src_*: the source of a copy. device_event: an event a device plugin reports: op "device_memory" for
    memory it takes (bytes > 0) or gives back (bytes < 0) outside storages, or its own name ("cache_hit"),
    with the plugin's stream as an opaque number (None when not given).
    """

    kind: str
    time_ns: int
    id: int = 0
    storage_id: int = 0
    bytes: int = 0
    device: str = "cpu"
    src_device: str = ""
    dtype: str | None = None
    src_dtype: str | None = None
    owning: bool = False
    op: str = ""
    sizes: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    offset: int = 0
    src_storage_id: int = 0
    stream: int | None = None

    @classmethod
    def from_record(cls, record: Mapping) -> Event:
        """An Event from the dict the core (or ``Trace.to_records``) produces."""
        if not isinstance(record, Mapping):
            raise TypeError(f"Event.from_record(): expected a mapping, got {type(record).__name__}")
        kind = record.get("kind")
        if kind not in EVENT_KINDS:
            raise ValueError(
                f"Event.from_record(): kind must be one of {', '.join(EVENT_KINDS)}, got {kind!r}"
            )
        if "time_ns" not in record:
            raise ValueError("Event.from_record(): the record has no time_ns")
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in record.items() if k in names}
        for key in ("sizes", "strides"):
            if key in values:
                values[key] = tuple(int(v) for v in values[key])
        for key in ("device", "src_device", "op"):
            if values.get(key) is None:
                values.pop(key, None)
            else:
                values[key] = str(values[key])
        return cls(**values)

    def describe(self) -> str:
        """One readable line, e.g. ``storage_alloc #3 96 B cpu owning``."""
        k = self.kind
        if k == "storage_alloc":
            how = "owning" if self.owning else f"borrowed from {self.op or 'an owner'}"
            return f"storage_alloc #{self.id} {self.bytes} B {self.device} {how}"
        if k == "storage_free":
            return f"storage_free  #{self.id} {self.bytes} B {self.device}"
        if k in ("tensor_create", "tensor_destroy"):
            shape = ", ".join(map(str, self.sizes)) + ("," if len(self.sizes) == 1 else "")
            stride = ", ".join(map(str, self.strides)) + ("," if len(self.strides) == 1 else "")
            return (
                f"{k} t{self.id} {self.op or '?'} ({shape}):({stride}) @ {self.offset} "
                f"on storage #{self.storage_id}"
            )
        if k == "copy":
            return (
                f"copy {self.bytes} B #{self.src_storage_id} {self.src_device} {self.src_dtype} -> "
                f"#{self.storage_id} {self.device} {self.dtype}"
            )
        if k == "device_event":
            stream = f" stream {self.stream:#x}" if self.stream else ""
            return f"device_event {self.op or '?'} {self.bytes} B {self.device}{stream}"
        return f"{k} h{self.id:#x} on storage #{self.storage_id}"


@dataclass
class TensorLife:
    """A tensor or view seen in a trace: when it was made and destroyed (None: outside the trace)."""

    id: int
    storage_id: int
    op: str
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    created_ns: int | None
    destroyed_ns: int | None


@dataclass
class StorageLife:
    """A storage seen in a trace, with the tensors, views and handles that kept it alive."""

    id: int
    device: str
    bytes: int
    owning: bool | None  # None: allocated before the trace, so not known
    owner: str
    allocated_ns: int | None  # None: allocated before the trace started
    freed_ns: int | None  # None: still alive when the trace stopped
    tensors: list[TensorLife] = field(default_factory=list)
    handles: list[TensorLife] = field(default_factory=list)


@dataclass
class TraceSummary:
    """Totals of a trace; ``str()`` gives a readable report, ``as_dict()`` the numbers."""

    duration_ns: int
    events: dict[str, int]
    allocations: int
    frees: int
    bytes_allocated: int
    bytes_freed: int
    peak_bytes: dict[str, int]
    alive: list[tuple[int, int, str]]  # (storage id, bytes, device) allocated in the trace, never freed
    tensors_created: int
    tensors_destroyed: int
    copies: int
    bytes_copied: int
    handles_created: int
    handles_deleted: int
    device_events: int = 0  # events device plugins reported (memory outside storages, their own events)

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        peak = ", ".join(f"{d} {_bytes(b)}" for d, b in self.peak_bytes.items()) or "none"
        alive = ", ".join(f"#{i} ({_bytes(b)} {d})" for i, b, d in self.alive) or "none"
        return "\n".join(
            [
                f"trace of {sum(self.events.values())} events over {self.duration_ns / 1e3:.1f} µs",
                f"  storages: {self.allocations} allocated ({_bytes(self.bytes_allocated)}), "
                f"{self.frees} freed ({_bytes(self.bytes_freed)})",
                f"  peak live bytes allocated in the trace: {peak}",
                f"  still alive at stop: {alive}",
                f"  tensors and views: {self.tensors_created} created, {self.tensors_destroyed} destroyed",
                f"  copies: {self.copies} ({_bytes(self.bytes_copied)})",
                f"  AOTI handles: {self.handles_created} created, {self.handles_deleted} deleted",
            ]
            + ([f"  device plugin events: {self.device_events}"] if self.device_events else [])
        )

    def __repr__(self) -> str:
        return str(self)


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


class Trace:
    """The events the core recorded between ``__enter__`` and ``__exit__`` (all threads).

    Traces nest: each one gets every event between its own start and stop. A Trace records once.
    """

    def __init__(self) -> None:
        self._token: int | None = None
        self._events: list[Event] | None = None
        self.start_ns: int | None = None
        self.stop_ns: int | None = None

    # -- recording -------------------------------------------------------------------------------------
    def __enter__(self) -> Trace:
        if self._token is not None or self._events is not None:
            raise RuntimeError("Trace.__enter__(): a Trace records once; start a new one with st.trace()")
        from . import _C

        self.start_ns = time.monotonic_ns()
        self._token = _C._trace_start()
        return self

    def __exit__(self, *exc) -> None:
        from . import _C

        token, self._token = self._token, None
        if token is None:
            raise RuntimeError("Trace.__exit__(): this trace is not recording")
        records = _C._trace_stop(token)
        self.stop_ns = time.monotonic_ns()
        self._events = [Event.from_record(r) for r in records]
        self._fit_clock()

    @classmethod
    def from_records(
        cls, records: Iterable[Mapping], *, start_ns: int | None = None, stop_ns: int | None = None
    ) -> Trace:
        """A finished Trace from event dicts, as the core or ``to_records()`` produces (saved traces)."""
        if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
            raise TypeError(
                f"Trace.from_records(): expected an iterable of event dicts, got {type(records).__name__}"
            )
        tr = cls()
        tr._events = sorted((Event.from_record(r) for r in records), key=lambda e: e.time_ns)
        tr.start_ns, tr.stop_ns = start_ns, stop_ns
        tr._fit_clock()
        return tr

    def _fit_clock(self) -> None:
        """Use the Python clock for start and stop unless the core's clock disagrees with it."""
        evs = self._events or []
        if not evs:
            self.start_ns = self.start_ns or 0
            self.stop_ns = self.stop_ns if self.stop_ns is not None else self.start_ns
            return
        first, last = evs[0].time_ns, evs[-1].time_ns
        if self.start_ns is None or self.start_ns > first:
            self.start_ns = first
        if self.stop_ns is None or self.stop_ns < last:
            self.stop_ns = last

    # -- reading ---------------------------------------------------------------------------------------
    @property
    def recording(self) -> bool:
        return self._token is not None

    @property
    def events(self) -> list[Event]:
        if self._events is None:
            state = "still recording" if self.recording else "not started"
            raise RuntimeError(
                f"Trace.events: the trace is {state}; read it after the `with st.trace() as tr:` block"
            )
        return self._events

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self):
        return iter(self.events)

    def kinds(self) -> list[str]:
        """The sequence of event kinds, e.g. ['storage_alloc', 'tensor_create', ...]."""
        return [e.kind for e in self.events]

    def to_records(self) -> list[dict]:
        """The events as plain dicts (JSON-friendly); ``Trace.from_records`` reads them back."""
        return [asdict(e) for e in self.events]

    def to_dataframe(self):
        """The events as a pandas DataFrame, one row per event, with ``t_us`` since the trace start."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError(
                "Trace.to_dataframe() needs pandas, which is not installed: "
                "pip install pandas (or read Trace.events / Trace.to_records())"
            ) from e
        df = pd.DataFrame(self.to_records(), columns=[f.name for f in fields(Event)])
        df.insert(1, "t_us", (df["time_ns"] - self.start_ns) / 1e3)
        return df

    def storages(self) -> list[StorageLife]:
        """Each storage the trace saw, in order of first appearance, with the tensors that used it."""
        lives: dict[int, StorageLife] = {}
        tensors: dict[int, TensorLife] = {}
        handles: dict[int, TensorLife] = {}

        def life(sid: int, e: Event) -> StorageLife:
            if sid not in lives:
                lives[sid] = StorageLife(sid, e.device, 0, None, "", None, None)
            return lives[sid]

        for e in self.events:
            if e.kind == "storage_alloc":
                s = life(e.id, e)
                s.device, s.bytes, s.owning, s.allocated_ns = e.device, e.bytes, e.owning, e.time_ns
                s.owner = "" if e.owning else e.op
            elif e.kind == "storage_free":
                s = life(e.id, e)
                s.freed_ns = e.time_ns
                s.bytes = s.bytes or e.bytes
            elif e.kind in ("tensor_create", "handle_create"):
                table, where = (tensors, "tensors") if e.kind == "tensor_create" else (handles, "handles")
                t = TensorLife(e.id, e.storage_id, e.op, e.sizes, e.strides, e.offset, e.time_ns, None)
                table[e.id] = t
                if e.storage_id:
                    getattr(life(e.storage_id, e), where).append(t)
            elif e.kind in ("tensor_destroy", "handle_delete"):
                table, where = (tensors, "tensors") if e.kind == "tensor_destroy" else (handles, "handles")
                t = table.pop(e.id, None)
                if t is None:  # made before the trace started: the operation that made it is unknown
                    t = TensorLife(e.id, e.storage_id, "", e.sizes, e.strides, e.offset, None, None)
                    if e.storage_id:
                        getattr(life(e.storage_id, e), where).append(t)
                t.destroyed_ns = e.time_ns
            elif e.kind == "copy":
                for sid in (e.src_storage_id, e.storage_id):
                    if sid:
                        life(sid, e)
        return list(lives.values())

    def summary(self) -> TraceSummary:
        """Allocations, frees, peak live bytes per device, storages still alive, copies, handles."""
        evs = self.events
        live: dict[str, int] = Counter()
        peak: dict[str, int] = {}
        allocated: dict[int, Event] = {}
        freed = 0
        bytes_freed = 0
        for e in evs:
            if e.kind == "storage_alloc":
                allocated[e.id] = e
                live[e.device] += e.bytes
                peak[e.device] = max(peak.get(e.device, 0), live[e.device])
            elif e.kind == "storage_free":
                freed += 1
                bytes_freed += e.bytes
                if e.id in allocated:
                    live[allocated[e.id].device] -= allocated[e.id].bytes
        freed_ids = {e.id for e in evs if e.kind == "storage_free"}
        kinds = Counter(e.kind for e in evs)
        return TraceSummary(
            duration_ns=(self.stop_ns or 0) - (self.start_ns or 0),
            events={k: kinds[k] for k in EVENT_KINDS if kinds[k]},
            allocations=kinds["storage_alloc"],
            frees=freed,
            bytes_allocated=sum(e.bytes for e in allocated.values()),
            bytes_freed=bytes_freed,
            peak_bytes=peak,
            alive=[(i, e.bytes, e.device) for i, e in allocated.items() if i not in freed_ids],
            tensors_created=kinds["tensor_create"],
            tensors_destroyed=kinds["tensor_destroy"],
            copies=kinds["copy"],
            bytes_copied=sum(e.bytes for e in evs if e.kind == "copy"),
            handles_created=kinds["handle_create"],
            handles_deleted=kinds["handle_delete"],
            device_events=kinds["device_event"],
        )

    def __repr__(self) -> str:
        if self._events is None:
            return f"<slimtensor Trace {'recording' if self.recording else 'not started'}>"
        return f"<slimtensor Trace: {len(self._events)} events>"

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(repr(self) if cycle or self._events is None else f"{self!r}\n{self.summary()}")


def trace() -> Trace:
    """Record the core's memory-lifetime events: ``with st.trace() as tr: ...`` then ``tr.events``."""
    return Trace()
