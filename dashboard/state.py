"""Shared dashboard plumbing: the store, session defaults, the scenario sidebar and the cached evaluation."""

from __future__ import annotations

import threading

import streamlit as st

from core.bounds import field_bounds, input_limits
from core.catalog import Catalog
from core.collector import settle
from core.errors import HangoverError
from core.models import OwnedHardware, PricingOption, Scenario
from core.presentation.format import input_format, plain
from core.scenarios import (
    BASIS_LABELS,
    DEFAULT_INPUTS,
    OWNED_INPUT_FIELDS,
    PRICING_LABELS,
    SAMPLE_LABEL,
    SavedScenario,
    check_name,
    inputs_from_scenario,
    inventory_provenance,
    load_scenario,
    owned_input_defaults,
    price_problem,
    scenario_from_inputs,
    settings_the_sidebar_lacks,
    url_notes,
)
from core.service import (
    Evaluation,
    Store,
    check_plan_size,
    evaluate_store,
    open_shared_store,
    store_stamp,
    stored_size,
)
from core.textsafety import clip
from dashboard.format import md

# Scenario widget keys live in session state under this prefix; every page reads the same values.
# Each widget is bound to the URL's query string under its key (st.query_params), so a refresh keeps
# the scenario and a copied link reproduces it; values equal to these defaults stay out of the URL.
SCENARIO_DEFAULTS = {f"sc_{k}": v for k, v in DEFAULT_INPUTS.items()}
URL_BIND = "query-params"
# (min, max) of the bounded sidebar widgets: a saved scenario outside them can be compared but not loaded.
# The model's bounds (core.bounds, from core/models.py) where the widget spans them; the sidebar's own,
# narrower choices where a slider or a sensible step needs them (each named below).
_FLEET = field_bounds(Scenario, "fleet_nodes")
_FALLBACK = field_bounds(Scenario, "max_fallback_share")
_CAPITAL = field_bounds(OwnedHardware, "cost_of_capital_rate")
_PUE = field_bounds(OwnedHardware, "pue")
SCALE_SLIDER = (0.25, 4.0)  # the sidebar's range for the price and SLA multipliers (the model takes up to 100)
FALLBACK_MAX_PCT = 50.0  # escalating more than half the outputs is a different route, not a fallback
SIDEBAR_BOUNDS = {
    "fleet_nodes": (int(_FLEET.min), int(_FLEET.max)),
    "api_price_scale": SCALE_SLIDER,
    "sla_scale": SCALE_SLIDER,
    "max_fallback_pct": (_FALLBACK.min * 100.0, FALLBACK_MAX_PCT),
    # Depreciation is "more than 0" in the model; half a year is the smallest step the widget offers.
    "own_depreciation_years": (0.5, field_bounds(OwnedHardware, "depreciation_years").max),
    "own_cost_of_capital_pct": (_CAPITAL.min * 100.0, _CAPITAL.max * 100.0),
    "own_pue": (_PUE.min, _PUE.max),
}


@st.cache_resource(show_spinner=False)
def store() -> Store:
    """The process-wide store; core takes a cursor per unit of work, so sessions (threads) can share it."""
    return open_shared_store()


def data_version() -> int:
    """The store's stamp: it changes whenever the store file is written, so cached reads key on it.

    Every writer moves it: this session, another session, and a `hangover`
    command (`workloads import`, `bench import`, `stacks add`) run beside the
    dashboard, whose write the next rerun then sees (issue 16). It is the
    file's (size, mtime, inode) and its write-ahead log's
    (core.store.integrity.file_signature): a read leaves both as they were,
    and two sessions on the same store share one key, so they share the cached
    catalog and the evaluation instead of computing one each.
    """
    return store_stamp(store())


# Session keys a page keeps for itself only while it is shown. The Workloads page's reports of the file being
# uploaded hold its rows (about 500 MB for a 2M-row file); once another page runs, the uploader has forgotten
# the file (its widget state goes with the page) and the page would read a new upload afresh anyway.
PAGE_ONLY_STATE = {"workloads": ("wl_reads", "wl_done")}


def release_other_pages_state(url_path: str) -> None:
    """Drop what another page kept for itself (PAGE_ONLY_STATE) when this run shows a different page.

    Called by the router with the page about to run (aliases such as /Workloads spell the same path).
    """
    shown = url_path.lower()
    for page, keys in PAGE_ONLY_STATE.items():
        if page != shown:
            for key in keys:
                st.session_state.pop(key, None)


def bump_data_version() -> None:
    """Call after any write (upload, override, import): drops the cached reads of the old store at once."""
    st.cache_data.clear()
    catalog.clear()
    with _held_lock:
        _evaluate.clear()
        _held.clear()


def init_state() -> None:
    """Session defaults, set once per session (STYLE.md: setdefault in the entrypoint).

    The scenario widgets take their defaults from SCENARIO_DEFAULTS in the
    sidebar itself (a URL-bound widget compares its value with its own default),
    so only the link the session arrived with is remembered here, to say what
    in it could not be used.
    """
    st.session_state.setdefault("data_version", 0)
    if "sc_link_read" not in st.session_state:
        st.session_state["sc_link_read"] = True
        st.session_state["sc_link"] = st.query_params.to_dict()
        _open_linked_scenario(st.session_state["sc_link"])


LINK_SCENARIO = "scenario"  # ?scenario=NAME opens a saved scenario (issue 14)
TRAFFIC_LABELS = {"office_hours": "Office hours (assumed)", "measured": "Measured (telemetry)"}


def _open_linked_scenario(link: dict) -> None:
    """?scenario=NAME: put that saved scenario into the sidebar before its widgets are drawn (first run only).

    The link's own sc_ settings override the saved ones (as `--scenario` and the other CLI flags do). The
    name then leaves the address bar: the sidebar's settings, which the URL holds, are the scenario from
    here on, so a refresh or a copied link keeps exactly what is shown. An unknown name, or a scenario the
    sidebar cannot show, is one clear warning in the sidebar, and the sidebar keeps its defaults.
    """
    name = str(link.get(LINK_SCENARIO) or "").strip()
    if not name:
        return
    try:
        saved = load_scenario(store(), check_name(name))  # a 20,000-character name is refused before any lookup
        values, problems = _sidebar_values(saved)
    except HangoverError as exc:
        saved, problems = None, [str(exc)]
    name = clip(name)
    if problems:
        st.session_state["sc_link_scenario"] = ("warning", f"The link asks for the saved scenario {name!r}, which "
                                                f"cannot be opened: {'; '.join(problems)}. The sidebar shows the "
                                                "defaults (and any other settings in the link).")
    else:
        owned = values.get("pricing") == PricingOption.OWNED.value
        for key, value in values.items():
            k = f"sc_{key}"
            if k in link or (key.startswith("own_") and not owned):
                continue
            st.session_state[k] = value
            # Into the address bar too, spelt as a shared link spells it: the bound widget reads it back, and a
            # refresh (a new session) finds the scenario there once the name has left the URL.
            if key.startswith("own_") or value != SCENARIO_DEFAULTS.get(k):
                st.query_params[k] = _url_text(k, value)
        if not any(f"sc_{k}" in link for k in values):  # overridden by the link: no longer that saved scenario
            remember_saved(saved)
        st.session_state["sc_link_scenario"] = ("success", f"Opened the saved scenario {saved.name!r} (saved on the "
                                                f"{saved.inventory_label} inventory).")
    if LINK_SCENARIO in st.query_params:
        del st.query_params[LINK_SCENARIO]


# The store stamp is a hashed argument (no leading underscore): a parameter named `_version` is left out of
# Streamlit's cache key, so the catalog was read once and never again until a dashboard write cleared it.
# A resource, not data: one catalog shared by every rerun and session (frozen; cache_data handed each caller an
# unpickled copy), so what it caches for plans is kept: calibrations, and the pools' sizings
# (Catalog.kept_sizings), which make a change of owned nodes or prices re-plan without sizing again.
@st.cache_resource(show_spinner=False, max_entries=4)
def catalog(version: int) -> Catalog:
    """Reference data, re-read when the store's stamp (data_version) changes."""
    return Catalog.from_store(store())


@st.cache_data(show_spinner=False, max_entries=4)
def _provenance(version: int) -> str:
    return inventory_provenance(store())


def whose_figures() -> str:
    """Markdown saying at once whose figures the pages show: the bundled sample or the user's own inventory."""
    label = _provenance(data_version())
    mark = ":orange-badge[sample data]" if label.startswith(SAMPLE_LABEL) else ":green-badge[your data]"
    return f"{mark} **{md(label)}**"


def sidebar_inputs() -> dict[str, object]:
    """The sidebar's values by input name (core.scenarios units: shares in percent)."""
    s = st.session_state
    names = [*DEFAULT_INPUTS, *OWNED_INPUT_FIELDS]
    return {name: s[f"sc_{name}"] for name in names if f"sc_{name}" in s}


def scenario() -> Scenario:
    """The scenario the sidebar widgets describe."""
    return scenario_from_inputs(sidebar_inputs())


def saved_name() -> str | None:
    """The saved scenario the sidebar shows, if it was loaded or saved and not changed since."""
    loaded = st.session_state.get("sc_saved")
    if not loaded:
        return None
    name, inputs = loaded
    current = sidebar_inputs()
    return name if all(current.get(k) == v for k, v in inputs.items()) else None


def remember_saved(saved: SavedScenario) -> None:
    """Mark the sidebar as showing this saved scenario (for file names and the Scenarios page)."""
    st.session_state["sc_saved"] = (saved.name, inputs_from_scenario(saved.scenario))


def _sidebar_values(saved: SavedScenario) -> tuple[dict[str, object], list[str]]:
    """A saved scenario's sidebar inputs, and why the sidebar cannot show them (an unknown GPU, out of bounds)."""
    values = inputs_from_scenario(saved.scenario)
    gpus = [g.name for g in catalog(data_version()).gpus]
    problems = [] if values["gpu"] in gpus else [f"GPU {values['gpu']!r} is not in the GPU table"]
    for name, (lo, hi) in SIDEBAR_BOUNDS.items():
        if name in values and not lo <= float(values[name]) <= hi:
            problems.append(f"{name.replace('_', ' ')} {plain(values[name])} is outside the sidebar's "
                            f"{plain(lo)} to {plain(hi)}")
    return values, problems


def load_into_sidebar(saved: SavedScenario) -> None:
    """Put a saved scenario's inputs into the sidebar; call from a widget callback (before the sidebar draws).

    Leaves a message in `sc_flash` for the page to show; a scenario the
    sidebar cannot show (an unknown GPU, a value beyond a widget's bounds) is
    refused with the reason and nothing is changed.
    """
    values, problems = _sidebar_values(saved)
    if problems:
        st.session_state["sc_flash"] = ("error", f"Cannot load {saved.name!r} into the sidebar: "
                                                 f"{'; '.join(problems)}. It can still be compared.")
        return
    for name, value in values.items():
        st.session_state[f"sc_{name}"] = value
    remember_saved(saved)
    lacks = settings_the_sidebar_lacks(saved.scenario)
    extra = f" The sidebar has no control for {', '.join(lacks)}: the pages use the default." if lacks else ""
    st.session_state["sc_flash"] = ("success", f"Loaded {saved.name!r} into the sidebar "
                                               f"(saved on the {saved.inventory_label} inventory).{extra}")


# A resource, not data: the evaluation (with its plan and search caches) is shared read-only by every rerun and
# session instead of being pickled and unpickled on each rerun (heavy for large inventories; issue 11).
@st.cache_resource(show_spinner="Planning the fleet…", max_entries=8)
def _evaluate(scenario_json: str, version: int, inventory_version: int | None) -> Evaluation:
    sc = Scenario.model_validate_json(scenario_json)
    return evaluate_store(store(), sc, version=inventory_version, catalog=catalog(version))


# The store stamp the cached evaluations were made on (process-wide, like the cache itself).
_evaluated_on: list[int] = []
# Workloads held by the cached evaluations, by cache key (process-wide). An evaluation holds ~8.5 KB per workload
# (docs/performance.md, issue 16): eight scenarios of a 100,000-workload inventory would hold ~7 GB.
_held: dict[tuple, int] = {}
_held_lock = threading.Lock()
# At most this many workloads across every cached evaluation (~3.4 GB); beyond it the cache starts again.
EVALUATIONS_HELD_WORKLOADS = 400_000


def _evaluation_for(scenario_json: str, stamp: int, inventory_version: int | None) -> Evaluation:
    """The shared evaluation; when the store changed (any writer), the evaluations of the old store go at once.

    An evaluation of a large inventory holds hundreds of MB: keeping up to
    max_entries of them from before a write would multiply the server's memory,
    and so would eight scenarios of one large inventory: the cache is emptied
    before an evaluation that would take the workloads it holds past
    EVALUATIONS_HELD_WORKLOADS (the inventory's size is read from its record,
    and one too large to plan is refused before anything is loaded).
    """
    key = (scenario_json, stamp, inventory_version)
    with _held_lock:
        if _evaluated_on and _evaluated_on[0] != stamp:
            _evaluate.clear()
            _held.clear()
            catalog.clear()  # the old store's catalogs, and the sizings they keep (re-read for the new stamp)
        _evaluated_on[:] = [stamp]
        if key not in _held:
            rows = stored_size(store(), inventory_version)
            check_plan_size(rows)
            if _held and sum(_held.values()) + rows > EVALUATIONS_HELD_WORKLOADS:
                _evaluate.clear()
                _held.clear()
            _held[key] = rows
    return _evaluate(scenario_json, stamp, inventory_version)


def lacks_price(what: str) -> bool:
    """True, after one line pointing at the sidebar's warning, when the scenario has no node price."""
    if not st.session_state.get("sc_price_problem"):
        return False
    st.info(f"{what} needs a node price for the sidebar's scenario: see the warning in the sidebar. "
            "Workloads, Pricing, Performance and Scenarios work without it.")
    return True


def evaluation() -> Evaluation | None:
    """The evaluation for the current scenario (cached on the scenario's value); None with a message on error.

    A scenario without a node price is explained once, in the sidebar; the page
    that needs the price says so in one line instead of repeating the error.
    """
    try:
        sc = scenario()
        if lacks_price("This page"):
            return None
        return _evaluation_for(sc.model_dump_json(), data_version(), st.session_state.get("inventory_version"))
    except HangoverError as exc:
        st.error(md(str(exc)))
        return None


def _index(options: list, value) -> int:
    return options.index(value) if value in options else 0


def scenario_sidebar() -> None:
    """Scenario controls shared by every page (widgets only; values live in session state and the URL)."""
    cat = catalog(data_version())
    d = SCENARIO_DEFAULTS
    gpus = [g.name for g in cat.gpus]
    pricing = list(PRICING_LABELS)
    with st.sidebar:
        st.header("Scenario")
        st.selectbox("GPU", gpus, index=_index(gpus, d["sc_gpu"]), key="sc_gpu", bind=URL_BIND)
        lo, hi = SIDEBAR_BOUNDS["fleet_nodes"]
        st.number_input("Owned or reserved nodes", min_value=lo, max_value=hi, step=1, value=d["sc_fleet_nodes"],
                        key="sc_fleet_nodes", bind=URL_BIND, help=_FLEET.help)
        st.selectbox("Pricing", pricing, index=_index(pricing, d["sc_pricing"]), key="sc_pricing",
                     format_func=PRICING_LABELS.get, bind=URL_BIND)
        price_slot = st.empty()  # under the GPU and pricing choices it is about; filled once every input is read
        if st.session_state["sc_pricing"] == PricingOption.OWNED.value:
            seed = owned_input_defaults(cat, st.session_state["sc_gpu"])
            with st.expander("Owned hardware: your figures", expanded=True):
                st.caption("Prefilled with the seed estimate (an assumption): enter your own.")
                # Capex and power are "more than 0" in the model: $1 and 0.1 kW are the widgets' floors.
                st.number_input("Capex per node, $", min_value=1.0, step=10_000.0, format=input_format(0),
                                value=seed["own_capex_usd_per_node"], key="sc_own_capex_usd_per_node", bind=URL_BIND,
                                help=field_bounds(OwnedHardware, "capex_usd_per_node").help)
                lo, hi = SIDEBAR_BOUNDS["own_depreciation_years"]
                st.number_input("Depreciation, years", min_value=lo, max_value=hi, step=0.5,
                                value=seed["own_depreciation_years"], key="sc_own_depreciation_years", bind=URL_BIND,
                                help=field_bounds(OwnedHardware, "depreciation_years").help)
                # Typed in percent, so 8 means 8 % (core.scenarios converts it to the model's 0.08).
                lo, hi = SIDEBAR_BOUNDS["own_cost_of_capital_pct"]
                st.number_input("Cost of capital, % a year", min_value=lo, max_value=hi, step=0.5,
                                format=input_format(1), value=seed["own_cost_of_capital_pct"],
                                key="sc_own_cost_of_capital_pct", bind=URL_BIND, help="8 means 8 % a year.")
                st.number_input("Power per node, kW", min_value=0.1, step=0.5, value=seed["own_kw_per_node"],
                                key="sc_own_kw_per_node", bind=URL_BIND,
                                help=field_bounds(OwnedHardware, "kw_per_node").help)
                st.number_input("PUE", step=0.05, value=seed["own_pue"], key="sc_own_pue", bind=URL_BIND,
                                **input_limits(OwnedHardware, "pue"))
                st.number_input("Electricity, $/kWh", step=0.01, format=input_format(3),
                                value=seed["own_usd_per_kwh"], key="sc_own_usd_per_kwh", bind=URL_BIND,
                                **input_limits(OwnedHardware, "usd_per_kwh"))
                st.number_input("Support and colocation, $/year per node", step=1_000.0,
                                format=input_format(0), value=seed["own_support_usd_per_year"],
                                key="sc_own_support_usd_per_year", bind=URL_BIND,
                                **input_limits(OwnedHardware, "support_usd_per_year"))
        basis = list(BASIS_LABELS)
        st.radio("Cost basis", basis, index=_index(basis, d["sc_cost_basis"]), key="sc_cost_basis", horizontal=True,
                 format_func=BASIS_LABELS.get, bind=URL_BIND,
                 help="Full: every hour of a node is paid for, idle or not. Marginal: hardware already paid for.")
        st.number_input("Node price override, $/hour (0 = dated snapshot)", min_value=0.0, step=1.0,
                        value=d["sc_node_usd_per_hour"], key="sc_node_usd_per_hour", bind=URL_BIND)
        st.slider("API price scale", *SCALE_SLIDER, value=d["sc_api_price_scale"], step=0.25,
                  key="sc_api_price_scale", bind=URL_BIND, help=field_bounds(Scenario, "api_price_scale").help)
        st.slider("SLA scale", *SCALE_SLIDER, value=d["sc_sla_scale"], step=0.25, key="sc_sla_scale", bind=URL_BIND,
                  help=field_bounds(Scenario, "sla_scale").help + " Below 1 = tighter.")
        # A percent widget: 20 means 20 % (core.scenarios converts it to the model's share 0.20).
        lo, hi = SIDEBAR_BOUNDS["max_fallback_pct"]
        st.number_input("Max fallback share, %", min_value=lo, max_value=hi, step=5.0, format=input_format(0),
                        value=d["sc_max_fallback_pct"], key="sc_max_fallback_pct", bind=URL_BIND,
                        help=_FALLBACK.help + " A cheaper route escalates them to a stronger one to meet a quality "
                             "floor; 20 means 20 %.")
        profiles = ["office_hours", "measured"]
        st.radio("Traffic over the day", profiles, index=_index(profiles, d["sc_traffic_profile"]),
                 key="sc_traffic_profile", horizontal=True, bind=URL_BIND,
                 format_func=TRAFFIC_LABELS.get,
                 help="The hour-by-hour shape of interactive traffic: an assumed office-hours profile, or the "
                      "profile of the GPU telemetry you imported (Telemetry page).")
        with st.expander("What to buy next", expanded=bool(st.session_state.get("sc_buy_gpus"))):
            st.text_input("Owned nodes by GPU (GPU:N, comma-separated)", value=d["sc_owned_by_gpu"],
                          key="sc_owned_by_gpu", bind=URL_BIND, placeholder="H100 SXM:1",
                          help="Owned nodes keep their GPU. Empty: the GPU and node count above.")
            st.text_input("Candidate GPUs for new nodes (comma-separated)", value=d["sc_buy_gpus"],
                          key="sc_buy_gpus", bind=URL_BIND, placeholder="H100 SXM,H200 SXM,B200",
                          help="Fleet sizing compares buying each (buy, 3-year, 1-year, on-demand) side by side. "
                               "Empty: new nodes of the GPU above at the pricing above.")
        _link_notes()
        _price_warning(cat, price_slot)


def _url_text(key: str, value) -> str:
    """A sidebar value as the URL spells it (choices by their label)."""
    if key == "sc_pricing":
        return PRICING_LABELS[value]
    if key == "sc_cost_basis":
        return BASIS_LABELS[value]
    if key == "sc_traffic_profile":
        return TRAFFIC_LABELS.get(value, str(value))
    return str(value)


def _shown(key: str) -> str:
    """A sidebar value as the URL spells it (choices by their label)."""
    value = st.session_state[key]
    if key == "sc_pricing":
        return PRICING_LABELS[value]
    if key == "sc_cost_basis":
        return BASIS_LABELS[value]
    return str(value)


def _link_notes() -> None:
    """On the first run of a session: say which of the link's settings could not be used (never a traceback)."""
    opened = st.session_state.get("sc_link_scenario")
    if opened:
        getattr(st, opened[0])(md(opened[1]))
        if st.button("Dismiss", key="sc_link_scenario_dismiss"):
            st.session_state["sc_link_scenario"] = None
            st.rerun()
    link = st.session_state.pop("sc_link", None)
    if link:
        shown = {k: _shown(k) for k in st.session_state if isinstance(k, str) and k.startswith("sc_")
                 and (k in SCENARIO_DEFAULTS or k.startswith("sc_own_"))}
        # An owned-hardware setting in a link that does not choose owned pricing is simply not shown.
        if st.session_state.get("sc_pricing") != PricingOption.OWNED.value:
            link = {k: v for k, v in link.items() if not k.startswith("sc_own_")}
        st.session_state["sc_link_notes"] = url_notes(link, shown)
        for key in link:  # unknown scenario settings leave the link (the bound ones tidy themselves)
            if key.startswith("sc_") and key not in shown and key in st.query_params:
                del st.query_params[key]
    notes = st.session_state.get("sc_link_notes")
    if notes:
        st.warning("Some settings in this link could not be used, so the sidebar shows defaults for them:\n\n"
                   + "\n".join(f"- {md(n)}" for n in notes))
        if st.button("Dismiss", key="sc_link_dismiss"):
            st.session_state["sc_link_notes"] = []
            st.rerun()


def _price_warning(cat: Catalog, slot) -> None:
    """One clear warning when the scenario has no node price; pages that need it point here."""
    try:
        problem = price_problem(cat, scenario())
    except HangoverError:
        problem = None  # a bad input is reported by the page that evaluates it
    st.session_state["sc_price_problem"] = problem
    if problem:
        slot.warning(problem, icon=":material/price_change:")


def alias_pages(screens: list[tuple[str, str, str]], *, default: str) -> list[st.Page]:
    """Hidden pages at other spellings of each screen's path (/overview, /Routing, /EXPORT) running the same script.

    Streamlit matches a URL path exactly and serves the default page at "/"
    whatever its url_path, so such links said "Page not found". An alias runs
    the screen itself rather than redirecting: a switch of page would drop the
    URL-bound scenario settings from the address bar.
    """
    taken = {path for _, _, path in screens if path != default}
    aliases = []
    for script, title, path in screens:
        for variant in dict.fromkeys([path, path.capitalize(), path.upper()]):
            if variant not in taken:
                taken.add(variant)
                aliases.append(st.Page(script, title=title, url_path=variant, visibility="hidden"))
    return aliases


# Once per server process (a module's body runs once): the collector settled after the dashboard's imports, the
# engine's among them, so a rerun's plan does not walk Streamlit's and Plotly's objects (core.collector).
settle()
