"""``near_full_batch``: a batch size close to (or above) the training-set size."""

from __future__ import annotations

import math

from lineage.diagnose import _names
from lineage.diagnose._base import Check, Finding, RunData
from lineage.diagnose._training_length import read

#: Optimizers for which a full batch is the method, not a mistake.
_FULL_BATCH_OPTIMIZERS = ("lbfgs", "bfgs", "newton", "conjugate")


class NearFullBatch(Check):
    """The batch size is at least ``full_batch_fraction`` of the training-set size (recorded
    as ``train_size`` or the tag ``lineage.data.train.samples``; else estimated as steps per
    epoch x batch size, which can only under-estimate the share). A recorded
    ``steps_per_epoch`` of 0 (a batch larger than the set, remainder dropped) is an error:
    nothing trains. Quiet for full-batch optimizers (L-BFGS)."""

    id = "near_full_batch"
    causes = (
        "With a batch this close to the whole training set an epoch makes only one or two "
        "updates: training needs many more epochs to get anywhere.",
        "Nearly full-batch gradients lose the noise of small batches that helps "
        "generalization, and a learning rate tuned for smaller batches no longer fits.",
    )
    next_steps = (
        "Use a batch size well below the training-set size (e.g. 16-256, at most a tenth of "
        "a small set) so every epoch makes many updates.",
        "If the large batch is intended, raise epochs to match and scale the learning rate "
        "with the batch size (linear scaling rule, with warmup).",
    )

    def run(self, data: RunData) -> list[Finding]:
        t = self.thresholds
        length = read(data)
        batch = length.batch()
        if batch is None or self._full_batch_optimizer(data):
            return []
        assert length.batch_size is not None
        name = length.batch_size.name
        samples = length.samples()
        spe = length.steps_per_epoch.whole if length.steps_per_epoch is not None else None
        if spe == 0 and length.steps_per_epoch is not None:
            where = f"the {samples} training samples" if samples else "the training set"
            return [
                self.finding(
                    "error",
                    f"{length.steps_per_epoch.name} = 0: {name} = {batch} is larger than "
                    f"{where} and the remainder is dropped, so no step trains",
                    param=name,
                    value=batch,
                    train_size=samples,
                    steps_per_epoch=0,
                )
            ]
        estimated = False
        if samples is None and spe is not None and spe > 0 and length.steps_per_epoch:
            if length.steps_per_epoch.name == "sink_size":
                return []  # sink_size counts sink steps, not batches of the data set
            samples, estimated = spe * batch, True
        if samples is None:
            return []
        share = batch / samples
        if share < t.full_batch_fraction:
            return []
        per_epoch = math.ceil(samples / batch)
        about = "about " if estimated else ""
        if batch >= samples:
            summary = (
                f"{name} = {batch} is at least the whole training set ({about}{samples} "
                "samples): every step is the full set, one update per epoch"
            )
        else:
            summary = (
                f"{name} = {batch} is {share:.0%} of the {about}{samples} training samples: "
                f"{per_epoch} updates per epoch"
            )
        return [
            self.finding(
                "warning",
                summary,
                param=name,
                value=batch,
                train_size=samples,
                train_size_estimated=estimated,
                batch_share=share,
                steps_per_epoch=per_epoch,
                allowed=[1, max(1, math.ceil(t.full_batch_fraction * samples) - 1)],
            )
        ]

    @staticmethod
    def _full_batch_optimizer(data: RunData) -> bool:
        return any(
            any(
                o in value.lower().replace("-", "").replace("_", "") for o in _FULL_BATCH_OPTIMIZERS
            )
            for name, value in data.params.items()
            if {"optimizer", "optim", "opt", "solver", "method"} & set(_names.tokens(name))
        )
