"""Unnumbered TAP lines for the trace checkers (counted by tests/lib.sh's tap_from)."""

failed = 0


def ok(cond, desc, diag=None):
    """Print "ok - desc" or "not ok - desc" and up to 20 lines of diag."""
    global failed
    print(("ok" if cond else "not ok") + " - " + desc)
    if not cond:
        failed += 1
        for line in str(diag or "").splitlines()[:20]:
            print("#   " + line)
    return cond


def exit_status():
    return 1 if failed else 0
