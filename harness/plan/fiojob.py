"""fio job files: rendering our cases, and confining a user's job file to the filesystem under test.

Over ~400 lines because it is one thing, fio 3.33's job-file grammar and its path-bearing options:
the table of every option and what happens to it must sit next to the parser that applies it.

The guest agent runs fio with FSLAB_MNT set to the mount point; fio expands `${FSLAB_MNT}` in job
files itself, so the host can finish the job text and the agent never edits it.

A user's job (`fslab run --fio-job FILE`) is parsed the way fio 3.33 parses it (init.c
`__parse_jobs_ini`, parse.c `strip_blank_end`): lines split at '\\n' only; a line whose first
non-blank character is ';' or '#' is a comment; anything from the first ';' or '#' on is cut (so a
value can hold neither); `[name]` opens a section, and every section whose name *starts* with
"global" is a global one; `key=value` or a bare `key`; option names are exact (aliases such as
`timeout` = `runtime` are folded, see ALIASES). A later [global] only affects the jobs after it.

Every option of fio 3.33 that names a path or runs something, from its man page (fio(1),
"JOB PARAMETERS" and the engine sections), and what happens to it:

  directory            dropped; one `[global] directory=${FSLAB_MNT}` is put first
  filename             each ':'-separated name: an absolute path or one with '..' keeps only its base
                       name, a relative one stays (below the directory); '-' (stdin/stdout), '', '.',
                       '..' and '/' are refused
  filename_format      the same rule (its $jobname/$jobnum/$filenum stay)
  opendir              ${FSLAB_MNT}, or ${FSLAB_MNT}/<rel> for a relative path without '..'
  write_iolog, write_bw_log, write_lat_log, write_iops_log, write_hist_log, merge_blktrace_file
                       ${FSLAB_MNT}/<base name> (a bare log option: ${FSLAB_MNT}/<section>); fio
                       writes relative log names into its working directory, not into `directory`,
                       so every one gets the prefix. They are not collected: the mount is emptied
                       after each case (a warning says so)
  mem / iomem          mmap:/path and mmaphuge:/path: the file part becomes ${FSLAB_MNT}/<base name>
  donorname            (e4defrag) ${FSLAB_MNT}/<base name>
  read_iolog           refused: fio replays onto the files or devices named *inside* the log
  replay_redirect      refused: names a device
  exec_prerun, exec_postrun   refused: run a shell command
  ioscheduler          refused: switches the scheduler of the disk under test for every later case
  cgroup, cgroup_weight, cgroup_nodelete   refused: create control groups outside the filesystem
  profile              refused: the tiobench/act profiles bring their own directory/device options
  ioengine             only engines that work on files in a directory (ENGINES); external:<path>,
                       exec, sg, mtd, io_uring_cmd, net*, rdma, rbd, pmem and the rest are refused
  include              (a job-file directive) refused: the included file is not in the guest
  name, [section]      a job name is part of fio's default file names: '/' is refused
  ${VAR}               environment variables are refused (fio substitutes them before parsing, even
                       in option names); only ${FSLAB_MNT} is allowed
  $pagesize, $mb_memory, $ncpus   fio hands such a value to `bc` through a shell: only arithmetic
                       characters are allowed there
Left as they are, and why: lockfile (a lock mode, not a path); unique_filename (network clients);
verify_state_save/verify_state_load and verify_dump (fio writes the state and dump files into
its --aux-path, by default its working directory: the agent's private temporary directory);
uid/gid (no path); wait_for (a job name); engine options of refused engines (program, hostname,
pool, nfs_url, hdfsdirectory, ...: they have no effect without their engine). Command-line options
(--output, --aux-path,
--trigger*) cannot appear in a job file.

Also refused, since fio would read them differently than this parser: lines longer than 4000
bytes (fio reads 8192-byte chunks, so the rest of a longer line would become an option of its own),
control characters, text that is not UTF-8, and options before the first section. A path may start
with ${FSLAB_MNT}/ (that prefix is taken off), and holds no other ${...}.

(Over 400 lines because the list above and the code it describes belong in one place.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from harness import userfile
from harness.errors import FslabError

MNT = "${FSLAB_MNT}"
MAX_BYTES = 1 << 20
MAX_LINE = 4000

# fio 3.33's option aliases (options.c `.alias`): the name the rest of fslab uses on the right.
ALIASES = {
    "readwrite": "rw", "iodepth_batch_submit": "iodepth_batch", "iodepth_batch_complete": "iodepth_batch_complete_min",
    "io_limit": "io_size", "fill_fs": "fill_device", "fileoffset": "offset", "blocksize": "bs", "blockalign": "ba",
    "blocksize_range": "bsrange", "blocksize_unaligned": "bs_unaligned", "nr_files": "nrfiles", "timeout": "runtime",
    "iomem": "mem", "mem_align": "iomem_align", "ratemin": "rate_min", "ratecycle": "rate_cycle",
    "wait_for_previous": "stonewall", "disable_bw": "disable_bw_measurement", "ss": "steadystate",
    "ss_dur": "steadystate_duration", "ss_ramp": "steadystate_ramp_time",
}
# I/O engines that work on files below `directory` (fio 3.33 `--enghelp`, Debian build).
ENGINES = ("sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap", "splice",
           "null", "cpuio", "ftruncate", "filecreate", "filestat", "filedelete", "falloc", "e4defrag")
# Engines fio 3.33 runs without size= on files that do not exist (measured: cpuio does no file I/O,
# filecreate makes empty files; null, filestat, filedelete, ftruncate stop "you need to specify size=").
SIZELESS_ENGINES = ("cpuio", "filecreate")
REFUSED = {
    "read_iolog": "fio replays onto the files or devices named inside the log, which fslab cannot confine",
    "replay_redirect": "it names a device outside the filesystem under test",
    "exec_prerun": "it runs a shell command outside the filesystem under test",
    "exec_postrun": "it runs a shell command outside the filesystem under test",
    "ioscheduler": "it switches the I/O scheduler of the disk under test for every later case "
                   "(the vmconfig decides the disk setup)",
    "cgroup": "it creates control groups outside the filesystem under test",
    "cgroup_weight": "it creates control groups outside the filesystem under test",
    "cgroup_nodelete": "it creates control groups outside the filesystem under test",
    "profile": "fio's tiobench/act profiles bring their own directory and device options",
}
LOGS = ("write_iolog", "write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log", "merge_blktrace_file")
PATHS = ("filename", "filename_format", "opendir", "donorname", "mem", *LOGS)
UNSIGNED = ("size", "filesize", "io_size", "number_ios", "offset", "nrfiles", "loops", "numjobs", "bs", "bsrange",
            "iodepth")  # sizes and counts: fio parses them unsigned
KEYWORDS = ("$pagesize", "$mb_memory", "$ncpus")
_ARITH = re.compile(r"^[A-Za-z0-9_$+\-*/%(). =]*$")
_ENV = re.compile(r"\$\{([^}]*)\}")
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9._+-]")


def render(sections: dict[str, dict[str, object]]) -> str:
    """A job file from {section: {option: value}}; a value of None is a bare option.

    >>> print(render({"global": {"directory": MNT, "direct": 1}, "r": {"rw": "read", "time_based": None}}))
    [global]
    directory=${FSLAB_MNT}
    direct=1
    <BLANKLINE>
    [r]
    rw=read
    time_based
    <BLANKLINE>
    """
    blocks = []
    for name, opts in sections.items():
        lines = [f"[{name}]"] + [k if v is None else f"{k}={v}" for k, v in opts.items()]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


@dataclass
class Option:
    name: str  # as written (an alias stays an alias in the text)
    value: str | None  # None: a bare option
    line: int

    @property
    def key(self) -> str:
        """The canonical option name (aliases folded)."""
        return ALIASES.get(self.name, self.name)

    def text(self) -> str:
        return self.name if self.value is None else f"{self.name}={self.value}"


@dataclass
class Section:
    name: str
    line: int
    items: list[Option | str] = field(default_factory=list)  # options, and comment/blank lines as they were

    @property
    def is_global(self) -> bool:
        return self.name.startswith("global")  # fio: strncmp(name, "global", 6)

    @property
    def options(self) -> list[Option]:
        return [i for i in self.items if isinstance(i, Option)]

    def label(self) -> str:
        """The job's name in fio's output: its own last `name=`, else the section name."""
        names = [o.value for o in self.options if o.key == "name" and o.value]
        return names[-1] if names else self.name


@dataclass
class JobFile:
    preamble: list[str]  # comment and blank lines before the first section
    sections: list[Section]

    def jobs(self) -> list[tuple[Section, dict[str, str | None]]]:
        """Every job section with its effective options: the globals seen so far, then its own.

        >>> jf = parse("[global]\\nbs=4k\\n[a]\\nrw=read\\n[global]\\nbs=8k\\n[b]\\nblocksize=1m\\n", "x.fio")
        >>> [(s.name, o["bs"]) for s, o in jf.jobs()]
        [('a', '4k'), ('b', '1m')]
        """
        glob: dict[str, str | None] = {}
        out = []
        for s in self.sections:
            own = {o.key: o.value for o in s.options}
            if s.is_global:
                glob.update(own)
            else:
                out.append((s, {**glob, **own}))
        return out

    def render(self) -> str:
        lines = list(self.preamble)
        for s in self.sections:
            lines.append(f"[{s.name}]")
            lines += [i if isinstance(i, str) else i.text() for i in s.items]
        return "\n".join(lines).rstrip("\n") + "\n"


def _decode(data: bytes, src: str) -> str:
    if len(data) > MAX_BYTES:
        raise FslabError(f"{src}: not a fio job file: {len(data)} bytes; allowed: at most {MAX_BYTES} bytes")
    nul = data.find(b"\0")
    if nul >= 0:
        raise FslabError(f"{src}: not a fio job file: it is binary (NUL byte at offset {nul})",
                         hint="give a text job file, e.g. one of fio's examples/*.fio")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FslabError(f"{src}: not a fio job file: not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                         f"{e.start})", hint="give a text job file, e.g. one of fio's examples/*.fio") from None


def _strip(line: str) -> str:
    """A line as fio reads it: blanks trimmed, cut at the first ';' or '#' (parse.c strip_blank_end)."""
    cut = min((i for i in (line.find(";"), line.find("#")) if i >= 0), default=len(line))
    return line[:cut].strip(" \t\r\v\f")


def _truthy(value: str | None) -> bool:
    """A fio bool/str_set option: bare or a non-zero number is true."""
    if value is None:
        return True
    v = value.strip().lower()
    return v not in ("0", "false", "no", "off", "")


def parse(text: str, src: str) -> JobFile:
    """A job file's sections and options, or FslabError naming the file, line and problem."""
    preamble: list[str] = []
    sections: list[Section] = []
    for n, raw in enumerate(text.split("\n"), start=1):
        where = f"{src}:{n}"
        if len(raw.encode()) > MAX_LINE:
            raise FslabError(f"{where}: line of {len(raw.encode())} bytes; allowed: at most {MAX_LINE} bytes")
        bad = [c for c in raw.rstrip("\r") if ord(c) < 32 and c != "\t"]
        if bad:
            raise FslabError(f"{where}: control character 0x{ord(bad[0]):02x}; allowed: printable text and tabs")
        line = _strip(raw)
        if not line:  # blank, or a comment (fio's is_empty_or_comment)
            (sections[-1].items if sections else preamble).append(raw.rstrip("\r"))
            continue
        if line.startswith("["):
            name = line[1:-1]
            if not line.endswith("]") or not name.strip() or len(name) > 254:
                raise FslabError(f"{where}: '{line[:60]}' is not a section header; allowed: [name] "
                                 f"with 1 to 254 characters")
            sections.append(Section(name, n))
            continue
        if not sections:
            raise FslabError(f"{where}: option '{line[:60]}' before the first [section]; "
                             f"allowed: options inside [global] or a [job] section")
        if line.startswith("include"):
            raise FslabError(f"{where}: 'include' is not allowed: the included file is not in the guest",
                             hint="paste its options into this file")
        key, eq, value = line.partition("=")
        sections[-1].items.append(Option(key.strip(), value.strip() if eq else None, n))
    if not any(not s.is_global for s in sections):
        raise FslabError(f"{src}: the fio job file has no job section (only [global] or nothing)")
    return JobFile(preamble, sections)


def _refuse(src: str, s: Section, o: Option, why: str, allowed: str, hint: str | None = None) -> FslabError:
    return FslabError(f"{src}:{o.line}: [{s.name}] {o.name}: {why}; allowed: {allowed}", hint=hint)


def _split_names(value: str) -> list[str]:
    """fio's ':'-separated file list, '\\:' being a literal colon."""
    return [p.replace("\0", "\\:") for p in value.replace("\\:", "\0").split(":")]


def _inside(path: str) -> str:
    """A path as it may stand below `directory`: relative ones without '..' stay, others keep their base name."""
    p = PurePosixPath(path)
    return path if not p.is_absolute() and ".." not in p.parts else p.name


def _unmounted(src: str, s: Section, o: Option, path: str) -> str:
    """A path value without a leading ${FSLAB_MNT}/ (the mount itself: '.'); any other ${...}
    in a path could expand to somewhere else (${FSLAB_MNT}_x/f is a sibling of the mount)."""
    if path == MNT:
        path = "."
    elif path.startswith(MNT + "/"):
        path = path[len(MNT) + 1:]
    if "${" in path:
        raise _refuse(src, s, o, f"'{path}': ${{...}} inside a path", f"{MNT}/<path> or a plain path")
    return path


def _job_name_ok(name: str) -> bool:
    """fio names files `$jobname.$jobnum.$filenum` and filename_format may use `$jobname/...`."""
    return "/" not in name and name.strip() not in (".", "..")


def _checked(src: str, s: Section, o: Option) -> None:
    """Refusals that do not depend on the option (environment, bc keywords, job names)."""
    text = o.text()
    for var in _ENV.findall(text):
        if var != "FSLAB_MNT":
            raise _refuse(src, s, o, f"${{{var}}}: environment variables are not passed into the guest",
                          "${FSLAB_MNT} (the mount point)")
    if any(k in text for k in KEYWORDS) and not _ARITH.match(text):
        raise _refuse(src, s, o, "fio hands values with $pagesize/$mb_memory/$ncpus to bc through a shell",
                      "digits, letters, $, + - * / % ( ) . and spaces there")
    if o.key in UNSIGNED and (o.value or "").strip().startswith("-"):
        raise _refuse(src, s, o, f"'{o.value}': fio reads a negative {o.key} as an unsigned number (-1 is 16 EiB), "
                      "a job without an end", f"a size or count of 0 or more, e.g. {o.key}=64m")
    if o.key == "name" and o.value is not None and not _job_name_ok(o.value):
        raise _refuse(src, s, o, f"'{o.value}': a job name is part of fio's file names",
                      "a name without '/', not '.' or '..'")


def _confine_option(src: str, s: Section, o: Option, changes: list[str]) -> Option | None:
    """The option pointed at the mount (None: dropped), or FslabError when it is refused."""
    k, v = o.key, o.value
    if k in REFUSED:
        raise _refuse(src, s, o, REFUSED[k], "remove the line", hint="fslab runs only what stays on the "
                      "filesystem under test")
    if k == "ioengine":
        if v not in ENGINES:
            raise _refuse(src, s, o, f"'{v or ''}' does not work on files of the filesystem under test",
                          ", ".join(ENGINES))
        return o
    if k in ("filename", "filename_format") and v is not None:
        v = ":".join(_unmounted(src, s, o, p) for p in _split_names(v))
    elif k in PATHS and k != "mem" and v is not None:
        v = _unmounted(src, s, o, v)
    new: str | None = v
    if k == "directory":
        changes.append(f"[{s.name}] {o.text()}: dropped (every file goes to the mount point)")
        return None
    if k in ("filename", "filename_format") and v is not None:
        parts = _split_names(v)
        for p in parts:
            if p == "-":
                raise _refuse(src, s, o, "'-' is stdin/stdout, not a file", "file names")
            base = _inside(p)
            if base in ("", ".", "..") or PurePosixPath(base).name in ("", ".", ".."):
                raise _refuse(src, s, o, f"'{p}' names no file", "file names")
        new = ":".join(_inside(p) for p in parts)
    elif k == "opendir":
        rel = _inside(v or "")
        new = MNT if rel in ("", ".") or rel != (v or "") else f"{MNT}/{rel}"
    elif k in LOGS:
        new = f"{MNT}/{PurePosixPath(v or '').name or s.name}"
    elif k == "donorname" and v:
        new = f"{MNT}/{PurePosixPath(v).name or 'donor'}"
    elif k == "mem" and v and ":" in v:
        kind, _, path = v.partition(":")
        new = f"{kind}:{MNT}/{PurePosixPath(_unmounted(src, s, o, path)).name}"
    if new != o.value:
        changes.append(f"[{s.name}] {o.text()} -> {o.name}={new}")
        return Option(o.name, new, o.line)
    return o


def confine(job: JobFile, src: str) -> tuple[JobFile, list[str], list[str]]:
    """The job with every path pointed at ${FSLAB_MNT} (see the module docstring), the changes
    made ("[sec] filename=/dev/sdb -> filename=sdb") and warnings for the user.

    Warnings: log files that will not be collected. A job this makes certain to fail is found
    by `certain_failure` (load_user_job refuses it).
    """
    changes: list[str] = []
    warnings: list[str] = []
    out: list[Section] = []
    for s in job.sections:
        if not _job_name_ok(s.name):
            raise FslabError(f"{src}:{s.line}: [{s.name}]: a job name is part of fio's file names; "
                             f"allowed: a name without '/', not '.' or '..'")
        items: list[Option | str] = []
        for i in s.items:
            if isinstance(i, Option):
                _checked(src, s, i)
                i = _confine_option(src, s, i, changes)  # type: ignore[assignment]
                if i is not None and i.key in LOGS:
                    warnings.append(f"{src}:{i.line}: [{s.name}] {i.name}: written on the filesystem under test "
                                    f"and deleted after the case; fslab does not collect fio's log files")
            if i is not None:
                items.append(i)
        if not (s.is_global and not any(isinstance(i, Option) for i in items)):  # e.g. only directory=
            out.append(Section(s.name, s.line, items))
    head = Section("global", 0, [Option("directory", MNT, 0), ""])
    confined = JobFile(list(job.preamble), [head, *out])
    seen: dict[str, int] = {}
    for s, _ in job.jobs():  # records name a job by its section (its name=): two would be one
        if s.label() in seen:
            raise FslabError(f"{src}:{s.line}: [{s.name}]: the job name '{s.label()}' is given twice (lines "
                             f"{seen[s.label()]} and {s.line}); fslab's records name a job by it; allowed: a name "
                             "of its own for each job section")
        seen[s.label()] = s.line
    return confined, changes, warnings


def certain_failure(job: JobFile, confined: JobFile, src: str) -> FslabError | None:
    """Why the confined job is certain to fail in the guest, as the error that refuses it (None
    if nothing is): a job without size= whose files do not exist yet on the new filesystem (fio
    stops with "you need to specify size="), e.g. fio's examples/butterfly.fio, whose
    filename=/tmp/testfile fslab's rewrite makes testfile on the empty filesystem under test.
    Jobs that need no size (SIZELESS_ENGINES, fill_device) are not refused.
    """
    sized: set[str] = set()
    for (s, before), (_, opts) in zip(job.jobs(), confined.jobs(), strict=True):
        names = opts.get("filename")
        known = names is not None and names in sized
        fills = "fill_device" in opts and _truthy(opts.get("fill_device"))
        if opts.get("ioengine") in SIZELESS_ENGINES or opts.get("size") or opts.get("filesize") or known or fills:
            sized.add(names or "")
            continue
        orig = before.get("filename")
        what = (f"fslab's rewrite of filename={orig} names {names} on the new filesystem under test, a file that "
                "does not exist yet" if orig and orig != names else "its files do not exist yet on the new filesystem")
        return FslabError(f"{src}:{s.line}: [{s.name}] has no size=: {what}; fio would stop with "
                          f"\"{s.label()}: you need to specify size=\"; allowed: a size= (or filesize=) for this job",
                          hint="add e.g. size=64m to the job or its [global]")
    return None


def point_at_mount(text: str, src: str) -> str:
    """Rewrite a user's fio job so every file it touches lies on the filesystem under test.

    >>> print(point_at_mount("[j]\\nrw=read\\nfilename=/dev/sdb:/tmp/x\\ndirectory=/data\\n", "j.fio"), end="")
    [global]
    directory=${FSLAB_MNT}
    <BLANKLINE>
    [j]
    rw=read
    filename=sdb:x
    """
    return confine(parse(text, src), src)[0].render()


@dataclass(frozen=True)
class UserJob:
    """A user's job file, ready for the plan: `case_id` (the file's stem, made safe for a
    directory name), `text` (confined: what the guest runs), `original` (as read), the `changes`
    confine() made and its `warnings`."""

    path: str
    case_id: str
    text: str
    original: str
    changes: tuple[str, ...]
    warnings: tuple[str, ...]


def load_user_job(path: str) -> UserJob:
    """The job file of `fslab run --fio-job FILE`, or FslabError in one line."""
    p = Path(path)
    data = userfile.read(path, "fio job file", MAX_BYTES)  # never /dev/zero for ever
    original = _decode(data, path)
    parsed = parse(original, path)
    confined, changes, warnings = confine(parsed, path)
    failure = certain_failure(parsed, confined, path)
    if failure is not None:
        raise failure
    cid = _UNSAFE_ID.sub("-", p.stem).lstrip(".-+") or "job"
    return UserJob(path, cid, confined.render(), original, tuple(changes), tuple(warnings))


@dataclass(frozen=True)
class Group:
    """One fio reporting group: its job labels (fio's jobnames) and its stage (groups of one
    stage run at the same time; each stonewall starts the next stage)."""

    labels: tuple[str, ...]
    stage: int


def groups(job: JobFile) -> list[Group]:
    """The reporting groups as fio numbers them (init.c add_job: a job with stonewall or new_group
    opens a new group unless the current one is still empty; numjobs clones stay in their job's
    group; stonewall also waits for every job before it: a new stage).

    >>> [(g.labels, g.stage) for g in groups(parse("[global]\\nstonewall\\n[a]\\n[b]\\n[c]\\nstonewall=0\\n"
    ...                                                  "new_group\\n", "x.fio"))]
    [(('a',), 0), (('b',), 1), (('c',), 1)]
    """
    out: list[tuple[list[str], int]] = []
    for s, opts in job.jobs():
        wall = "stonewall" in opts and _truthy(opts["stonewall"])
        new = wall or ("new_group" in opts and _truthy(opts["new_group"]))
        if not out or (new and out[-1][0]):
            out.append(([], out[-1][1] + (1 if wall else 0) if out else 0))
        if s.label() not in out[-1][0]:
            out[-1][0].append(s.label())
    return [Group(tuple(labels), stage) for labels, stage in out]
