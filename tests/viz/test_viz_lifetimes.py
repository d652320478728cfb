"""st.viz.lifetimes: one bar per storage, one per tensor, arrows for copies, lanes per device."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import slimtensor as st
from slimtensor.trace import Trace
from slimtensor.viz.lifetimes import plural

from ._figures import axes, drawn_texts, patches, renderer, texts

pytest.importorskip("matplotlib", reason="slimtensor.viz draws with matplotlib")


def test_a_traced_program_draws_a_bar_per_storage_and_tensor():
    with st.trace() as tr:
        a = st.empty((4, 6), dtype=st.float32)
        a_storage = a.storage().id
        b = a.permute(1, 0)
        c = b.contiguous()
        del a, b
        gc.collect()
        d = st.zeros((3,), dtype=st.float32)
    fig = st.viz.lifetimes(tr)
    ax = axes(fig, "lifetimes")
    allocated = {e.id for e in tr.events if e.kind == "storage_alloc"}
    freed = {e.id for e in tr.events if e.kind == "storage_free"}
    # the core may use temporaries (zeros fills from a scalar); a's, c's and d's storages are there
    assert {a_storage, c.storage().id, d.storage().id} <= allocated
    assert a_storage in freed and not {c.storage().id, d.storage().id} & freed
    assert len(patches(ax, "storage-bar")) == len(allocated)
    assert len(patches(ax, "tensor-bar")) == len({e.id for e in tr.events if e.kind == "tensor_create"})
    assert len(patches(ax, "copy-arrow")) == 1
    assert fig.get_suptitle().endswith("1 copy")  # not "1 copies"
    # c and d outlive the trace: their bars end open (hatched)
    assert len(patches(ax, "storage-open-end")) == len(allocated - freed) == 2
    assert [t.get_text() for t in ax.get_yticklabels()] == ["cpu"]
    del c, d


def test_one_lane_per_device_from_saved_records():
    records = [
        {"kind": "storage_alloc", "time_ns": 10, "id": 1, "bytes": 64, "device": "cpu", "owning": True},
        {"kind": "storage_alloc", "time_ns": 20, "id": 2, "bytes": 64, "device": "cuda:0", "owning": True},
        {
            "kind": "copy",
            "time_ns": 30,
            "storage_id": 2,
            "src_storage_id": 1,
            "bytes": 64,
            "device": "cuda:0",
            "src_device": "cpu",
            "dtype": "float32",
            "src_dtype": "float32",
        },
        {"kind": "storage_free", "time_ns": 40, "id": 1, "bytes": 64, "device": "cpu"},
    ]
    fig = st.viz.lifetimes(Trace.from_records(records))
    ax = axes(fig, "lifetimes")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["cpu", "cuda:0"]
    assert len(patches(ax, "storage-bar")) == 2
    assert len(patches(ax, "copy-arrow")) == 1


def test_max_storages_limits_the_rows_and_says_so():
    records = [
        {"kind": "storage_alloc", "time_ns": i, "id": i + 1, "bytes": 4, "device": "cpu", "owning": True}
        for i in range(10)
    ]
    fig = st.viz.lifetimes(Trace.from_records(records), max_storages=4)
    ax = axes(fig, "lifetimes")
    assert len(patches(ax, "storage-bar")) == 4
    assert "(6 not drawn; max_storages=4)" in fig.get_suptitle()


def test_lifetimes_argument_errors():
    with pytest.raises(TypeError, match=r"lifetimes\(\): expected a finished slimtensor Trace"):
        st.viz.lifetimes([])
    tr = st.trace()
    with tr, pytest.raises(RuntimeError, match="still recording"):
        st.viz.lifetimes(tr)
    with pytest.raises(ValueError, match=r"lifetimes\(\): max_storages must be a positive int, got 0"):
        st.viz.lifetimes(Trace.from_records([]), max_storages=0)


def _trace_of_a_typical_cell():
    with st.trace() as tr:
        a = st.empty((4, 6), dtype=st.float32)
        b = a.permute(1, 0)
        c = b.contiguous()
        arr = np.arange(12, dtype=np.float32)
        n = st.from_numpy(arr)
        shared = np.from_dlpack(st.arange(4, dtype=st.float32))
        del a, b, arr, n, shared
        gc.collect()  # tens of milliseconds of idle wall time
    return tr, c


def _label_boxes(fig):
    r = renderer(fig)
    return [(t.get_text(), t.get_window_extent(r)) for t in drawn_texts(fig)]


def test_labels_never_overlap_and_stay_inside_the_figure():
    tr, c = _trace_of_a_typical_cell()
    for axis in ("events", "time"):
        fig = st.viz.lifetimes(tr, axis=axis)
        boxes = _label_boxes(fig)
        assert len(boxes) > 10
        assert fig.get_figwidth() <= 9.6  # a notebook's output area: wider pictures get cut there
        width, height = fig.bbox.width, fig.bbox.height
        for k, (text, box) in enumerate(boxes):
            assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= width + 1 and box.y1 <= height + 1, (
                axis,
                text,
            )
            for other, obox in boxes[k + 1 :]:
                assert not box.overlaps(obox), (axis, text, other)
    del c


def test_operation_names_are_the_calls_the_user_wrote():
    tr, c = _trace_of_a_typical_cell()
    labels = " ".join(texts(axes(st.viz.lifetimes(tr), "labels")))
    assert "from_numpy" in labels and "borrowed from ndarray" in labels and "permute" in labels
    assert "copy (contiguous, clone, to or reshape)" in labels
    for internal in ("share", "from_buffer", "empty_strided"):
        assert internal not in labels, labels
    del c


def test_the_event_order_axis_is_the_default_when_wall_time_is_mostly_idle():
    tr, c = _trace_of_a_typical_cell()
    fig = st.viz.lifetimes(tr)
    assert fig.slimtensor_axis == "events"
    ax = axes(fig, "lifetimes")
    assert "event order" in ax.get_xlabel()
    top = [a for a in ax.child_axes if "wall time" in a.get_xlabel()]
    assert top and all(t.get_text().endswith(("µs", "ms", "s")) for t in top[0].get_xticklabels())
    busy = Trace.from_records(
        [
            {
                "kind": "storage_alloc",
                "time_ns": 100 * i,
                "id": i + 1,
                "bytes": 4,
                "device": "cpu",
                "owning": True,
            }
            for i in range(6)
        ]
    )
    assert st.viz.lifetimes(busy).slimtensor_axis == "time"
    assert st.viz.lifetimes(tr, axis="time").slimtensor_axis == "time"
    with pytest.raises(ValueError, match="axis must be 'auto', 'events' or 'time'"):
        st.viz.lifetimes(tr, axis="wall")
    del c


@pytest.mark.parametrize(
    "n,word,expected",
    [
        (1, "copy", "1 copy"),
        (2, "copy", "2 copies"),
        (0, "storage", "0 storages"),
        (1, "storage", "1 storage"),
    ],
)
def test_plural(n, word, expected):
    assert plural(n, word) == expected


def _device_trace() -> Trace:
    """A host storage copied to a CUDA storage, with the allocator's events on cuda:0 (as the CUDA plugin
    reports them), as a saved trace: the picture needs no GPU."""
    ms = 1_000_000
    records = [
        {"kind": "storage_alloc", "time_ns": 1 * ms, "id": 1, "bytes": 4096, "device": "cpu", "owning": True},
        {"kind": "tensor_create", "time_ns": 2 * ms, "id": 10, "storage_id": 1, "op": "arange", "sizes": [1024]},
        {"kind": "device_event", "time_ns": 3 * ms, "op": "malloc", "bytes": 2 << 20, "device": "cuda:0"},
        {"kind": "storage_alloc", "time_ns": 4 * ms, "id": 2, "bytes": 4096, "device": "cuda:0", "owning": True},
        {"kind": "tensor_create", "time_ns": 5 * ms, "id": 11, "storage_id": 2, "op": "_to", "sizes": [1024]},
        {"kind": "copy", "time_ns": 6 * ms, "storage_id": 2, "src_storage_id": 1, "bytes": 4096,
         "device": "cuda:0", "src_device": "cpu", "dtype": "float32", "src_dtype": "float32"},
        {"kind": "tensor_destroy", "time_ns": 7 * ms, "id": 11, "storage_id": 2},
        {"kind": "device_event", "time_ns": 8 * ms, "op": "free", "bytes": 4096, "device": "cuda:0"},
        {"kind": "storage_free", "time_ns": 9 * ms, "id": 2, "bytes": 4096, "device": "cuda:0"},
        {"kind": "device_event", "time_ns": 10 * ms, "op": "cache_hit", "bytes": 4096, "device": "cuda:0"},
        {"kind": "device_event", "time_ns": 11 * ms, "op": "cudaFree", "bytes": 2 << 20, "device": "cuda:0"},
    ]  # fmt: skip
    return Trace.from_records(records, start_ns=0, stop_ns=12 * ms)


def test_device_memory_has_its_lane_beside_the_host_with_the_allocator_row():
    fig = st.viz.lifetimes(_device_trace())
    ax = axes(fig, "lifetimes")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["cpu", "cuda:0"]
    marks = {c.get_gid(): len(c.get_offsets()) for c in ax.collections}
    assert marks == {"device-malloc": 1, "device-cache_hit": 1, "device-free": 1, "device-cudaFree": 1}
    labels = texts(axes(fig, "labels"))
    assert "cuda:0 allocator: cudaMalloc 1, cache hit 1, back to the cache 1, cudaFree 1" in labels
    assert len(patches(ax, "copy-arrow")) == 1  # the host -> device copy, between the lanes
    assert "allocator row: ▲ cudaMalloc" in fig.get_supxlabel()
    # the allocator row sits at the top of the cuda lane, above the device's storage
    y = {t.get_text().split(" · ")[0]: t.get_position()[1] for t in axes(fig, "labels").texts}
    assert y["storage #1 4096 B cpu, owning"] < y[next(k for k in y if k.startswith("cuda:0 allocator"))]
    assert y[next(k for k in y if k.startswith("cuda:0 allocator"))] < y["storage #2 4096 B cuda:0, owning"]
    host_only = st.viz.lifetimes(
        Trace.from_records([r for r in _device_trace().to_records() if r["kind"] != "device_event"])
    )
    assert not axes(host_only, "lifetimes").collections and "allocator row" not in host_only.get_supxlabel()
