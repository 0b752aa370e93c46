"""``tuner devices [CONFIG]``: what the tuner finds on this machine (GPUs and their MIG
instances, NPUs, the visible-device lists) and how a campaign's ``resources`` would cut them
into trial slots."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

ORDER = 60


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "devices",
        help="show the GPUs/NPUs the tuner finds and how a config's slots would be cut",
        description="Probe this machine as resources.devices: auto does (nvidia-smi -L for "
        "CUDA GPUs and their MIG instances, npu-smi info -l or /dev/davinci* for Ascend "
        "NPUs), show the CUDA_VISIBLE_DEVICES and ASCEND_RT_VISIBLE_DEVICES the tuner was "
        "started with, and one line per problem (a tool failing, a visible list naming "
        "devices the machine lacks; a tool missing only when nothing was found and the "
        "config asks for GPUs or NPUs). With CONFIG, the trial slots that campaign would "
        "get. Exit 0, or 2 for a bad config.",
    )
    parser.add_argument("config", nargs="?", default=None, metavar="CONFIG",
                        help="a campaign YAML file")  # fmt: skip
    parser.add_argument("--config", dest="config_option", default=None, metavar="FILE",
                        help="the same as CONFIG")  # fmt: skip
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(handler=run)


def _slots(config_path: str) -> dict[str, Any]:
    from tuner.config import load_config
    from tuner.executors import detect_devices, slots_for

    config = load_config(config_path)
    res = config.resources
    if config.executor.name == "ray":
        return {
            "executor": "ray",
            "asks": res.kind,
            "note": "slots are Ray resources of the cluster's nodes (num_gpus, NPU), "
            f"{res.per_trial} per trial",
            "slots": [],
        }
    kind = res.kind if res.kind != "auto" else detect_devices(None)[0]
    slots = slots_for(res, kind)
    return {
        "executor": "local",
        "asks": res.kind,
        "kind": kind,
        "per_trial": res.per_trial,
        "slots": [{"label": s.label, "share": s.share, "env": s.env()} for s in slots],
    }


def run(args: argparse.Namespace) -> int:
    from tuner.executors import take_inventory

    inv = take_inventory()
    path = args.config or args.config_option
    plan = _slots(path) if path else None
    # A machine without accelerators is meant to lack their tools, unless the config asks.
    if plan is not None and plan["asks"] in ("gpu", "npu"):
        inv.problems = inv.missing + inv.problems
    if args.format == "json":
        doc = inv.to_dict()
        if plan is not None:
            doc["config"] = {"path": path, **plan}
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0

    def listed(devices: list[dict[str, str]]) -> str:
        return ", ".join(f"{d['id']} ({d['name']})" for d in devices) or "none"

    lines = [
        f"GPUs (nvidia-smi -L): {listed(inv.gpus)}",
        f"NPUs (npu-smi info -l, /dev/davinci*): {listed(inv.npus)}",
    ]
    for variable, value in inv.visible.items():
        lines.append(f"{variable}: {'unset' if value is None else repr(value)}")
    kind, ids = inv.usable
    lines.append(
        "resources.devices: auto gives "
        + (f"{kind} devices {', '.join(ids)}" if ids else "CPU slots (no GPU or NPU usable)")
    )
    if plan is not None:
        if plan["executor"] == "ray":
            lines.append(f"{path}: Ray executor: {plan['note']}")
        else:
            slots = plan["slots"]
            shown = "; ".join(
                s["label"] + "".join(f" {k}={v!r}" for k, v in s["env"].items()) for s in slots
            )
            shared = slots[0]["share"] if slots else 1
            how = (
                f", up to {shared} trials per device (per_trial: {plan['per_trial']})"
                if shared > 1
                else ""
            )
            lines.append(f"{path}: {len(slots)} slot(s) of kind {plan['kind']}{how}: {shown}")
    for problem in inv.problems:
        lines.append(f"problem: {problem}")
    from lineage.console import print_text  # each line wrapped at spaces on a terminal

    for line in lines:
        print_text(line)
    return 0
