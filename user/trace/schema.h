/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The trace schema: every name a gpubpf trace uses, defined once for the
 * writers (export_chrome.c, merge) and the readers (trace_reader.c,
 * trace_import.c, the report).  Names are string literals, so that they
 * can be concatenated into literals; the JSON layout they fill is
 * described at the top of export_chrome.c.
 */
#ifndef GPUBPF_TRACE_SCHEMA_H
#define GPUBPF_TRACE_SCHEMA_H

#include <stdbool.h>
#include <stdint.h>

/* Members of a Chrome trace event. */
#define TS_KEY_PH               "ph"
#define TS_KEY_CAT              "cat"
#define TS_KEY_NAME             "name"
#define TS_KEY_PID              "pid"
#define TS_KEY_TID              "tid"
#define TS_KEY_TS               "ts"
#define TS_KEY_DUR              "dur"
#define TS_KEY_ID               "id"
#define TS_KEY_SCOPE            "s"             /* instants: */
#define TS_SCOPE_THREAD         "t"             /* on their thread's track */
#define TS_KEY_BIND_ID          "bind_id"       /* flow events v2: the arrow's id */
#define TS_KEY_FLOW_OUT         "flow_out"
#define TS_KEY_FLOW_IN          "flow_in"
#define TS_KEY_ARGS             "args"
#define TS_TRACE_EVENTS         "traceEvents"

/* Event phases. */
#define TS_PH_COMPLETE          "X"
#define TS_PH_INSTANT           "i"
#define TS_PH_COUNTER           "C"
#define TS_PH_META              "M"

/* Categories. */
#define TS_CAT_API              "cuda_api"      /* a driver call, on its thread */
#define TS_CAT_KERNEL           "kernel"        /* GPU work, on its stream's track: */
#define TS_CAT_NCCL             "nccl"          /* a kernel named nccl... */
#define TS_CAT_MEMCPY           "gpu_memcpy"
#define TS_CAT_MEMSET           "gpu_memset"
#define TS_CAT_SYNC             "gpu_sync"      /* a stream waiting for an event */
#define TS_CAT_MEMORY           "gpu_memory"    /* an allocation or release (instant) */
#define TS_CAT_PYTHON           "python"        /* a Python function around calls */

/* Event names the trace fixes. */
#define TS_NAME_MEMCPY          "Memcpy %s"     /* the copy kind's name */
#define TS_NAME_MEMSET          "Memset"
#define TS_NAME_WAIT            "Wait event"
#define TS_NAME_KERNEL          "kernel"        /* a kernel of unknown name */
#define TS_NAME_ALLOC           "alloc"         /* gpu_memory: op 1 */
#define TS_NAME_FREE            "free"          /* op 2 */
#define TS_NAME_MEMORY          "memory"        /* any other op */
#define TS_NAME_COUNTER         "device memory GPU %u"
#define TS_META_PROCESS_NAME    "process_name"
#define TS_META_THREAD_NAME     "thread_name"
#define TS_META_THREAD_SORT     "thread_sort_index"
#define TS_META_SORT_INDEX      "sort_index"

/* Members of "args". */
#define TS_ARG_NAME             "name"          /* metadata events */
#define TS_ARG_KERNEL           "kernel"        /* name, or "0x..." function handle */
#define TS_ARG_GRID             "grid"
#define TS_ARG_BLOCK            "block"
#define TS_ARG_SHMEM            "shared_mem"
#define TS_ARG_STATIC_SHMEM     "static_shared_mem"
#define TS_ARG_REGISTERS        "registers"
#define TS_ARG_STREAM           "stream"        /* calls: "0x..." handle; GPU: stream id */
#define TS_ARG_BYTES            "bytes"
#define TS_ARG_KIND             "kind"          /* copy kind */
#define TS_ARG_GBPS             "GB/s"
#define TS_ARG_PTR              "ptr"
#define TS_ARG_COUNT            "count"
#define TS_ARG_HANDLE           "handle"
#define TS_ARG_RET              "ret"
#define TS_ARG_ERROR            "error"         /* a failed call's CUresult name */
#define TS_ARG_CORRELATION      "correlation"
#define TS_ARG_UNFINISHED       "unfinished"    /* true: still in the call when the
						   recording stopped, its slice ends there */
#define TS_ARG_STACK            "stack"         /* Python frames, innermost first */
#define TS_ARG_STACK_TRUNCATED  "stack_truncated"
#define TS_ARG_STACK_ATTRIBUTED "stack_attributed" /* true: walked on another thread */
#define TS_ARG_STACK_THREAD     "stack_thread"  /* that thread, whose wake the call served */
#define TS_ARG_NATIVE_STACK     "native_stack"
#define TS_ARG_AUTOGRAD_NODE    "autograd_node"    /* calls: the PyTorch autograd node run */
#define TS_ARG_AUTOGRAD_FORWARD "autograd_forward" /* its maker's Python frames, as "stack" */
#define TS_ARG_GRAPH_NODE       "graph_node"
#define TS_ARG_ARGS_HASH        "args_hash"     /* kernels: of the launch's arguments */
#define TS_ARG_DEVICE           "device"
#define TS_ARG_EVENT            "event"         /* gpu_sync: the event waited for */
#define TS_ARG_ADDRESS          "address"       /* gpu_memory */
#define TS_ARG_MEMORY_KIND      "memory_kind"
#define TS_ARG_FUNCTION         "function"      /* python scopes */
#define TS_ARG_FIRST_FRAME      "first_frame"

/* The "gpubpf" object: trace-level metadata, first in the file. */
#define TS_META                 "gpubpf"
#define TS_META_VERSION         "version"
#define TS_META_CLOCK           "clock"
#define TS_CLOCK                "CLOCK_MONOTONIC"
#define TS_META_REALTIME        "realtime_offset_ns"
#define TS_META_TS_BASE         "ts_base_ns"    /* added to every "ts" */
#define TS_META_HOST            "host"
#define TS_META_DROPPED         "dropped_events"        /* pid -> count */
#define TS_META_DROPPED_TOTAL   "dropped_total"
#define TS_META_MISSING         "calls_may_be_missing"  /* pid -> why */
#define TS_META_EVENTS          "events"
#define TS_META_GPU             "gpu"
/* members of "gpu" */
#define TS_GPU_DROPPED          "dropped_events"        /* pid -> count */
#define TS_GPU_ERRORS           "errors"                /* pid -> why */
#define TS_GPU_WINDOW           "window_open_us"        /* pid -> us after the base */
#define TS_GPU_LATE_ATTACH      "late_attach"           /* pid -> {thread, stall_us} */
#define TS_GPU_LATE_THREAD      "thread"
#define TS_GPU_LATE_STALL       "stall_us"
#define TS_GPU_SKEWED           "clock_skewed_events"
#define TS_GPU_MAX_SKEW         "max_clock_skew_us"
#define TS_GPU_REPAIRED         "clock_repaired_events" /* moved after their calls */
#define TS_GPU_MAX_REPAIR       "max_clock_repair_us"
/* A trace opens with its metadata: write this, then the object, then
 * TS_OPEN_EVENTS and the events. */
#define TS_OPEN_META            "{\"" TS_META "\":"
#define TS_OPEN_EVENTS          ",\"" TS_TRACE_EVENTS "\":["

/*
 * What merge adds: processes are named "<host>: <name>" with the host
 * and the pid on it in args; the "gpubpf" object says which host's clock
 * the trace is on and, under "merge", how each input was placed.
 */
#define TS_ARG_HOST             "host"
#define TS_ARG_HOST_PID         "host_pid"
#define TS_META_CLOCK_HOST      "clock_host"
#define TS_META_MERGE           "merge"
#define TS_MERGE_REFERENCE      "reference"
#define TS_MERGE_CLOCK_ADDED    "clock_added_ns"  /* merged clock - reference's */
#define TS_MERGE_ALIGNED        "aligned_collectives"
#define TS_MERGE_PID_STRIDE     "pid_stride"
#define TS_MERGE_HOSTS          "hosts"         /* one object per input: */
#define TS_MERGE_HOST           "host"
#define TS_MERGE_TRACE_HOST     "trace_host"
#define TS_MERGE_FILE           "file"
#define TS_MERGE_CLOCK_SHIFT    "clock_shift_ns"
#define TS_MERGE_SKEW           "skew_ns"
#define TS_MERGE_SKEW_SPREAD    "skew_spread_ns"
#define TS_MERGE_MATCHED        "collectives_matched"
#define TS_MERGE_SHIFT          "shift_ns"
#define TS_MERGE_PID_BASE       "pid_base"

/*
 * GPU tracks are threads of the process with synthetic tids above any
 * real one (pid_max is at most 2^22): TS_GPU_TID_BASE + (device << 20) +
 * lane, the lane being the stream (its low 20 bits) or, for the device's
 * memory records, TS_GPU_MEMORY_LANE.
 */
#define TS_GPU_TID_BASE         0x40000000u
#define TS_GPU_MEMORY_LANE      0xfffffu
#define TS_TRACK_STREAM         "GPU %u / stream %u"
#define TS_TRACK_MEMORY         "GPU %u / memory"
/* thread_sort_index of GPU tracks: after the host threads */
#define TS_GPU_SORT_BASE        1000000u

/*
 * Thread states and CPU samples: a track right under each host thread,
 * tid TS_STATE_TID_BASE + tid (below the GPU tracks, above any real tid),
 * "<thread> state".
 */
#define TS_STATE_TID_BASE       0x20000000u
#define TS_TRACK_STATE          "%s state"
#define TS_TRACK_STATE_TID      "%u state"      /* of a thread without a name */
#define TS_CAT_STATE            "thread_state"  /* a slice: what the thread was doing */
#define TS_CAT_SAMPLE           "sample"        /* an instant: a CPU sample's stack */
#define TS_ARG_STATE            "state"
#define TS_ARG_SYSCALL          "syscall"
#define TS_ARG_HOLDER_TID       "holder_tid"    /* a GIL wait: the thread holding it */
#define TS_ARG_CPU              "cpu"
#define TS_ARG_GC               "gc"            /* a sample: true while collecting garbage */
#define TS_KEY_CNAME            "cname"         /* chrome://tracing's reserved colour */

static inline uint32_t ts_gpu_tid(uint32_t device, uint32_t lane)
{
	return TS_GPU_TID_BASE + (device << 20) + (lane & TS_GPU_MEMORY_LANE);
}

/* Whether an argument holds a stack (an array of frames, innermost first). */
bool ts_arg_is_stack(const char *key);

/* A kernel's category: TS_CAT_NCCL for NCCL's (ncclKernel_..., ncclDevKernel_...). */
const char *ts_kernel_cat(const char *name);

/* A GPU copy's kind (enum ga_copy_kind, CUPTI's order) as the trace names it. */
const char *ts_copy_kind_name(unsigned kind);
/* The kind of a name, 0 ("Unknown") if it is none. */
unsigned ts_copy_kind_from_name(const char *name);

#endif
