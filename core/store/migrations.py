"""Ordered, idempotent schema migrations for the DuckDB store, recorded in `_migrations`."""

from __future__ import annotations

from collections.abc import Callable

import duckdb

# Columns every table of outside figures carries (docs/design/README.md: every number has a source and date).
_SOURCED = """
    source VARCHAR NOT NULL,
    as_of DATE NOT NULL,
    confidence VARCHAR NOT NULL DEFAULT 'primary',
    note VARCHAR,
    origin VARCHAR NOT NULL DEFAULT 'seed',      -- 'seed' rows are replaced on re-seed; 'user' rows never are
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
"""

_QUALITY = """
    quality_extraction DOUBLE NOT NULL,
    quality_code_completion DOUBLE NOT NULL,
    quality_chat DOUBLE NOT NULL,
    quality_agentic_step DOUBLE NOT NULL,
    quality_reasoning DOUBLE NOT NULL,
"""


def m001_reference_tables(cur: duckdb.DuckDBPyConnection) -> None:
    """GPUs, node prices, owned hardware, API prices and serving stacks."""
    cur.execute("CREATE SEQUENCE IF NOT EXISTS row_id_seq")
    cur.execute(f"""
        CREATE TABLE IF NOT EXISTS gpus (
            row_id BIGINT PRIMARY KEY DEFAULT nextval('row_id_seq'),
            name VARCHAR NOT NULL,
            hbm_gb DOUBLE NOT NULL, hbm_tb_per_s DOUBLE NOT NULL,
            bf16_tflops DOUBLE NOT NULL, fp8_tflops DOUBLE, tdp_w DOUBLE NOT NULL,
            {_SOURCED})""")
    cur.execute(f"""
        CREATE TABLE IF NOT EXISTS node_prices (
            row_id BIGINT PRIMARY KEY DEFAULT nextval('row_id_seq'),
            provider VARCHAR NOT NULL, instance VARCHAR NOT NULL, gpu VARCHAR NOT NULL,
            gpus_per_node INTEGER NOT NULL, pricing_option VARCHAR NOT NULL,
            usd_per_node_hour DOUBLE NOT NULL, region VARCHAR NOT NULL DEFAULT '',
            {_SOURCED})""")
    cur.execute(f"""
        CREATE TABLE IF NOT EXISTS owned_hardware (
            row_id BIGINT PRIMARY KEY DEFAULT nextval('row_id_seq'),
            name VARCHAR NOT NULL, gpu VARCHAR NOT NULL, gpus_per_node INTEGER NOT NULL,
            capex_usd_per_node DOUBLE NOT NULL, depreciation_years DOUBLE NOT NULL,
            cost_of_capital_rate DOUBLE NOT NULL, kw_per_node DOUBLE NOT NULL, pue DOUBLE NOT NULL,
            usd_per_kwh DOUBLE NOT NULL, support_usd_per_year DOUBLE NOT NULL,
            {_SOURCED})""")
    cur.execute(f"""
        CREATE TABLE IF NOT EXISTS api_prices (
            row_id BIGINT PRIMARY KEY DEFAULT nextval('row_id_seq'),
            provider VARCHAR NOT NULL, model VARCHAR NOT NULL, tier VARCHAR NOT NULL,
            architecture VARCHAR NOT NULL,
            usd_per_mtok_in DOUBLE NOT NULL, usd_per_mtok_cached_in DOUBLE,
            usd_per_mtok_out DOUBLE NOT NULL, ttft_ms DOUBLE NOT NULL,
            output_tokens_per_s DOUBLE NOT NULL,
            {_QUALITY}
            {_SOURCED})""")
    cur.execute(f"""
        CREATE TABLE IF NOT EXISTS serving_stacks (
            row_id BIGINT PRIMARY KEY DEFAULT nextval('row_id_seq'),
            stack_id VARCHAR NOT NULL, name VARCHAR NOT NULL, architecture VARCHAR NOT NULL,
            params_total_b DOUBLE NOT NULL, params_active_b DOUBLE NOT NULL,
            bytes_per_param DOUBLE NOT NULL, kv_bytes_per_token DOUBLE NOT NULL,
            n_experts INTEGER, experts_per_token INTEGER,
            diffusion_block_tokens INTEGER, diffusion_steps_per_block INTEGER,
            spec_draft_tokens INTEGER, spec_acceptance DOUBLE, spec_draft_params_b DOUBLE,
            {_QUALITY}
            {_SOURCED})""")


def m002_benchmarks(cur: duckdb.DuckDBPyConnection) -> None:
    """Measured and claimed performance points, de-duplicated per imported file."""
    cur.execute(f"""
        CREATE TABLE IF NOT EXISTS benchmarks (
            row_id BIGINT PRIMARY KEY DEFAULT nextval('row_id_seq'),
            stack_id VARCHAR NOT NULL, gpu VARCHAR NOT NULL, gpus_per_replica INTEGER NOT NULL,
            concurrency DOUBLE NOT NULL, input_tokens DOUBLE NOT NULL, output_tokens DOUBLE NOT NULL,
            output_tokens_per_s_total DOUBLE, output_tokens_per_s_per_stream DOUBLE,
            ttft_ms_p50 DOUBLE, ttft_ms_p95 DOUBLE, e2e_ms_p50 DOUBLE, e2e_ms_p95 DOUBLE,
            provenance VARCHAR NOT NULL, tool VARCHAR NOT NULL DEFAULT '',
            import_id VARCHAR,                              -- sha256 of the imported file; NULL for seed rows
            {_SOURCED})""")


def m003_inventory_versions(cur: duckdb.DuckDBPyConnection) -> None:
    """Versioned workload inventories: an upload adds a version, never overwrites one."""
    cur.execute("""
        CREATE TABLE IF NOT EXISTS inventory_versions (
            version INTEGER PRIMARY KEY,
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            created_by VARCHAR NOT NULL DEFAULT '',
            file_name VARCHAR NOT NULL DEFAULT '',
            row_count BIGINT NOT NULL,
            checksum VARCHAR NOT NULL,                      -- sha256 of the canonical rows
            comment VARCHAR NOT NULL DEFAULT '',
            restored_from INTEGER                           -- set when a restore made this version
        )""")
    cur.execute("""
        CREATE TABLE IF NOT EXISTS workloads (
            version INTEGER NOT NULL,
            row_number BIGINT NOT NULL,                     -- row as the user saw it in the file
            workload_id VARCHAR NOT NULL,
            name VARCHAR NOT NULL,
            team VARCHAR,
            requests_per_day DOUBLE NOT NULL,
            peak_factor DOUBLE NOT NULL,
            input_tokens DOUBLE NOT NULL,
            output_tokens DOUBLE NOT NULL,
            latency_slo_ms DOUBLE,
            batch_window_hours DOUBLE,
            data_policy VARCHAR NOT NULL,
            task_class VARCHAR NOT NULL,
            min_quality DOUBLE,
            cached_input_share DOUBLE,
            notes VARCHAR,
            PRIMARY KEY (version, workload_id)
        )""")


def m004_hosting_rights(cur: duckdb.DuckDBPyConnection) -> None:
    """Who may host a stack's weights and at what licence fee; API reasoning tokens; benchmarks taken via an API."""
    cur.execute("ALTER TABLE serving_stacks ADD COLUMN weights VARCHAR DEFAULT 'open'")
    cur.execute("ALTER TABLE serving_stacks ADD COLUMN licence_usd_per_gpu_month DOUBLE")
    cur.execute("ALTER TABLE api_prices ADD COLUMN hidden_tokens_per_output_token DOUBLE DEFAULT 0")
    cur.execute("ALTER TABLE benchmarks ADD COLUMN via_api BOOLEAN DEFAULT false")


def m005_performance_v2(cur: duckdb.DuckDBPyConnection) -> None:
    """Performance model v2 (issue 13): GPU link bandwidth and FP4 peak; stack layers, engine, speculative method, diffusion positions."""
    cur.execute("ALTER TABLE gpus ADD COLUMN fp4_tflops DOUBLE")
    cur.execute("ALTER TABLE gpus ADD COLUMN link_gb_per_s DOUBLE")
    for col, typ in (
        ("n_layers", "INTEGER"), ("hidden_size", "INTEGER"), ("engine", "VARCHAR DEFAULT 'vllm'"),
        ("max_running_seqs", "INTEGER"), ("spec_method", "VARCHAR"), ("spec_draft_layers", "INTEGER"),
        ("spec_verify_tokens", "INTEGER"), ("diffusion_positions_per_pass", "INTEGER"),
    ):
        cur.execute(f"ALTER TABLE serving_stacks ADD COLUMN {col} {typ}")


def m006_telemetry(cur: duckdb.DuckDBPyConnection) -> None:
    """GPU telemetry (issue 15): one row per imported file and hourly aggregates per GPU.

    Raw samples live in Parquet beside the store (core/store/telemetry.py); the
    store keeps what pages read, so a page never scans the samples. Per metric,
    `<m>_n` samples had a reading and `<m>_sum` adds them up (shares 0-1, W, MiB).
    """
    cur.execute("""
        CREATE TABLE IF NOT EXISTS telemetry_imports (
            import_id VARCHAR PRIMARY KEY,                  -- sha256 of the imported file
            file_name VARCHAR NOT NULL,
            file_format VARCHAR NOT NULL,
            time_basis VARCHAR NOT NULL,                    -- which clock the timestamps read
            imported_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            nodes VARCHAR[] NOT NULL,
            gpus INTEGER NOT NULL,
            samples BIGINT NOT NULL,
            first_ts TIMESTAMP NOT NULL,
            last_ts TIMESTAMP NOT NULL,
            metrics VARCHAR[] NOT NULL,                     -- metrics with at least one reading
            files VARCHAR[] NOT NULL,                       -- Parquet files, relative to the telemetry folder
            note VARCHAR NOT NULL DEFAULT ''
        )""")
    cur.execute("""
        CREATE TABLE IF NOT EXISTS telemetry_hourly (
            import_id VARCHAR NOT NULL,
            node VARCHAR NOT NULL,
            gpu VARCHAR NOT NULL,
            hour TIMESTAMP NOT NULL,                        -- start of the hour, on the import's clock
            samples BIGINT NOT NULL,
            first_ts TIMESTAMP NOT NULL,
            last_ts TIMESTAMP NOT NULL,
            gpu_util_n BIGINT NOT NULL, gpu_util_sum DOUBLE NOT NULL,
            sm_active_n BIGINT NOT NULL, sm_active_sum DOUBLE NOT NULL,
            tensor_active_n BIGINT NOT NULL, tensor_active_sum DOUBLE NOT NULL,
            dram_active_n BIGINT NOT NULL, dram_active_sum DOUBLE NOT NULL,
            power_w_n BIGINT NOT NULL, power_w_sum DOUBLE NOT NULL,
            memory_used_mib_n BIGINT NOT NULL, memory_used_mib_sum DOUBLE NOT NULL,
            PRIMARY KEY (import_id, node, gpu, hour)
        )""")


def m007_scenarios(cur: duckdb.DuckDBPyConnection) -> None:
    """Named scenarios (issue 14): every sidebar input as the Scenario model's JSON, who saved it, when, on which inventory."""
    cur.execute("""
        CREATE TABLE IF NOT EXISTS saved_scenarios (
            name_key VARCHAR PRIMARY KEY,                   -- lower-cased name: 'Plan A' and 'plan a' are one name
            name VARCHAR NOT NULL,                          -- as the user typed it
            scenario_json VARCHAR NOT NULL,                 -- core.models.Scenario.model_dump_json()
            inventory_version INTEGER,                      -- NULL = the bundled sample inventory
            created_by VARCHAR NOT NULL DEFAULT '',
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            updated_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            note VARCHAR NOT NULL DEFAULT ''
        )""")


def m008_workload_output_p95(cur: duckdb.DuckDBPyConnection) -> None:
    """Workload.output_tokens_p95 (issue 12) needs its column: without it every inventory commit failed."""
    cur.execute("ALTER TABLE workloads ADD COLUMN IF NOT EXISTS output_tokens_p95 DOUBLE")


def m009_attention_width(cur: duckdb.DuckDBPyConnection) -> None:
    """ServingStack.attention_width (issue 29): heads x head dimension where it is not the hidden size."""
    cur.execute("ALTER TABLE serving_stacks ADD COLUMN IF NOT EXISTS attention_width INTEGER")


def m010_users_and_audit(cur: duckdb.DuckDBPyConnection) -> None:
    """Roles of signed-in users and the audit trail of every write (issue 34): who, when, what."""
    cur.execute("""
        CREATE TABLE IF NOT EXISTS users (
            name VARCHAR PRIMARY KEY,                       -- lower-cased sign-in name (e-mail or login)
            role VARCHAR NOT NULL,                          -- viewer, editor or admin (core.access.Role)
            added_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            added_by VARCHAR NOT NULL DEFAULT ''
        )""")
    cur.execute("CREATE SEQUENCE IF NOT EXISTS audit_seq")
    cur.execute("""
        CREATE TABLE IF NOT EXISTS audit_log (
            audit_id BIGINT PRIMARY KEY DEFAULT nextval('audit_seq'),
            written_at TIMESTAMP NOT NULL,                  -- UTC, like every timestamp the store writes
            who VARCHAR NOT NULL,                           -- the signed-in user, or local:<OS user>
            role VARCHAR NOT NULL,                          -- their role then ('local' without sign-in)
            action VARCHAR NOT NULL,                        -- e.g. 'save scenario', 'import inventory'
            detail VARCHAR NOT NULL DEFAULT ''
        )""")


Migration = Callable[[duckdb.DuckDBPyConnection], None]

# Append only: never reorder or edit a released migration (simonw/llm's habit).
MIGRATIONS: list[Migration] = [
    m001_reference_tables,
    m002_benchmarks,
    m003_inventory_versions,
    m004_hosting_rights,
    m005_performance_v2,
    m006_telemetry,
    m007_scenarios,
    m008_workload_output_p95,
    m009_attention_width,
    m010_users_and_audit,
]


def applied(cur: duckdb.DuckDBPyConnection) -> list[str]:
    """Names of migrations already recorded in the store, in order applied."""
    cur.execute(
        "CREATE TABLE IF NOT EXISTS _migrations "
        "(name VARCHAR PRIMARY KEY, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)"
    )
    return [r[0] for r in cur.execute("SELECT name FROM _migrations ORDER BY applied_at, name").fetchall()]


def migrate(cur: duckdb.DuckDBPyConnection, upto: int | None = None) -> list[str]:
    """Apply pending migrations (each in its own transaction); return the names applied.

    Raises ValueError naming the unknown migration when the store was made by a
    newer version, before touching anything.
    """
    done = applied(cur)
    known = [m.__name__ for m in MIGRATIONS]
    unknown = [name for name in done if name not in known]
    if unknown:
        raise ValueError(
            f"this store was made by a newer version of GPU Hangover (it has migration "
            f"{unknown[0]!r}, which this version does not know); upgrade GPU Hangover, or "
            f"point --db / HANGOVER_DB at another file"
        )
    ran = []
    for migration in MIGRATIONS[: upto if upto is not None else len(MIGRATIONS)]:
        if migration.__name__ in done:
            continue
        cur.execute("BEGIN TRANSACTION")
        try:
            migration(cur)
            cur.execute("INSERT INTO _migrations (name) VALUES (?)", [migration.__name__])
            cur.execute("COMMIT")
        except Exception:
            cur.execute("ROLLBACK")
            raise
        ran.append(migration.__name__)
    return ran
