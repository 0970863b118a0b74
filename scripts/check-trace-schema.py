#!/usr/bin/env python3
"""Validates every line of durasim trace files against traces/trace-format.schema.json.

Usage: check-trace-schema.py TRACE...   Exit 0 when every line of every file is valid; otherwise
prints "FILE: line N: reason" for the first invalid line of each file and exits 1. The loader
(traces/trace_file.cc) also checks order, counts and hashes; this checks each line's shape, so the
schema stays the documented truth about the format. Needs python3-jsonschema (scripts/bootstrap.sh).
"""
import json
import pathlib
import sys

import jsonschema

SCHEMA = pathlib.Path(__file__).resolve().parent.parent / "traces" / "trace-format.schema.json"


def first_invalid_line(validator, path):
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            try:
                validator.validate(json.loads(line))
            except (ValueError, jsonschema.ValidationError) as error:
                reason = error.message if isinstance(error, jsonschema.ValidationError) else str(error)
                return f"line {number}: {reason}"
    return None


def main(paths):
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    failed = False
    for path in paths:
        problem = first_invalid_line(validator, path)
        if problem:
            print(f"{path}: {problem}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
