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
    "labels_out_of_range",
    "constant_column",
}


def _train(
    uri: str,
    model: Any,
    data: Any,
    *,
    lr: float = 0.1,
    epochs: int = 3,
    schedule: Callable[[int], float] | None = None,
) -> str:
    runs: list[str] = []
    with contextlib.suppress(IndexError):  # a label the network has no output for
        _loop(uri, model, data, lr, epochs, schedule, runs)
    return runs[0]


def _loop(
    uri: str,
    model: Any,
    data: Any,
    lr: float,
    epochs: int,
    schedule: Callable[[int], float] | None,
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
                loss = torch.nn.functional.cross_entropy(model(x), y)
                if loss.requires_grad:  # every weight frozen: nothing to differentiate
                    loss.backward()
                opt.step()
                w.log(loss=loss)
            if sched is not None:
                sched.step()
            w.epoch_end(epoch)


def _found(uri: str, run_id: str) -> set[str]:
    return {f.check for f in diagnose_run(run_id, tracking_uri=uri)} & SERIES_CHECKS


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
