"""Fork a child that gets a given pid, that of a process that has ended.

usage: fork_at_pid.py PID N
       fork_at_pid.py PID -- CMD [ARG...]

Loads libcuda.so.1 (first form), waits 0.5 s (a tracer reads what it is told at least
every 100 ms: that PID's process ended), sets the kernel's last pid
(/proc/sys/kernel/ns_last_pid: root) to PID - 1 and forks.  The child, if it
got PID, calls cuInit, waits 0.3 s (a tracer then looks for its Python),
then calls cuCtxSynchronize N times, 10 ms apart, from one line, and exits
0; if it got another pid, it exits 3 at once.  The parent exits as the child
did.  A fork, not an exec: nothing tells a tracer that this pid runs a new
program.  The second form: the child that got PID runs CMD in its place.
"""
import ctypes
import os
import sys
import time


def child(lib, n):
    lib.cuInit(0)
    time.sleep(0.3)
    for _ in range(n):
        lib.cuCtxSynchronize()  # THE CHILD'S CALL
        time.sleep(0.01)


def main():
    pid, cmd = int(sys.argv[1]), sys.argv[3:] if sys.argv[2] == "--" else None
    lib = None if cmd else ctypes.CDLL("libcuda.so.1")
    time.sleep(0.5)
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(pid - 1))
    c = os.fork()
    if c == 0:
        if os.getpid() != pid:
            os._exit(3)
        if cmd:
            os.execvp(cmd[0], cmd)
        child(lib, int(sys.argv[2]))
        os._exit(0)
    _, status = os.waitpid(c, 0)
    sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode")
             else status >> 8)


if __name__ == "__main__":
    main()
