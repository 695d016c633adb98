"""One case's timeline as an SVG picture: time across, one lane per actor.

Lanes, top to bottom: the runner's phases, the sender's attempts (coloured by outcome), the
fault's window (also shaded across every lane, so what overlaps it shows at a glance), the
provider's attempts and commits, the n8n executions' running intervals, and the harness's
journal. Items that would overlap share a lane on separate rows. Every item carries a
``<title>``, so hovering shows its full label. The events come from ``harness.report.timeline``
(the terminal's ``show`` reads the same), so the picture and the text never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from harness.report.timeline import TimelineEvent, Window, events, fault_windows

WIDTH = 1100
GUTTER = 92  # the lane names
RIGHT = 24
ROW_H = 18
LANE_GAP = 8
HEADER_H = 44
AXIS_H = 30
CHAR_W = 6.2  # 11 px sans-serif, on average: enough to keep labels from overlapping

LANE_TITLES = {
    "phase": "phases",
    "sender": "sender",
    "fault": "fault",
    "requests": "requests",
    "provider": "provider",
    "n8n": "n8n runs",
    "journal": "harness",
}

GREEN, RED, AMBER, GREY, PURPLE, TEAL = (
    "#2e9d4e",
    "#d64545",
    "#e0a100",
    "#8a939b",
    "#8e44ad",
    "#1f8a8a",
)
VERDICT_OK, VERDICT_BAD = GREEN, RED


def outcome_colour(outcome: str | None) -> str:
    """A colour per outcome; unknown words fall back to grey (never an error)."""
    text = (outcome or "").lower()
    if text in {"ok", "success", "committed"} or "commit" in text:
        return GREEN
    if "replay" in text:
        return TEAL
    if text == "stray":
        return PURPLE
    if text == "info" or "unknown" in text or "timeout" in text:
        return AMBER
    if any(w in text for w in ("fail", "error", "crash", "declin", "fault", "refus", "lost")):
        return RED
    return GREY


@dataclass(frozen=True)
class _Item:
    lane: str
    start: float
    end: float | None  # None: an instant
    label: str
    colour: str
    dashed: bool = False


def _items(doc: Mapping[str, Any]) -> list[_Item]:
    found: list[_Item] = []
    for e in events(doc):
        found.append(_from_event(e))
    for w in fault_windows(doc):
        found.append(_from_window(w, _span(doc)))
    return found


def _from_event(e: TimelineEvent) -> _Item:
    if e.lane == "phase":
        colour = "#5b7db1" if e.outcome is None else GREY
        return _Item("phase", e.at, e.until, e.label, colour, dashed=e.outcome == "unfinished")
    if e.lane == "journal":
        kind = e.label.split(" ", 1)[0]
        colour = RED if kind.startswith(("fault.", "crashpoint.")) else GREY
        if kind in {"deadline.expired", "harness.error", "finding", "wait.abandoned"}:
            colour = AMBER
        return _Item("journal", e.at, None, e.label, colour)
    return _Item(e.lane, e.at, e.until, e.label, outcome_colour(e.outcome))


def _from_window(w: Window, span: float) -> _Item:
    end = w.end if w.end is not None else span
    label = f"{w.fault} {'until healed' if w.end is not None else '(never healed)'}"
    return _Item("fault", w.start, end, label, RED, dashed=w.end is None)


def _span(doc: Mapping[str, Any]) -> float:
    """Seconds the picture covers: to the last thing seen (at least one second)."""
    ends = [e.until if e.until is not None else e.at for e in events(doc)]
    ends += [w.start for w in fault_windows(doc)]
    if doc.get("ended_at") is not None and doc.get("started_at") is not None:
        ends.append(float(doc["ended_at"]) - float(doc["started_at"]))
    return max([1.0, *ends])


def _tick_step(span: float, target: int = 10) -> float:
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600):
        if span / step <= target:
            return float(step)
    return float(math.ceil(span / target))


@dataclass(frozen=True)
class _Place:
    """Where an item's mark and label go, in pixels."""

    left: float
    right: float  # of the mark
    text_x: float
    anchor: str  # "start" or "end"
    inside: bool  # the label sits on the bar (white text)

    @property
    def extent(self) -> tuple[float, float]:
        return (min(self.left, self.text_x - 4), max(self.right, self.text_x + 4))


def _place(item: _Item, x: Any) -> _Place:
    left = x(item.start)
    right = left + 5 if item.end is None else left + max(2.0, x(item.end) - left)
    text_w = len(_short(item.label)) * CHAR_W
    if item.end is not None and text_w + 6 <= right - left:
        return _Place(left, right, left + 4, "start", True)
    after = right + (4 if item.end is not None else 3)
    if after + text_w <= WIDTH - 2:
        return _Place(left, right, after, "start", False)
    # No room on the right (near the end of the case): the label goes to the left.
    before = left - (4 if item.end is not None else 8)
    return _Place(left, right, before, "end", False)


def _rows(items: Sequence[_Item], x: Any) -> dict[int, int]:
    """Greedy row packing per lane, in pixels: an item takes its mark and its label."""
    rows: dict[int, int] = {}
    lane_spans: dict[str, list[list[tuple[float, float]]]] = {}
    for index in sorted(range(len(items)), key=lambda i: items[i].start):
        item = items[index]
        place = _place(item, x)
        lo, hi = place.extent
        if not place.inside and place.anchor == "start":
            hi = place.text_x + len(_short(item.label)) * CHAR_W
        elif not place.inside:
            lo = place.text_x - len(_short(item.label)) * CHAR_W
        taken = lane_spans.setdefault(item.lane, [])
        row = next(
            (
                r
                for r, spans in enumerate(taken)
                if all(hi + 4 <= a or lo >= b + 4 for a, b in spans)
            ),
            len(taken),
        )
        if row == len(taken):
            taken.append([])
        taken[row].append((lo, hi))
        rows[index] = row
    return rows


def _short(label: str, limit: int = 48) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def render_svg(doc: Mapping[str, Any]) -> str:
    """The SVG document (a string) of one case's evidence."""
    span = _span(doc)
    plot_w = WIDTH - GUTTER - RIGHT

    def x(seconds: float) -> float:
        return GUTTER + max(0.0, seconds) / span * plot_w

    items = _items(doc)
    rows = _rows(items, x)
    lanes = [lane for lane in LANE_TITLES if any(i.lane == lane for i in items)]
    lane_rows = {
        lane: 1 + max((rows[i] for i, it in enumerate(items) if it.lane == lane), default=0)
        for lane in lanes
    }
    tops: dict[str, float] = {}
    y = float(HEADER_H)
    for lane in lanes:
        tops[lane] = y
        y += lane_rows[lane] * ROW_H + LANE_GAP
    plot_bottom = y
    height = int(plot_bottom + AXIS_H)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="Helvetica, Arial, sans-serif" '
        'font-size="11" class="n8n-chaos-timeline">',
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        *_header(doc, span),
    ]
    for index, lane in enumerate(lanes):  # zebra lanes with their names
        top = tops[lane] - LANE_GAP / 2
        h = lane_rows[lane] * ROW_H + LANE_GAP
        fill = "#f4f6f8" if index % 2 == 0 else "#ffffff"
        out.append(f'<rect x="0" y="{top:.1f}" width="{WIDTH}" height="{h}" fill="{fill}"/>')
        out.append(
            f'<text x="8" y="{tops[lane] + 13:.1f}" font-weight="bold" fill="#333">'
            f"{LANE_TITLES[lane]}</text>"
        )
    for item in items:  # the fault's window, shaded over every lane
        if item.lane == "fault" and item.end is not None:
            out.append(
                f'<rect x="{x(item.start):.1f}" y="{HEADER_H - 4}" '
                f'width="{max(1.0, x(item.end) - x(item.start)):.1f}" '
                f'height="{plot_bottom - HEADER_H:.1f}" fill="{RED}" fill-opacity="0.08" '
                f'class="fault-window"><title>{escape(item.label)}</title></rect>'
            )
    out += _axis(span, x, HEADER_H - 4, plot_bottom)
    for index, item in enumerate(items):
        out.append(_draw(item, x, tops[item.lane] + rows[index] * ROW_H))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _header(doc: Mapping[str, Any], span: float) -> list[str]:
    verdict = str(doc.get("verdict") or "no verdict")
    expected = [str(v) for v in doc.get("expected") or []]
    ok = verdict in expected
    colour = VERDICT_OK if ok else VERDICT_BAD
    note = "as expected" if ok else f"expected {'/'.join(expected) or '?'}"
    return [
        f'<text x="8" y="18" font-size="14" font-weight="bold" fill="#222">'
        f"{escape(str(doc.get('case', 'case')))}</text>",
        f'<text x="8" y="34" fill="#444"><tspan font-weight="bold" fill="{colour}" '
        f'class="verdict">{escape(verdict)}</tspan> ({escape(note)}), {span:.1f} s; '
        "shaded: the fault's window; hover an item for its full label</text>",
    ]


def _axis(span: float, x: Any, top: float, bottom: float) -> list[str]:
    step = _tick_step(span)
    out = [
        f'<line x1="{GUTTER}" y1="{bottom:.1f}" x2="{WIDTH - RIGHT}" y2="{bottom:.1f}" '
        'stroke="#666"/>'
    ]
    t = 0.0
    while t <= span + 1e-9:
        px = x(t)
        out.append(
            f'<line x1="{px:.1f}" y1="{top:.1f}" x2="{px:.1f}" y2="{bottom + 4:.1f}" '
            'stroke="#000" stroke-opacity="0.08"/>'
        )
        label = f"{t:.1f}" if step < 1 else f"{t:.0f}"
        out.append(
            f'<text x="{px:.1f}" y="{bottom + 16:.1f}" text-anchor="middle" fill="#555">'
            f"{label} s</text>"
        )
        t += step
    return out


def _draw(item: _Item, x: Any, top: float) -> str:
    title = f"<title>{escape(item.label)}</title>"
    place = _place(item, x)
    label = escape(_short(item.label))
    fill = "#fff" if place.inside else "#222"
    text = (
        f'<text x="{place.text_x:.1f}" y="{top + 13:.1f}" text-anchor="{place.anchor}" '
        f'fill="{fill}">{label}</text>'
    )
    if item.end is None:  # an instant: a diamond and its label
        cx, cy = place.left, top + ROW_H / 2
        return (
            f'<g class="event {item.lane}">{title}'
            f'<path d="M{cx:.1f} {cy - 5:.1f} L{cx + 5:.1f} {cy:.1f} L{cx:.1f} {cy + 5:.1f} '
            f'L{cx - 5:.1f} {cy:.1f} Z" fill="{item.colour}"/>{text}</g>'
        )
    dash = ' stroke-dasharray="4 2"' if item.dashed else ""
    return (
        f'<g class="interval {item.lane}">{title}'
        f'<rect x="{place.left:.1f}" y="{top + 2:.1f}" width="{place.right - place.left:.1f}" '
        f'height="{ROW_H - 4}" rx="3" fill="{item.colour}" fill-opacity="0.85" '
        f'stroke="{item.colour}"{dash}/>{text}</g>'
    )
