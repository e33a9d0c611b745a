"""A process that has imported the command line once and forks a child for each command.

Each `cronledger` command a test runs is still a process of its own (its environment, working
folder, logging, standard streams, signals and exit status), but it starts in milliseconds
instead of importing everything again: about 0.7 s of a core per command, and the suite runs
hundreds of commands and servers.

The zygote reads one request a line on standard input (JSON) and answers each on standard
output:
- `start`: fork the command (arguments, environment, working folder, the files or FIFOs for
  its standard output and error, an optional time limit); answers its `pid`.
- `poll`: the exit status of a child as `subprocess` gives it (negative: the signal that ended
  it), or null while it runs; `wait` the same, once it has ended.
It starts no thread and opens no store, so that what a child inherits is only the imports.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from typing import Any

from cronledger.cli import main

ended: dict[int, int] = {}  # the exit status of each child reaped so far, by pid


def start(request: dict[str, Any], control: int) -> int:
    pid = os.fork()
    if pid == 0:
        os.close(control)
        _child(request)  # never returns
    ended.pop(pid, None)  # the pid may be an earlier, reaped child's: its end is not this one's
    return pid


def poll(pid: int, block: bool) -> int | None:
    if pid not in ended:
        reaped, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        if reaped == 0:
            return None
        ended[pid] = os.waitstatus_to_exitcode(status)
    return ended[pid]


def _child(request: dict[str, Any]) -> None:
    code = 1
    try:
        _redirect(request["stderr"], 2)  # first, so that whoever reads it is not kept waiting
        _redirect(request["stdout"], 1)
        _redirect(os.devnull, 0)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if request["timeout"]:
            signal.alarm(int(request["timeout"]))  # as subprocess.run's timeout: it ends
        sys.argv = ["cronledger", *request["args"]]
        main.main(request["args"], prog_name="cronledger")
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # as the interpreter would: the trace on standard error, status 1
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(code)


def _redirect(path: str, to: int) -> None:
    flags = os.O_RDONLY if to == 0 else os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    opened = os.open(path, flags)
    os.dup2(opened, to)
    os.close(opened)


def serve() -> None:
    control = os.dup(1)  # answers go here; each child's fd 1 is its own
    answers = os.fdopen(control, "w")
    for line in sys.stdin:
        request = json.loads(line)
        match request["op"]:
            case "start":
                answer: dict[str, Any] = {"pid": start(request, control)}
            case op:
                answer = {"returncode": poll(request["pid"], block=op == "wait")}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve()
