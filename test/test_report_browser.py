"""The bench report as people see it: ``DIR/report.html`` (and ``compare.html``) of a real run, opened offline in
headless Chromium. The rendered DOM must hold the results table and the plots, and a screenshot must show something
(not a blank page). Skips with the reason when no Chromium is installed (Debian: ``apt-get install chromium``;
``.ci/run`` installs it)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest

from vasimov_tools import bench_compare, bench_run

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason=f"no headless browser found (looked for {', '.join(BROWSERS)}"
                                                         " on PATH; Debian: apt-get install chromium)")
WINDOW = (1000, 800)


def _chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # --no-sandbox: the tests may run as root (CI containers); the page is our own file, no network is used
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--disable-extensions", "--disable-background-networking", f"--user-data-dir={cwd / 'profile'}",
           f"--window-size={WINDOW[0]},{WINDOW[1]}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=cwd)


def png_pixels(data: bytes) -> np.ndarray:
    """Decode an 8-bit, non-interlaced RGB/RGBA PNG (what Chromium writes) into (h, w, channels) uint8."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
            ch = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + width * ch)
    out = np.zeros((height, width * ch), dtype=np.int32)
    prev = np.zeros(width * ch, dtype=np.int32)
    for y in range(height):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if f == 0:
            cur = line
        elif f == 1:  # Sub: a running sum per channel
            cur = np.cumsum(line.reshape(width, ch), axis=0).reshape(-1) & 0xFF
        elif f == 2:
            cur = (line + prev) & 0xFF
        else:  # Average, Paeth depend on the reconstructed left neighbour: byte by byte
            cur_l, line_l, prev_l = [0] * len(line), line.tolist(), prev.tolist()
            for i in range(len(line_l)):
                left = cur_l[i - ch] if i >= ch else 0
                up, ul = prev_l[i], (prev_l[i - ch] if i >= ch else 0)
                if f == 3:
                    pred = (left + up) // 2
                else:
                    p = left + up - ul
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                    pred = left if pa <= pb and pa <= pc else up if pb <= pc else ul
                cur_l[i] = (line_l[i] + pred) & 0xFF
            cur = np.array(cur_l, dtype=np.int32)
        out[y], prev = cur, cur
    return out.reshape(height, width, ch).astype(np.uint8)


SCENARIO = """\
    format: 1
    name: browser_walk
    duration: 1.5
    commands:
      - {t: 0, velocity: [0.2, 0, 0]}
    pushes:
      - {t: 0.5, force: [40, 0, 0]}
    """


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("browser")
    (d / "s.yaml").write_text(textwrap.dedent(SCENARIO), encoding="utf-8")
    assert bench_run.main([str(d / "s.yaml"), "--out", str(d / "out"), "--workers", "1"]) == 0
    assert bench_compare.main([str(d / "out"), str(d / "out"), "--out", str(d / "cmp")]) == 0
    return d


@pytest.mark.parametrize(("page", "table_text"), [("out/report.html", "browser_walk"),
                                                   ("cmp/compare.html", "same")])
def test_report_renders_in_headless_chromium(run_dir, page, table_text):
    url = (run_dir / page).resolve().as_uri()
    dom = _chromium("--dump-dom", url, cwd=run_dir)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert "<table>" in html and "<td>" in html and table_text in html, html[:2000]
    assert html.count("<svg") >= 5 and "<polyline" in html  # the plots made it into the rendered DOM

    shot = run_dir / (Path(page).stem + ".png")
    res = _chromium(f"--screenshot={shot}", url, cwd=run_dir)
    assert res.returncode == 0 and shot.is_file(), res.stderr[-2000:]
    px = png_pixels(shot.read_bytes())
    assert px.shape[:2] == (WINDOW[1], WINDOW[0])
    rgb = px[..., :3].reshape(-1, 3)
    ink = np.any(rgb < 200, axis=1).mean()  # text, lines, plot frames (the page background is white)
    colours = len(np.unique(rgb[::7], axis=0))
    assert ink > 0.005 and colours > 20, f"screenshot looks blank: {ink:.4f} ink, {colours} colours"
    # the plots' light-grey background is on screen (first plot row starts below the table)
    assert np.all(rgb == (0xF6, 0xF8, 0xFA), axis=1).mean() > 0.01
