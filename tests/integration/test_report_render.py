"""The single-file report, opened in headless Chromium (no stack: the cases are replayed from
saved evidence by tests/fixtures/report/replay_cases.py, through the same Allure code the
suite uses). Checks that the verdict grid is the first thing on the page and that a failed
case's page shows its timeline; the screenshots' paths are printed."""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.report.build import HISTORY_FILE

ROOT = Path(__file__).resolve().parent.parent.parent
REPLAY = ROOT / "tests" / "fixtures" / "report" / "replay_cases.py"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FAILED_CASE = "payment_naive-retry-worker_kill-after_commit"
CHROME_S = 300.0  # a loaded 2-core machine: Chromium alone has taken 100 s

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is missing: run scripts/setup.sh (apt-get install chromium)"
)


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)


def _replay(results: Path) -> subprocess.CompletedProcess[str]:
    """Run the replayed suite (recorded case results, no stack) into ``results``."""
    argv = [sys.executable, "-m", "pytest", str(REPLAY), f"--alluredir={results}", "-q"]
    return _run([*argv, "-p", "no:cacheprovider"], ROOT)


def _chromium(tmp: Path, url: str, *mode: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"chrome-profile-{len(list(tmp.glob('chrome-profile-*')))}"
    argv = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--hide-scrollbars",
        "--window-size=1440,1800",
        "--virtual-time-budget=15000",
        *mode,
        url,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=CHROME_S, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _rendered(tmp: Path, url: str, marker: str) -> str:
    """The page's DOM once Allure's app has drawn ``marker``. Chromium's virtual time runs
    out early on a loaded machine now and then, so a page without it gets one more go."""
    dom = ""
    for _ in range(2):
        dom = _chromium(tmp, url, "--dump-dom").stdout
        if marker in dom:
            return dom
    raise AssertionError(f"{url}: the app never drew {marker!r}; DOM starts {dom[:500]!r}")


def _screenshot(tmp: Path, url: str, png: Path, drawn: Callable[[list[bytes]], bool]) -> None:
    """A screenshot of ``url`` in which ``drawn`` holds. Virtual time can run out before the
    app has drawn (as for ``_rendered``), so a shot without it gets one more go."""
    for _ in range(2):
        _chromium(tmp, url, f"--screenshot={png}")
        if drawn(_pixels(png.read_bytes())[2]):
            return
    raise AssertionError(f"{url}: not drawn in two screenshots, the last is {png}")


def _pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and rows of RGB(A) bytes of an 8-bit PNG (enough for a screenshot)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", data[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    raw, stride, rows = zlib.decompress(idat), width * channels, []
    prev = bytearray(stride)
    for y in range(height):
        offset = y * (stride + 1)
        filter_type = raw[offset]
        line = bytearray(raw[offset + 1 : offset + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if filter_type == 1:
                line[i] = (line[i] + a) & 255
            elif filter_type == 2:
                line[i] = (line[i] + b) & 255
            elif filter_type == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif filter_type == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line[i] for i in range(stride) if i % channels < 3))
        prev = line
    return width, height, rows


def _count(rows: list[bytes], test: object, first_row: int = 0, last_row: int | None = None) -> int:
    assert callable(test)
    return sum(
        1
        for row in rows[first_row:last_row]
        for i in range(0, len(row), 3)
        if test(row[i], row[i + 1], row[i + 2])
    )


def test_the_report_shows_the_grid_first_and_a_failed_case_timeline(tmp_path: Path) -> None:
    results, out = tmp_path / "allure-results", tmp_path / "report"
    replay = _replay(results)
    assert replay.returncode == 1, replay.stdout[-3000:]  # the one violation fails its test
    assert "1 failed, 2 passed" in replay.stdout

    built = _run(
        [sys.executable, "-m", "harness", "report", "--results", str(results), "--out", str(out)],
        ROOT,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    index = out / "index.html"
    page = index.read_text()
    assert "googletagmanager" not in page

    # The grid, after the app has rendered: the first thing in <body>, one coloured cell each.
    dom = _rendered(tmp_path, index.as_uri(), "Results")
    body = dom[dom.index("<body") :]
    assert re.match(r"<body[^>]*>\s*<section id=\"n8n-chaos-grid\"", body), body[:300]
    cells = re.findall(r'<td class="([a-z-]+)" data-workflow="([^"]+)"', body)
    assert sorted(cells) == [
        ("caught", "broken_key_from_execution"),
        ("expected", "payment_idempotent"),
        ("violation", "payment_naive"),
    ]
    assert "Results" in body  # and Allure's own app rendered below it

    # The failed case's own page: the timeline image in its description.
    by_id = json.loads((out / "test-results.json").read_text())["byId"]
    failed = [i for i, t in by_id.items() if t["status"] == "failed"]
    assert [by_id[i]["name"] for i in failed] == [FAILED_CASE]
    case_url = f"{index.as_uri()}#/{failed[0]}"
    assert f'href="#/{failed[0]}"' in body  # its grid cell links there
    case_dom = _rendered(tmp_path, case_url, "test-result-description-frame")
    frame = re.search(r'srcdoc="([^"]*)"', case_dom)
    assert frame is not None, "the case page has no description frame"
    image = re.search(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", html.unescape(frame[1]))
    assert image is not None, "the case page has no timeline"
    svg = base64.b64decode(image[1]).decode()
    assert FAILED_CASE in svg and "DUPLICATE" in svg and 'class="fault-window"' in svg

    shots = Path(os.environ.get("N8N_CHAOS_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    overview, case_shot = shots / "report-overview.png", shots / "report-failed-case.png"
    print(f"\nscreenshots: {overview} {case_shot}")

    # Pixels, not only markup: the grid's blue (caught) and green cells at the top of the
    # overview, and the timeline's red bars (fault, crashed execution) on the case's page.
    def grid_drawn(rows: list[bytes]) -> bool:
        blue = _count(rows, lambda r, g, b: (r, g, b) == (0x2F, 0x6D, 0xB5), 0, 400)
        green = _count(rows, lambda r, g, b: (r, g, b) == (0x2E, 0x9D, 0x4E), 0, 400)
        return blue > 200 and green > 200

    def timeline_drawn(rows: list[bytes]) -> bool:  # red pixels below the grid
        return _count(rows, lambda r, g, b: r > 190 and g < 130 and b < 130, 400) > 3000

    _screenshot(tmp_path, index.as_uri(), overview, grid_drawn)
    _screenshot(tmp_path, case_url, case_shot, timeline_drawn)


def test_history_carries_over_from_the_previous_report(tmp_path: Path) -> None:
    results = tmp_path / "allure-results"
    _replay(results)
    first, second = tmp_path / "first", tmp_path / "second"
    for out, more in ((first, []), (second, ["--history", str(first)])):
        built = _run(
            [
                sys.executable,
                "-m",
                "harness",
                "report",
                "--results",
                str(results),
                "--out",
                str(out),
                *more,
            ],
            ROOT,
        )
        assert built.returncode == 0, built.stderr[-3000:]
    assert len((first / "history" / HISTORY_FILE).read_text().splitlines()) == 1
    assert len((second / "history" / HISTORY_FILE).read_text().splitlines()) == 2
    missing = _run(
        [
            sys.executable,
            "-m",
            "harness",
            "report",
            "--results",
            str(results),
            "--out",
            str(tmp_path / "third"),
            "--history",
            str(tmp_path / "nope"),
        ],
        ROOT,
    )
    assert missing.returncode == 2 and "--history" in missing.stderr
