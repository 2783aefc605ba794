"""The report as a person sees it: index.html rendered by headless Chromium (Debian's `chromium`,
installed by bootstrap.sh) in a 1280 x 900 window.

`screenshot` keeps a PNG of the first screen. `first_screen` asks the rendered page where things
are: a copy of index.html with a small script appended (the report itself stays script-free)
writes the text (a table row's cells joined by " | ") and position of every ranking row,
ranking heading, score row and loud warning into the DOM, and `--dump-dom` brings it back; what
lies within the window's height is on the first screen.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

WIDTH, HEIGHT = 1280, 900
PROBE = """<script>
(function () {
  var out = [];
  var sel = '#warnings li, #ranking h3, #ranking table.rank tr, #score table tr';
  document.querySelectorAll(sel).forEach(function (el) {
    var r = el.getBoundingClientRect();
    if (r.height === 0) return;  // folded (in a closed <details>): not seen
    var one = function (s) { return s.replace(/\\s+/g, ' ').trim(); };
    var text = el.tagName === 'TR'
      ? Array.prototype.map.call(el.cells, function (c) { return one(c.textContent); }).join(' | ')
      : one(el.textContent);
    out.push({tag: el.tagName.toLowerCase(), text: text,
              top: Math.round(r.top), bottom: Math.round(r.bottom)});
  });
  var pre = document.createElement('pre');
  pre.id = 'fslab-probe';
  pre.textContent = JSON.stringify({height: window.innerHeight, width: window.innerWidth, items: out});
  document.body.appendChild(pre);
})();
</script>"""


def chromium() -> str | None:
    return shutil.which("chromium")


def _run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="fslab-chromium-") as profile:
        return subprocess.run([chromium() or "chromium", "--headless", "--no-sandbox", "--disable-gpu",
                               "--disable-background-networking", "--disable-component-update", "--disable-sync",
                               "--no-first-run", f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}",
                               "--hide-scrollbars", *args], capture_output=True, text=True, timeout=timeout)


def screenshot(index_html: Path, png: Path) -> Path:
    """A PNG of the first screen of `index_html`; also copied into $FSLAB_SCREENSHOT_DIR when set
    (pytest's temporary directories are removed after a few sessions; CI keeps that one)."""
    cp = _run([f"--screenshot={png}", index_html.resolve().as_uri()])
    if not png.is_file():
        raise RuntimeError(f"chromium made no screenshot (exit {cp.returncode}): {cp.stderr[-2000:]}")
    keep = os.environ.get("FSLAB_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(keep) / f"{index_html.parent.parent.name}-{png.name}")
    return png


def first_screen(index_html: Path) -> dict:
    """{"height", "width", "items": [{"tag", "text", "top", "bottom"}]} as Chromium laid the page out."""
    probe = index_html.with_name("first-screen-probe.html")
    probe.write_text(index_html.read_text().replace("</body>", PROBE + "</body>"))
    try:
        cp = _run(["--dump-dom", probe.resolve().as_uri()])
    finally:
        probe.unlink()
    m = re.search(r'<pre id="fslab-probe">(.*?)</pre>', cp.stdout, re.S)
    if not m:
        raise RuntimeError(f"no layout came back from chromium (exit {cp.returncode}): {cp.stderr[-2000:]}")
    return json.loads(html.unescape(m.group(1)))


def visible(layout: dict) -> list[dict]:
    """The probed items entirely within the first screen."""
    return [it for it in layout["items"] if it["bottom"] <= layout["height"]]


def png_size(png: Path) -> tuple[int, int]:
    """(width, height) from the PNG header."""
    head = png.read_bytes()[:24]
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
