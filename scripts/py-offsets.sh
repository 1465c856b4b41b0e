#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Print the CPython struct offsets gpubpf relies on, computed with offsetof
# on an interpreter's own headers (internal ones included), one "key value"
# a line.  Usage: scripts/py-offsets.sh INCLUDE_DIR
#   e.g. scripts/py-offsets.sh ~/.pyenv/versions/3.12.1/include/python3.12
# The keys are those of the tables in user/sym/pyruntime.c; tests/unit/
# test_pyruntime.c compares the two.
set -eu
inc=${1:?usage: py-offsets.sh PYTHON_INCLUDE_DIR}
[ -f "$inc/Python.h" ] || { echo "py-offsets: no Python.h in $inc" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/off.c" <<'C'
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stdio.h>
#include <stddef.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x030E0000
#include "internal/pycore_stackref.h"
#endif
#if PY_VERSION_HEX >= 0x03090000
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#elif PY_VERSION_HEX >= 0x03080000
#include "internal/pycore_pystate.h"        /* 3.8: _PyRuntimeState */
#elif PY_VERSION_HEX >= 0x03070000
#include "internal/pystate.h"               /* 3.7: _PyRuntimeState */
#endif
#if PY_VERSION_HEX < 0x030B0000
#include "frameobject.h"
#endif
#define P(k, v) printf("%s %zu\n", k, (size_t)(v))
int main(void)
{
	printf("version %d\n", PY_MAJOR_VERSION * 100 + PY_MINOR_VERSION);
#if PY_VERSION_HEX >= 0x03070000
	P("interp_head", offsetof(_PyRuntimeState, interpreters.head));
#else
	/* 3.6: no runtime struct; its interp_head is a variable of its own */
	P("interp_head", 0);
#endif
	P("interp_next", offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX < 0x030B0000
	P("threads_head", offsetof(PyInterpreterState, tstate_head));
#else
	P("threads_head", offsetof(PyInterpreterState, threads.head));
#endif
	P("tstate_next", offsetof(PyThreadState, next));
	P("tstate_thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030B0000
	P("tstate_native_tid", offsetof(PyThreadState, native_thread_id));
#endif
#if PY_VERSION_HEX < 0x03070000
	/* 3.6: the GIL's and the collector's state are static variables */
#elif PY_VERSION_HEX < 0x030C0000
	P("gil", offsetof(_PyRuntimeState, ceval.gil));
#else
	P("gil", offsetof(PyInterpreterState, _gil));
#endif
#if PY_VERSION_HEX >= 0x03090000
	P("gc_collecting", offsetof(PyInterpreterState, gc.collecting));
#elif PY_VERSION_HEX >= 0x03070000
	/* 3.7 and 3.8 keep their collector's state in the runtime, not the interpreter */
	P("gc_collecting", offsetof(_PyRuntimeState, gc.collecting));
#endif
#if PY_VERSION_HEX >= 0x03070000
	P("gil_size", sizeof(struct _gil_runtime_state));
	P("gil_holder", offsetof(struct _gil_runtime_state, last_holder));
#endif
#if PY_VERSION_HEX < 0x030B0000
	P("tstate_frame", offsetof(PyThreadState, frame));
	P("frame_code", offsetof(PyFrameObject, f_code));
	P("frame_prev", offsetof(PyFrameObject, f_back));
	P("frame_instr", offsetof(PyFrameObject, f_lasti));
#elif PY_VERSION_HEX < 0x030D0000
	P("tstate_frame", offsetof(PyThreadState, cframe));
	P("cframe_frame", offsetof(_PyCFrame, current_frame));
	P("frame_code", offsetof(_PyInterpreterFrame, f_code));
	P("frame_prev", offsetof(_PyInterpreterFrame, previous));
	P("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
	P("frame_owner", offsetof(_PyInterpreterFrame, owner));
#else
	P("tstate_frame", offsetof(PyThreadState, current_frame));
	P("frame_code", offsetof(_PyInterpreterFrame, f_executable));
	P("frame_prev", offsetof(_PyInterpreterFrame, previous));
	P("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
	P("frame_owner", offsetof(_PyInterpreterFrame, owner));
#endif
#if PY_VERSION_HEX >= 0x030F0000
	P("tstate_base_frame", offsetof(PyThreadState, base_frame));
#endif
#if PY_VERSION_HEX >= 0x030E0000
	/* f_executable is a _PyStackRef: its low bits are tags */
	P("exec_tag_mask", Py_TAG_BITS);
	/* PEP 768's request, in the thread state (user/record/remote_exec.c) */
	P("remote_eval_breaker", offsetof(PyThreadState, eval_breaker));
	P("remote_pending", offsetof(PyThreadState, remote_debugger_support) +
	  offsetof(_PyRemoteDebuggerSupport, debugger_pending_call));
	P("remote_path", offsetof(PyThreadState, remote_debugger_support) +
	  offsetof(_PyRemoteDebuggerSupport, debugger_script_path));
	P("remote_path_size", _Py_MAX_SCRIPT_PATH_SIZE);
#endif
#if PY_VERSION_HEX >= 0x030B0000
	P("code_qualname", offsetof(PyCodeObject, co_qualname));
	P("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#endif
	P("code_filename", offsetof(PyCodeObject, co_filename));
	P("code_name", offsetof(PyCodeObject, co_name));
	P("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX >= 0x030A0000
	P("code_linetable", offsetof(PyCodeObject, co_linetable));
#else
	P("code_linetable", offsetof(PyCodeObject, co_lnotab));
#endif
	P("ascii_size", sizeof(PyASCIIObject));
	P("compact_size", sizeof(PyCompactUnicodeObject));
	P("bytes_size", offsetof(PyVarObject, ob_size));
	P("bytes_sval", offsetof(PyBytesObject, ob_sval));
	return 0;
}
C
# -idirafter: a multiarch pyconfig.h (Debian's: <x86_64-linux-gnu/python3.X/pyconfig.h>)
${CC:-gcc} -w -I"$inc" -I"$inc/internal" -idirafter "$inc/.." -o "$tmp/off" "$tmp/off.c"
"$tmp/off"
