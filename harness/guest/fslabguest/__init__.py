"""fslabguest: what fslab's guest programs (harness/guest/fslab_NAME.py -> /usr/local/bin/fslab-NAME)
share, and the parts of the larger ones. Standard library only, like the programs.

In the image it is /usr/local/lib/python3/dist-packages/fslabguest (images/debian-12/bootstrap.sh,
packer/scripts/15-guest-agent.sh), where the guest's python3 finds it with no sys.path line; on
the host, harness/guest is put on sys.path by harness/guest_programs.py, the one loader of guest
programs. Modules:

    commands     run_cmd (one command, no shell: exit code and output) and the sbin PATH
    fdio         write_all (a whole buffer to a file descriptor)
    blockstat    flushes (a block device's completed cache flushes, /sys/class/block/<dev>/stat)
    stream       the agent's outputs: the results tar stream and the progress port
    powerloss/   fslab-powerloss by what it does: the log, crash points, replay, promises,
                 workloads, device mapper, recording, the check loop and its report
"""
