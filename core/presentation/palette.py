"""The one palette: a colour per architecture and per hosting, plus a few neutrals and accents, for pages, charts and reports.

Architecture hues are saturated for owned routes and a lighter shade of the
same hue for API routes, so "MoE" is teal on every page and in every export.
Hosting (owned nodes against public APIs) has its own pair, outside the four
architecture hues, for charts that split money or load by who serves it.
The dashboard theme (.streamlit/config.toml) uses INK and the autoregressive
blue as its text and primary colours.
"""

from __future__ import annotations

ARCHITECTURE: dict[str, str] = {
    "autoregressive": "#3355cc",
    "speculative": "#7b4fd0",
    "moe": "#0f8f7e",
    "diffusion": "#dd6b20",
}
# The same hues, lighter: that architecture served through a public API.
ARCHITECTURE_API: dict[str, str] = {
    "autoregressive": "#93a5d8",
    "speculative": "#bba7e6",
    "moe": "#8fd0c5",
    "diffusion": "#f3b27e",
}
HOSTING: dict[str, str] = {
    "owned": "#2b3a67",  # navy: your nodes
    "api": "#b59a6a",    # khaki: someone else's
}
# Owned capacity no route holds, and batch work filling idle owned hours: tints of the owned navy.
UNALLOCATED = "#c5ccd8"
BATCH_FILL = "#8d9cc4"
# Words for legends that cannot show a swatch (the workbook's chart title).
COLOR_WORDS: dict[str, str] = {"owned": "navy", "api": "khaki", "unallocated": "light grey"}

# Neutrals.
INK = "#1c2333"          # text, reference lines (the theme's text colour)
MUTED = "#6b7280"        # secondary text, notes, annotations
LINE = "#d0d7de"         # table rules
SURFACE = "#f3f5fa"      # table header background (the theme's secondary background)
FAINT = "#bbbbbb"        # points that are not there (KV cache does not fit)
WHITE = "#ffffff"        # marker outlines on coloured fills
# Accents.
ALERT = "#c0392b"        # no feasible route, a limit line (100 % busy), a vendor claim
UNKNOWN = "#999999"      # a group or architecture the palette does not know

# API price tiers (pricing page): commodity neutral, the others by the hue they are nearest to.
TIER: dict[str, str] = {
    "commodity": MUTED,
    "mid": ARCHITECTURE["autoregressive"],
    "frontier": ARCHITECTURE["speculative"],
    "diffusion": ARCHITECTURE["diffusion"],
}
# Lines in order, for series with no colour of their own (fleet options on the SLA sweep).
SEQUENCE: tuple[str, ...] = (HOSTING["owned"], HOSTING["api"], MUTED, ARCHITECTURE["moe"],
                             ARCHITECTURE["diffusion"], ARCHITECTURE["speculative"])


def architecture(arch: str, hosting: str = "owned") -> str:
    """The colour of an architecture, in its API shade when hosting is 'api'; UNKNOWN for anything else."""
    table = ARCHITECTURE_API if hosting.lower() == "api" else ARCHITECTURE
    return table.get(arch, UNKNOWN)


def hosting(where: str) -> str:
    """The colour of a hosting ('owned' or 'api'); UNKNOWN for anything else."""
    return HOSTING.get(where.lower(), UNKNOWN)
