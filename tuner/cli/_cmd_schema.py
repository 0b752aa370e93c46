"""``tuner schema``: the campaign config's JSON Schema, for editor completion and checks."""

from __future__ import annotations

import argparse
import json
import sys

ORDER = 90


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of campaign configs",
        description="Print the JSON Schema of campaign configs (for editor completion: "
        "`# yaml-language-server: $schema=tuner.schema.json`).",
    )
    parser.add_argument("--output", "-o", default=None, help="write to this file, not stdout")
    parser.set_defaults(handler=run)


def schema() -> dict[str, object]:
    from tuner.config import CampaignConfig

    body = CampaignConfig.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **body,
        "title": "lineage-tuner campaign",
    }


def run(args: argparse.Namespace) -> int:
    text = json.dumps(schema(), indent=2) + "\n"
    if args.output:
        from pathlib import Path

        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            from tuner._errors import TunerError

            raise TunerError(f"{args.output}: cannot write ({exc.strerror or exc})") from None
    else:
        sys.stdout.write(text)
    return 0
