"""`hangover stacks add|list|show|remove`: bring your own model from its Hugging Face config.json."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

from core.errors import InputError
from core.models import QUALITY_COLUMNS, TASK_CLASSES, Engine
from core.performance.hf_config import PRECISIONS, add_stack_from_config
from core.store import Store, default_db_path
from core.store.stacks import remove_user_stack, stack_origins


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `stacks` command group."""
    p = sub.add_parser("stacks", help="serving stacks: add your own model from its config.json, list, show, remove")
    ssub = p.add_subparsers(dest="stacks_command", metavar="ACTION", required=True)

    add = ssub.add_parser(
        "add",
        help="add a serving stack from a Hugging Face config.json (dense or MoE decoder)",
        description=(
            "Reads layers, hidden size, attention heads (GQA, or DeepSeek's MLA) and experts from the config, "
            "counts total and active parameters and KV bytes per token, and stores the stack as your own row "
            "(kept by `hangover db seed`). Quality per task class is either copied from a named stack "
            "(--quality-from: labelled an estimate) or entered by you (all five --quality-* flags)."
        ),
    )
    add.add_argument("--from-config", required=True, metavar="CONFIG_JSON", help="the model's config.json")
    add.add_argument("--stack-id", required=True, help="short id, lower case: letters, digits, . _ -")
    add.add_argument("--precision", required=True, choices=list(PRECISIONS), help="weight precision")
    add.add_argument("--name", help="human-readable name (default: from the id)")
    add.add_argument("--engine", default="vllm", choices=[e.value for e in Engine], help="serving engine (default vllm)")
    add.add_argument("--max-running-seqs", type=int, help="the engine's cap on the running batch, per scheduler: per attention-DP rank "
                     "for TensorRT-LLM MoE (default: the engine's)")
    add.add_argument("--weights", default="open", choices=["open", "licensed"], help="hosting rights (default open)")
    add.add_argument("--speculative-method", choices=["draft", "medusa", "eagle"], help="serve with speculative decoding")
    add.add_argument("--draft-config", metavar="CONFIG_JSON", help="config.json of the draft model or draft head")
    add.add_argument("--draft-tokens", type=int, help="tokens drafted per step k (default per method)")
    add.add_argument("--acceptance", type=float, help="per-token acceptance rate (default per method, an estimate)")
    add.add_argument("--diffusion-block", type=int, metavar="N", help="diffusion: tokens per block L")
    add.add_argument("--diffusion-steps", type=int, metavar="S", help="diffusion: denoising passes per block")
    add.add_argument("--diffusion-positions", type=int, metavar="P",
                     help="diffusion: positions one pass computes (default: the block, as with a prefix cache)")
    add.add_argument("--quality-from", metavar="STACK_ID", help="copy quality per task class from this stack (an estimate)")
    for t in TASK_CLASSES:
        add.add_argument(f"--quality-{t.replace('_', '-')}", type=float, metavar="X", help=f"your quality on {t}, 0-1")
    add.add_argument("--quality-source", help="where your quality figures come from")
    add.add_argument("--as-of", help="date of the figures, YYYY-MM-DD (default today)")
    add.set_defaults(func=cmd_add)

    lst = ssub.add_parser("list", help="every serving stack: id, architecture, sizes, engine, origin")
    lst.add_argument("--json", action="store_true", help="print JSON records")
    lst.set_defaults(func=cmd_list)

    show = ssub.add_parser("show", help="one stack's fields")
    show.add_argument("stack_id")
    show.add_argument("--json", action="store_true", help="print the fields by their model names")
    show.set_defaults(func=cmd_show)

    lic = ssub.add_parser("licence", help="enter the licence fee of licensed weights (the plan uses them only then)")
    lic.add_argument("stack_id")
    lic.add_argument("--usd-per-gpu-month", type=float, required=True, help="fee per GPU per month, $")
    lic.add_argument("--source", required=True, help="where the fee comes from (a quote, a contract)")
    lic.add_argument("--as-of", help="date of the fee, YYYY-MM-DD (default today)")
    lic.set_defaults(func=cmd_licence)

    rem = ssub.add_parser("remove", help="remove one of your own stacks (bundled ones stay)")
    rem.add_argument("stack_id")
    rem.set_defaults(func=cmd_remove)


def _open(args: argparse.Namespace) -> Store:
    return Store(args.db or default_db_path())


def _read(path: str) -> bytes:
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError(f"no such file: {p}")
    try:
        return p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc.strerror or exc}") from None


def cmd_add(args: argparse.Namespace) -> int:
    """Read the config(s), validate everything, then store the stack in one transaction."""
    as_of = None
    if args.as_of:
        try:
            as_of = dt.date.fromisoformat(args.as_of)
        except ValueError:
            raise InputError(f"--as-of must be a date like 2025-06-30; got {args.as_of!r}") from None
    quality = {c: getattr(args, c) for c in QUALITY_COLUMNS}
    given = {c: v for c, v in quality.items() if v is not None}
    if args.draft_config and not args.speculative_method:
        raise InputError("--draft-config needs --speculative-method")
    config = _read(args.from_config)
    draft = _read(args.draft_config) if args.draft_config else None
    stack = add_stack_from_config(
        _open(args), config, stack_id=args.stack_id, precision=args.precision,
        config_name=Path(args.from_config).name, quality_from=args.quality_from, quality=given or None,
        quality_source=args.quality_source, draft_config=draft, name=args.name, engine=args.engine,
        max_running_seqs=args.max_running_seqs, speculative_method=args.speculative_method,
        draft_tokens=args.draft_tokens, acceptance=args.acceptance, diffusion_block=args.diffusion_block,
        diffusion_steps=args.diffusion_steps, diffusion_positions=args.diffusion_positions, weights=args.weights,
        as_of=as_of,
    )
    print(f"added {stack.stack_id}: {stack.architecture.value}, {stack.params_total_b:,.2f} B params "
          f"({stack.params_active_b:,.2f} B active), {stack.n_layers} layers, hidden {stack.hidden_size}, "
          f"{stack.kv_bytes_per_token:,.0f} KV bytes/token, {stack.engine.value}; {stack.note}")
    return 0


def _stacks(store: Store) -> tuple[list, dict[str, str]]:
    origins = stack_origins(store)
    return store.serving_stacks(), dict(zip(origins["stack_id"], origins["origin"], strict=True))


def cmd_list(args: argparse.Namespace) -> int:
    """One line per stack."""
    stacks, origin = _stacks(_open(args))
    stacks = sorted(stacks, key=lambda s: (origin.get(s.stack_id) != "user", s.stack_id))
    if args.json:
        print(json.dumps([{**s.model_dump(mode="json"), "origin": origin.get(s.stack_id, "seed")} for s in stacks], indent=2))
        return 0
    print(f"{'stack':<24} {'architecture':<14} {'params B':>9} {'active B':>9} {'bytes/p':>7} {'KV B/token':>11} "
          f"{'layers':>6} {'engine':<7} {'origin':<6} as of")
    for s in stacks:
        print(f"{s.stack_id:<24} {s.architecture.value:<14} {s.params_total_b:>9,.2f} {s.params_active_b:>9,.2f} "
              f"{s.bytes_per_param:>7g} {s.kv_bytes_per_token:>11,.0f} {s.n_layers or '-':>6} {s.engine.value:<7} "
              f"{origin.get(s.stack_id, 'seed'):<6} {s.as_of}")
    print(f"{len(stacks)} stack(s); origin 'user' = added by you (kept by `hangover db seed`)")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """Every field of one stack, by its model name."""
    stacks, origin = _stacks(_open(args))
    found = next((s for s in stacks if s.stack_id == args.stack_id), None)
    if found is None:
        raise InputError(f"no stack {args.stack_id!r}; known: {', '.join(sorted(s.stack_id for s in stacks))}")
    record = {**found.model_dump(mode="json"), "origin": origin.get(found.stack_id, "seed")}
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    width = max(len(k) for k in record)
    for k, v in record.items():
        print(f"{k:<{width}}  {'-' if v is None else v}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    """Delete one of the user's stacks."""
    n = remove_user_stack(_open(args), args.stack_id)
    print(f"removed {args.stack_id} ({n} row{'s' if n != 1 else ''}); its benchmark points stay in the store")
    return 0


def cmd_licence(args: argparse.Namespace) -> int:
    """Store the licence fee of a licensed stack as the user's own dated row."""
    from core.store.stacks import set_licence_fee

    try:
        day = dt.date.fromisoformat(args.as_of) if args.as_of else None
    except ValueError:
        raise InputError(f"--as-of must be a date YYYY-MM-DD (got {args.as_of!r})") from None
    row = set_licence_fee(_open(args), args.stack_id, args.usd_per_gpu_month, source=args.source, as_of=day)
    from core.presentation.format import money

    print(f"{row.stack_id}: licence {money(row.licence_usd_per_gpu_month)} per GPU-month as of {row.as_of}; "
          "the plan may now use it")
    return 0
