"""The built-in subscribers of the bus, each checked against its value recomputed by hand on a
tiny network, and the bus hooking nothing for a topic nobody reads."""
import math

import numpy as np
import pytest
import torch
from torch import nn

from nord.evaluators.bus import Bus
from nord.evaluators.callbacks import (DeadReLUs, GradientNorms, TrainingState, WeightNorms,
                                      make_callbacks)
from nord.evaluators.subscribers import (HISTOGRAM_EDGES, GradientNormSteps, Histograms,
                                         NonFiniteWatch, Saturation, SpectralNorms, UpdateRatio)
from nord.evaluators.watch import Watch


def tiny():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2), nn.Sigmoid())


def data():
    generator = torch.Generator().manual_seed(1)
    return torch.randn(8, 4, generator=generator) * 3, torch.tensor([0, 1] * 4)


def train(model, callbacks, steps=4, lr=0.5):
    """Steps of SGD under a Watch; returns what each step published and, recomputed by hand,
    the weights before and after each step, the gradients and every layer's outputs."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    watch = Watch(callbacks, model, optimizer, probe=data()[0], epochs=1, steps=steps)
    watch.start(0)
    watch.begin_epoch(1)
    x, y = data()
    seen = []
    for step in range(1, steps + 1):
        outputs = {}
        hooks = [m.register_forward_hook(lambda _m, _i, o, n=n: outputs.__setitem__(n, o.detach()))
                 for n, m in model.named_children()]
        before = {n: [p.detach().clone() for p in m.parameters()] for n, m in model.named_children()}
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        for hook in hooks:
            hook.remove()
        grads = {n: [p.grad.clone() for p in m.parameters()] for n, m in model.named_children()}
        after = {n: [p.detach().clone() for p in m.parameters()] for n, m in model.named_children()}
        published = watch.step(1, step, float(loss.detach()))
        seen.append(dict(published=published, before=before, after=after, grads=grads,
                         outputs=outputs, loss=float(loss.detach())))
    scalars, series = watch.epoch_end(1, steps, {})
    watch.end(1)
    assert not watch.diagnostics, watch.diagnostics
    return seen, scalars, series


def l2(tensors):
    return math.sqrt(sum(float((t.double() ** 2).sum()) for t in tensors))


def test_update_ratio_is_the_step_over_the_weights():
    seen, scalars, _ = train(tiny(), [lambda: UpdateRatio(every_steps=2)])
    for step in (1, 3):
        assert not seen[step - 1]["published"]     # not due
    for record in (seen[1], seen[3]):
        for layer in ("0", "2"):
            change = [a - b for a, b in zip(record["after"][layer], record["before"][layer])]
            expected = l2(change) / l2(record["before"][layer])
            assert record["published"][f"update_ratio/{layer}"] == pytest.approx(expected, rel=1e-6)
    mean = (seen[1]["published"]["update_ratio/0"] + seen[3]["published"]["update_ratio/0"]) / 2
    assert scalars["update_ratio/0"] == pytest.approx(mean)


def test_gradient_norms_at_each_sampled_step():
    seen, _, series = train(tiny(), [lambda: GradientNormSteps(every_steps=1)])
    for record in seen:
        grads = record["grads"]
        assert record["published"]["grad_norm_step/2"] == pytest.approx(l2(grads["2"]), rel=1e-6)
        assert record["published"]["grad_norm_step"] == pytest.approx(
            l2(grads["0"] + grads["2"]), rel=1e-6)
        assert "grad_norm_step/1" not in record["published"]      # no parameters
    assert [step for step, name, _ in series if name == "grad_norm_step"] == [1, 2, 3, 4]


def test_histograms_share_values_out_in_fixed_bins():
    seen, _, _ = train(tiny(), [lambda: Histograms(every_steps=2)], steps=2)
    record = seen[1]
    edges = [-np.inf, *HISTOGRAM_EDGES, np.inf]
    for prefix, values in (("act_hist/1", record["outputs"]["1"].numpy().ravel()),
                           ("grad_hist/0", np.concatenate([g.numpy().ravel()
                                                           for g in record["grads"]["0"]]))):
        # bins closed on the left, as [edge, next edge)
        counts = [np.sum((values >= lo) & (values < hi)) for lo, hi in zip(edges, edges[1:])]
        shares = [record["published"][f"{prefix}/{index}"] for index in range(len(edges) - 1)]
        assert shares == pytest.approx([c / values.size for c in counts])
        assert sum(shares) == pytest.approx(1.0)


def test_the_nonfinite_watch_flags_gradients_and_losses():
    watch = NonFiniteWatch()

    def state(grad, loss=1.0):
        return TrainingState(1, 1, None, None, {"loss": loss},
                             topics={"gradients": {"a": (grad,), "b": ()}})
    assert watch.measure(state(torch.tensor([1.0, math.inf, math.nan]))) == {
        "nonfinite": 1.0, "nonfinite/grad": 2.0}
    assert watch.measure(state(torch.ones(2))) == {"nonfinite": 0.0, "nonfinite/grad": 0.0}
    assert watch.measure(state(torch.ones(2), loss=math.nan))["nonfinite"] == 1.0


def test_spectral_norms_are_the_largest_singular_values():
    model = nn.Sequential(nn.Conv2d(2, 5, 3), nn.ReLU(), nn.Linear(7, 4))
    callback = SpectralNorms(iterations=100)
    values = callback.on_epoch_end(TrainingState(1, 0, model, None))
    for layer, module in (("0", model[0]), ("2", model[2])):
        matrix = module.weight.detach().reshape(module.weight.shape[0], -1).double()
        expected = float(torch.linalg.matrix_norm(matrix, ord=2))
        assert values[f"spectral_norm/{layer}"] == pytest.approx(expected, rel=1e-6)
    assert values["spectral_norm"] == max(values["spectral_norm/0"], values["spectral_norm/2"])


def test_saturation_is_the_share_of_outputs_at_the_bounds():
    model = tiny()
    probe = data()[0]
    with torch.no_grad():
        model[0].weight.mul_(10)     # large inputs: many tanh outputs at +-1
        hidden = torch.tanh(model[0](probe))
        out = torch.sigmoid(model[2](hidden))
    values = Saturation().on_epoch_end(TrainingState(1, 0, model, None, probe=probe))
    tanh_share = float(((hidden <= -0.99) | (hidden >= 0.99)).double().mean())
    sigmoid_share = float(((out <= 0.01) | (out >= 0.99)).double().mean())
    assert 0 < tanh_share and values["saturated/1"] == pytest.approx(tanh_share)
    assert values["saturated/3"] == pytest.approx(sigmoid_share)
    assert values["saturated"] == pytest.approx((tanh_share + sigmoid_share) / 2)


def test_the_bus_hooks_nothing_for_topics_nobody_reads():
    model = tiny()
    bus = Bus(model)
    bus.prepare(())
    assert all(not m._forward_hooks for m in model.modules())
    bus.prepare(["activations"])
    assert all(m._forward_hooks for m in model.children())
    model(data()[0])
    assert set(bus.publish()["activations"]) == {"0", "1", "2", "3"}
    assert all(not m._forward_hooks for m in model.modules())


def test_every_builtin_is_registered_by_name():
    made = make_callbacks(["update_ratio", "grad_norm_step", "spectral_norm", "saturated",
                           "histograms", "nonfinite"])
    assert [type(c) for c in made] == [UpdateRatio, GradientNormSteps, SpectralNorms,
                                       Saturation, Histograms, NonFiniteWatch]


def test_the_epoch_norms_and_dead_relus_recomputed():
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
    with torch.no_grad():
        model[0].bias[:3] = -100.0          # units 0-2 never fire: half the ReLU is dead
    seen, scalars, _ = train(model, [lambda: GradientNorms(every_steps=2), WeightNorms,
                                     DeadReLUs], steps=4, lr=0.01)
    grads = [l2(seen[i]["grads"]["0"]) for i in (1, 3)]
    assert scalars["grad_norm/0"] == pytest.approx(sum(grads) / 2, rel=1e-6)
    assert scalars["weight_norm/2"] == pytest.approx(l2(seen[-1]["after"]["2"]), rel=1e-6)
    with torch.no_grad():
        hidden = torch.relu(model[0](data()[0]))
    expected = 1 - float((hidden > 0).any(dim=0).double().mean())
    assert expected >= 0.5 and scalars["dead_relu/1"] == pytest.approx(expected)
