#!/usr/bin/env python3
"""Runs the tests CTest would select, one process per GoogleTest binary instead of one per test.

    scripts/ctest-by-binary.py BUILD_DIR JOBS [CTEST SELECTION ARGS...]
    e.g. scripts/ctest-by-binary.py build/asan 2 -LE daemon

The sanitizer stages of scripts/test.sh use it: a sanitized process takes 0.1-0.3 s to start
(shadow memory, the runtime's initialisation, the binary's relocations), and ctest starts one per
test case, ~1,300 of them. Here each binary runs once with a --gtest_filter naming exactly the
test cases the selection chose, in its CTest working directory, under a timeout of its tests'
CTest timeouts summed; the binaries go longest-first (by test count) onto JOBS workers. Tests that
are not GoogleTest cases (scripts, smoke runs) run through ctest itself, with their own
properties (resource locks, skip codes). A failing binary's output is printed, with the failed
cases' names; the exit status is 1 if anything failed.
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    build, jobs, selection = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    listing = subprocess.run(
        ["ctest", "--test-dir", build, "-N", "--show-only=json-v1", *selection],
        check=True, capture_output=True, text=True).stdout
    binaries = {}  # (binary, working directory) -> [names], timeout sum
    others = []
    for t in json.loads(listing)["tests"]:
        cmd = t.get("command") or []
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        if props.get("DISABLED"):
            continue
        gfilter = [a for a in cmd if a.startswith("--gtest_filter=")]
        if not gfilter:
            others.append(t["name"])
            continue
        key = (cmd[0], props.get("WORKING_DIRECTORY", os.path.dirname(cmd[0])))
        entry = binaries.setdefault(key, [[], 0.0])
        entry[0].append(gfilter[0].split("=", 1)[1])
        entry[1] += float(props.get("TIMEOUT", 300))

    def run_binary(key, names, timeout):
        binary, cwd = key
        start = time.monotonic()
        with tempfile.TemporaryFile(mode="w+") as out:
            try:
                rc = subprocess.run([binary, "--gtest_filter=" + ":".join(names)], cwd=cwd,
                                    stdout=out, stderr=subprocess.STDOUT,
                                    timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout after %d s" % timeout
            out.seek(0)
            text = out.read()
        return os.path.basename(binary), len(names), rc, time.monotonic() - start, text

    def run_others():
        start = time.monotonic()
        pattern = "^(" + "|".join(re.escape(n) for n in others) + ")$"
        p = subprocess.run(["ctest", "--test-dir", build, "--output-on-failure", "-R", pattern],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return "ctest (%d non-GoogleTest tests)" % len(others), len(others), p.returncode, \
            time.monotonic() - start, p.stdout

    failed = []
    total_tests = sum(len(v[0]) for v in binaries.values()) + len(others)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = []
        if others:
            futures.append(pool.submit(run_others))
        for key, (names, timeout) in sorted(binaries.items(), key=lambda kv: -len(kv[1][0])):
            futures.append(pool.submit(run_binary, key, names, min(timeout, 3600.0)))
        for f in concurrent.futures.as_completed(futures):
            name, n, rc, seconds, text = f.result()
            status = "passed" if rc == 0 else "FAILED (%s)" % rc
            print("%-44s %4d tests %7.1f s  %s" % (name, n, seconds, status), flush=True)
            if rc != 0:
                failed.append(name)
                cases = sorted(set(re.findall(r"^\[  FAILED  \] ([^ ,\n]+)", text, re.M)))
                print("---- output of %s (last 300 lines); failed: %s" % (name, " ".join(cases)))
                print("\n".join(text.splitlines()[-300:]), flush=True)
    if failed:
        print("== %d of %d tests' processes failed: %s" % (len(failed), total_tests,
                                                          ", ".join(failed)))
        return 1
    print("== %d tests passed (%d processes)" % (total_tests, len(binaries) + bool(others)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
