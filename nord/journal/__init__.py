"""The journal: a run's record in SQLite, committed once per result, from which a run resumes.

    from nord.journal import Journal, list_runs
    with Journal("runs/rea.db") as journal:
        print(journal.state(), len(journal.evaluations()))

docs/journal.md describes the file: its tables, the statuses, the one writer, what a crash keeps.
"""
from nord.journal.listing import list_runs
from nord.journal.records import (CandidateRecord, EvaluationRecord, LegRecord, RunRecord,
                                  evaluation_result)
from nord.journal.schema import SCHEMA_VERSION, STATUSES
from nord.journal.store import Journal
from nord.journal.versions import package_versions
from nord.journal.writers import HEARTBEAT_SECONDS, Writer

__all__ = ["Journal", "RunRecord", "CandidateRecord", "EvaluationRecord", "LegRecord", "Writer",
           "list_runs", "evaluation_result", "package_versions", "SCHEMA_VERSION", "STATUSES",
           "HEARTBEAT_SECONDS"]
