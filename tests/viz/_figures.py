"""Helpers the viz tests use to look inside a matplotlib Figure (patches by role, texts)."""

from __future__ import annotations


def axes(fig, label: str):
    found = [ax for ax in fig.axes if ax.get_label() == label]
    assert len(found) == 1, f"expected one axes labelled {label!r}, found {[a.get_label() for a in fig.axes]}"
    return found[0]


def patches(ax, gid: str) -> list:
    return [p for p in ax.patches if p.get_gid() == gid]


def hatched(ax) -> list:
    return [p for p in ax.patches if p.get_hatch()]


def texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]
