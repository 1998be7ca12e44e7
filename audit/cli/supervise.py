"""The command runs in a child process, watched by a thin parent: an ``os._exit(0)`` is never a pass.

A user's code (a mechanism's ``sample``, a one-run scorer, a config's plugin module) runs inside
the command's process.  ``sys.exit`` there is caught (exit 2), but ``os._exit(N)`` ends the process
on the spot: no ``except``, no ``finally``, no ``atexit`` runs, and the shell sees status N: 0 with
no table looked like a pass.  Nothing in that process can see it, so the console script and
``python -m dpaudit`` / ``python -m audit`` start the real command line in a child (the same
interpreter and command line, stdin/stdout/stderr inherited), which reports the status it means
to exit with over a pipe (``pass_fds``) at the very end (an ``atexit`` handler registered before
any user code loads, so it runs after the user's own).  The parent returns the child's status only
if that report arrived and matches it; otherwise:

- the child exited with no report (or another status than reported): user code ended the process
  (``os._exit``), or the interpreter died under it.  dpaudit itself never calls ``os._exit``, and
  its own failures exit through :func:`dpaudit.cli.commands.execute` with a report, so this is the
  user's code misbehaving: **exit 2** (bad input), with one line on stderr;
- the child was killed by a signal the parent did not forward (the kernel's out-of-memory killer,
  a segmentation fault in native code, another process's ``kill``): nothing says whose code was
  at fault, and it is an environment failure as dpaudit defines it: **exit 3**, one line;
- the child was killed by a signal the parent forwarded (SIGTERM, SIGHUP, SIGQUIT): 128 + N, as a
  shell reports a command that signal stopped.  SIGINT is handled by the child (a graceful stop,
  exit 130, :mod:`dpaudit.runtime.interrupts`) and reported.

Signals: the child leads its **own process group**, and the parent forwards SIGINT, SIGTERM,
SIGHUP and SIGQUIT to that group.  Each way a SIGINT arrives then reaches the child exactly once:
a Ctrl-C at a terminal goes to the terminal's foreground group, which holds the parent and not
the child; ``kill -INT PARENT`` reaches the parent only; ``timeout -s INT`` signals the parent
twice (to its pid, then to its group) and never the child.  With the child in the parent's group
instead, the terminal's and ``timeout``'s signals would reach the child directly but ``kill -INT
PARENT`` not at all, and a parent that forwarded would double them.  ``timeout``'s two sends come
microseconds apart: a repeat of the same signal within :data:`REPEAT_WINDOW` seconds of one
forwarded is the same event and is not forwarded again (the child's second SIGINT means "stop
at once, no partial result"; a person's deliberate second Ctrl-C comes later than that).  The
child's worker processes (joblib, Dask) are in its group and get the signal as they did from a
terminal.  Ctrl-Z (SIGTSTP) stops the child's group and then the parent, SIGCONT resumes both.
A child in a background group cannot read the terminal: user code that prompts there (a
debugger) runs under ``python -c "from dpaudit.cli import main; main()" ARGS`` (no supervisor).

If the parent dies (``kill -9`` of it, or of the caller's process group: the shell's ``kill -9 %1``,
a CI runner ending its job), the child is killed too: Linux's ``PR_SET_PDEATHSIG`` (through ctypes),
elsewhere a thread that polls the parent's pid once a second.  The child's worker processes (loky's
workers and resource tracker) do not inherit that, and would hold the caller's stdout for minutes:
a watchdog (:func:`_watch_group`, a bare interpreter that ignores the forwarded signals) sits in the
child's group, reading a pipe only the parent holds, and kills the whole group once the parent has
ended, however it ended (the kernel closes the pipe at ``kill -9`` too).

Exit 0 and 1 of ``run`` (the one command that runs user code) are not taken on the child's word: the
child hands its complete results document over (:func:`hand_over`, a file in a private temporary
folder the parent made), and the parent loads it with the results loader, which re-checks every
bound from its counts and every verdict from its bounds (:mod:`dpaudit.results.saved`), and derives
the status from those verdicts itself.  User code in the child can write to anything the child
can (the token, the report pipe, the file), so a status with no document that checks, or one the
document does not give, is exit 2.  The loader is imported only once the child has ended.  The
other commands run no user code: the token's report is theirs.

SIGINT is blocked while the child starts (it inherits the mask and unblocks it in
:func:`_as_child`): a Ctrl-C while it is still importing is held, then ends the command with
"interrupted" and 130, never a traceback.

Standard streams (:func:`dpaudit.cli.streams.tolerate_lost_readers`, in the parent and the child):
a closed descriptor 0, 1 or 2 (``>&-``, cron) is opened on ``/dev/null`` first (else the report
pipe could take number 1), and a stream whose reader went away (``| head -1``) drops what is
written to it; the command runs to its end and exits with the audit's status.

The child is marked by :data:`CHILD_ENV` (``FD:PARENT_PID:DEVICE:INODE`` of the report pipe and
the fd of a second pipe holding a one-time token, which the child reads and closes before any user
code runs and writes before its status: a status written into the report pipe by user code does not
count), removed from its environment once
read, so a ``dpaudit`` that user code starts is supervised in turn); a marker whose parent pid
or pipe is not the real ones is ignored (a marker set by hand does not switch the supervisor off).
``--help`` (or an abbreviation of it, ``--hel``), ``--version`` and a bare command run in the
parent (they run no user code, and cost no child).  On Windows the command runs in the one process
(no ``pass_fds`` there).

The parent imports the standard library only (no numpy): ``python -X importtime``.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable

from dpaudit.cli.streams import tolerate_lost_readers
from dpaudit.runs import invocation

__all__ = ["CHILD_ENV", "hand_over", "run"]

CHILD_ENV = "DPAUDIT_SUPERVISED"
REPEAT_WINDOW = 0.5  # seconds: the same signal again within this is timeout(1)'s second send
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
EXIT_USAGE, EXIT_INTERNAL = 2, 3
PR_SET_PDEATHSIG = 1
EXIT_INTERRUPTED = 130
CHECKED_COMMANDS = ("run",)  # the commands that run user code: their 0 and 1 need a results document


_TOKEN: list[str] = []  # the child's copy of the parent's one-time token (read before any user code)
_HANDOVER: list[int] = []  # the child's descriptor of the parent's results file


def hand_over(document: str) -> None:
    """In the supervised child: ``document`` (a run's complete results, as results.json holds them)
    written to the parent's file, which the parent loads, re-checks and takes the exit status from
    (:func:`_checked_status`).  Nothing outside a supervised child."""
    if not _HANDOVER:
        return
    data = document.encode("utf-8")
    try:
        os.ftruncate(_HANDOVER[0], 0)
        done = 0
        while done < len(data):
            done += os.pwrite(_HANDOVER[0], data[done:], done)
    except OSError as error:  # a full disk or a file-size limit: our environment, named as such
        raise OSError(error.errno, f"{error.strerror} (writing the run's results for dpaudit's supervising "
                                   "process, in the temporary folder)") from error


def run(main: Callable[[], int], *, entry: str | None) -> int:
    """The command's exit status: ``main()`` in a supervised child, or in this process.

    ``entry`` says how this process was started, when it was started as the command itself:
    ``"module"`` (``python -m dpaudit``/``audit``) or ``"script"`` (the console script); None for
    a host that calls us (never supervised: its command line is not ours to re-run)."""
    marker = os.environ.pop(CHILD_ENV, None)
    typed = os.environ.pop(invocation.TYPED_ENV, None)
    if entry is not None and threading.current_thread() is threading.main_thread():
        # dpaudit's import held a Ctrl-C as "interrupted"; from here on: the forwarder, or the command's own
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if entry is not None:  # the command itself (not a host's call): a closed or broken stream drops output only
        tolerate_lost_readers()
    channel = _child_channel(marker)
    if channel is not None:
        invocation.adopt(typed)
        return _as_child(main, *channel)
    argv = sys.argv[1:]
    if entry is None or os.name != "posix" or not sys.executable or _needs_no_child(argv) or not _started_as(entry):
        return main()
    return _supervise()


def _needs_no_child(argv: list[str]) -> bool:
    """Help and the version run no user code: no child for them."""
    options = argv[:argv.index("--")] if "--" in argv else argv
    helps = any(len(o) >= 3 and "--help".startswith(o) for o in options)  # argparse takes --hel for --help
    return not argv or argv == ["--version"] or "-h" in options or helps


def _started_as(entry: str) -> bool:
    """Whether this process's command line (``sys.orig_argv``) is the command itself, unchanged:
    the child re-runs it, so it must be ours (a test runner's is not)."""
    orig, args = list(getattr(sys, "orig_argv", [])), sys.argv[1:]
    cut = len(orig) - len(args)
    if cut < 2 or orig[cut:] != args:
        return False
    if entry == "module":
        return orig[cut - 2:cut] in (["-m", "dpaudit"], ["-m", "audit"]) or orig[cut - 1] in ("-mdpaudit", "-maudit")
    return orig[cut - 1] == sys.argv[0] or os.path.basename(orig[cut - 1]).startswith(os.path.basename(sys.argv[0]))


# --- the child ---------------------------------------------------------------------------------


def _child_channel(marker: str | None) -> tuple[int, int] | None:
    """(report fd, parent pid) when this process is the supervised child, else None: the marker
    names this process's parent and the very pipe it opened (device and inode), so a marker copied
    or set by hand never matches."""
    parts = (marker or "").split(":")
    if len(parts) != 6 or not all(p.isdigit() for p in parts) or int(parts[1]) != os.getppid():
        return None
    fd = int(parts[0])
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    if _pipe_id(st) != f"{parts[2]}:{parts[3]}":
        return None
    _TOKEN.append(_read_token(int(parts[4])))
    _HANDOVER.append(int(parts[5]))
    return fd, int(parts[1])


def _read_token(fd: int) -> str:
    """The parent's one-time token, read once from its own pipe (closed at once: no user code runs
    before this), so a status written into the report pipe by anyone else does not count."""
    try:
        return os.read(fd, 64).decode("ascii", "replace").strip()
    except OSError:
        return ""
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def _pipe_id(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}"


def _as_child(main: Callable[[], int], fd: int, parent: int) -> int:
    _die_with(parent)
    intended: list[int] = []
    atexit.register(_report, fd, intended)  # first registered, last run: after the user's handlers
    try:
        # The parent started this process with SIGINT blocked (held, not lost): a Ctrl-C while it was
        # still importing arrives here, where it is the interrupted command's, not a traceback.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        status = main()
    except (KeyboardInterrupt, Exception) as exc:
        # a Ctrl-C before the command's own handler was in place (nothing was checked yet), also when it
        # lands in a C extension's initialisation (scipy's pocketfft, while the command's modules import)
        # and comes back as that module's ImportError raised from the KeyboardInterrupt
        if not interrupted(exc):
            raise
        print("interrupted", file=sys.stderr)
        status = EXIT_INTERRUPTED
    except SystemExit as exc:  # argparse's help (`run --hel`, an abbreviation) exits; user code's never gets here
        _finished()
        intended.append(_exit_status(exc.code))
        raise
    _finished()
    intended.append(status)
    return status


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` was raised from a Ctrl-C: a KeyboardInterrupt among its causes or contexts
    (an extension module whose initialisation is interrupted raises ImportError from it)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _finished() -> None:
    """The command has ended with its status: a Ctrl-C from here on (the interpreter's teardown, the
    workers' shutdown, the user's atexit handlers) has nothing left to interrupt and is ignored (in
    every thread: a mask would hold it in this one only), so that it cannot turn a finished run's 0
    or 1 into 130 or a traceback.  SIGTERM and SIGQUIT still end a teardown that hangs."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _exit_status(code: object) -> int:
    """The process's status for ``sys.exit(code)``: None is 0, an integer itself, anything else 1."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def _report(fd: int, intended: list[int]) -> None:
    """Tell the parent the status this process exits with (nothing if ``main`` never returned)."""
    if not intended:
        return
    for name in ("stdout", "stderr"):  # flushed now: a final flush that fails would change the status
        stream = getattr(sys, name)
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 - the interpreter closes it at exit
    try:
        os.write(fd, f"{_TOKEN[0] if _TOKEN else ''} {intended[0]}\n".encode())
        os.close(fd)
    except OSError:
        pass


def _die_with(parent: int) -> None:
    """The child ends when the parent does: PR_SET_PDEATHSIG (Linux) or a polling thread."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
        else:
            if os.getppid() != parent:  # the parent died before the request took hold
                os._exit(EXIT_INTERNAL)
            return
    def poll() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=poll, name="dpaudit-parent-watch", daemon=True).start()


# --- the parent --------------------------------------------------------------------------------


class _Forwarder:
    """The parent's handlers: each signal of :data:`FORWARDED` goes to the child's process group
    once (a repeat within :data:`REPEAT_WINDOW` is the same event); Ctrl-Z stops both."""

    def __init__(self) -> None:
        self.group: int | None = None
        self.pending: list[int] = []
        self.sent: set[int] = set()
        self.last: tuple[int, float] = (0, -1.0)

    def install(self) -> None:
        for name in FORWARDED:
            sig = getattr(signal, name)
            # An ignored signal stays ignored, for the child too (it inherits SIG_IGN: nohup's SIGHUP), but
            # SIGINT: the command handles it whatever it inherits (dpaudit.cli.commands), as it always did
            # (a background job of a script starts with SIGINT ignored, and `kill -INT` still stops the run).
            if sig == signal.SIGINT or signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, self.forward)
        signal.signal(signal.SIGTSTP, self.stop)
        signal.signal(signal.SIGCONT, self.resume)

    def started(self, pid: int) -> None:
        self.group = pid
        for sig in self.pending:
            self._send(sig)

    def forward(self, signum: int, frame: object) -> None:
        now = time.monotonic()
        if self.last[0] == signum and now - self.last[1] < REPEAT_WINDOW:
            return
        self.last = (signum, now)
        if self.group is None:
            self.pending.append(signum)
        else:
            self._send(signum)

    def stop(self, signum: int, frame: object) -> None:
        if self.group is not None:
            self._kill(signal.SIGTSTP)
        os.kill(os.getpid(), signal.SIGSTOP)

    def resume(self, signum: int, frame: object) -> None:
        if self.group is not None:
            self._kill(signum)

    def _send(self, signum: int) -> None:
        self.sent.add(signum)
        self._kill(signum)
        self._kill(signal.SIGCONT)  # a stopped child would hold the signal until resumed

    def _kill(self, signum: int) -> None:
        if self.group is None:  # never os.killpg(0): that is the parent's own group
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the child's group is gone
            os.killpg(self.group, signum)


def _supervise() -> int:
    read_end, write_end = os.pipe()
    token_read, token_write = os.pipe()
    token = os.urandom(16).hex()  # the child's report counts only with it (user code never sees it written)
    os.write(token_write, token.encode())
    os.close(token_write)
    handover = tempfile.TemporaryDirectory(prefix="dpaudit-")  # private (0700): the results the child hands over
    results = os.path.join(handover.name, "results.json")
    results_fd = os.open(results, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    env = {**os.environ, CHILD_ENV: f"{write_end}:{os.getpid()}:{_pipe_id(os.fstat(write_end))}:{token_read}:"
                                    f"{results_fd}",
           invocation.TYPED_ENV: invocation.encode(sys.orig_argv)}
    forwarder = _Forwarder()
    forwarder.install()  # before the child exists: a signal meanwhile is held, then forwarded
    # SIGINT blocked while the child starts: it inherits the mask and unblocks it once it can handle it
    # (a Ctrl-C during its imports is then its own "interrupted", never a traceback); ours is held meanwhile.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        child = subprocess.Popen([sys.executable, *sys.orig_argv[1:]], pass_fds=(write_end, token_read, results_fd),
                                 env=env, process_group=0)
    except OSError as exc:
        print(f"error: environment failure: cannot start dpaudit's process: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        for fd in (write_end, token_read, results_fd):
            os.close(fd)
    _watch_group(child.pid, handover.name)
    forwarder.started(child.pid)
    status = child.wait()
    told, _, said = _read_report(read_end).partition(" ")
    with handover:
        verdict = _verdict(status, said if told == token else "", forwarder.sent)
        if verdict in (0, 1) and _command(sys.argv[1:]) in CHECKED_COMMANDS:
            return _checked_status(verdict, results)
        return verdict


def _watch_group(group: int, handover: str) -> None:
    """A watchdog in the child's process group that kills the whole group (the child, its worker
    processes, their resource trackers) once this process ends, however it ends: it waits for the end
    of a pipe only this process holds (the kernel closes it at ``kill -9`` too).  The child's own
    PR_SET_PDEATHSIG does not reach the workers it started, which would hold the caller's stdout for
    minutes; the forwarded signals do not reach the watchdog (it ignores them).  It removes the
    ``handover`` folder first: after ``kill -9`` of this process nothing else would (on a normal end
    this process has removed it already)."""
    read_end, write_end = os.pipe()
    ignored = ", ".join(f"signal.{name}" for name in (*FORWARDED, "SIGTSTP", "SIGTTIN", "SIGTTOU"))
    code = (f"import os, shutil, signal\nfor s in ({ignored}): signal.signal(s, signal.SIG_IGN)\n"
            f"while os.read(0, 1): pass\nshutil.rmtree({handover!r}, ignore_errors=True)\n"
            f"os.killpg({group}, signal.SIGKILL)\n")
    try:
        subprocess.Popen([sys.executable, "-I", "-S", "-c", code], stdin=read_end, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, process_group=group)
    except (OSError, subprocess.SubprocessError):  # the child's group is already gone: nothing to watch
        os.close(write_end)
    else:
        _KEPT.append(write_end)  # open until this process ends
    finally:
        os.close(read_end)


_KEPT: list[int] = []


def _command(argv: list[str]) -> str | None:
    """The command word of ``argv`` (its first argument that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _checked_status(reported: int, results: str) -> int:
    """The status of a run's 0 or 1, taken from the results document the child handed over, loaded
    and re-checked here (:func:`dpaudit.results.saved.load_results`: schema, counts, bounds and verdicts
    recomputed), never from the child's word alone: user code in the child can write anything the
    child can, but not a document whose verdicts its own counts do not support.  A run with no such
    document, or one whose status differs from the child's, is not a pass (exit 2)."""
    problem = "" if os.path.getsize(results) else "none was handed over"
    if not problem:
        # imported only now, once the child has ended: the parent imports no numpy before
        exit_status = importlib.import_module("dpaudit.cli.expectations").exit_status
        load_results = importlib.import_module("dpaudit.results.saved").load_results
        try:
            payload = load_results(results)
        except Exception as exc:  # a forged or cut document: refused, whatever is wrong with it
            problem = f"the document handed over does not check ({type(exc).__name__}: {exc})"
        else:
            derived = exit_status(payload["records"], payload.get("complete", True))
            if derived == reported:
                return derived
            problem = f"the document's verdicts give status {derived}"
    print(f"error: the run ended with status {reported} but without a results document dpaudit can check "
          f"({problem}): user code in the process (a mechanism, a scorer, a plugin module) ended it or wrote "
          "its status; this is not a pass", file=sys.stderr)
    return EXIT_USAGE


def _read_report(fd: int) -> str:
    """What the child wrote (read without waiting: a grandchild may still hold the pipe open)."""
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 64).decode("ascii", "replace").strip()
    except OSError:
        return ""
    finally:
        os.close(fd)


def _verdict(status: int, report: str, forwarded: set[int]) -> int:
    """The parent's exit status from the child's status and its report (module docstring)."""
    if status >= 0 and report == str(status):
        return status
    if status < 0:
        if -status in forwarded:
            # a signal that lands after the child's report (its command had finished) leaves that status
            return int(report) if report.isdigit() else 128 - status
        name = signal.Signals(-status).name if -status in signal.valid_signals() else f"signal {-status}"
        print(f"error: the process was killed by {name} before dpaudit finished (by the system, e.g. out of "
              "memory, a crash in native code, or another process): nothing was checked to the end",
              file=sys.stderr)
        return EXIT_INTERNAL
    after = f"; dpaudit had finished with status {report}" if report else ""
    print(f"error: the process ended without dpaudit's own report (status {status}{after}): user code called "
          f"os._exit, closed dpaudit's file descriptors (os.closerange) or crashed, e.g. os._exit({status}) in a "
          "mechanism's sample, a scorer, a plugin module or an atexit handler; dpaudit cannot vouch that "
          "everything was checked to the end, so this is not a pass", file=sys.stderr)
    return EXIT_USAGE
