"""The diagnosis checks that read recorded series work on runs `lineage.pytorch.watch` records:
real tiny trainings, each with one problem, and a healthy one with none of these findings."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch

import lineage
import lineage.pytorch
from lineage.diagnose import diagnose_run

#: The checks this module is about; a healthy run may still draw others (a short training).
SERIES_CHECKS = {
    "weights_unchanged",
    "frozen_weights",
    "loss_runaway",
    "gradient_exploding",
    "labels_out_of_range",
    "constant_column",
    "data_out_of_range",
}


def _train(
    uri: str,
    model: Any,
    data: Any,
    *,
    lr: float = 0.1,
    epochs: int = 3,
    schedule: Callable[[int], float] | None = None,
    loss_fn: Callable[[Any, Any], Any] = torch.nn.functional.cross_entropy,
) -> str:
    runs: list[str] = []
    with contextlib.suppress(IndexError):  # a label the network has no output for
        _loop(uri, model, data, lr, epochs, schedule, loss_fn, runs)
    return runs[0]


def _loop(
    uri: str,
    model: Any,
    data: Any,
    lr: float,
    epochs: int,
    schedule: Callable[[int], float] | None,
    loss_fn: Callable[[Any, Any], Any],
    runs: list[str],
) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule) if schedule else None
    loader = torch.utils.data.DataLoader(data, batch_size=32)
    with (
        lineage.start_run(experiment="torch-diagnose", tracking_uri=uri) as run,
        lineage.pytorch.watch(
            model, opt, scheduler=sched, loader=loader, grad_norm=True, params={"epochs": epochs}
        ) as w,
    ):
        runs.append(str(run.run_id))
        for epoch in range(1, epochs + 1):
            for x, y in loader:
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                if loss.requires_grad:  # every weight frozen: nothing to differentiate
                    loss.backward()
                opt.step()
                w.log(loss=loss)
            if sched is not None:
                sched.step()
            w.epoch_end(epoch)


def _found(uri: str, run_id: str) -> set[str]:
    return {f.check for f in diagnose_run(run_id, tracking_uri=uri)} & SERIES_CHECKS


class Normalize:
    """``torchvision.transforms.Normalize``'s interface (``mean``, ``std`` per channel), which
    the recorder reads by name and attributes as it reads torchvision's."""

    def __init__(self, mean: list[float], std: list[float]) -> None:
        self.mean, self.std = mean, std

    def __call__(self, x: Any) -> Any:
        return (x - self.mean[0]) / self.std[0]


class Images(torch.utils.data.Dataset[Any]):
    """Digits as 1x8x8 images through ``transform``, the way a vision dataset serves them."""

    def __init__(self, x: Any, y: Any, transform: Any) -> None:
        self.x, self.y, self.transform = x.reshape(-1, 1, 8, 8), y, transform

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        return self.transform(self.x[i]), self.y[i]


def _relabelled(data: Any, labels: Callable[[Any], Any]) -> Any:
    x, y = data.tensors
    return torch.utils.data.TensorDataset(x, labels(y))


def test_each_problem_is_found_on_a_pytorch_recorded_run(
    digits: Any, mlp: Any, sqlite_uri: str
) -> None:
    train, _ = digits
    assert _found(sqlite_uri, _train(sqlite_uri, mlp(), train)) == set()

    # A learning rate of 0: the weights never move.
    assert "weights_unchanged" in _found(sqlite_uri, _train(sqlite_uri, mlp(), train, lr=0.0))
    # A schedule that drops the learning rate to 0 after the first epoch.
    broken = _train(sqlite_uri, mlp(), train, schedule=lambda epoch: 1.0 if epoch < 1 else 0.0)
    assert "weights_unchanged" in _found(sqlite_uri, broken)

    # Every weight frozen.
    frozen = mlp()
    for p in frozen.parameters():
        p.requires_grad_(False)
    assert "frozen_weights" in _found(sqlite_uri, _train(sqlite_uri, frozen, train))

    # A schedule that multiplies the learning rate by 100 each epoch: the loss runs away.
    rising = _train(sqlite_uri, mlp(), train, epochs=4, schedule=lambda epoch: 100.0**epoch)
    assert "loss_runaway" in _found(sqlite_uri, rising)

    # Labels 1..10 for a 10-output network (the training crashes at label 10; the run, FAILED,
    # says why); a feature column all zero (a broken transform).
    shifted = _relabelled(train, lambda y: y + 1)
    assert "labels_out_of_range" in _found(sqlite_uri, _train(sqlite_uri, mlp(), shifted, epochs=1))
    x, y = train.tensors
    blank = torch.utils.data.TensorDataset(torch.zeros_like(x), y)
    assert "constant_column" in _found(sqlite_uri, _train(sqlite_uri, mlp(), blank, epochs=1))


def test_unnormalised_inputs_and_exploding_gradients_are_found_on_pytorch_recorded_runs(
    digits: Any, mlp: Any, sqlite_uri: str
) -> None:
    train, _ = digits
    x, y = train.tensors

    def image_mlp() -> Any:
        return torch.nn.Sequential(torch.nn.Flatten(), mlp())

    # Normalize's mean and std are for [0, 1] input (range [-2, 2] after it); fed [0, 1]
    # pixels, nothing is out of range.
    norm = Normalize(mean=[0.5], std=[0.25])
    fine = _train(sqlite_uri, image_mlp(), Images(x, y, norm), epochs=1)
    assert _found(sqlite_uri, fine) == set()
    # The same pipeline fed 0-255 pixels (a missing division by 255): up to 1018.
    raw = _train(sqlite_uri, image_mlp(), Images(x * 255.0, y, norm), epochs=1)
    findings = {f.check: f for f in diagnose_run(raw, tracking_uri=sqlite_uri)}
    assert "data_out_of_range" in findings
    assert findings["data_out_of_range"].evidence["allowed"] == [-2.0, 2.0]

    # A linear regression of the digit's value by least squares, with a learning rate far
    # above 2 / (the largest curvature): each step overshoots further, and the gradient norm
    # (recorded with grad_norm=True) grows geometrically until it is no longer finite.
    def squared_error(out: Any, target: Any) -> Any:
        return torch.nn.functional.mse_loss(out.squeeze(1), target.float())

    torch.manual_seed(0)
    exploding = _train(
        sqlite_uri, torch.nn.Linear(64, 1), train, lr=1.0, epochs=3, loss_fn=squared_error
    )
    assert "gradient_exploding" in _found(sqlite_uri, exploding)
