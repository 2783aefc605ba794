"""fslab-powerloss (harness/guest/fslab_powerloss.py, the command line; what it does, the log
format and the crash model are in its docstring) by what it does:

    log          the dm-log-writes log: format, parser, summary
    points       crash points: the states a power loss can leave, and which to check
    replay       rebuilding a crash state on the data disk; the positive control's dropped write
    promises     content and states, the acknowledgement log, verifying a crash image
    workloads    the six workloads
    devmapper    the system: device-mapper, mounts, the checker, loop devices, kernel messages
    record       mkfs, mount, workload and umount on a log-writes target
    ktrace       the kernel's trace events beside the log (--trace)
    checkers     what each checker's exit code says (clean, fixed by preen, needs repair, failed)
    check        the check loop over the chosen points, and its evidence
    report       the metric lines of a finished run
"""


class PowerlossError(Exception):
    """An error of fslab itself: the message is the one line printed on stderr."""
