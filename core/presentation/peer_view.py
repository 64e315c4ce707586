"""The roofline beside AIConfigurator's estimate, per concurrency, for `hangover perf --peer` and the Performance page."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from core.models import ServingStack
from core.performance import peer
from core.presentation.format import integer, number, plain

COLUMNS = [
    "concurrency",
    "per_stream_roofline", "per_stream_peer", "per_stream_ratio",
    "ttft_roofline", "ttft_peer", "ttft_ratio",
    "total_roofline", "total_peer", "total_ratio",
]


@dataclass(frozen=True)
class PeerView:
    """The side-by-side table (None when the peer has no answer) and one line saying what it is or why not."""

    table: pd.DataFrame | None
    line: str
    note: str = ""
    range_line: str = ""  # whether the roofline's low-high range of total tok/s contains the peer


def side_by_side(curve: pd.DataFrame, estimate: peer.PeerEstimate) -> PeerView:
    """Join the roofline curve and the peer's points on concurrency; ratios are roofline / peer."""
    if not estimate.covered:
        return PeerView(None, f"Second opinion: {estimate.reason}")
    theirs = pd.DataFrame(
        [(float(p.concurrency), p.per_stream_tok_s, p.ttft_ms, p.total_tok_s) for p in estimate.points],
        columns=["concurrency", "per_stream_peer", "ttft_peer", "total_peer"],
    )
    ranged = {"output_tokens_per_s_total_low", "output_tokens_per_s_total_high"} <= set(curve.columns)
    keep = ["concurrency", "output_tokens_per_s_per_stream", "ttft_ms", "output_tokens_per_s_total"]
    if ranged:
        keep += ["output_tokens_per_s_total_low", "output_tokens_per_s_total_high"]
    ours = curve[keep].rename(
        columns={"output_tokens_per_s_per_stream": "per_stream_roofline", "ttft_ms": "ttft_roofline",
                 "output_tokens_per_s_total": "total_roofline"})
    ours = ours.assign(concurrency=ours["concurrency"].round())
    t = ours.merge(theirs, on="concurrency", how="inner")
    for what in ("per_stream", "ttft", "total"):
        t[f"{what}_ratio"] = t[f"{what}_roofline"] / t[f"{what}_peer"]
    line = (f"Second opinion (estimate): {estimate.source}, aggregated serving; "
            "ratio = roofline / AIConfigurator")
    note = " ".join(f"{text.rstrip('.')}." for text in (estimate.note, estimate.caveat) if text)
    return PeerView(t[COLUMNS], line, note=note, range_line=_range_line(t) if ranged else "")


def _range_line(t: pd.DataFrame) -> str:
    """How many of the peer's figures fall inside the roofline's range, and how far the range would stretch."""
    low, high = t["output_tokens_per_s_total_low"], t["output_tokens_per_s_total_high"]
    inside = int(((t["total_peer"] >= low) & (t["total_peer"] <= high)).sum())
    slow, fast = peer.widening(low.tolist(), high.tolist(), t["total_peer"].tolist())
    text = f"the roofline's range of total tok/s contains AIConfigurator at {integer(inside)} of {integer(len(t))} loads"
    moves = [f"the {end} end x{number(f, decimals=2)}" for end, f in (("low", slow), ("high", fast)) if f != 1.0]
    if moves:
        text += f"; to contain it everywhere, {' and '.join(moves)} (the verdict ranges do not read this)"
    return text


def peer_blocker(stack: ServingStack, gpu_name: str) -> str:
    """'' when the peer can be asked about this stack on this GPU, else the one line saying why not (cheap)."""
    _, reason = peer.coverage(stack, gpu_name)
    reason = reason or peer.unavailable_reason()
    return f"Second opinion: {reason}" if reason else ""


def peer_view(
    stack: ServingStack, gpu_name: str, gpus: int, curve: pd.DataFrame, input_tokens: float, output_tokens: float,
) -> PeerView:
    """Ask the peer about the curve's concurrencies (whole numbers only) and lay the answers beside it."""
    conc = [c for c in curve["concurrency"].tolist() if float(c).is_integer()]
    est = peer.peer_estimate(stack, gpu_name, gpus, conc, input_tokens, output_tokens)
    return side_by_side(curve, est)


def text_lines(view: PeerView) -> list[str]:
    """The comparison as fixed-width text lines (the CLI's table)."""
    lines = [view.line]
    if view.table is None:
        return lines
    lines.append(f"{'conc':>6} {'tok/s/stream':>13} {'peer':>8} {'ratio':>6} {'TTFT ms':>9} {'peer':>8} {'ratio':>6} "
                 f"{'tok/s total':>12} {'peer':>9} {'ratio':>6}")
    for r in view.table.itertuples(index=False):
        cells = [(plain(r.concurrency), 6), (number(r.per_stream_roofline, decimals=1), 13),
                 (number(r.per_stream_peer, decimals=1), 8), (number(r.per_stream_ratio, decimals=2), 6),
                 (integer(r.ttft_roofline), 9), (integer(r.ttft_peer), 8), (number(r.ttft_ratio, decimals=2), 6),
                 (number(r.total_roofline, decimals=1), 12), (number(r.total_peer, decimals=1), 9),
                 (number(r.total_ratio, decimals=2), 6)]
        lines.append(" ".join(text.rjust(width) for text, width in cells))
    if view.range_line:
        lines.append(f"  {view.range_line}")
    if view.note:
        lines.append(f"  note: {view.note}")
    return lines
