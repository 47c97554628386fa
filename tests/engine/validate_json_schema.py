#!/usr/bin/python3
"""Validates generated JSON outputs against their schemas with an independent validator
(Debian's python3-jsonschema), for tests/engine/json_schema_test.cpp.

  validate_json_schema.py OUTPUTS.jsonl CORPUS.json

OUTPUTS.jsonl: one {"schema": <index into CORPUS>, "text": <output>, "how": <label>} per line.
Each text must parse as JSON and validate against its schema (the validator its "$schema" names,
else draft 2020-12, with the format checker: formats it can check without extra packages, date,
email, ipv4 and uuid among them, are asserted). The corpus's own labels are checked first: every
"valid" instance must validate and every "invalid" one must not. Prints one line per failure and
a summary; exit 0 when all hold, 1 when any does not, 77 when jsonschema is not installed (the
test skips).
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed")
    sys.exit(77)

outputs, corpus_path = sys.argv[1], sys.argv[2]
corpus = json.load(open(corpus_path, encoding="utf-8"))
validators = []
checked = failed = 0
for entry in corpus:
    cls = jsonschema.validators.validator_for(entry["schema"], default=jsonschema.Draft202012Validator)
    v = cls(entry["schema"], format_checker=cls.FORMAT_CHECKER)
    validators.append(v)
    for x in entry["valid"]:
        if not v.is_valid(x):
            failed += 1
            print(f"LABEL [{entry['name']}]: {x!r} is labelled valid but does not validate")
    for x in entry["invalid"]:
        if v.is_valid(x):
            failed += 1
            print(f"LABEL [{entry['name']}]: {x!r} is labelled invalid but validates")
for line in open(outputs, encoding="utf-8"):
    rec = json.loads(line)
    checked += 1
    name = corpus[rec["schema"]]["name"]
    try:
        value = json.loads(rec["text"])
    except ValueError as e:
        failed += 1
        print(f"NOT JSON [{name}] ({rec['how']}): {rec['text']!r}: {e}")
        continue
    errors = list(validators[rec["schema"]].iter_errors(value))
    if errors:
        failed += 1
        print(f"INVALID [{name}] ({rec['how']}): {rec['text']!r}: {errors[0].message}")
from importlib.metadata import version
print(f"jsonschema {version('jsonschema')}: {checked} outputs checked, {failed} invalid")
sys.exit(1 if failed else 0)
