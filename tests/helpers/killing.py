"""A plug-in for ``nord run --plugin tests.helpers.killing --callbacks epoch_log``: a training
callback, written as a user would, that logs every finished epoch and, once the log holds
``NORD_KILL_AFTER`` epochs, kills the whole run (``kill -9`` of its process group) in the middle
of the next epoch.

With several candidates training at once (worker processes, MPI ranks) the kill waits until
another process is in the middle of an epoch too, so that no candidate is caught between
finishing an epoch and checkpointing it: what is lost is exactly the epochs in progress.

Environment: ``NORD_EPOCH_LOG`` (the log: ``<pid> <epoch> <train loss>`` a line),
``NORD_KILL_AFTER`` (unset: never kill), ``NORD_KILL_WAIT`` (seconds to wait for another
process to be mid-epoch; 0 kills at once), ``NORD_PAUSE_AFTER`` (once the log holds that many
epochs, the next epoch waits in its second step until the run is stopped, and
``<log>.paused`` says so: a stop from outside then comes mid-epoch; once per log).
"""
import os
import signal
import time

from nord.evaluators.callbacks import TrainingCallback, register_callback


def _logged(path: str) -> int:
    try:
        with open(path) as log:
            return sum(1 for _ in log)
    except FileNotFoundError:
        return 0


def _kill_everything() -> None:
    os.killpg(os.getpgid(0), signal.SIGKILL)


class EpochLog(TrainingCallback):
    name = "epoch_log"
    every_steps = 1

    def on_step(self, state):
        log = os.environ["NORD_EPOCH_LOG"]
        pause = os.environ.get("NORD_PAUSE_AFTER")
        if (pause is not None and state.step == 2 and _logged(log) >= int(pause)
                and not os.path.exists(f"{log}.paused")):
            open(f"{log}.paused", "w").close()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:   # a stop signal raises here
                time.sleep(0.01)
        pending = f"{log}.kill"
        if os.path.exists(pending):
            with open(pending) as file:
                killer = int(file.read() or 0)
            if killer != os.getpid():   # another process waits in its epoch: both are mid-epoch
                _kill_everything()
        after = os.environ.get("NORD_KILL_AFTER")
        if after is None or state.step != 2 or _logged(log) < int(after):
            return
        wait = float(os.environ.get("NORD_KILL_WAIT", "0"))
        with open(pending, "w") as file:
            file.write(str(os.getpid()))
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            time.sleep(0.01)
        _kill_everything()

    def on_epoch_end(self, state):
        with open(os.environ["NORD_EPOCH_LOG"], "a") as log:
            log.write(f"{os.getpid()} {state.epoch} {state.metrics['train_loss']!r}\n")
        return {"logged": float(state.epoch)}


register_callback("epoch_log", EpochLog,
                  description="logs every finished epoch; kills the run when told to (tests)")
