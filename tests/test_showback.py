"""Showback (issue 35): the plan's cash bill by team, idle recovered by a stated key, adding up to the cent."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.decision.economics import DAYS_PER_MONTH
from core.decision.engine import evaluate
from core.decision.showback import (
    largest_remainder_cents,
    showback,
    showback_json,
    workload_showback,
)
from core.models import Scenario
from core.presentation.report.showback import TOTAL_LABEL, showback_text, showback_totals
from core.presentation.report.xlsx import build_showback_workbook_bytes


@pytest.fixture(scope="module")
def marginal(catalog, bank):
    """The sample bank under the marginal basis: the owned node's capex is left out of the shares, so the plan
    leaves an unallocated rest for showback to recover."""
    return evaluate(catalog, bank, Scenario(cost_basis="marginal"))


@pytest.fixture(scope="module")
def full(catalog, bank):
    return evaluate(catalog, bank, Scenario())


def _cents(x: float) -> int:
    return int(round(x * 100))


def test_largest_remainder_golden():
    """100 cents by weights 1:1:1 -> exact 33.33 each: floors 33+33+33 = 99, the one cent left goes to the first
    of the tied fractions -> 34, 33, 33. 10 cents by 1:2:3:4 -> exact 1, 2, 3, 4 (no remainder). -7 cents by 1:1 ->
    |−7| = 7 -> 3.5, 3.5 -> 4, 3 -> negated −4, −3."""
    assert largest_remainder_cents(100, np.array([1.0, 1.0, 1.0])).tolist() == [34, 33, 33]
    assert largest_remainder_cents(10, np.array([1.0, 2.0, 3.0, 4.0])).tolist() == [1, 2, 3, 4]
    assert largest_remainder_cents(-7, np.array([1.0, 1.0])).tolist() == [-4, -3]


@settings(max_examples=200, deadline=None)
@given(st.integers(-10**9, 10**9),
       st.lists(st.floats(0, 1e12, allow_nan=False), min_size=1, max_size=40).filter(lambda w: sum(w) > 0))
def test_largest_remainder_adds_up_and_stays_within_a_cent(total, weights):
    w = np.array(weights)
    got = largest_remainder_cents(total, w)
    assert int(got.sum()) == total
    exact = total * w / w.sum()
    assert np.all(np.abs(got - exact) < 1.0 + 1e-6)


def test_tokens_key_golden(marginal):
    """Marginal basis, idle by tokens sent to owned GPUs. Owned work: kyc-overnight (100,000 req/day × (3,000 +
    400) tokens), lc-clearing and code-completion (on the LLaDA2.0-flash pool in the 3-node plan; internal-chat
    goes to an API); a month is 365/12 days. Operations' only served workload is
    kyc-overnight (onboarding… is Retail banking; agent-steps has no route), so its idle share is
    U × 100,000 × 3,400 / Σ(owned tokens a day), U the plan's unallocated $, and its $ is that share alone
    (kyc rides on hours the interactive pools already reserve: attributed $0)."""
    per = workload_showback(marginal, "tokens")
    w = marginal.workloads.set_index("workload_id")
    owned_ids = ["kyc-overnight", "lc-clearing", "code-completion"]
    day_tokens = {i: w.loc[i, "requests_per_day"] * (w.loc[i, "input_tokens"] + w.loc[i, "output_tokens"])
                  for i in owned_ids}
    assert day_tokens["kyc-overnight"] == 100_000 * 3_400
    U = marginal.fleet.unallocated_usd_per_month
    assert U > 1000  # the marginal basis leaves the owned node's capex unattributed
    expect = U * day_tokens["kyc-overnight"] / sum(day_tokens.values())
    sb = showback(marginal, idle_key="tokens")
    ops = next(t for t in sb.teams if t.team == "Operations")
    assert ops.attributed_usd == 0.0
    assert abs(ops.idle_usd - expect) <= 0.01
    assert ops.tokens_per_month == pytest.approx(100_000 * 3_400 * DAYS_PER_MONTH)
    assert ops.usd_per_mtok == pytest.approx(ops.monthly_usd / ops.tokens_per_month * 1e6)
    assert ops.unserved_workloads == 1  # agent-steps: no feasible route, no tokens counted
    assert per.set_index("workload_id").loc["credit-memos", "idle_usd"] == 0.0  # API work reserves no GPU


def test_every_team_appears_and_adds_to_the_bill(marginal, bank):
    for key in ("gpu_hours", "tokens"):
        sb = showback(marginal, idle_key=key)
        assert {t.team for t in sb.teams} == set(bank["team"])
        assert sum(_cents(t.monthly_usd) for t in sb.teams) == _cents(marginal.fleet.total_monthly_usd)
        for t in sb.teams:
            if t.monthly_usd > 0:
                assert t.usd_per_mtok is not None and t.usd_per_mtok > 0


def test_api_price_is_the_cheapest_allowed_api(full):
    """credit-memos and internal-chat go to an API in the plan: their allowed-API price is what they pay (the
    plan picks the cheapest), so the difference is $0; owned_only teams have no API price at all."""
    sb = showback(full)
    by = {t.team: t for t in sb.teams}
    assert by["Credit risk"].api_usd_per_month == pytest.approx(by["Credit risk"].monthly_usd)
    assert by["Credit risk"].difference_usd_per_month == pytest.approx(0.0, abs=0.01)
    assert by["Engineering"].api_usd_per_month is None and by["Engineering"].api_workloads == 0


def test_blank_team_and_other_columns(catalog, bank):
    w = bank.copy()
    w.loc[w["workload_id"] == "internal-chat", "team"] = None
    w["notes"] = w["notes"].fillna("") + "; cost_centre: CC-" + (w.index % 2).astype(str)
    ev = evaluate(catalog, w, Scenario())
    teams = {t.team for t in showback(ev).teams}
    assert "(no team)" in teams and "All staff" not in teams
    cc = showback(ev, by="cost_centre")
    assert {t.team for t in cc.teams} == {"CC-0", "CC-1"}
    assert sum(_cents(t.monthly_usd) for t in cc.teams) == _cents(ev.fleet.total_monthly_usd)
    with pytest.raises(Exception, match="no column 'nope'"):
        showback(ev, by="nope")


def test_zero_traffic_shares_the_idle_equally(catalog, bank):
    """One owned node and no traffic: no GPU-hours, no tokens, so the whole bill (the idle node) is split equally
    by workload: bill cents = 7q + r, the first r workloads (by position) get q + 1 cents, the rest q."""
    w = bank.copy()
    w["requests_per_day"] = 0
    ev = evaluate(catalog, w, Scenario(fleet_nodes=1))
    per = workload_showback(ev)
    bill = _cents(ev.fleet.total_monthly_usd)
    q, r = divmod(bill, 7)
    assert bill > 0 and [_cents(x) for x in per["monthly_usd"]] == [q + 1] * r + [q] * (7 - r)
    assert showback(ev).idle_key_note == "unallocated $ shared equally by workload"


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(teams=st.lists(st.sampled_from(["A", "B", "C", None]), min_size=7, max_size=7),
       scale=st.floats(0.05, 3.0), owned=st.integers(0, 3), basis=st.sampled_from(["full", "marginal"]),
       key=st.sampled_from(["gpu_hours", "tokens"]))
def test_teams_add_up_to_the_bill_to_the_cent(catalog, bank, teams, scale, owned, basis, key):
    """Any team labels, traffic, owned fleet and basis: the teams' cents sum to the bill's cents exactly."""
    w = bank.copy()
    w["team"] = teams
    w["requests_per_day"] = np.maximum(1, np.round(w["requests_per_day"] * scale)).astype(int)
    ev = evaluate(catalog, w, Scenario(fleet_nodes=owned, cost_basis=basis))
    sb = showback(ev, idle_key=key)
    assert sum(_cents(t.monthly_usd) for t in sb.teams) == _cents(ev.fleet.total_monthly_usd)
    assert sum(t.workloads for t in sb.teams) == len(w)


def test_json_contract_and_text(full):
    out = showback_json(showback(full))
    assert out["teams"] and {"team", "monthly_usd", "usd_per_mtok", "api_usd_per_month",
                             "tokens_per_month"} <= set(out["teams"][0])
    json.dumps(out)  # plain JSON (no numpy, no NaN)
    text = showback_text(showback(full))
    assert TOTAL_LABEL in text and "Source: GPU Hangover plan" in text


def test_workbook_sheet_reads_as_a_controller_expects(marginal):
    """Money in "$"#,##0.00, tokens in #,##0, a bold totals row under a rule whose Monthly $ is the bill (a value:
    the workbook holds no formula), and the source line under the table."""
    import openpyxl

    sb = showback(marginal)
    wb = openpyxl.load_workbook(io.BytesIO(build_showback_workbook_bytes(sb, "Generated 2026-12-04 21:00 UTC")))
    ws = wb["Showback"]
    header = [c.value for c in ws[4]]
    assert header[0] == "Team" and "Monthly $" in header
    money_col = header.index("Monthly $") + 1
    first = 5
    total_row = first + len(sb.teams)
    assert ws.cell(total_row, 1).value == TOTAL_LABEL
    assert ws.cell(first, money_col).number_format == '"$"#,##0.00;-"$"#,##0.00'
    assert ws.cell(first, header.index("Tokens a month (in + out)") + 1).number_format == "#,##0"
    assert ws.cell(total_row, money_col).value == pytest.approx(marginal.fleet.total_monthly_usd, abs=0.001)
    assert ws.cell(total_row, money_col).font.b and ws.cell(total_row, money_col).border.top.style == "medium"
    assert sum(ws.cell(r, money_col).value for r in range(first, total_row)) == \
        pytest.approx(ws.cell(total_row, money_col).value, abs=0.001)
    assert ws.cell(total_row + 2, 1).value.startswith("Source: GPU Hangover plan")
    assert showback_totals(sb)["monthly_usd"] == ws.cell(total_row, money_col).value


def test_cli_csv_xlsx_and_json(tmp_path, capsys):
    """The command on the bundled sample: the CSV's totals row is the bill and the teams' cents add up to it;
    xlsx needs --out; JSON names every team of the sample."""
    import pandas as pd

    from core.cli import main
    from core.store.seed import sample_workloads_path

    sample = str(sample_workloads_path())
    out = tmp_path / "sb.csv"
    assert main(["showback", "--workloads", sample, "--format", "csv", "--out", str(out)]) == 0
    frame = pd.read_csv(out)
    body, total = frame.iloc[:-1], frame.iloc[-1]
    assert total["team"] == TOTAL_LABEL
    assert round(body["monthly_usd"].sum() * 100) == round(total["monthly_usd"] * 100)
    assert main(["showback", "--workloads", sample, "--format", "xlsx"]) == 2
    assert "give --out" in capsys.readouterr().err
    assert main(["showback", "--workloads", sample, "--format", "json", "--idle-key", "tokens"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert {t["team"] for t in got["teams"]} == set(pd.read_csv(sample)["team"]) and got["idle_key"] == "tokens"
