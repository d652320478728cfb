"""make browser-check: run a notebook in JupyterLab in headless Chromium and screenshot its layout picture.

Not a pytest test (it needs a browser): `make browser-check` installs Debian's chromium and
chromium-driver where it can, selenium from pip, then runs this script with the lab environment's python.
The screenshot is meant to be looked at by a person; the script checks only that pictures rendered.
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
    parser.add_argument("--notebook", default=str(ROOT / "notebooks" / "01_strides_and_views.ipynb"))
    parser.add_argument("--out", default=str(ROOT / "docs" / "images" / "browser_check.png"))
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds to wait for Run All")
    parser.add_argument(
        "--focus",
        default="(3, 2):(4, 2) @ 0",
        help="scroll to the layout picture whose title holds this text",
    )
    args = parser.parse_args()

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    chromium = find_executable(["chromium", "chromium-browser", "google-chrome"], "a Chromium browser")
    driver_path = find_executable(["chromedriver"], "chromedriver")
    notebook = Path(args.notebook).resolve()
    out = Path(args.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="slimtensor-browser-") as tmp:
        tmp = Path(tmp)
        root = tmp / "notebooks"
        root.mkdir()
        shutil.copy(notebook, root / notebook.name)  # run a copy: the committed notebook stays clean
        kernels = install_kernel_spec(tmp / "share", display_name="Python (slimtensor)")
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
            browser.get(f"{url}/lab/tree/{notebook.name}?token={token}")
            _wait(
                browser,
                "return !!(window.jupyterapp && document.querySelector('.jp-NotebookPanel'))",
                60,
                "the notebook to open",
            )
            kernel_idle = (
                "const w = window.jupyterapp.shell.currentWidget; return !!(w && w.sessionContext"
                " && w.sessionContext.session && w.sessionContext.session.kernel && "
                "w.sessionContext.session.kernel.status === 'idle')"
            )
            _wait(browser, kernel_idle, 90, "the slimtensor kernel to start")
            browser.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            started = (
                "return [...document.querySelectorAll('.jp-InputArea-prompt')].some(e => "
                "/\\[(\\*|\\d+)\\]/.test(e.textContent))"
            )
            _wait(browser, started, 30, "the first cell to start")
            try:
                _wait(
                    browser,
                    "const p=[...document.querySelectorAll('.jp-InputArea-prompt')]"
                    ".map(e=>e.textContent); return p.length>0 && p.every(t=>!t.includes('*')) && "
                    "p.some(t=>/\\[\\d+\\]/.test(t))",
                    args.timeout,
                    "Run All to finish",
                )
            except SystemExit:
                browser.save_screenshot(str(out))
                print(f"browser_check: the screenshot in {out} shows where it stopped")
                raise
            errors = browser.find_elements(
                By.CSS_SELECTOR,
                ".jp-OutputArea-output[data-mime-type="
                "'application/vnd.jupyter.stderr'], .jp-RenderedText"
                "[data-mime-type='application/vnd.jupyter.error']",
            )
            pictures = browser.find_elements(By.CSS_SELECTOR, ".slimtensor-layout svg")
            print(f"browser_check: {len(pictures)} layout pictures rendered, {len(errors)} error outputs")
            if not pictures:
                browser.save_screenshot(str(out))
                raise SystemExit(f"browser_check: no layout picture rendered (screenshot in {out})")
            focus = next(
                (p for p in pictures if args.focus in (p.get_attribute("textContent") or "")), pictures[0]
            )
            browser.execute_script(
                "arguments[0].closest('.jp-Cell').scrollIntoView({block: 'start'});"
                "document.querySelector('.jp-WindowedPanel-outer, .jp-Notebook')"
                ".scrollBy(0, -40);",
                focus,
            )
            time.sleep(1)
            browser.save_screenshot(str(out))
            shown = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
            print(f"browser_check: screenshot saved to {shown}")
            return 1 if errors else 0
        finally:
            if browser is not None:
                browser.quit()
            lab.terminate()
            try:
                lab.wait(timeout=15)
            except subprocess.TimeoutExpired:
                lab.kill()
            log.close()


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
