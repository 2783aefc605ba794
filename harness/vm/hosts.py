"""libvirt hosts: where a VM runs, and the files it needs there.

A host is a libvirt URI. `qemu:///system` (no host name) is this machine: its files are used
in place. Any other host is reached as `qemu+ssh://[user@]host[:port]/system`: fslab copies the
image there (by digest, once), creates the run's disks with `qemu-img` over ssh, sends the seed,
and brings the results stream, progress and console back by appending what is new (`tail -c`),
during the run and after it, so a host that disappears keeps what already came home. The ssh
options come from the URI as libvirt reads them: `keyfile=`, `no_verify=1` and `command=` (the
ssh program).

    hosts:                       # in a vmconfig, or --host URI (repeatable) on the command line
      - qemu:///system
      - {uri: "qemu+ssh://root@bench2/system", store: /srv/fslab/images, scratch: /srv/fslab/runs}
"""

from __future__ import annotations

import atexit
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from harness.config.host_uris import DEFAULT_REMOTE_SCRATCH, DEFAULT_URI, Host, parse
from harness.errors import FslabError
from harness.hostinfo import accel as accel_mod
from harness.hostinfo import facts as provenance
from harness.image import store as images
from harness.vm.libvirt import HostLost

__all__ = ["DEFAULT_REMOTE_SCRATCH", "DEFAULT_URI", "Host", "parse"]

_REMOTE_STORE = '"${XDG_CACHE_HOME:-$HOME/.cache}/fslab/images"'

# -- one ssh connection per host -------------------------------------------------------------------
# Every ssh fslab runs to a host goes through one master connection (ControlMaster), so a run logs
# in once per host, not three times per VM every 10 s (sshd, PAM, logind and journald working on
# the host being measured). The sockets live in one private directory per fslab process under
# /tmp: a socket's path must fit in 108 bytes, which a run's own directory often does not. At
# exit the masters are told to end and the directory goes; a killed fslab's masters end by
# themselves after CONTROL_PERSIST_S idle seconds.

_control: dict[str, Any] = {"dir": None, "used": {}}
_control_lock = threading.Lock()


def ssh_argv(host: Host) -> tuple[list[str], str]:
    """(ssh program and options, [user@]host) for fslab's own ssh to `host`, multiplexed."""
    with _control_lock:
        if _control["dir"] is None:
            _control["dir"] = tempfile.mkdtemp(prefix="fslab-ssh-", dir="/tmp")
            atexit.register(close_connections)
        ssh, opts, dest = host.ssh_options(_control["dir"])
        _control["used"][(ssh, *opts, dest)] = (ssh, opts, dest)
    return [ssh, *opts], dest


def close_connections() -> None:
    """End every ssh master this process started, and remove their directory."""
    with _control_lock:
        used, d = list(_control["used"].values()), _control["dir"]
        _control["used"], _control["dir"] = {}, None
    for ssh, opts, dest in used:
        try:
            subprocess.run([ssh, *opts, "-O", "exit", dest], capture_output=True, timeout=15,
                           stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            pass
    if d:
        shutil.rmtree(d, ignore_errors=True)


# -- commands and files on a host ------------------------------------------------------------------

def run(host: Host, argv: list[str], timeout: float = 600, check: bool = True,
        input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """argv on the host (locally for a local host); HostLost when ssh cannot reach it."""
    if host.remote:
        ssh, dest = ssh_argv(host)
        full = [*ssh, dest, "--", shlex.join(argv)]
    else:
        full = argv
    try:
        cp = subprocess.run(full, capture_output=True, timeout=timeout, input=input,
                            stdin=None if input is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise HostLost(f"host {host.label}: `{shlex.join(argv)}` did not finish within {timeout:.0f} s") from None
    except FileNotFoundError as e:
        raise FslabError(f"required tool '{e.filename}' is not installed", hint="run ./bootstrap.sh") from None
    err = cp.stderr.decode(errors="replace").strip()
    if host.remote and cp.returncode == 255:
        raise HostLost(f"host {host.label} is unreachable: {err.splitlines()[-1] if err else 'ssh failed'}")
    if check and cp.returncode != 0:
        tail = " | ".join(err.splitlines()[-2:]) or f"exit {cp.returncode}"
        raise FslabError(f"host {host.label}: `{shlex.join(argv)}` failed: {tail}")
    return cp


def output(host: Host, argv: list[str], **kw: Any) -> str:
    return run(host, argv, **kw).stdout.decode(errors="replace").strip()


def put(host: Host, local: Path, remote: str) -> None:
    """Copy one local file to the host, streamed through ssh (same ssh program and options as libvirt's)."""
    ssh, dest = ssh_argv(host)
    argv = [*ssh, dest, "--", shlex.join(["sh", "-c", 'cat > "$1"', "sh", remote])]
    with open(local, "rb") as f:
        cp = subprocess.run(argv, stdin=f, capture_output=True, text=True)
    if cp.returncode != 0:
        tail = (cp.stderr.strip().splitlines() or [f"exit {cp.returncode}"])[-1]
        raise HostLost(f"host {host.label}: copying {local.name} failed: {tail}")


def fetch_tail(host: Host, remote: str, local: Path, timeout: float = 120) -> int:
    """Append to `local` whatever the host's file `remote` has beyond it (files only grow)."""
    return fetch_tails(host, [(remote, local)], timeout)


# For each file: the number of new bytes on a line of its own, then exactly those bytes (a file
# that grows meanwhile is cut at the size it had; the rest comes next time).
_TAILS = ('while [ $# -gt 0 ]; do o=$1 f=$2; shift 2; '
          'if [ -e "$f" ]; then n=$(( $(wc -c < "$f") - o )); [ $n -gt 0 ] || n=0; else n=0; fi; '
          'echo $n; [ $n -eq 0 ] || tail -c +$((o + 1)) "$f" | head -c $n; done')


def fetch_tails(host: Host, files: list[tuple[str, Path]], timeout: float = 120) -> int:
    """fetch_tail of several files in one command on the host (one transfer per sync tick);
    the number of bytes that came."""
    offsets = [local.stat().st_size if local.exists() else 0 for _, local in files]
    args = [a for (remote, _), off in zip(files, offsets, strict=True) for a in (str(off), remote)]
    out = run(host, ["sh", "-c", _TAILS, "sh", *args], timeout=timeout).stdout
    pos = total = 0
    for _, local in files:
        end = out.index(b"\n", pos)
        n = int(out[pos:end])
        data, pos = out[end + 1:end + 1 + n], end + 1 + n
        if len(data) != n:
            raise HostLost(f"host {host.label}: the transfer of {local.name} was cut short")
        if data:
            with open(local, "ab") as f:
                f.write(data)
        total += n
    return total


def home_path(host: Host, path: str | None, default_expr: str) -> str:
    """An absolute path on the host: `path`, or the shell expression `default_expr` there."""
    if path and path.startswith("/"):
        return path.rstrip("/")
    expr = f'"$HOME"/{shlex.quote(path.removeprefix("~/"))}' if path else default_expr
    return output(host, ["sh", "-c", f"echo {expr}"]).rstrip("/")


# -- the image on a host ---------------------------------------------------------------------------

def _remote_digests(host: Host, entry: str) -> dict[str, str]:
    cp = run(host, ["sh", "-c", 'cd "$1" 2>/dev/null && sha256sum ' + " ".join(images.IMAGE_FILES), "sh", entry],
             check=False, timeout=1800)
    out = cp.stdout.decode(errors="replace")
    return {name: digest for digest, name in (ln.split(None, 1) for ln in out.splitlines() if " " in ln)}


def _matches(image: images.Image, digests: dict[str, str]) -> bool:
    files = image.manifest.get("files") or {}
    return all(digests.get(n) == (files.get(n) or {}).get("sha256") for n in images.IMAGE_FILES)


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def place_image(host: Host, image: images.Image, log: Any = _stderr) -> Path:
    """The image's directory on the host, copied there if its files are missing or differ.

    The files are checked by sha256 against the local manifest (which the caller verified), so a
    host never boots anything but the exact image; a copy goes to a temporary entry first and is
    renamed into place once its digests match."""
    if not host.remote:
        return image.dir
    key = (host.uri, host.store, image.digest)
    with _placed_lock:
        if key in _placed:  # checked (or copied) once per host and process
            return _placed[key]
        _placed[key] = _place(host, image, log)
        return _placed[key]


_placed: dict[tuple[str, str | None, str], Path] = {}
_placed_lock = threading.Lock()


def image_entry(host: Host, image: images.Image) -> Path:
    """Where the image lives (or will) on the host: <store>/<name>-<input hash>, as in the local store."""
    if not host.remote:
        return image.dir
    return Path(home_path(host, host.store, _REMOTE_STORE)) / image.dir.name


def _place(host: Host, image: images.Image, log: Any) -> Path:
    entry = str(image_entry(host, image))
    store = str(Path(entry).parent)
    if _matches(image, _remote_digests(host, entry)):
        log(f"fslab: [{host.label}] image {image.name} {image.digest[:19]} present, digests match")
        return Path(entry)
    size = sum(p.stat().st_size for p in (image.dir / n for n in images.IMAGE_FILES))
    log(f"fslab: [{host.label}] copying image {image.name} {image.digest[:19]} ({size / 1024**3:.1f} GiB) to {entry}")
    tmp = f"{store}/.incoming-{image.dir.name}"
    run(host, ["sh", "-c", 'rm -rf "$1" && mkdir -p "$1"', "sh", tmp])
    for n in (*images.IMAGE_FILES, images.MANIFEST):
        put(host, image.dir / n, f"{tmp}/{n}")
    if not _matches(image, _remote_digests(host, tmp)):
        raise FslabError(f"host {host.label}: the image copied to {tmp} does not match its digests")
    run(host, ["sh", "-c", 'rm -rf "$2" && mv "$1" "$2"', "sh", tmp, entry])
    return Path(entry)


# -- what a host is ---------------------------------------------------------------------------------

def describe(host: Host) -> dict[str, Any]:
    """provenance.host() for the host the VM runs on."""
    if not host.remote:
        return provenance.host()
    script = ('uname -n; uname -r; nproc; sed -n "s/^model name[^:]*: //p" /proc/cpuinfo | head -1; '
              'sed -n "s/^MemTotal: *\\([0-9]*\\) kB/\\1/p" /proc/meminfo; '
              'python3 -c "import platform; print(platform.python_version())" 2>/dev/null || echo')
    lines = (output(host, ["sh", "-c", script]).splitlines() + [""] * 6)[:6]
    name, kernel, cpus, cpu, mem, py = lines
    return {"hostname": name, "kernel": kernel, "cpu_model": cpu or None, "cpus": int(cpus) if cpus.isdigit() else None,
            "memory_bytes": int(mem) * 1024 if mem.isdigit() else None, "python": py or None}


def qemu_version(host: Host) -> str | None:
    if not host.remote:
        return provenance.qemu_version()
    cp = run(host, ["qemu-system-x86_64", "--version"], check=False, timeout=60)
    out = cp.stdout.decode(errors="replace").strip()
    return out.splitlines()[0] if cp.returncode == 0 and out else None


def free_bytes(host: Host, path: str) -> int:
    out = output(host, ["sh", "-c", 'p="$1"; while [ ! -e "$p" ]; do p=$(dirname "$p"); done; '
                                    'df -P -B1 "$p" | tail -1', "sh", path])
    return int(out.split()[3])


def choose_accel(host: Host, requested: str, image: images.Image) -> accel_mod.Choice:
    """accel.choose, run where the VM will run: a remote host is probed over ssh (its copy of the image)."""
    if not host.remote or requested == "tcg":
        return accel_mod.choose(requested, image.kernel)
    kernel = place_image(host, image) / "vmlinuz"
    console = f"/tmp/fslab-probe-{abs(hash((host.uri, str(kernel)))) % 10**8}.log"
    argv = ["timeout", str(int(accel_mod.PROBE_TIMEOUT)), *accel_mod.probe_argv("kvm", str(kernel), console)]
    cp = run(host, ["sh", "-c", '[ -r /dev/kvm ] && [ -w /dev/kvm ] || exit 90; "$@"; rc=$?; '
                               f'cat {console}; rm -f {console}; exit $rc', "sh", *argv], check=False, timeout=120)
    text = cp.stdout.decode(errors="replace")
    if cp.returncode == 0 and any(m in text for m in ("Kernel panic", "VFS: Unable to mount root")):
        return accel_mod.Choice(requested, "kvm", f"a kvm guest booted its kernel on {host.label}")
    seen = ("/dev/kvm is missing or not accessible" if cp.returncode == 90 else
            "a kvm guest did not finish booting (hung)" if cp.returncode == 124 else
            f"a kvm guest failed (exit {cp.returncode})")
    if requested == "kvm":
        raise FslabError(f"accelerator: kvm was requested but does not work on {host.label}: {seen}",
                         hint="use accelerator: auto or tcg")
    return accel_mod.Choice(requested, "tcg", f"KVM probe on {host.label} failed: {seen}")

