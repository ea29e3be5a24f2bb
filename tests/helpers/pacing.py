"""A plug-in for ``nord run --plugin tests.helpers.pacing --callbacks pace``: a training
callback that makes every epoch last at least ``NORD_EPOCH_SECONDS`` (default 1), so that a
page that redraws once a second sees a candidate's curve grow on any machine."""
import os
import time

from nord.evaluators.callbacks import TrainingCallback, register_callback


class Pace(TrainingCallback):
    name = "pace"

    def on_candidate_start(self, state):
        self.started = time.monotonic()

    def on_epoch_end(self, state):
        seconds = float(os.environ.get("NORD_EPOCH_SECONDS", "1"))
        time.sleep(max(0.0, self.started + seconds - time.monotonic()))
        self.started = time.monotonic()


register_callback("pace", Pace, description="makes each epoch last a second or more (tests)")
