"""st.viz.lifetimes(tr): a timeline of storages, the tensors that kept them alive, and copies between them."""

from __future__ import annotations

from ..trace import StorageLife, Trace
from ._mpl import new_figure
from ._style import GRID_EDGE, UNREACHED_HATCH, tensor_colour

MAX_STORAGES = 60  # storage rows drawn; the rest are counted in a note
MAX_TENSORS_PER_ROW = 10  # tensor bars drawn under one storage; the rest are counted in its label
TENSOR_ROW = 0.42  # height of one tensor sub-row, in storage rows


def lifetimes(tr, *, max_storages: int = MAX_STORAGES):
    """Draw a finished trace as a timeline and return a matplotlib Figure.

    One lane per device; in it one thick bar per storage from allocation to free (a bar that starts or
    ends at the trace's edge, hatched there, existed before the trace or outlived it), and under it one
    thin bar per tensor, view or AOTI handle on that storage, labelled with the operation that made it.
    Copies are arrows from the source storage to the destination storage at the time of the copy.
    """
    if not isinstance(tr, Trace):
        raise TypeError(
            f"lifetimes(): expected a finished slimtensor Trace (from `with st.trace() as tr:`),"
            f" got {type(tr).__name__}"
        )
    if isinstance(max_storages, bool) or not isinstance(max_storages, int) or max_storages < 1:
        raise ValueError(f"lifetimes(): max_storages must be a positive int, got {max_storages!r}")
    events = tr.events  # raises while recording
    storages = tr.storages()
    shown, hidden = storages[:max_storages], len(storages) - min(len(storages), max_storages)
    start, stop = tr.start_ns or 0, tr.stop_ns or 0
    span = max(stop - start, 1)
    scale, unit = (1e3, "µs") if span < 5e6 else ((1e6, "ms") if span < 5e9 else (1e9, "s"))

    def x(t_ns: int | None, default: int) -> float:
        return ((default if t_ns is None else t_ns) - start) / scale

    devices = list(dict.fromkeys(s.device for s in shown))
    rows: dict[int, float] = {}
    layout: list[tuple[str, float, float]] = []  # (device, top, bottom) of each lane
    y = 0.0
    for device in devices:
        top = y
        for s in (s for s in shown if s.device == device):
            rows[s.id] = y
            y += 1.0 + TENSOR_ROW * min(len(s.tensors) + len(s.handles), MAX_TENSORS_PER_ROW) + 0.3
        layout.append((device, top, y))
        y += 0.4

    fig = new_figure(9.0, max(2.2, 0.8 + 0.32 * y))
    ax = fig.subplots()
    ax.set_label("lifetimes")
    x_end = x(stop, stop)
    for k, (_device, top, bottom) in enumerate(layout):
        ax.axhspan(top - 0.15, bottom - 0.15, color="#f4f4f4" if k % 2 == 0 else "white", zorder=0)
    ax.set_yticks(
        [(top + bottom) / 2 - 0.15 for _, top, bottom in layout],
        [device for device, _, _ in layout],
        fontsize=8,
        fontweight="bold",
    )
    ax.tick_params(axis="y", length=0)
    for i, s in enumerate(shown):
        _draw_storage(ax, s, rows[s.id], tensor_colour(i), x, start, stop)
    for e in events:
        if e.kind == "copy" and e.src_storage_id in rows and e.storage_id in rows:
            _draw_copy(ax, x(e.time_ns, start), rows[e.src_storage_id], rows[e.storage_id], e.bytes)
    ax.set_xlim(-0.02 * x_end - 1e-9, x_end * 1.18 + 1e-9)  # room on the right for labels
    ax.set_ylim(max(y, 1.0), -0.6)
    ax.set_xlabel(f"time since trace start ({unit})", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    n_t = sum(len(s.tensors) for s in storages)
    n_c = sum(1 for e in events if e.kind == "copy")
    title = f"memory lifetimes: {len(storages)} storages, {n_t} tensors and views, {n_c} copies"
    if hidden:
        title += f" ({hidden} storages not drawn; max_storages={max_storages})"
    ax.set_title(title, fontsize=9, loc="left")
    if not storages:
        ax.text(0.5, 0.5, "the trace saw no storage", transform=ax.transAxes, ha="center", fontsize=9)
    return fig


def _draw_storage(ax, s: StorageLife, y: float, colour: str, x, start: int, stop: int) -> None:
    from matplotlib.patches import Rectangle

    x0, x1 = x(s.allocated_ns, start), x(s.freed_ns, stop)
    width = max(x1 - x0, (x(stop, stop) or 1) * 0.004)
    ax.add_patch(
        Rectangle(
            (x0, y),
            width,
            0.8,
            facecolor=colour,
            edgecolor=GRID_EDGE,
            linewidth=0.6,
            alpha=0.85,
            gid="storage-bar",
        )
    )
    for edge_open, at in ((s.allocated_ns is None, x0), (s.freed_ns is None, x0 + width)):
        if edge_open:  # existed before the trace, or outlived it
            w = width * 0.06
            ax.add_patch(
                Rectangle(
                    (at - w if at > x0 else at, y),
                    w,
                    0.8,
                    facecolor="white",
                    edgecolor=GRID_EDGE,
                    linewidth=0.6,
                    hatch=UNREACHED_HATCH,
                    gid="storage-open-end",
                )
            )
    if s.owning is None:
        how = "allocated before the trace"
    else:
        how = "owning" if s.owning else f"borrowed from {s.owner or 'an owner'}"
    size = f" {s.bytes} B" if s.bytes or s.owning is not None else ""  # unknown if made before the trace
    alive = ", alive at stop" if s.freed_ns is None else ""
    extra = len(s.tensors) + len(s.handles) - MAX_TENSORS_PER_ROW
    more = f", +{extra} more tensors" if extra > 0 else ""
    ax.text(
        x0 + (width * 0.06 if s.allocated_ns is None else 0.0),  # after the hatched open start
        y + 0.4,
        f" #{s.id}{size} {how}{alive}{more}",
        va="center",
        ha="left",
        fontsize=7,
        clip_on=True,
    )
    users = [(t, "tensor") for t in s.tensors] + [(h, "handle") for h in s.handles]
    for j, (t, what) in enumerate(users[:MAX_TENSORS_PER_ROW]):
        ty = y + 0.85 + j * TENSOR_ROW
        t0, t1 = x(t.created_ns, start), x(t.destroyed_ns, stop)
        ax.add_patch(
            Rectangle(
                (t0, ty),
                max(t1 - t0, width * 0.01),
                TENSOR_ROW * 0.7,
                facecolor="#555555" if what == "tensor" else "#b8860b",
                edgecolor="none",
                gid=f"{what}-bar",
            )
        )
        shape = ",".join(map(str, t.sizes))
        made = t.op or "made before the trace"
        label = f"AOTI handle h{t.id:#x} {made}" if what == "handle" else f"t{t.id} {made} ({shape})"
        ax.text(t1, ty + TENSOR_ROW * 0.35, f" {label}", va="center", ha="left", fontsize=6, clip_on=True)


def _draw_copy(ax, at: float, y_src: float, y_dst: float, nbytes: int) -> None:
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(
        FancyArrowPatch(
            (at, y_src + 0.4),
            (at, y_dst + 0.4),
            arrowstyle="-|>",
            mutation_scale=10,
            color="#d62728",
            linewidth=1.2,
            connectionstyle="arc3,rad=0.25",
            gid="copy-arrow",
        )
    )
    ax.text(at, (y_src + y_dst) / 2 + 0.4, f" copy {nbytes} B", fontsize=6, color="#d62728", va="center")
