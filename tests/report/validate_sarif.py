#!/usr/bin/env python3
"""Validates SARIF files against the official SARIF 2.1.0 JSON schema (tests/data/sarif-schema-2.1.0.json).

    validate_sarif.py FILE|DIR|GLOB ...

A FILE must exist. A DIR stands for the *.sarif files in it, and a GLOB (quoted, e.g. 'recordings/*.sarif') for
the files it matches; either may match none (goldens that are not committed yet). Prints one line per error:
FILE: JSON-PATH: MESSAGE. Exits 1 on any error, and also when python3-jsonschema is missing: a test that cannot
run must not pass. Never touches the network: the schema's $ref are local and its meta-schema is jsonschema's own.
"""

import argparse
import glob
import json
import os
import re
import sys

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "sarif-schema-2.1.0.json")
SYSTEM_PYTHON = "/usr/bin/python3"  # where Debian's python3-jsonschema installs


def import_jsonschema():
    """jsonschema, from this interpreter or from Debian's: `python3` may be another one (pyenv) than the one
    apt-get installed python3-jsonschema for."""
    try:
        import jsonschema  # noqa: F401
        return jsonschema
    except ImportError:
        pass
    if os.path.exists(SYSTEM_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) \
            and not os.environ.get("VALIDATE_SARIF_REEXEC"):
        os.environ["VALIDATE_SARIF_REEXEC"] = "1"
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
    print("validate_sarif: ERROR: the Python module jsonschema is missing: apt-get install python3-jsonschema",
          file=sys.stderr)
    sys.exit(1)


# RFC 3986: the characters a URI (reference) may hold, percent-encoded octets aside. jsonschema checks the "uri"
# formats only when an optional package (rfc3987) is installed; these checks always run.
URI_CHARS = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$")
URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def format_checker(jsonschema):
    checker = jsonschema.FormatChecker()

    @checker.checks("uri-reference")
    def is_uri_reference(value):
        return not isinstance(value, str) or bool(URI_CHARS.match(value))

    @checker.checks("uri")
    def is_uri(value):
        return not isinstance(value, str) or bool(URI_CHARS.match(value) and URI_SCHEME.match(value))

    return checker


def refuse(uri):
    raise RuntimeError("validate_sarif does not fetch anything (asked for %s)" % uri)


def make_validator(jsonschema, schema):
    """A Draft-07 validator that resolves the schema's $ref within the file and refuses any other reference."""
    jsonschema.Draft7Validator.check_schema(schema)
    checker = format_checker(jsonschema)
    try:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT7
    except ImportError:  # jsonschema before 4.18 (Debian bookworm has 4.10): the older resolver
        handlers = {scheme: refuse for scheme in ("http", "https", "ftp", "file")}
        resolver = jsonschema.RefResolver.from_schema(schema, handlers=handlers)
        return jsonschema.Draft7Validator(schema, resolver=resolver, format_checker=checker)
    resource = Resource.from_contents(schema, default_specification=DRAFT7)
    registry = Registry(retrieve=refuse).with_resource(schema["$id"], resource)
    return jsonschema.Draft7Validator(schema, registry=registry, format_checker=checker)


def json_path(parts):
    path = "$"
    for p in parts:
        if isinstance(p, int):
            path += "[%d]" % p
        elif re.match(r"^[A-Za-z_$][\w$]*$", p):
            path += "." + p
        else:
            path += "[%s]" % json.dumps(p)
    return path


def shorten(text, limit=300):
    return text if len(text) <= limit else text[:limit] + "..."


def describe(jsonschema, error):
    """The error's own message; for anyOf/oneOf, also the branch that came closest."""
    text = shorten(error.message)
    if error.context:
        best = jsonschema.exceptions.best_match(error.context)
        text += " (closest: %s at %s)" % (shorten(best.message), json_path(best.absolute_path))
    return text


def consistency_errors(log):
    """What code scanning relies on and the schema cannot say: each result's ruleIndex names its ruleId, and each
    uriBaseId is defined by the run."""
    for r, run in enumerate(log.get("runs") or []):
        if not isinstance(run, dict):
            continue
        rules = ((run.get("tool") or {}).get("driver") or {}).get("rules") or []
        bases = run.get("originalUriBaseIds") or {}
        for i, result in enumerate(run.get("results") or []):
            where = ["runs", r, "results", i]
            index = result.get("ruleIndex")
            if isinstance(index, int) and index >= 0:
                if index >= len(rules) or rules[index].get("id") != result.get("ruleId"):
                    yield where + ["ruleIndex"], "ruleIndex %d does not name rule %r" % (index, result.get("ruleId"))
            for path, value in walk(result, where):
                if path[-1] == "uriBaseId" and value not in bases:
                    yield path, "uriBaseId %r is not in run.originalUriBaseIds" % value


def walk(value, path):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from walk(v, path + [k])
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk(v, path + [i])
    else:
        yield path, value


def validate(jsonschema, validator, path):
    """Error lines for one file."""
    try:
        with open(path, encoding="utf-8") as f:
            log = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return ["%s: $: cannot read as JSON: %s" % (path, e)]
    lines = []
    errors = sorted(validator.iter_errors(log), key=lambda e: [str(p) for p in e.absolute_path])
    for e in errors:
        lines.append("%s: %s: %s" % (path, json_path(e.absolute_path), describe(jsonschema, e)))
    if not errors:
        for where, message in consistency_errors(log):
            lines.append("%s: %s: %s" % (path, json_path(where), message))
    return lines


def expand(args):
    """FILE -> itself (missing: an error); DIR -> its *.sarif; GLOB -> its matches. Returns (files, errors)."""
    files, errors = [], []
    for arg in args:
        if os.path.isdir(arg):
            files += sorted(glob.glob(os.path.join(arg, "*.sarif")))
        elif glob.has_magic(arg):
            files += sorted(glob.glob(arg))
        elif os.path.isfile(arg):
            files.append(arg)
        else:
            errors.append("%s: $: no such file (was the test that writes it run first?)" % arg)
    return files, errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="SARIF files, directories of *.sarif, or quoted globs")
    parser.add_argument("--schema", default=SCHEMA, help="the SARIF 2.1.0 JSON schema (default: %(default)s)")
    args = parser.parse_args()
    jsonschema = import_jsonschema()
    with open(args.schema, encoding="utf-8") as f:
        validator = make_validator(jsonschema, json.load(f))
    files, errors = expand(args.paths)
    if not files and not errors:
        errors.append("validate_sarif: nothing to validate in %s" % " ".join(args.paths))
    for path in files:
        errors += validate(jsonschema, validator, path)
    for line in errors:
        print(line)
    print("validate_sarif: %d file%s, %d error%s" % (len(files), "" if len(files) == 1 else "s", len(errors),
                                                      "" if len(errors) == 1 else "s"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
