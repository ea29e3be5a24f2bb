"""Whether a run may start or resume in a journal: the checks made before anything is written.

    stored = journal.check_start(record, resume=True)   # None: a new run; raises when refused

A refused start names what it found and what to do, and leaves the file as it was.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

from nord.errors import JournalError, JournalInUseError
from nord.journal.connection import read_only
from nord.journal.reads import JournalReader
from nord.journal.records import RunRecord
from nord.journal.schema import SCHEMA_VERSION
from nord.journal.writers import Writer
from nord.jsonable import dumps


class StartChecks(JournalReader):
    """The checks of :class:`~nord.journal.store.Journal` before a start or a resume: reads
    only, so that a refused start writes nothing."""

    def check_start(self, record: RunRecord, resume: bool = False,
                    compare: Sequence[str] = RunRecord.MUST_MATCH) -> Optional[RunRecord]:
        """Check, without writing anything, that :meth:`start` would succeed.

        ``compare`` limits the fields compared on resume (a caller that checks early, before
        it knows the whole record, compares what it knows; :meth:`start` compares all).

        Returns:
            The journaled run's record when it would be resumed, None for a new run.

        Raises:
            JournalError: the file holds a run and ``resume`` is False; ``resume`` is True and
                the file holds no run; a field in :attr:`RunRecord.MUST_MATCH` differs (the
                message names it and shows both values); the journal was written by an
                older nord.
            JournalInUseError: another live process writes it (its host and pid are named).
        """
        if self.path.is_dir():
            raise JournalError(
                f"'{self.path}' is a folder, not a journal file; give a file path, e.g. "
                f"'{self.path / 'run.db'}'")
        if not self.path.exists():
            if resume:
                raise JournalError(
                    f"there is no journal at '{self.path}' to resume; check the path (a new run "
                    "is started without --resume)")
            return None
        if read_only(self.path):
            raise JournalError(
                f"cannot {'resume' if resume else 'start a run in'} '{self.path}': the file is "
                "read-only (its file system, folder or file cannot be written), and a run "
                f"writes its journal. Copy it somewhere writable ('nord export {self.path} "
                "COPY.db') and resume the copy; reading commands (list, report, config, "
                "export) work on it as it is")
        try:
            holds_run = self.exists()
        except JournalError as unreadable:
            if resume:
                raise
            raise JournalError(f"{unreadable}, or a new path to start a run") from unreadable
        if not holds_run:
            if resume:
                raise JournalError(
                    f"'{self.path}' holds no run to resume (the run was created but never "
                    "started); start it again without --resume, or give a new journal path")
            return None
        stored = self.run_record()
        meta = self.metadata()
        if not resume:
            raise JournalError(
                f"'{self.path}' already holds a run ({stored.algorithm}, {self.count()} "
                f"evaluations, {self.state()}); it was left untouched. Resume it with --resume "
                "('nord resume PATH'), or give a new journal path")
        if self._version != SCHEMA_VERSION:
            raise JournalError(
                f"'{self.path}' was written by an older nord (journal schema {self._version}): it "
                "can be read and reported, but not resumed; start a new journal")
        writer = Writer.from_json(meta.get("writer"))
        if writer is not None and writer.alive(meta.get("heartbeat")):
            raise JournalInUseError(
                f"'{self.path}' is being written by {writer} (heartbeat "
                f"{_ago(meta.get('heartbeat'))}); wait for that run to end or stop it, then "
                "resume")
        differences = record.differences(stored, compare)
        if differences:
            name, theirs, mine = differences[0]
            if name.startswith("dataset.files"):
                raise JournalError(_data_changed(self.path, name, theirs, mine))
            if name.split(".")[0] == "scheduler" and not (stored.scheduler and record.scheduler):
                raise JournalError(_scheduler_changed(self.path, stored.scheduler,
                                                      record.scheduler))
            raise JournalError(
                f"cannot resume '{self.path}': its run has {name}={dumps(theirs)}, this one "
                f"{name}={dumps(mine)}. Resume with the settings the run was started with (only "
                "the budget and where it runs may change), or give a new journal path")
        recorded = self.count()
        claimed = meta.get("recorded_results")
        if claimed is not None and recorded < claimed:
            raise JournalError(
                f"cannot resume '{self.path}': its run recorded {claimed} results, but the file "
                f"holds {recorded}; the rest were lost (a copy of the file made without its "
                f"'-wal' file by an older nord, or one taken while a checkpoint wrote it). "
                f"Resuming would start those evaluations over: resume the original file, or "
                f"copy RUN.db together with RUN.db-wal ('nord export' makes a whole copy); the "
                f"file was left untouched")
        # candidates proposed but not evaluated when the run stopped are evaluated first
        proposed = max(recorded, self._query("SELECT COUNT(*) FROM candidates")[0][0])
        if record.budget and record.budget < proposed:   # 0: not known yet
            pending = (f" and {proposed - recorded} candidates proposed, which a resume "
                       "evaluates first" if proposed > recorded else "")
            raise JournalError(
                f"cannot resume '{self.path}' with a budget of {record.budget}: it already holds "
                f"{recorded} evaluations{pending}, and a budget counts them too. Give a budget "
                f"of at least {proposed} (its own was {stored.budget}), or give a new journal "
                "path")
        return stored


def _data_changed(path: Path, name: str, theirs: Any, mine: Any) -> str:
    """Why a resume on data other than the run's is refused, naming the file."""
    if isinstance(theirs, dict) or isinstance(mine, dict):   # the files read differ
        theirs, mine = theirs or {}, mine or {}
        file = sorted(set(theirs) ^ set(mine), key=str)[0]
        what = (f"the run read {file}, and this one does not" if file in theirs
                else f"this run reads {file}, which the run did not")
    else:
        file = name[len("dataset.files."):]
        if theirs and mine:
            what = f"the run trained on {file} with MD5 {theirs}; that file now has MD5 {mine}"
        elif theirs:
            what = f"the run read {file} (MD5 {theirs}), and this one does not find it"
        else:
            what = f"this run reads {file} (MD5 {mine}), which the run did not"
    return (f"cannot resume '{path}': {what}. The data changed since the run started, and one "
            "journal must not mix two data sets: put the run's files back (its journal records "
            "their MD5s in the run's dataset), or start a new journal; the journal was left "
            "untouched")


def _scheduler_changed(path: Path, theirs: Dict[str, Any], mine: Dict[str, Any]) -> str:
    """Why a resume with a scheduler where the run had none, or the reverse, is refused, in
    the words a user gives a scheduler (its record is empty without one)."""
    def described(settings: Dict[str, Any]) -> Tuple[str, str, str]:
        first = ("min_epochs", "max_epochs", "eta")   # every scheduler's, in rung order
        keys = [key for key in first if key in settings] + sorted(
            key for key in settings if key not in first and key != "scheduler")
        rest = {key: settings[key] for key in keys}
        name = settings.get("scheduler", "?")
        return (name, ", ".join(f"{key} {dumps(value)}" for key, value in rest.items()),
                ", ".join(f"{key}={value!r}" for key, value in rest.items()))

    if theirs:
        name, settings, call = described(theirs)
        return (f"cannot resume '{path}': its run trained under the {name} scheduler "
                f"({settings}); this one has no scheduler. Pass the same scheduler "
                f"(scheduler=make_scheduler({name!r}, {call})), or give a new journal path; "
                "the journal was left untouched")
    name, settings, _ = described(mine)
    return (f"cannot resume '{path}': its run trained every candidate to the end, without a "
            f"scheduler; this one has the {name} scheduler ({settings}). Resume it without one "
            "(scheduler=None), or give a new journal path; the journal was left untouched")


def _ago(moment: Optional[float]) -> str:
    if moment is None:
        return "never written"
    return f"{max(0.0, time.time() - moment):.0f} s ago"
