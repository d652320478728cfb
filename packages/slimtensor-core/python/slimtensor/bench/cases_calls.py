"""Python per-call cost cases: factories, wrapping, views, getters, item, small copies (ns per call)."""

from __future__ import annotations

from ._case import Case, Libs
from ._timing import Settings, measure

# name -> (title, {lib: statement}); the statements run with the globals of _globals(). A library that has
# no counterpart maps to its reason instead of a statement.
_CALLS: dict[str, tuple[str, dict[str, str]]] = {
    "empty": (
        "empty((2, 3)) float32",
        {
            "slimtensor": "st.empty((2, 3))",
            "numpy": "np.empty((2, 3), np.float32)",
            "torch": "torch.empty((2, 3))",
        },
    ),
    "empty_strided": (
        "empty_strided((2, 3), (3, 1))",
        {
            "slimtensor": "st.empty_strided((2, 3), (3, 1))",
            "numpy": "np.empty((2, 3), np.float32)",
            "torch": "torch.empty_strided((2, 3), (3, 1))",
        },
    ),
    "from_numpy": (
        "wrap a numpy array (2x3 float32)",
        {
            "slimtensor": "st.from_numpy(a)",
            "numpy": "no counterpart: the array is already a numpy array",
            "torch": "torch.from_numpy(a)",
        },
    ),
    "from_dlpack": (
        "DLPack import of another library's array",
        {
            "slimtensor": "st.from_dlpack(a)",
            "numpy": "np.from_dlpack(tt)",
            "torch": "torch.from_dlpack(a)",
        },
    ),
    "as_strided": (
        "as_strided((3, 2), (1, 3))",
        {
            "slimtensor": "t.as_strided((3, 2), (1, 3))",
            "numpy": "as_strided(a, (3, 2), (4, 12))",
            "torch": "tt.as_strided((3, 2), (1, 3))",
        },
    ),
    "permute": (
        "permute a 4-d tensor (0, 2, 3, 1)",
        {
            "slimtensor": "t4.permute(0, 2, 3, 1)",
            "numpy": "a4.transpose(0, 2, 3, 1)",
            "torch": "tt4.permute(0, 2, 3, 1)",
        },
    ),
    "transpose": (
        "transpose a 2-d tensor",
        {
            "slimtensor": "t.transpose(0, 1)",
            "numpy": "a.swapaxes(0, 1)",
            "torch": "tt.transpose(0, 1)",
        },
    ),
    "reshape_view": (
        "reshape a contiguous 2x3 to (3, 2) (a view)",
        {
            "slimtensor": "t.reshape(3, 2)",
            "numpy": "a.reshape(3, 2)",
            "torch": "tt.reshape(3, 2)",
        },
    ),
    "reshape_copy": (
        "reshape a transposed 2x3 to (6,) (a copy)",
        {
            "slimtensor": "tT.reshape(6)",
            "numpy": "aT.reshape(6)",
            "torch": "ttT.reshape(6)",
        },
    ),
    "slice": (
        "slice t[:, 1:]",
        {
            "slimtensor": "t[:, 1:]",
            "numpy": "a[:, 1:]",
            "torch": "tt[:, 1:]",
        },
    ),
    "index_row": (
        "index a row t[1]",
        {
            "slimtensor": "t[1]",
            "numpy": "a[1]",
            "torch": "tt[1]",
        },
    ),
    "item": (
        "item() of a 1-element float32",
        {
            "slimtensor": "t1.item()",
            "numpy": "a1.item()",
            "torch": "tt1.item()",
        },
    ),
    "shape": (
        ".shape",
        {
            "slimtensor": "t.shape",
            "numpy": "a.shape",
            "torch": "tt.shape",
        },
    ),
    "stride": (
        ".stride() (numpy: .strides)",
        {
            "slimtensor": "t.stride()",
            "numpy": "a.strides",
            "torch": "tt.stride()",
        },
    ),
    "numpy": (
        "numpy() of a 2x3 tensor",
        {
            "slimtensor": "t.numpy()",
            "numpy": "no counterpart: the array is already a numpy array",
            "torch": "tt.numpy()",
        },
    ),
    "copy_24B": (
        "copy_ of a 2x3 float32 (24 bytes)",
        {
            "slimtensor": "d.copy_(t)",
            "numpy": "copyto(ad, a)",
            "torch": "td.copy_(tt)",
        },
    ),
    "clone": (
        "clone a 2x3 float32",
        {
            "slimtensor": "t.clone()",
            "numpy": "a.copy()",
            "torch": "tt.clone()",
        },
    ),
}


def _globals(libs: Libs) -> dict:
    np, st = libs.np, libs.st
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    a4 = np.zeros((2, 3, 4, 5), np.float32)
    g = {
        "np": np,
        "st": st,
        "a": a,
        "aT": a.T,
        "a4": a4,
        "a1": np.ones(1, np.float32),
        "ad": np.empty_like(a),
        "copyto": np.copyto,
        "as_strided": np.lib.stride_tricks.as_strided,
        "t": st.from_numpy(a.copy()),
        "t4": st.from_numpy(a4.copy()),
        "t1": st.ones(1),
        "d": st.empty((2, 3)),
    }
    g["tT"] = g["t"].T
    if libs.torch is not None:
        torch = libs.torch
        g.update(
            {
                "torch": torch,
                "tt": torch.from_numpy(a.copy()),
                "tt4": torch.from_numpy(a4.copy()),
                "tt1": torch.ones(1),
                "td": torch.empty((2, 3)),
            }
        )
        g["ttT"] = g["tt"].T
    return g


def cases(libs: Libs, quick: bool) -> list[Case]:
    out = []
    for name, (title, stmts) in _CALLS.items():

        def run(settings: Settings, stmts: dict[str, str] = stmts) -> dict:
            g = _globals(libs)
            results = {}
            for lib, stmt in stmts.items():
                if stmt.startswith("no counterpart"):
                    results[lib] = {"skipped": stmt}
                elif libs.torch is None and (lib == "torch" or "tt" in stmt):
                    results[lib] = {"skipped": libs.torch_reason}
                else:
                    results[lib] = measure(stmt, settings, g)
                    results[lib]["code"] = stmt
            return results

        out.append(
            Case(id=f"call/{name}", group="call", title=title, params={"op": name}, metric="time", run=run)
        )
    return out
