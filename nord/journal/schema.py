"""The journal's tables: their SQL, the schema version, and the columns code writes by name.

    from nord.journal.schema import create_tables
    create_tables(connection)   # a new, empty file: WAL mode, every table, the version row

docs/journal.md says what each table holds.
"""
from __future__ import annotations

import sqlite3
import time

__all__ = ["SCHEMA_VERSION", "SCHEMA", "STATUSES", "RESULT_COLUMNS", "EVALUATION_COLUMNS",
           "LEG_COLUMNS", "SEARCH_EPOCH_COLUMNS", "JSON_RUN_COLUMNS", "add_missing",
           "create_tables"]

SCHEMA_VERSION = 2

RESULT_COLUMNS = ("accuracy", "loss", "train_time", "eval_time", "n_params", "epochs", "status",
                  "error", "reported_accuracy", "metrics")
"""The columns of ``evaluations`` (and of a leg's ``result``) that hold EvaluationResult fields."""
EVALUATION_COLUMNS = ("sequence", "candidate", "generation", "genome", "key", "descriptor",
                      "worker_rank") + RESULT_COLUMNS + ("cached_from", "started", "ended")
LEG_COLUMNS = ("leg", "candidate", "start_epochs", "target_epochs", "started_event",
               "ended_event", "started", "ended", "accuracy", "reported_accuracy", "status",
               "error", "decision", "worker_rank", "train_time", "result", "detail")
SEARCH_EPOCH_COLUMNS = ("epoch", "cell", "genome", "weights", "metrics", "lookup_accuracy",
                        "seconds", "recorded")
JSON_RUN_COLUMNS = ("parameters", "seed", "space", "evaluator", "dataset", "execution",
                    "config", "scheduler", "versions", "extra", "writer")
"""The columns of ``run`` stored as JSON text."""
STATUSES = ("running", "finished", "interrupted", "failed", "crashed")
"""The values of ``run.status``."""

SCHEMA = """
CREATE TABLE nord_schema (
    version INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE run (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    algorithm TEXT NOT NULL,
    parameters TEXT NOT NULL,
    seed TEXT NOT NULL,
    space TEXT NOT NULL,
    evaluator TEXT NOT NULL,
    dataset TEXT NOT NULL,
    mode TEXT NOT NULL,
    batch_size INTEGER,
    budget INTEGER NOT NULL,
    execution TEXT NOT NULL,
    config TEXT NOT NULL,
    scheduler TEXT NOT NULL DEFAULT '{}',
    versions TEXT NOT NULL,
    extra TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    status TEXT NOT NULL,
    status_detail TEXT NOT NULL DEFAULT '',
    resumed INTEGER NOT NULL DEFAULT 0,
    writer TEXT NOT NULL DEFAULT 'null',
    heartbeat REAL,
    recorded_results INTEGER,
    running_seconds REAL
);
CREATE TABLE candidates (
    candidate INTEGER PRIMARY KEY,
    generation INTEGER NOT NULL,
    genome TEXT NOT NULL,
    told_before INTEGER NOT NULL,
    asked REAL NOT NULL
);
CREATE TABLE evaluations (
    sequence INTEGER PRIMARY KEY,
    candidate INTEGER NOT NULL UNIQUE,
    generation INTEGER NOT NULL,
    genome TEXT NOT NULL,
    key NOT NULL,
    descriptor TEXT,
    worker_rank INTEGER,
    accuracy REAL,
    loss REAL,
    train_time REAL,
    eval_time REAL,
    n_params INTEGER,
    epochs INTEGER,
    status TEXT NOT NULL,
    error TEXT NOT NULL,
    reported_accuracy REAL,
    metrics TEXT NOT NULL,
    cached_from INTEGER,
    started REAL,
    ended REAL
);
CREATE INDEX evaluations_key ON evaluations (key);
CREATE INDEX evaluations_generation ON evaluations (generation);
CREATE TABLE epochs (
    candidate INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    train_loss REAL,
    valid_accuracy REAL,
    valid_loss REAL,
    seconds REAL,
    metrics TEXT NOT NULL,
    worker_rank INTEGER,
    recorded REAL NOT NULL,
    PRIMARY KEY (candidate, epoch)
);
CREATE TABLE legs (
    leg INTEGER PRIMARY KEY,
    candidate INTEGER NOT NULL,
    start_epochs INTEGER NOT NULL,
    target_epochs INTEGER NOT NULL,
    started_event INTEGER NOT NULL,
    ended_event INTEGER,
    started REAL,
    ended REAL,
    accuracy REAL,
    reported_accuracy REAL,
    status TEXT,
    error TEXT,
    decision TEXT,
    worker_rank INTEGER,
    train_time REAL,
    result TEXT,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE TABLE attempts (
    candidate INTEGER PRIMARY KEY,
    count INTEGER NOT NULL,
    started REAL NOT NULL
);
CREATE TABLE series (
    candidate INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    step INTEGER NOT NULL,
    name TEXT NOT NULL,
    value REAL,
    PRIMARY KEY (candidate, name, epoch, step)
);
CREATE TABLE search_epochs (
    epoch INTEGER PRIMARY KEY,
    cell TEXT NOT NULL,
    genome TEXT NOT NULL,
    weights TEXT NOT NULL,
    metrics TEXT NOT NULL,
    lookup_accuracy REAL,
    seconds REAL,
    recorded REAL NOT NULL
);
"""
ATTEMPTS_TABLE = SCHEMA[SCHEMA.index("CREATE TABLE attempts"):].split(";")[0]
SERIES_TABLE = SCHEMA[SCHEMA.index("CREATE TABLE series"):].split(";")[0]
SEARCH_EPOCHS_TABLE = SCHEMA[SCHEMA.index("CREATE TABLE search_epochs"):].split(";")[0]


def add_missing(connection: sqlite3.Connection) -> None:
    """Add to a journal written before them the columns and tables added to the schema since
    (within a transaction of the caller's): a resumed run keeps them up to date."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(run)")}
    if "recorded_results" not in columns:   # NULL: how many results it had is not known
        connection.execute("ALTER TABLE run ADD COLUMN recorded_results INTEGER")
    if "running_seconds" not in columns:    # NULL: how long it ran is not known
        connection.execute("ALTER TABLE run ADD COLUMN running_seconds REAL")
    tables = {row[0] for row in connection.execute(
        "SELECT name FROM sqlite_master WHERE type='table'")}
    if "attempts" not in tables:
        connection.execute(ATTEMPTS_TABLE)
    if "series" not in tables:
        connection.execute(SERIES_TABLE)
    if "search_epochs" not in tables:
        connection.execute(SEARCH_EPOCHS_TABLE)


def create_tables(connection: sqlite3.Connection) -> None:
    """Write the schema into an empty database, in one transaction: a file that has tables
    has them all, and its version."""
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("BEGIN")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            connection.execute(statement)
    connection.execute("INSERT INTO nord_schema (version, created) VALUES (?, ?)",
                       (SCHEMA_VERSION, time.time()))
    connection.execute("COMMIT")
