"""The ``resources:`` section: which devices trials run on, and how many trials share one.

``per_trial`` is a whole number of devices, a fraction ``1/k`` of one device (k trials on
each), or ``auto`` (as many as their measured memory allows, `tuner.executors`); ``parallel``
then defaults to what fits rather than 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, PrivateAttr, field_validator, model_validator
from pydantic_core import PydanticCustomError

from tuner.config._base import _Model
from tuner.config._sections import Int
from tuner.config._types import RuleError, suggest

__all__ = ["ResourcesConfig", "check_resources"]

#: ``resources.per_trial: auto``: at most this many trials share one device (the measured
#: memory decides how many actually do).
AUTO_PER_DEVICE = 8

_PER_TRIAL_RULE = (
    "must be a whole number of devices (1, 2, ...), a fraction 1/k of one device "
    "(0.5, 0.25, ...) or auto"
)


def _per_trial(value: Any) -> Any:
    # 1.0 is 1; 0.5 is two trials per device; 0.3 is no whole number of trials per device,
    # and is refused rather than rounded (the user's arithmetic, not ours, decides).
    if value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("per_trial", _PER_TRIAL_RULE)
    if value >= 1 and float(value).is_integer():
        return int(value)
    if 0 < value < 1:
        share = round(1 / value)
        if abs(value * share - 1) < 1e-3:
            return 1 / share
    raise PydanticCustomError("per_trial", _PER_TRIAL_RULE)


class ResourcesConfig(_Model):
    """Device slots: which devices exist and how many each trial holds."""

    kind: Literal["auto", "cpu", "gpu", "npu"] = Field(
        default="auto", description="auto: CUDA GPUs, else Ascend NPUs, else CPU slots"
    )
    devices: Literal["auto"] | list[int | str] = Field(
        default="auto",
        description="auto, or the device ids to use, e.g. [0, 1, 2, 3] (MIG instances by "
        "their MIG-... UUID)",
    )
    per_trial: Annotated[int | float | Literal["auto"], BeforeValidator(_per_trial)] = Field(
        default=1,
        description="devices each trial holds; a fraction 1/k (0.5, 0.25, ...) puts k trials "
        "on each device; auto packs trials on a device by their measured memory",
    )
    parallel: Int = Field(
        default=1,
        ge=1,
        description="trials running at once (default: 1 with whole devices; what fits with "
        f"a fraction; up to {AUTO_PER_DEVICE} per device with auto)",
    )
    memory_params: list[str] | None = Field(
        default=None,
        description="with per_trial: auto, the parameters a trial's device memory grows with "
        "in proportion (e.g. [batch_size]); unset: any parameter may change it, so estimates "
        "keep a margin; []: none does",
    )
    _parallel_given: bool = PrivateAttr(default=True)
    AUTO_PER_DEVICE: ClassVar[int] = AUTO_PER_DEVICE

    @property
    def devices_per_trial(self) -> int:
        """Whole devices one trial sees: ``per_trial``, or 1 when trials share a device."""
        return self.per_trial if isinstance(self.per_trial, int) else 1

    @property
    def trials_per_device(self) -> int | None:
        """Trials sharing one device: 1 for whole devices, k for ``1/k``, None for auto."""
        if isinstance(self.per_trial, int):
            return 1
        if self.per_trial == "auto":
            return None
        return round(1 / self.per_trial)

    @property
    def parallel_given(self) -> bool:
        """Whether the config set ``parallel`` (else a shared device takes what fits)."""
        return self._parallel_given

    def fit(self, capacity: int) -> None:
        """Make ``parallel`` what the executor can run at once (``capacity``) where the config
        left it to the devices: trials share devices and ``parallel`` is unset, so the count
        planned at validation (the listed devices, or one with ``devices: auto``) gives way
        to the devices the executor found. Whole devices and a given ``parallel`` stay."""
        if not self._parallel_given and self.trials_per_device != 1:
            self.parallel = max(1, capacity)

    @field_validator("devices", mode="before")
    @classmethod
    def _devices(cls, value: Any) -> Any:
        if value == "auto":
            return value
        if not isinstance(value, list):
            raise PydanticCustomError("devices_type", "must be auto or a list of device ids")
        if not value:
            raise PydanticCustomError("devices_empty", "must list at least one device id")
        seen: set[str] = set()
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, int | str) or item == "":
                raise RuleError((i,), "must be a device id (an integer or a name)", item)
            if isinstance(item, int) and item < 0:
                raise RuleError((i,), "must be >= 0", item)
            if str(item) in seen:
                raise RuleError((i,), "repeats an earlier device id", item)
            seen.add(str(item))
        return value

    @model_validator(mode="after")
    def _fits(self) -> ResourcesConfig:
        self._parallel_given = "parallel" in self.model_fields_set
        listed = len(self.devices) if isinstance(self.devices, list) else None
        share = self.trials_per_device
        if self.kind == "cpu" and share != 1:
            raise RuleError(
                ("per_trial",),
                "must be a whole number with kind: cpu (CPU slots share no device; "
                "resources.parallel says how many trials run at once)",
                self.per_trial,
            )
        if share is None or share > 1:
            per_device = share or AUTO_PER_DEVICE
            # Devices found at run time may hold more: the executor fills them, and the
            # campaign then plans for what it can run (`fit`).
            if not self._parallel_given:
                self.parallel = per_device * (listed or 1)
            elif listed is not None and self.parallel > per_device * listed:
                raise RuleError(
                    ("parallel",),
                    f"must be <= {per_device * listed} ({listed} devices listed, "
                    f"{per_device} trials per device at per_trial: {self.per_trial})",
                    self.parallel,
                )
            return self
        if listed is not None and self.parallel * self.devices_per_trial > listed:
            raise RuleError(
                ("parallel",),
                f"times per_trial ({self.per_trial}) must be <= the {listed} devices listed",
                self.parallel,
            )
        return self


def check_resources(resources: ResourcesConfig, parameters: Iterable[str]) -> None:
    """The rule between ``resources:`` and the rest: ``memory_params`` names parameters of
    the space."""
    known = list(parameters)
    for i, name in enumerate(resources.memory_params or ()):
        if name not in known:
            raise RuleError(
                ("resources", "memory_params", i),
                "must name a parameter of the campaign" + suggest(name, known),
                name,
            )
