"""Trials as Ray tasks: each holds ``{GPU|NPU|CPU: per_trial}`` on some node of a cluster.

One trial attempt is one streaming-generator task (`tuner.executors._ray_node.run_trial`).
On its node the task starts the trial command as a subprocess (own session, killed with the
task if the task dies), gives it the environment contract of `tuner._protocol` (Ray has
already restricted the visible GPUs or NPUs to the task's; the Ascend device id is added),
then tails the trial's report channel and its stdout/stderr and yields them back in small
batches, so the controller prunes from intermediate values exactly as with local trials. The
last item is the outcome.

Stopping (prune, shutdown) is ``ray.cancel(force=False)``: Ray raises ``KeyboardInterrupt`` in
the task, which raises the trial's stop flag, sends SIGTERM to its process group and SIGKILL
after the grace period, then returns. A task that still runs ``grace_period + 15`` s later is
cancelled with ``force=True`` (its worker is killed; the trial process follows through
``PR_SET_PDEATHSIG``). A node or worker that dies ends the generator with a Ray error: the
attempt fails with that reason (``signal=SIGKILL``), and the controller retries it as any
failed attempt. Timeouts are enforced on the node by the task itself.

With ``preload`` (``trial.preload``) an attempt is instead a streaming call on one of
``parallel`` long-lived actors, one per slot, that forks the trial from a warm parent
(`tuner.executors._ray_warm`); stopping it is the actor's ``stop`` call, and forcing it kills
the actor (the next trial on that slot gets a new one).

``ray`` is imported only when a `RayExecutor` is made. Every node needs this package installed
(the task imports ``tuner.executors._ray_node``), and ``workdir`` must exist on the nodes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tuner import _protocol as protocol
from tuner._errors import ConfigError, TunerError
from tuner.config import ResourcesConfig
from tuner.executors._base import (
    Executor,
    ExecutorFullError,
    Placed,
    Report,
    TrialHandle,
    TrialOutcome,
    TrialSpec,
)
from tuner.executors._packing import Packing
from tuner.executors._ray_node import RESOURCE, channel_rest, run_trial
from tuner.executors._ray_packing import RayPacking
from tuner.executors._ray_warm import WarmSlots

__all__ = ["RayExecutor"]

_FORCE_AFTER = 15.0
#: How long the controller waits for the reports a dead attempt's node still holds.
_REST_TIMEOUT_S = 10.0


class RayExecutor(Executor):
    """Runs each trial attempt as a Ray task on a cluster (``address``: ``auto``, ``ray://...``,
    ``host:port``, or None to start a local Ray instance in this process).

    ``kind`` is ``gpu``, ``npu``, ``cpu`` or ``auto`` (GPU if the cluster has any, else NPU,
    else CPU); each trial requests ``per_trial`` of that resource (accelerator trials also take
    one CPU); a fraction such as 0.25 lets Ray put four trials on one GPU or NPU, and ``auto``
    asks for each trial's share by its memory estimate (``packing``, see
    `tuner.executors._ray_packing`). ``parallel`` caps the trials in flight (None: what the
    cluster's devices hold at ``per_trial``); Ray queues what the cluster cannot place yet.
    ``preload``: as `tuner.executors.LocalExecutor`'s, with one warm actor per slot (not under
    ``auto``, whose requests differ trial by trial); ``preload_env`` (the campaign's ``env:``)
    is the environment its parent imports under. ``sample_interval``: seconds between two
    memory samples of a trial on a shared device.
    """

    name = "ray"

    def __init__(
        self,
        *,
        address: str | None,
        kind: str = "auto",
        per_trial: float | str = 1,
        parallel: int | None = 1,
        packing: Packing | None = None,
        per_device: int = ResourcesConfig.AUTO_PER_DEVICE,
        sample_interval: float = 1.0,
        poll_interval: float = 0.1,
        init_kwargs: Mapping[str, Any] | None = None,
        preload: bool | Sequence[str] = False,
        preload_env: Mapping[str, str] | None = None,
    ) -> None:
        import ray

        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
            kwargs.update(init_kwargs or {})
            try:
                ray.init(address=address, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise TunerError(
                    f"executor.address: cannot connect to a Ray cluster at {address!r}: "
                    f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                ) from None
        self._ray = ray
        total = ray.cluster_resources()
        if kind == "auto":
            kind = "gpu" if total.get("GPU") else "npu" if total.get("NPU") else "cpu"
        if kind not in RESOURCE:
            raise ConfigError(f"resources.kind must be one of gpu, npu, cpu, auto, got {kind!r}")
        have = float(total.get(RESOURCE[kind], 0.0))
        auto = per_trial == "auto"
        if auto and kind == "cpu":
            raise ConfigError(
                f"resources.per_trial: auto needs GPU or NPU resources in the Ray cluster at "
                f"{address or 'local'}, got kind {kind}"
            )
        least = 1.0 if isinstance(per_trial, str) else float(per_trial)
        if have < least:
            raise ConfigError(
                f"resources.per_trial must be <= the {RESOURCE[kind]} resources of the Ray "
                f"cluster at {address or 'local'} ({have:g} now), got {per_trial}"
            )
        self.kind = kind
        self._per_trial = per_trial
        if parallel is None:  # what the cluster's devices hold
            parallel = int(have) * per_device if auto else int(have / least + 1e-9)
        self._capacity = max(1, parallel)
        self._cluster_total = have
        self._poll_interval = poll_interval
        self._sample_interval = sample_interval
        self._handles: list[_RayHandle] = []
        self._closed = False
        self._remote = ray.remote(num_returns="streaming", max_retries=0)(run_trial)
        self._rest = ray.remote(num_cpus=0, max_retries=0)(channel_rest)
        shared = auto or least < 1
        self._packing = (
            RayPacking(per_trial, packing, devices=int(have), per_device=per_device)
            if shared and kind != "cpu"
            else None
        )
        self._said: set[str] = set()
        self._warm = None
        if preload is not False and auto:
            self._say(
                "per_trial: auto on Ray asks for each trial's share of a device as it starts, "
                "and a warm actor holds a fixed one"
            )
        elif preload is not False:
            self._warm = WarmSlots(ray, preload, self._options(least), preload_env)

    @property
    def capacity(self) -> int:
        return self._capacity

    def free_slots(self) -> int:
        live = [h for h in self._handles if not h.finished]
        if self._packing is not None and not self._packing.may_submit(live):
            return 0
        return self._capacity - len(live)

    def recall(self, placed: Sequence[Placed]) -> str | None:
        return None if self._packing is None else self._packing.recall(placed)

    def _options(self, share: float) -> dict[str, Any]:
        if self.kind == "gpu":
            return {"num_gpus": share, "num_cpus": 1}
        if self.kind == "npu":
            return {"resources": {"NPU": share}, "num_cpus": 1}
        return {"num_cpus": share}

    def submit(self, spec: TrialSpec) -> TrialHandle:
        if self._closed:
            raise RuntimeError("RayExecutor.submit after shutdown")
        if self.free_slots() <= 0:
            raise ExecutorFullError(f"all {self.capacity} slots are busy")
        env = {k: os.environ[k] for k in protocol.FORWARDED_ENV if k in os.environ}
        env.update(spec.env)
        payload = {
            "kind": self.kind,
            "number": spec.number,
            "attempt": spec.attempt,
            "argv": list(spec.argv),
            "env": env,
            "workdir": spec.workdir,
            "timeout": spec.timeout,
            "grace_period": spec.grace_period,
            "poll_interval": self._poll_interval,
            # Trials sharing a device are measured on their node.
            "memory_interval": None if self._packing is None else self._sample_interval,
        }
        name = f"tuner-trial-{spec.number}-{spec.attempt}"
        share, alone = (
            (float(self._per_trial), False)
            if self._packing is None
            else self._packing.request(spec.params)
        )
        request = f"{self.kind}x{share:g}"
        live = [h for h in self._handles if not h.finished]
        if self._warm is None or alone:  # a warm actor holds a fixed share
            gen = self._remote.options(name=name, **self._options(share)).remote(payload)
            handle = _RayHandle(self._ray, spec, gen, request, self._say, packing=self._packing)
        else:
            warm = self._warm
            index = min(set(range(self._capacity)) - {h.slot_index for h in live})
            for old in self._handles:
                if old.slot_index == index and old.lost:
                    warm.kill(index)  # its actor died or was forced: a fresh one
            gen = warm.run(index, name, payload)
            handle = _RayHandle(
                self._ray, spec, gen, request, self._say, index, packing=self._packing
            )
            handle.stopper = lambda: warm.stop(index, spec.number, spec.attempt)
            handle.clearer = lambda step: warm.go_on(index, spec.number, spec.attempt, step)
            handle.killer = lambda: warm.kill(index)
        handle.rest = self._rest
        self._handles = [*live, handle]
        return handle

    def _say(self, why: str) -> None:
        if why not in self._said:
            self._said.add(why)
            print(f"tuner: trials start cold: {why}", file=sys.stderr)

    def wait(self, timeout: float) -> None:
        live = [h.generator for h in self._handles if not h.finished]
        if not live:
            time.sleep(timeout)
            return
        self._ray.wait(live, num_returns=1, timeout=timeout)

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        live = [h for h in self._handles if not h.finished]
        for handle in live:
            handle.terminate()
        deadline = time.monotonic() + max((h.spec.grace_period for h in live), default=0) + 20
        while time.monotonic() < deadline and any(h.poll() is None for h in live):
            self.wait(0.2)
        if self._warm is not None:
            self._warm.close()

    def describe(self) -> str:
        unit = RESOURCE[self.kind]
        each = "a share by measured memory" if self._per_trial == "auto" else self._per_trial
        return (
            f"ray: {self.capacity} trial(s) at once, {each} {unit} each "
            f"(cluster has {self._cluster_total:g} {unit})"
        )


class _RayHandle(TrialHandle):
    def __init__(
        self,
        ray: Any,
        spec: TrialSpec,
        generator: Any,
        request: str,
        say: Callable[[str], None],
        slot_index: int = -1,
        *,
        packing: RayPacking | None = None,
    ) -> None:
        self._ray = ray
        self._packing = packing
        self._request = request
        self._say = say
        self.slot_index = slot_index
        # A warm slot's trial stops through its actor, and a forced stop kills the actor.
        self.stopper: Callable[[], None] | None = None
        self.killer: Callable[[], None] | None = None
        #: Tells the node the controller let the trial go on past a step (warm slots only).
        self.clearer: Callable[[int], None] | None = None
        #: The remote `channel_rest`: what the trial reported after its worker's last item.
        self.rest: Any = None
        self._channel_bytes = 0
        self._channel_path: str | None = None
        self._cleared = -1
        self.lost = False
        self.spec = spec
        self.generator = generator
        self.devices: tuple[str, ...] = ()
        self.started_at = time.time()
        self._t0 = time.monotonic()
        self._info: dict[str, Any] = {}
        self._reports: list[Report] = []
        self._lines: list[str] = []
        self._channel = protocol.ChannelReader()
        self._outcome: TrialOutcome | None = None
        self._stop_at: float | None = None
        self._forced = False
        self.finished = False

    def _drain(self) -> None:
        ray = self._ray
        while self._outcome is None:
            ready, _ = ray.wait([self.generator], num_returns=1, timeout=0)
            if not ready:
                break
            try:
                ref = next(self.generator)
            except StopIteration:
                # A cancelled task returns without its last item.
                self._end(TrialOutcome(exit_code=None, stopped=True, duration=self._elapsed()))
                break
            try:
                item = ray.get(ref)
            except ray.exceptions.TaskCancelledError:
                self._end(TrialOutcome(exit_code=None, stopped=True, duration=self._elapsed()))
            except ray.exceptions.RayError as exc:
                self._recover_reports()
                self._end(self._lost(exc))
            else:
                self._take(item)

    def _recover_reports(self) -> None:
        """After the attempt's worker died: the reports its trial wrote to the channel on
        the node after the last item the worker sent, read by a task pinned to that node
        (a node that is gone takes them with it: the read then fails and they stay lost)."""
        node, path = self._info.get("node_id"), self._channel_path
        if self.rest is None or not node or not path:
            return
        try:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            strategy = NodeAffinitySchedulingStrategy(node_id=str(node), soft=False)
            ref = self.rest.options(scheduling_strategy=strategy).remote(
                str(path), self._channel_bytes
            )
            rest = self._ray.get(ref, timeout=_REST_TIMEOUT_S)
        except Exception:  # node gone, cluster shutting down: the attempt fails as it would
            return
        if rest:
            self._reports.extend(self._channel.feed(rest))

    def _take(self, item: Mapping[str, Any]) -> None:
        kind = item["type"]
        if kind == "start":
            self.devices = tuple(str(d) for d in item["devices"])
            self.started_at = float(item["started_at"])
            self._info = {k: item[k] for k in ("host", "node_ip", "node_id", "pid", "devices")}
            self._channel_path = item.get("channel")
            if item.get("cold"):
                self._say(item["cold"])
            if self._packing is not None:
                self._packing.started(self, str(item["node_id"]), self.devices)
        elif kind == "memory":
            if self._packing is not None:
                self._packing.measured(self, float(item["mib"]), item.get("total"))
        elif kind == "io":
            self._channel_bytes += len(item["channel"])
            self._reports.extend(self._channel.feed(item["channel"]))
            self._lines.extend(item["lines"])
        elif kind == "end":
            fields = dict(item["outcome"])
            if self._stop_at is not None and not fields.get("timed_out"):
                fields["stopped"] = True
            self._end(TrialOutcome(**fields))

    def _lost(self, exc: Exception) -> TrialOutcome:
        self.lost = True
        where = self._info.get("host") or self._info.get("node_ip") or "its node"
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        reason = f"ray: the trial's task on {where} was lost ({type(exc).__name__}): {first}"
        if self._stop_at is not None:
            return TrialOutcome(exit_code=None, stopped=True, duration=self._elapsed())
        if not self._info:
            return TrialOutcome(exit_code=None, launch_error=reason, duration=self._elapsed())
        return TrialOutcome(
            exit_code=None, signal=int(signal.SIGKILL), duration=self._elapsed(), stderr_tail=reason
        )

    def _end(self, outcome: TrialOutcome) -> None:
        if self._packing is not None:
            outcome = self._packing.ended(self, outcome)
        self._outcome = outcome

    @property
    def started(self) -> bool:
        """Ray placed the trial's task and its process started (or it already ended)."""
        return bool(self._info) or self._outcome is not None

    def _elapsed(self) -> float:
        return time.monotonic() - self._t0

    def poll(self) -> TrialOutcome | None:
        self._drain()
        if (
            self._outcome is None
            and self._stop_at is not None
            and not self._forced
            and time.monotonic() > self._stop_at + self.spec.grace_period + _FORCE_AFTER
        ):
            self._forced = True
            self.lost = True
            if self.killer is not None:
                self.killer()
            else:
                with contextlib.suppress(Exception):
                    self._ray.cancel(self.generator, force=True)
        if self._outcome is not None:
            self.finished = True
        return self._outcome

    def reports(self) -> list[Report]:
        self._drain()
        out, self._reports = self._reports, []
        return out

    @property
    def reported_memory(self) -> float | None:
        return self._channel.memory

    def output_lines(self) -> list[str]:
        self._drain()
        out, self._lines = self._lines, []
        return out

    def go_on(self, step: int) -> None:
        # Only a trial told where it may be paused waits for a verdict: no call otherwise.
        if self.clearer is None or step <= self._cleared:
            return
        if not protocol.pauses(self.spec.env):
            return
        self._cleared = step
        self.clearer(step)

    def request_prune(self) -> None:
        if self._stop_at is not None or self._outcome is not None:
            return
        self._stop_at = time.monotonic()
        if self.stopper is not None:
            self.stopper()
            return
        with contextlib.suppress(Exception):
            self._ray.cancel(self.generator, force=False)

    def terminate(self) -> None:
        self.request_prune()

    def process_info(self) -> Mapping[str, Any]:
        return dict(self._info)

    @property
    def slot(self) -> _RaySlot:
        """What the controller records as the trial's device (Ray places the task later)."""
        return _RaySlot(self)


class _RaySlot:
    def __init__(self, handle: _RayHandle) -> None:
        self._handle = handle

    @property
    def label(self) -> str:
        h = self._handle
        if not h._info:
            return f"ray:{h._request}"
        kind = h._request.split("x", 1)[0]
        where = h._info.get("node_ip") or h._info.get("host")
        return f"ray:{kind}:{','.join(h.devices) or '-'}@{where}"
