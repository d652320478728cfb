"""Device plugin discovery (entry point group ``slimtensor.devices``)."""

from __future__ import annotations


def load_plugins() -> None:
    """Loads every installed device plugin once (a placeholder until discovery lands)."""
