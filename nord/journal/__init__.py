"""The journal: a run's record in SQLite, committed once per result, from which a run resumes.

    from nord.journal import Journal, list_runs
    with Journal("runs/rea.db") as journal:
        print(journal.run()["status"], len(journal.evaluations()))
"""
from nord.journal.store import (CHECKPOINT_SECONDS, HEARTBEAT_SECONDS, SCHEMA_VERSION, STATUSES,
                                CandidateRecord, EvaluationRecord, Journal, LegRecord, RunRecord,
                                Writer, evaluation_result, list_runs, package_versions)

__all__ = ["Journal", "RunRecord", "CandidateRecord", "EvaluationRecord", "LegRecord", "Writer",
           "list_runs", "evaluation_result", "package_versions", "SCHEMA_VERSION", "STATUSES",
           "HEARTBEAT_SECONDS", "CHECKPOINT_SECONDS"]
