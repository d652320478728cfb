"""make browser-check: run notebooks in JupyterLab in headless Chromium and screenshot every picture.

Not a pytest test (it needs a browser): `make browser-check` installs Debian's chromium and
chromium-driver where it can, selenium from pip, then runs this script with the lab environment's python.
For each notebook it saves NAME-full.png (the top of the notebook) and NAME-NN.png (one per picture, the
picture's cell scrolled to the top) into --out-dir (build/browser-check/, ignored by git). The screenshots are
meant to be looked at by a person; the script checks that pictures rendered and that no cell failed.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _kernel import install_kernel_spec  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_executable(names: list[str], what: str) -> str:
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit(
        f"browser_check: {what} not found (looked for {', '.join(names)}); install Debian's "
        f"packages: sudo apt-get install chromium chromium-driver"
    )


def wait_for_server(url: str, token: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"browser_check: JupyterLab exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                json.load(r)
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"browser_check: JupyterLab did not answer on {url} within {timeout:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "notebooks", nargs="*", default=[str(ROOT / "notebooks" / "01_strides_and_views.ipynb")]
    )
    parser.add_argument("--out-dir", default=str(ROOT / "build" / "browser-check"))
    parser.add_argument(
        "--timeout", type=float, default=420.0, help="seconds to wait for Run All, per notebook"
    )
    args = parser.parse_args()

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = find_executable(["chromium", "chromium-browser", "google-chrome"], "a Chromium browser")
    driver_path = find_executable(["chromedriver"], "chromedriver")
    notebooks = [Path(n).resolve() for n in args.notebooks]
    out_dir = Path(args.out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="slimtensor-browser-") as tmp:
        tmp = Path(tmp)
        root = tmp / "notebooks"
        root.mkdir()
        for notebook in notebooks:  # run copies: the committed notebooks stay clean
            shutil.copy(notebook, root / notebook.name)
        kernels = install_kernel_spec(tmp / "share", display_name="Python (slimtensor)")
        _drop_quick_mode(kernels)  # the full story, as a user sees it
        settings = tmp / "user-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        # no "get notified about Jupyter news?" toast over the screenshot
        (settings / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        port, token = free_port(), secrets.token_hex(16)
        url = f"http://127.0.0.1:{port}"
        env = dict(
            os.environ,
            JUPYTER_PATH=str(kernels.parent),
            JUPYTER_CONFIG_DIR=str(tmp / "config"),
            JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
            SE_OFFLINE="true",
        )
        compile_python = ROOT / ".venv-compile" / "bin" / "python"
        if compile_python.exists():  # the copies run outside the checkout: point them at its compile env
            env.setdefault("SLIMTENSOR_COMPILE_PYTHON", str(compile_python))
        cmd = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",
            f"--LabApp.user_settings_dir={tmp / 'user-settings'}",
            f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        log = open(tmp / "lab.log", "w")
        lab = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        browser = None
        failed = 0
        try:
            wait_for_server(url, token, lab)
            options = webdriver.ChromeOptions()
            options.binary_location = chromium
            for flag in (
                "--headless=new",
                "--no-sandbox",
                "--disable-dev-shm-usage",
                "--disable-gpu",
                "--window-size=1400,1600",
                "--hide-scrollbars",
            ):
                options.add_argument(flag)
            browser = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
            for notebook in notebooks:
                failed += _check_notebook(browser, url, token, notebook.name, out_dir, args.timeout)
        finally:
            if browser is not None:
                browser.quit()
            lab.terminate()
            try:
                lab.wait(timeout=15)
            except subprocess.TimeoutExpired:
                lab.kill()
            log.close()
    shown = out_dir.relative_to(ROOT) if out_dir.is_relative_to(ROOT) else out_dir
    print(f"browser_check: screenshots in {shown}/ -- look at every one of them")
    return 1 if failed else 0


def _drop_quick_mode(kernels: Path) -> None:
    spec = kernels / "slimtensor" / "kernel.json"
    data = json.loads(spec.read_text())
    data.get("env", {}).pop("SLIMTENSOR_QUICK", None)
    spec.write_text(json.dumps(data))


def _check_notebook(browser, url: str, token: str, name: str, out_dir: Path, timeout: float) -> int:
    """Run one notebook; save its screenshots; return 1 if a cell failed or no picture rendered."""
    from selenium.webdriver.common.by import By

    stem = Path(name).stem
    # a workspace of its own (reset): only this notebook is open, and it is the current widget
    browser.get(f"{url}/lab/workspaces/{stem}/tree/{name}?reset&token={token}")
    _wait(
        browser,
        "return !!(window.jupyterapp && document.querySelector('.jp-NotebookPanel') && "
        f"window.jupyterapp.shell.currentWidget && window.jupyterapp.shell.currentWidget.title.label === '{name}')",
        60,
        "the notebook to open",
    )
    kernel_idle = (
        "const w = window.jupyterapp.shell.currentWidget; return !!(w && w.sessionContext"
        " && w.sessionContext.session && w.sessionContext.session.kernel && "
        "w.sessionContext.session.kernel.status === 'idle')"
    )
    _wait(browser, kernel_idle, 90, "the slimtensor kernel to start")
    # every cell rendered, not only those in view (JupyterLab virtualises long notebooks)
    browser.execute_script(
        "const n = window.jupyterapp.shell.currentWidget.content; if (n.notebookConfig) "
        "{ n.notebookConfig = {...n.notebookConfig, windowingMode: 'none'}; }"
    )
    browser.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    started = (
        "return [...window.jupyterapp.shell.currentWidget.node.querySelectorAll('.jp-InputArea-prompt')].some(e => "
        "/\\[(\\*|\\d+)\\]/.test(e.textContent))"
    )
    _wait(browser, started, 90, "the first cell to start")
    try:
        _wait(
            browser,
            "const p=[...window.jupyterapp.shell.currentWidget.node.querySelectorAll('.jp-InputArea-prompt')]"
            ".map(e=>e.textContent); return p.length>0 && p.every(t=>!t.includes('*')) && "
            "p.some(t=>/\\[\\d+\\]/.test(t))",
            timeout,
            f"Run All of {name} to finish",
        )
    except SystemExit:
        browser.save_screenshot(str(out_dir / f"{stem}-stopped.png"))
        print(f"browser_check: {name} did not finish; {stem}-stopped.png shows where it stopped")
        return 1
    time.sleep(1)
    errors = browser.find_elements(
        By.CSS_SELECTOR, ".jp-RenderedText[data-mime-type='application/vnd.jupyter.error']"
    )
    pictures = browser.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output svg, .jp-OutputArea-output img")
    pictures = [p for p in pictures if (p.size.get("height") or 0) > 60]  # not icons
    print(f"browser_check: {name}: {len(pictures)} pictures rendered, {len(errors)} error outputs")
    browser.execute_script("document.querySelector('.jp-WindowedPanel-outer, .jp-Notebook').scrollTo(0, 0);")
    time.sleep(0.5)
    browser.save_screenshot(str(out_dir / f"{stem}-full.png"))
    for k, picture in enumerate(pictures):
        browser.execute_script(
            "arguments[0].closest('.jp-Cell').scrollIntoView({block: 'start'});"
            "document.querySelector('.jp-WindowedPanel-outer, .jp-Notebook').scrollBy(0, -40);",
            picture,
        )
        time.sleep(0.4)
        browser.save_screenshot(str(out_dir / f"{stem}-{k + 1:02d}.png"))
    for err in errors:
        print(f"browser_check: {name}: error output: {err.text[:500]}")
    return 1 if errors or not pictures else 0


def _wait(browser, script: str, timeout: float, what: str, required: bool = True) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if browser.execute_script(script):
                return
        except Exception:  # the page may be reloading
            pass
        time.sleep(0.5)
    if required:
        raise SystemExit(f"browser_check: timed out after {timeout:.0f} s waiting for {what}")


if __name__ == "__main__":
    sys.exit(main())
