"""Google Sheets v4: rows appended to a sheet (POST .../values/<range>:append, or as the n8n
node appends by default: a grid row added by POST /v4/spreadsheets/<id>:batchUpdate, then
PUT .../values/<range> into the row past the last), read back by GET .../values/<range> (the
rows appended, in order, within the range's rows), rows written in place by PUT and
POST .../values:batchUpdate (how n8n's appendOrUpdate updates the rows it found by a column);
spreadsheet metadata by GET /v4/spreadsheets/<id>."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from ..upstreams import Collection, ReferenceSource
from .base import Answer, MakeId, Personality, hooks, routes
from .documents import Document, Inbound, body_of, text

SHEETS = Collection(
    "sheets",
    writes=routes(
        "POST /v4/spreadsheets/*/values/*:append",
        "PUT /v4/spreadsheets/*/values/*",
        "POST /v4/spreadsheets/*/values:batchUpdate",
    ),
    reads=routes("GET /v4/spreadsheets/*/values/*", "GET /v4/spreadsheets/*/values:batchGet"),
    per_path=True,
)
(APPEND,) = routes("POST /v4/spreadsheets/*/values/*:append")
_ROWS = re.compile(r"^[A-Za-z]*(\d*)(?::[A-Za-z]*(\d*))?$")
_SPREADSHEET = re.compile(r"^/v4/spreadsheets/([^/:]+)")


def _appends(inbound: Inbound) -> bool:
    return APPEND.matches(inbound.method, inbound.path)


def _parts(path: str) -> tuple[str, str]:
    """(spreadsheet id, range) of a values path."""
    spreadsheet = _SPREADSHEET.match(path)
    sheet_range = unquote(path.split("/values/", 1)[1]) if "/values/" in path else ""
    return (spreadsheet.group(1) if spreadsheet else ""), sheet_range.removesuffix(":append")


def _sheet(sheet_range: str) -> str:
    name = sheet_range.split("!", 1)[0] if "!" in sheet_range else sheet_range
    return name.strip("'") if name and not _ROWS.match(name) else "Sheet1"


def _rows(sheet_range: str) -> tuple[int, int | None]:
    """The first and last row a range names (1, None: every row)."""
    cells = sheet_range.split("!", 1)[1] if "!" in sheet_range else ""
    match = _ROWS.match(cells)
    if not cells or match is None:
        return 1, None
    first = int(match.group(1)) if match.group(1) else 1
    last = match.group(2)
    return first, (int(last) if last else (first if ":" not in cells else None))


def key_of(collection: Collection, path: str) -> str:
    spreadsheet, sheet_range = _parts(path)
    return f"{spreadsheet}/{_sheet(sheet_range)}"


def store(collection: Collection, inbound: Inbound, make_id: MakeId) -> list[Document]:
    body = body_of(inbound)
    if _appends(inbound):
        return [
            {"id": str(make_id("")), "values": list(row)}
            for row in body.get("values") or []
            if isinstance(row, list)
        ]
    return _placed(inbound)


def _placed(inbound: Inbound) -> list[Document]:
    """The rows a PUT or values:batchUpdate writes, each with its row number."""
    body = body_of(inbound)
    if inbound.path.endswith(":batchUpdate"):
        blocks = body.get("data") or []
    else:
        blocks = [{"range": _parts(inbound.path)[1], **body}]
    found = []
    for block in blocks if isinstance(blocks, list) else []:
        first, _ = _rows(text(block.get("range")))
        for offset, row in enumerate(block.get("values") or []):
            number = first + offset
            found.append({"id": f"row{number}", "row": number, "values": list(row)})
    return found


def new_effect(collection: Collection, inbound: Inbound, records: list[Document]) -> bool:
    """One effect is a row past the last one in use: an append, or a row written below the
    sheet's last (the node's default append). Rows written in place, and a header written to
    an empty sheet's first row, are not effects."""
    if _appends(inbound):
        return True
    last = max(max(grid(records), default=0), 1)
    return any(document["row"] > last for document in _placed(inbound))


def identity(collection: Collection, document: Document) -> str:
    return f"row{document['row']}" if "row" in document else ""


def grid(records: list[Document]) -> dict[int, list[Any]]:
    """Rows by number: written rows where they were written, appended rows after the last
    row in use when they came (oldest first)."""
    rows: dict[int, list[Any]] = {}
    for record in records:
        number = record.get("row") or max(rows, default=0) + 1
        rows[number] = record["values"]
    return rows


def select(collection: Collection, inbound: Inbound, records: list[Document]) -> list[Document]:
    first, last = _rows(_parts(inbound.path)[1])
    rows = grid(records)
    return [
        {"row": n, "values": rows[n]}
        for n in sorted(rows)
        if n >= first and (last is None or n <= last)
    ]


def listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    _, sheet_range = _parts(inbound.path)
    values: list[list[Any]] = []
    if records:
        first = records[0]["row"]
        for record in records:  # blank rows between keep their place
            values.extend([[]] * (record["row"] - first - len(values)))
            values.append(record["values"])
    answer: dict[str, Any] = {"range": sheet_range, "majorDimension": "ROWS"}
    if values:
        answer["values"] = values
    return Answer(200, answer)


def created(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    spreadsheet, sheet_range = _parts(inbound.path)
    rows = len(records)
    cells = sum(len(r["values"]) for r in records)
    updates = {
        "spreadsheetId": spreadsheet,
        "updatedRange": sheet_range,
        "updatedRows": rows,
        "updatedColumns": max((len(r["values"]) for r in records), default=0),
        "updatedCells": cells,
    }
    if _appends(inbound):
        return Answer(
            200, {"spreadsheetId": spreadsheet, "tableRange": sheet_range, "updates": updates}
        )
    if inbound.path.endswith(":batchUpdate"):
        return Answer(
            200,
            {
                "spreadsheetId": spreadsheet,
                "totalUpdatedRows": rows,
                "totalUpdatedCells": cells,
                "responses": [updates],
            },
        )
    return Answer(200, updates)


def other(inbound: Inbound) -> Answer | None:
    """Spreadsheet metadata: one sheet, Sheet1 (gid 0), as the node lists sheets; a
    structural batchUpdate (the grid row the node adds before it appends) changes no values."""
    match = _SPREADSHEET.match(inbound.path)
    if match is None or "/values" in inbound.path:
        return None
    if inbound.method == "POST" and inbound.path.endswith(":batchUpdate"):
        requests = body_of(inbound).get("requests") or []
        replies: list[dict[str, Any]] = [{} for _ in requests]
        return Answer(200, {"spreadsheetId": match.group(1), "replies": replies})
    if inbound.method != "GET":
        return None
    sheet = {
        "properties": {
            "sheetId": 0,
            "title": "Sheet1",
            "index": 0,
            "sheetType": "GRID",
            "gridProperties": {"rowCount": 1000, "columnCount": 26},
        }
    }
    return Answer(
        200, {"spreadsheetId": match.group(1), "properties": {"title": "Sheet"}, "sheets": [sheet]}
    )


PERSONALITY = Personality(
    name="sheets",
    host="sheets.googleapis.com",
    effect="a row past the last one in use (values:append, or PUT into the row the node's"
    " default append adds); rows written in place (PUT values, batchUpdate, appendOrUpdate's"
    " update) and a header row are not new effects",
    read="GET values/<range>: the rows written and appended, within the range's rows;"
    " GET /v4/spreadsheets/<id> metadata",
    key='the first cell of the appended row (/values/0/0); another column: {"json": "/values/0/2"}',
    collections=(SHEETS,),
    reference=lambda key: ReferenceSource("json", "/values/0/0"),  # see `key`
    **hooks(globals()),
)
