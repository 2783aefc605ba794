"""How every `fslab` command ends: the one rule at the top of the command line.

Exit codes (the README's "When things go wrong" lists them for users):

    0    done (a run: every case ok)
    1    done, but not a success: a run whose guest failed, that hit its deadline or was salvaged
         as interrupted; or standard output could not be written (`> /dev/full`: one line
         "cannot write to standard output: No space left on device"), as coreutils exits 1
    2    a user error: one line `fslab: error: FILE: KEY: what is wrong; allowed: ... (hint: ...)`;
         a command-line usage error is one line too, ending "(see fslab CMD --help)"
    70   an internal error, i.e. a bug in fslab (EX_SOFTWARE of sysexits.h): one line naming the
         crash file that holds the full traceback: RUN_DIR/crash-<time>.txt when a run directory
         exists, else ~/.cache/fslab/crash/<time>.txt
    130  Ctrl-C (128 + SIGINT); 143 SIGTERM (128 + SIGTERM), 129 SIGHUP: QEMU is ended, what the
         guest sent is collected and the run is marked interrupted
    141  standard output was closed early (`fslab list suites | head -1`): quiet, as a coreutils
         tool killed by SIGPIPE (128 + 13)

A run left behind by an fslab that was killed (kill -9) is salvaged by the next fslab command that
meets it (harness/run/salvage.py).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, TextIO

from harness.cachedir import cache_dir
from harness.errors import FslabError, Terminated

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USER = 2
EXIT_INTERNAL = 70
EXIT_SIGPIPE = 128 + signal.SIGPIPE
STOP_SIGNALS: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP)


class UsageError(FslabError):
    """A command-line usage error (argparse's): printed as one line with a pointer to --help."""

    def __init__(self, prog: str, message: str):
        self.prog = prog
        super().__init__(f"{prog}: error: {message} (see {prog} --help)")


class Parser(argparse.ArgumentParser):
    """argparse, but an error is one line ("fslab run: error: ... (see fslab run --help)") instead
    of the usage text, and raised (UsageError) so that `main` ends it with exit 2 like every other
    user error. Subcommand parsers are of this class too (argparse makes them of the parent's)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)


_CONTROL = {c: f"\\x{c:02x}" for c in range(32)} | {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", 127: "\\x7f"}


def one_line(text: str) -> str:
    """`text` as one terminal line: control characters (a newline or an escape sequence in a
    file name a user gave) are shown escaped, never acted on.

    >>> print(one_line("fslab: error: a\\nb\\x1b[31m: no such file"))
    fslab: error: a\\nb\\x1b[31m: no such file
    """
    return text.translate(_CONTROL)


def _say(line: str) -> None:
    """One line on stderr; a closed stderr is no reason for a traceback."""
    try:
        print(one_line(line), file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass


def _quiet_stdout() -> None:
    """Point fd 1 at /dev/null, so Python's own flush at exit does not fail (and print) again."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):
        pass


class OutputError(Exception):
    """Standard output could not be written (full disk, EIO); `error` is the OSError."""

    def __init__(self, error: OSError):
        self.error = error
        super().__init__(error.strerror or str(error))


class _Guarded:
    """sys.stdout for the length of one command: a failed write raises OutputError, so that it is
    told apart from any other OSError (a failed write's buffer is gone: a second flush cannot tell)."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputError(e) from e

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputError(e) from e

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def crash_report(exc: BaseException, argv: Sequence[str]) -> Path | None:
    """Write the full traceback of an internal error; its path, or None if nothing could be written.

    Under the run directory when the error carries one (`fslab_run_dir`, set by the runner), else
    under ~/.cache/fslab/crash/. The file holds what a bug report needs: the command, versions, time.
    """
    now = _dt.datetime.now(_dt.UTC)
    name = f"{now:%Y%m%d-%H%M%S}"
    run_dir = getattr(exc, "fslab_run_dir", None)
    text = (f"fslab internal error at {now:%Y-%m-%dT%H:%M:%SZ}\n"
            f"command: fslab {' '.join(argv)}\ncwd: {os.getcwd()}\n"
            f"python: {platform.python_version()} ({sys.executable}), pid {os.getpid()}\n\n"
            + "".join(traceback.format_exception(exc)))
    places = ([Path(run_dir) / f"crash-{name}.txt"] if run_dir else []) + [cache_dir() / "crash" / f"{name}.txt"]
    for path in places:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            k = 1
            while path.exists():
                k += 1
                path = path.with_name(f"{path.stem.split('.')[0]}.{k}.txt")
            path.write_text(text)
            return path
        except OSError:
            continue
    return None


def _one_line(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:200]}" if first else type(exc).__name__


def _on_stop_signal(signo: int, _frame: FrameType | None) -> None:
    """SIGTERM/SIGHUP unwind like Ctrl-C (Machine.__exit__ ends QEMU, the runner collects what came
    back and marks the run interrupted). A second one while that cleanup runs is ignored: cutting
    the cleanup short would only leave a run for the next fslab to salvage."""
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Terminated(signo)


def run_command(argv: Sequence[str], parse: Callable[[Sequence[str]], argparse.Namespace]) -> int:
    """Parse `argv` and run its command under the rule above; the exit code."""
    installed: dict[int, Any] = {}
    stdout = sys.stdout
    sys.stdout = _Guarded(stdout)
    try:
        for s in STOP_SIGNALS:
            installed[s] = signal.signal(s, _on_stop_signal)
    except ValueError:  # not the main thread (fslab used as a library): leave signals alone
        pass
    try:
        return _run(argv, parse)
    finally:
        sys.stdout = stdout
        for s, old in installed.items():
            signal.signal(s, old)


def _run(argv: Sequence[str], parse: Callable[[Sequence[str]], argparse.Namespace]) -> int:
    try:
        args = parse(argv)
        rc = int(args.func(args))
        sys.stdout.flush()  # a full or closed stdout shows here, not in Python's exit handler
        return rc
    except FslabError as e:
        from harness.cli import before_boot  # late: before_boot imports much of fslab

        before_boot.remove_made()  # a refused command leaves none of the output directories it made
        _say(str(e) if isinstance(e, UsageError) else f"fslab: error: {e}")
        return EXIT_USER
    except KeyboardInterrupt as e:
        signo = e.signo if isinstance(e, Terminated) else int(signal.SIGINT)
        _say(f"fslab: interrupted ({signal.Signals(signo).name}); QEMU stopped, partial results kept")
        return 128 + signo
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_SIGPIPE
    except OutputError as e:
        _quiet_stdout()
        _say(f"fslab: error: cannot write to standard output: {e}")
        return EXIT_FAILED
    except Exception as e:  # noqa: BLE001 - the one place a bug becomes a crash file and one line
        return _internal(e, argv)


def _internal(e: BaseException, argv: Sequence[str]) -> int:
    path = crash_report(e, argv)
    if path is None:
        try:
            print("".join(traceback.format_exception(e)).rstrip(), file=sys.stderr, flush=True)
        except (OSError, ValueError, AttributeError):
            pass
        _say(f"fslab: internal error: {_one_line(e)}; the traceback above could not be written to a file")
    else:
        _say(f"fslab: internal error: {_one_line(e)}; full traceback in {path} (please report it)")
    return EXIT_INTERNAL
