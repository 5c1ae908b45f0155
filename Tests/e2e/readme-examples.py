#!/usr/bin/env python3
"""Runs the shell examples of the README and of every page in docs/ as a new user pastes them,
and checks each does what the text beside it says.

    python3 Tests/e2e/readme-examples.py .build/debug/receiptdash [FILE.md ...]

Which: README.md, then every docs/*.md in name order (or the Markdown files given). Each file is
run on its own, as a new user who opens that page meets it: in a scratch copy of the
repository's files (what a new user has after cloning), with only `receiptdash` (a symlink to
the binary given) added to PATH and HOME pointing inside the scratch folder, so the default
audit database is the file's own. A file's examples run one after another in its folder, as a
user follows the page: a file one example writes is there for the next, and a page never
depends on another page's examples. Background jobs a file's examples started are stopped
before the next file runs.

What is run: every ```sh block followed by marker comments (invisible on GitHub):

    <!-- readme-test: check: SHELL -->   run after the block; must exit 0. $OUT and $ERR name
                                         files holding the block's output, $STATUS is its
                                         exit status.
    <!-- readme-test: until: SHELL -->   the block runs a server in the foreground: it is
                                         stopped (SIGTERM to its process group) once SHELL
                                         succeeds (polled; bounded only against a hang;
                                         $OUT and $ERR as for check).
    <!-- readme-test: skip: REASON -->   not run, for the reason given.

A ```sh block with none of these must be a synopsis (its lines show `[--option]` or `[ARG]`);
an example nobody marked fails the run, so a new example cannot go unchecked. Background jobs
a block starts (`receiptdash simulator … &`) are left running, as in the user's terminal:
they keep running through the examples after theirs in the same file (so two examples that
would collide on a port, pasted one after the other, fail here too) and are stopped at the
end of the file.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# Bounds against a hang only: no check depends on how fast the machine is.
BLOCK_LIMIT = 300
STOP_GRACE = 15

MARKER = re.compile(r"^<!-- readme-test: (check|until|skip): (.*) -->$")
SYNOPSIS = re.compile(r"\[(--|[A-Z])")


def blocks(readme):
    """(line number, text, markers) of each ```sh block."""
    lines = open(readme, encoding="utf-8").read().split("\n")
    found = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            text = "\n".join(lines[start:j]) + "\n"
            markers = []
            k = j + 1
            while k < len(lines):
                m = MARKER.match(lines[k].strip())
                if not m:
                    break
                markers.append((m.group(1), m.group(2)))
                k += 1
            found.append((start, text, markers))
            i = k
        else:
            i += 1
    return found


def scratch_copy(repo, scratch):
    files = subprocess.run(["git", "-C", repo, "ls-files", "-z"], check=True, capture_output=True).stdout.split(b"\0")
    for name in files:
        if not name:
            continue
        name = name.decode()
        source = os.path.join(repo, name)
        if not os.path.isfile(source):
            continue
        target = os.path.join(scratch, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(source, target)


def stop(process):
    """SIGTERM to the block's process group (its background jobs too), then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


def shell(command, cwd, env):
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=BLOCK_LIMIT)


def tail(path, lines=15):
    try:
        return "\n".join(open(path, encoding="utf-8", errors="replace").read().rstrip("\n").split("\n")[-lines:])
    except OSError:
        return ""


def run_file(markdown, label, binary, repo):
    """Runs one Markdown file's examples in a fresh scratch copy; (examples run, failures)."""
    scratch = tempfile.mkdtemp(prefix="readme-examples-")
    work = os.path.join(scratch, "receiptdash")
    logs = os.path.join(scratch, "logs")
    os.makedirs(logs)
    scratch_copy(repo, work)
    bindir = os.path.join(scratch, "bin")
    os.makedirs(bindir)
    os.symlink(binary, os.path.join(bindir, "receiptdash"))
    home = os.path.join(scratch, "home")
    os.makedirs(home)
    env = {
        "PATH": bindir + ":/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TERM": "dumb",
        "LANG": "C.UTF-8",
    }

    failures = 0
    ran = 0
    running = []  # blocks whose background jobs are still up
    for number, (line, text, markers) in enumerate(blocks(markdown)):
        first = text.strip().split("\n")[0]
        kinds = {kind for kind, _ in markers}
        if not markers:
            if SYNOPSIS.search(text):
                continue
            print(f"FAIL {label}:{line}: an example with no readme-test marker (check, until or skip): {first}")
            failures += 1
            continue
        if "skip" in kinds:
            print(f"skip {label}:{line}: {first}  ({[v for k, v in markers if k == 'skip'][0]})")
            continue
        ran += 1
        out = os.path.join(logs, f"block-{number}.out")
        err = os.path.join(logs, f"block-{number}.err")
        script = os.path.join(logs, f"block-{number}.sh")
        with open(script, "w", encoding="utf-8") as f:
            f.write(text)
        started = time.monotonic()
        with open(out, "w") as o, open(err, "w") as e:
            process = subprocess.Popen(["bash", script], cwd=work, env=env, stdout=o, stderr=e, stdin=subprocess.DEVNULL, start_new_session=True)
            status = None
            problem = None
            until = [v for k, v in markers if k == "until"]
            block_env = dict(env, OUT=out, ERR=err)
            if until:
                while True:
                    if process.poll() is not None:
                        problem = f"the server stopped before the condition held (exit {process.returncode})"
                        break
                    if shell(until[0], work, block_env).returncode == 0:
                        break
                    if time.monotonic() - started > BLOCK_LIMIT:
                        problem = f"the condition did not hold within {BLOCK_LIMIT} s: {until[0]}"
                        break
                    time.sleep(0.5)
                stop(process)
                status = process.wait()
            else:
                try:
                    status = process.wait(timeout=BLOCK_LIMIT)
                except subprocess.TimeoutExpired:
                    problem = f"did not finish within {BLOCK_LIMIT} s"
                    stop(process)
                    process.wait()
                running.append(process)
        check_env = dict(env, OUT=out, ERR=err, STATUS=str(status))
        for kind, command in markers:
            if problem or kind != "check":
                continue
            result = shell(command, work, check_env)
            if result.returncode != 0:
                problem = f"check failed: {command}" + (f"\n    {result.stdout.strip()}{result.stderr.strip()}" if (result.stdout + result.stderr).strip() else "")
        seconds = time.monotonic() - started
        if problem:
            failures += 1
            print(f"FAIL {label}:{line}: {first}\n  {problem}\n  exit {status}; stdout ends:\n{tail(out)}\n  stderr ends:\n{tail(err)}")
        else:
            print(f"ok   {label}:{line}: {first}  ({seconds:.1f} s)")
    for process in running:
        stop(process)
    print(f"{label}: {ran} examples run, {failures} failed (scratch folder {scratch})")
    if failures == 0:
        shutil.rmtree(scratch, ignore_errors=True)
    return ran, failures


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 64
    binary = os.path.abspath(sys.argv[1])
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    if len(sys.argv) > 2:
        files = [os.path.abspath(name) for name in sys.argv[2:]]
    else:
        docs = os.path.join(repo, "docs")
        pages = sorted(name for name in os.listdir(docs) if name.endswith(".md")) if os.path.isdir(docs) else []
        files = [os.path.join(repo, "README.md")] + [os.path.join(docs, name) for name in pages]
    if not os.access(binary, os.X_OK):
        print(f"readme-examples: {binary} is not an executable (build it first: swift build)", file=sys.stderr)
        return 66

    ran = failures = 0
    for markdown in files:
        label = os.path.relpath(markdown, repo)
        file_ran, file_failures = run_file(markdown, label, binary, repo)
        ran += file_ran
        failures += file_failures
    print(f"readme-examples: {ran} examples run in {len(files)} files, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
