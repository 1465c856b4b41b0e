"""Count the SIGINT, SIGTERM and SIGHUP this process gets.

usage: count_signals.py READY

Makes one CUDA call (cuInit), creates the file READY, then waits for a
signal (30 s at most); three seconds after the first, prints the names of
those it got, in order ("none" for none), and exits 0.
"""
import ctypes
import signal
import sys
import time

got = []


def on_signal(sig, frame):
    got.append(sig)


def main():
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    ctypes.CDLL("libcuda.so.1").cuInit(0)
    open(sys.argv[1], "w").close()
    until = time.monotonic() + 30
    while not got and time.monotonic() < until:
        time.sleep(0.01)
    until = time.monotonic() + 3
    while time.monotonic() < until:
        time.sleep(0.01)
    print(" ".join(signal.Signals(s).name for s in got) or "none")


if __name__ == "__main__":
    main()
