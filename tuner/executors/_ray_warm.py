"""Warm slots on a Ray cluster: one long-lived actor per trial slot, each with a warm parent.

With ``trial.preload`` the Ray executor keeps ``parallel`` actors, each holding the resources
of one trial (``{GPU|NPU|CPU: per_trial}``) for the executor's life. An actor starts a warm
parent (`tuner.executors._warm`) on its node the first time it runs a trial and forks every
later trial from it, so a trial pays neither Ray's worker start nor its framework's imports.

Each trial is still a process of its own: own session (prune, timeout, SIGTERM and SIGKILL
reach its process group), own environment (the actor's Ray-assigned devices plus the trial's
contract), argv and MLflow run; nothing it changes reaches the next trial. It never outlives
its actor: the warm parent runs with ``die_with_owner``, so killing the actor's worker (a lost
node, a forced cancel) ends the trial and the parent with it. A command the slot cannot start
warm starts cold, as in `tuner.executors._ray_node.run_trial`, and the first item it yields
says why.

Stopping is the actor's `WarmSlot.stop`, called by the driver beside the running `WarmSlot.run`
(the actor serves two calls at once): the trial gets its stop flag, SIGTERM, then SIGKILL after
the grace period, and the attempt still ends with its outcome.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

from tuner.executors._ray_node import follow_trial, start_cold
from tuner.executors._warm import WarmParent, WarmStartError, plan

__all__ = ["WarmSlot", "WarmSlots"]


class WarmSlot:
    """The node side: a Ray actor (made with ``max_concurrency=2``) running one trial at a
    time, each forked from the warm parent it keeps."""

    def __init__(self, preload: bool | Sequence[str], env: Mapping[str, str]) -> None:
        self._preload = preload
        self._env = dict(env)  # the campaign's `env:`, which the parent imports under
        self._parent: WarmParent | None = None
        self._stopped: set[tuple[int, int]] = set()
        self._cleared: dict[tuple[int, int], int] = {}

    def _warm_parent(self, payload: dict[str, Any]) -> tuple[WarmParent | None, Any, str | None]:
        how, why = plan(payload["argv"], payload["workdir"], self._preload)
        if how is None:
            return None, None, why
        parent = self._parent
        same = parent is not None and (parent.modules, parent.path0) == (how.modules, how.path0)
        if parent is None or not same or not (parent.alive or parent.unsafe):
            if parent is not None:
                parent.close()
            env = {**os.environ, **self._env}
            parent = WarmParent(how.modules, env, die_with_owner=True, path0=how.path0)
            self._parent = parent
        try:
            why = parent.wait_ready()
        except WarmStartError as exc:
            why = str(exc)
        return (None, None, why) if why else (parent, how, None)

    def run(self, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        key = (payload["number"], payload["attempt"])
        parent, how, why = self._warm_parent(payload)
        notes = {"cold": why}

        def start(
            payload: dict[str, Any], env: dict[str, str], out: IO[bytes], err: IO[bytes]
        ) -> Any:
            if parent is not None:
                try:
                    outputs = (out.fileno(), err.fileno())
                    return parent.launch(
                        how.target, how.module, how.args, payload["workdir"], env, outputs
                    )
                except WarmStartError as exc:
                    notes["cold"] = str(exc)
            return start_cold(payload, env, out, err)

        try:
            yield from follow_trial(
                payload,
                start,
                lambda: key in self._stopped,
                lambda: notes["cold"],
                lambda: self._cleared.get(key),
            )
        finally:
            self._stopped.discard(key)
            self._cleared.pop(key, None)

    def stop(self, number: int, attempt: int) -> None:
        self._stopped.add((number, attempt))

    def go_on(self, number: int, attempt: int, step: int) -> None:
        """The controller let the attempt go on past ``step`` (see `follow_trial`)."""
        key = (number, attempt)
        self._cleared[key] = max(step, self._cleared.get(key, -1))

    def close(self) -> None:
        if self._parent is not None:
            self._parent.close()
            self._parent = None


class WarmSlots:
    """The driver side: the executor's actors, made on first use and replaced when lost."""

    def __init__(
        self,
        ray: Any,
        preload: bool | Sequence[str],
        options: dict[str, Any],
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._ray = ray
        self._preload = preload
        self._env = dict(env or {})
        self._cls = ray.remote(max_concurrency=2, max_restarts=0)(WarmSlot).options(**options)
        self._actors: dict[int, Any] = {}

    def actor(self, index: int) -> Any:
        if index not in self._actors:
            self._actors[index] = self._cls.remote(self._preload, self._env)
        return self._actors[index]

    def run(self, index: int, name: str, payload: dict[str, Any]) -> Any:
        """The attempt's streaming generator on slot ``index``."""
        method = self.actor(index).run.options(num_returns="streaming", name=name)
        return method.remote(payload)

    def stop(self, index: int, number: int, attempt: int) -> None:
        with contextlib.suppress(Exception):
            self._actors[index].stop.remote(number, attempt)

    def go_on(self, index: int, number: int, attempt: int, step: int) -> None:
        with contextlib.suppress(Exception):  # a lost actor: the trial's wait is bounded
            self._actors[index].go_on.remote(number, attempt, step)

    def kill(self, index: int) -> None:
        """Ends slot ``index``'s actor (its warm parent and trial go with it); the next trial
        on the slot gets a new one."""
        actor = self._actors.pop(index, None)
        if actor is not None:
            with contextlib.suppress(Exception):
                self._ray.kill(actor, no_restart=True)

    def close(self) -> None:
        for index in list(self._actors):
            with contextlib.suppress(Exception):
                self._ray.get(self._actors[index].close.remote(), timeout=15)
            self.kill(index)
