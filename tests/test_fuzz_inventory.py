"""Fuzz suite (issue 16): generated inventories, each with the frame it is meant to give; no traceback, no wrong value.

Every case is a structured mutation of a valid inventory written the way a
spreadsheet writes it (delimiter, decimal and thousands separators of a
locale, encoding, line ends, quoting, percentages, title and blank rows,
header spellings, column order, extra columns; workbooks with a cover sheet,
title rows, text numbers, a lying <dimension>, two inventory sheets) or a
corruption of one (huge numbers, bad cells, an open quote at the end, mixed
encodings, a cut UTF-16 file, random bytes, a cut zip). The intended frame is
generated alongside the file. The suite asserts:

- no exception ever escapes read_inventory or `hangover workloads import`;
- an accepted file's values equal the intended ones, on the rows the user sees;
- a valid file is accepted (after the decimal choice when the report asks for it);
- a corrupted file is refused, and refusing it leaves the store byte-identical.

Seeded and bounded: the same 330 cases on every run, in well under 90 s.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import random
import re
import zipfile
from dataclasses import dataclass, field
from decimal import Decimal

import pandas as pd
import pytest
import xlsxwriter

from core.cli import main
from core.inventory import COLUMNS, load_version, read_inventory
from core.store import Store

SEED = 20261201
N_CASES = 330
HEADER = list(COLUMNS)
NUMS = tuple(c for c in ("requests_per_day", "peak_factor", "input_tokens", "output_tokens", "output_tokens_p95",
                          "latency_slo_ms", "batch_window_hours", "min_quality", "cached_input_share") if c in HEADER)
SHARES = ("min_quality", "cached_input_share")
NAMES = ["Customer chat", "Überweisung prüfen", "Résumé parsing €", "Say \"hi\", then go", "a;b|c",
         "KYC overnight", "Code completion 🚀", "naïve — test", "=SUM(A1)", "@ops desk", "multi\nline note",
         "Zoë's queue", "  padded  ", "tab\there"]
ALIASES = {"workload_id": ["Workload ID", "WORKLOAD_ID", "workload-id"], "requests_per_day": ["Requests per day"],
           "input_tokens": ["Input Tokens"], "data_policy": ["data policy"], "task_class": ["Task-Class"]}

# Locales as Excel writes them: (delimiter, decimal, thousands separators used).
LOCALES = {
    "en": (",", ".", [","]),
    "en-tab": ("\t", ".", [","]),
    "de": (";", ",", ["."]),
    "fr": (";", ",", ["\u00a0", "\u202f", " "]),
    "ch": (";", ".", ["'"]),
    "de-tab": ("\t", ",", ["."]),
    "pipe": ("|", ".", []),
}


@dataclass
class Case:
    """One generated file, what it should give, and how it was made."""

    name: str
    data: bytes
    file_name: str
    expect: str  # "accept" or "refuse"
    frame: pd.DataFrame | None = None  # intended frame (accept)
    rows: list[int] = field(default_factory=list)  # intended spreadsheet row numbers
    decimal: str | None = None  # what to choose when the report asks


# -- the intended inventory ------------------------------------------------------------


def _decimal_text(rng: random.Random, lo: float, hi: float, places: int) -> str:
    """A number as exact decimal text (the intended value is float() of it)."""
    v = Decimal(str(round(rng.uniform(lo, hi), places)))
    text = format(v.normalize(), "f")
    return text if text != "-0" else "0"


def intended_rows(rng: random.Random, k: int) -> list[dict[str, str | None]]:
    """Rows as canonical text (numbers with '.'), None = blank."""
    out = []
    for i in range(rng.randint(1, 7)):
        interactive = rng.random() < 0.6
        r: dict[str, str | None] = {
            "workload_id": f"wl-{k}-{i}",
            "name": rng.choice(NAMES),
            "team": rng.choice([None, "Retail", "Ops ; risk", "Trésorerie"]),
            "requests_per_day": rng.choice([str(rng.randint(0, 999)), str(rng.randint(1000, 9_999_999)),
                                            _decimal_text(rng, 0, 5000, 3), str(rng.randint(10**7, 10**9))]),
            "peak_factor": rng.choice([None, _decimal_text(rng, 1, 24, 1), "3"]),
            "input_tokens": str(rng.randint(0, 200_000)),
            "output_tokens": rng.choice([str(rng.randint(1, 4000)), _decimal_text(rng, 1, 999, 3)]),
            "output_tokens_p95": None,
            "latency_slo_ms": str(rng.randint(100, 60_000)) if interactive else None,
            "batch_window_hours": None if interactive else _decimal_text(rng, 0.5, 24, 2),
            "data_policy": rng.choice(["external_ok", "owned_only"]),
            "task_class": rng.choice(["extraction", "code_completion", "chat", "agentic_step", "reasoning"]),
            "min_quality": rng.choice([None, _decimal_text(rng, 0, 1, 2), "0.95", "1"]),
            "cached_input_share": rng.choice([None, _decimal_text(rng, 0, 1, 3), "0"]),
            "notes": rng.choice([None, "nightly", "-5 is fine", "Q3; with \"quotes\""]),
        }
        if "output_tokens_p95" in HEADER and rng.random() < 0.3:
            r["output_tokens_p95"] = str(math.ceil(float(r["output_tokens"])) * rng.randint(1, 4))
        out.append({c: r.get(c) for c in HEADER})
    return out


def frame_of(rows: list[dict[str, str | None]], row_numbers: list[int]) -> pd.DataFrame:
    """The frame read_inventory should return for these rows."""
    recs = []
    for r in rows:
        rec: dict[str, object] = {}
        for c in HEADER:
            v = r.get(c)
            if c in NUMS:
                rec[c] = float(v) if v is not None else (3.0 if c == "peak_factor" else math.nan)
            else:
                rec[c] = None if v is None or not v.strip() else v.strip()
        recs.append(rec)
    return pd.DataFrame(recs, columns=HEADER, index=pd.Index(row_numbers, name="row"))


# -- writing numbers as a locale does ---------------------------------------------------------


def locale_number(rng: random.Random, text: str, decimal: str, thousands: list[str], share: bool) -> str:
    """Canonical decimal text written the locale's way (grouping and percentages at random)."""
    if share and rng.random() < 0.35:
        pct = format((Decimal(text) * 100).normalize(), "f")
        return locale_number(rng, pct, decimal, thousands, False) + rng.choice(["%", " %", "\u00a0%"])
    whole, _, frac = text.partition(".")
    if thousands and len(whole) > 3 and rng.random() < 0.6:
        sep = rng.choice(thousands)
        groups = []
        while len(whole) > 3:
            groups.insert(0, whole[-3:])
            whole = whole[:-3]
        whole = sep.join([whole, *groups])
    return whole + (decimal + frac if frac else "")


def csv_case(rng: random.Random, k: int) -> Case:
    """A valid CSV inventory, mutated the ways spreadsheets and people write them."""
    rows = intended_rows(rng, k)
    locale = rng.choice(list(LOCALES))
    delimiter, decimal, thousands = LOCALES[locale]
    encoding = rng.choice(["utf-8", "utf-8", "utf-8-sig", "cp1252", "utf-16", "utf-16-le", "utf-16-be", "utf-32"])
    line_end = rng.choice(["\r\n", "\r\n", "\n", "\r"])
    if line_end == "\r":  # Excel for Mac: no line break inside a cell
        for r in rows:
            r["name"] = r["name"].replace("\n", " ")
    if encoding == "cp1252":
        for r in rows:
            r["name"] = r["name"].encode("cp1252", errors="ignore").decode("cp1252") or "plain"
    columns = HEADER[:]
    if rng.random() < 0.3:
        rng.shuffle(columns)
    header = [rng.choice(ALIASES[c]) if c in ALIASES and rng.random() < 0.3 else c for c in columns]
    extra = rng.random() < 0.2
    if extra:
        header.append("Cost centre")
    quoting = rng.choice([csv.QUOTE_MINIMAL, csv.QUOTE_MINIMAL, csv.QUOTE_ALL])
    out = io.StringIO()
    w = csv.writer(out, delimiter=delimiter, lineterminator=line_end, quoting=quoting)
    record = 0
    for _ in range(rng.choice([0, 0, 0, 1, 2])):  # title and blank rows above the header
        w.writerow(rng.choice([["Workload inventory Q3"], [], ["prepared by", "finance"]]))
        record += 1
    w.writerow(header)
    record += 1
    numbers = []
    for r in rows:
        if rng.random() < 0.15:  # a blank row inside the data
            w.writerow([])
            record += 1
        cells = []
        for c in columns:
            v = r[c]
            if v is None:
                cells.append("")
            elif c in NUMS:
                cells.append(locale_number(rng, v, decimal, thousands, c in SHARES))
            else:
                cells.append(v)
        if extra:
            cc = rng.choice(["", "CC-12", "=1+1"])
            cells.append(cc)
            if cc:
                r["notes"] = f"{r['notes']}; Cost centre: {cc}" if r["notes"] else f"Cost centre: {cc}"
        w.writerow(cells)
        record += 1
        numbers.append(record)
    text = out.getvalue()
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError:  # a narrow no-break space has no Windows-1252 byte
        encoding, data = "utf-8", text.encode("utf-8")
    return Case(f"csv-{locale}-{encoding}-{line_end!r}", data, rng.choice(["inv.csv", "inv.txt"]), "accept",
                frame_of(rows, numbers), numbers, decimal)


def xlsx_case(rng: random.Random, k: int) -> Case:
    """A valid workbook: cover sheets, title rows, typed and text numbers, a lying dimension, two inventory sheets."""
    rows = intended_rows(rng, k)
    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True})
    pct_format = wb.add_format({"num_format": "0%"})
    if rng.random() < 0.4:
        cover = wb.add_worksheet("Cover")
        cover.write_string(0, 0, "GPU plan, Q3")
        cover.write_string(2, 0, "prepared by finance")
    ws = wb.add_worksheet(rng.choice(["Inventory", "Workloads", "Q3 inventory"]))
    top = rng.choice([0, 0, 1, 3])
    if top:
        ws.write_string(0, 0, "Workload inventory")
    for j, c in enumerate(HEADER):
        ws.write_string(top, j, c)
    numbers = []
    r_i = top
    text_locale = rng.choice(["de", "en-tab", "ch"])  # how typed-as-text numbers are written in this book
    _, decimal, thousands = LOCALES[text_locale]
    for r in rows:
        r_i += 2 if rng.random() < 0.15 else 1
        numbers.append(r_i + 1)
        for j, c in enumerate(HEADER):
            v = r[c]
            if v is None:
                continue
            if c in NUMS:
                how = rng.random()
                if how < 0.6:
                    ws.write_number(r_i, j, float(v))
                elif how < 0.75 and c in SHARES:
                    ws.write_number(r_i, j, float(v), pct_format)
                else:
                    ws.write_string(r_i, j, locale_number(rng, v, decimal, thousands, c in SHARES))
            else:
                ws.write_string(r_i, j, v)
    wb.close()
    data = buf.getvalue()
    name = "xlsx"
    if rng.random() < 0.3:  # a stored <dimension> that claims one row
        data = _rewrite_sheets(data, lambda b: re.sub(rb'<dimension ref="[^"]*"/>', b'<dimension ref="A1:B1"/>', b))
        name += "-dimension"
    return Case(name, data, "book.xlsx", "accept", frame_of(rows, numbers), numbers, decimal)


def _rewrite_sheets(data: bytes, fn) -> bytes:
    zin = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            body = zin.read(item.filename)
            if item.filename.startswith("xl/worksheets/sheet"):
                body = fn(body)
            zout.writestr(item, body)
    return out.getvalue()


# -- corruptions: each must be refused --------------------------------------------------------


def corrupt(rng: random.Random, k: int) -> Case:
    base = csv_case(rng, k) if rng.random() < 0.75 else xlsx_case(rng, k)
    kind = rng.choice(["huge", "huge", "bad_cell", "open_quote", "mixed", "odd_utf16", "random", "random",
                       "ragged", "missing_column", "cut_zip", "dup_id", "both_slo"])
    if base.file_name.endswith(".xlsx"):
        if kind in ("huge", "bad_cell", "dup_id", "both_slo", "missing_column"):
            return _xlsx_bad(rng, k, kind)
        if kind != "random":
            kind = "cut_zip"
    if kind == "cut_zip":
        x = xlsx_case(rng, k)
        return Case("cut_zip", x.data[: rng.randint(10, len(x.data) - 200)], "book.xlsx", "refuse")
    if kind == "random":
        size = rng.randint(1, 6000)
        data = bytes(rng.getrandbits(8) for _ in range(size))
        return Case("random", data, rng.choice(["inv.csv", "inv.xlsx", "x"]), "refuse")
    rows = intended_rows(rng, k)
    if kind == "odd_utf16":
        data = _plain_csv(rows, "\t").encode(rng.choice(["utf-16", "utf-16-le"]))
        return Case(kind, data[:-1], "inv.txt", "refuse")
    if kind == "mixed":
        # Pasted from two sources: UTF-8 rows, and one row saved as Windows-1252.
        rows.append(dict(rows[0], workload_id=f"wl-{k}-x"))
        rows[0]["name"], rows[-1]["name"] = "Überweisung", "Grüße"
        lines = _plain_csv(rows, ",").split("\r\n")
        data = "\r\n".join(lines[:-2]).encode() + b"\r\n" + lines[-2].encode("cp1252") + b"\r\n"
        return Case(kind, data, "inv.csv", "refuse")
    if kind == "open_quote":
        text = _plain_csv(rows, ",", quoting=csv.QUOTE_ALL)
        last = text.rstrip("\r\n").rfind('"')  # the closing quote of the last cell
        opened = text.rfind('"', 0, last)
        cut = rng.randint(opened + 1, last)
        return Case(kind, text[:cut].encode(), "inv.csv", "refuse")
    column = rng.choice(NUMS[:5])
    if kind == "huge":
        rows[-1][column] = rng.choice(["1e25", "1e308", "1e400", "-1e300", "9" * 400, "1.7976931348623157e308"])
    elif kind == "bad_cell":
        rows[-1][column] = rng.choice(["n/a", "12abc", "1.2.3", "--1", "0x10", "about 2k", "#DIV/0!"])
    elif kind == "dup_id":
        rows.append(dict(rows[0]))
    elif kind == "both_slo":
        rows[0]["latency_slo_ms"], rows[0]["batch_window_hours"] = "1000", "8"
    text = _plain_csv(rows, ",")
    if kind == "ragged":
        text = text.rstrip("\r\n") + ",surprise,extra\r\n"
    if kind == "missing_column":
        drop = rng.choice(["workload_id", "output_tokens", "task_class", "data_policy"])
        keep = [c for c in HEADER if c != drop]
        text = _plain_csv(rows, ",", columns=keep)
    return Case(kind, text.encode(), "inv.csv", "refuse")


def _xlsx_bad(rng: random.Random, k: int, kind: str) -> Case:
    rows = intended_rows(rng, k)
    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True})
    ws = wb.add_worksheet("Inventory")
    columns = [c for c in HEADER if not (kind == "missing_column" and c == "output_tokens")]
    for j, c in enumerate(columns):
        ws.write_string(0, j, c)
    if kind == "dup_id":
        rows.append(dict(rows[0]))
    if kind == "both_slo":
        rows[0]["latency_slo_ms"], rows[0]["batch_window_hours"] = "1000", "8"
    for i, r in enumerate(rows, start=1):
        for j, c in enumerate(columns):
            if r[c] is not None:
                (ws.write_number if c in NUMS else ws.write_string)(i, j, float(r[c]) if c in NUMS else r[c])
    if kind == "huge":
        ws.write_number(len(rows), columns.index("requests_per_day"), rng.choice([1e25, 1e300, 1.7976931348623157e308]))
    if kind == "bad_cell":
        ws.write_string(len(rows), columns.index("input_tokens"), rng.choice(["n/a", "#VALUE!", "12 tokens"]))
    wb.close()
    return Case(f"xlsx-{kind}", buf.getvalue(), "book.xlsx", "refuse")


def _plain_csv(rows, delimiter: str, quoting=csv.QUOTE_MINIMAL, columns=None) -> str:
    columns = columns or HEADER
    out = io.StringIO()
    w = csv.writer(out, delimiter=delimiter, lineterminator="\r\n", quoting=quoting)
    w.writerow(columns)
    for r in rows:
        w.writerow(["" if r[c] is None else r[c] for c in columns])
    return out.getvalue()


def generate() -> list[Case]:
    rng = random.Random(SEED)
    cases = []
    for k in range(N_CASES):
        roll = rng.random()
        cases.append(csv_case(rng, k) if roll < 0.45 else xlsx_case(rng, k) if roll < 0.65 else corrupt(rng, k))
    return cases


CASES = generate()


# -- the suite ---------------------------------------------------------------------------------


def _values_equal(got: pd.DataFrame, want: pd.DataFrame) -> None:
    pd.testing.assert_index_equal(got.index, want.index)
    for c in HEADER:
        g, w = got[c].tolist(), want[c].tolist()
        if c in NUMS:
            assert all((math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(g, w, strict=True)), (c, g, w)
        else:
            blank = [None if isinstance(v, float) and math.isnan(v) else v for v in w]  # pandas may hold None as NaN
            assert g == blank, (c, g, w)


def _store_bytes(db) -> str:
    h = hashlib.sha256()
    for p in sorted(db.parent.glob(db.name + "*")):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def test_the_generator_covers_every_mutation():
    """At least 300 cases, the three kinds in good number, and every corruption drawn."""
    assert len(CASES) >= 300
    kinds = pd.Series([c.name.split("-")[0] for c in CASES]).value_counts()
    assert kinds["csv"] >= 100 and kinds["xlsx"] >= 50
    refused = {c.name for c in CASES if c.expect == "refuse"}
    for kind in ("huge", "bad_cell", "open_quote", "mixed", "odd_utf16", "random", "ragged", "cut_zip"):
        assert any(kind in n for n in refused), kind


@pytest.mark.slow
def test_fuzzed_inventories_no_traceback_no_wrong_value_store_unchanged(tmp_path, capsys):
    db = tmp_path / "fuzz.duckdb"
    Store(db).close()  # a seeded store for the refusals to leave alone
    before = _store_bytes(db)
    accepted = refused = chose_decimal = 0
    for i, case in enumerate(CASES):
        report = read_inventory(case.data, case.file_name)  # any exception here fails the suite
        if not report.ok and report.needs_decimal and case.expect == "accept":
            chose_decimal += 1
            report = read_inventory(case.data, case.file_name, decimal=case.decimal)
        if report.ok:
            accepted += 1
            assert case.expect == "accept", (i, case.name, "accepted a corrupted file")
            _values_equal(report.frame, case.frame)
            continue
        refused += 1
        assert case.expect == "refuse", (i, case.name, report.error_lines()[:3])
        assert report.frame.empty and report.error_lines()
        assert len("\n".join(report.error_lines())) < 100_000
        # The command line refuses it too (exit 2, one report), and the store is byte-identical.
        path = tmp_path / f"case-{i}-{case.file_name}"
        path.write_bytes(case.data)
        assert main(["--db", str(db), "workloads", "import", str(path)]) == 2
        capsys.readouterr()
        assert _store_bytes(db) == before, (i, case.name)
    assert accepted + refused == len(CASES)
    assert accepted >= 150 and refused >= 60 and chose_decimal >= 5



@pytest.mark.parametrize("which", range(6))
def test_accepted_files_commit_and_load_back_the_intended_values(tmp_path, capsys, which):
    """A few accepted files through `hangover workloads import` into a store and back."""
    case = [c for c in CASES if c.expect == "accept"][which * 17]
    path = tmp_path / case.file_name
    path.write_bytes(case.data)
    db = tmp_path / "t.duckdb"
    argv = ["--db", str(db), "workloads", "import", str(path)]
    if read_inventory(case.data, case.file_name).needs_decimal:
        argv += ["--decimal", case.decimal]
    assert main(argv) == 0, capsys.readouterr()
    store = Store(db)
    try:
        _values_equal(load_version(store), case.frame)
    finally:
        store.close()
