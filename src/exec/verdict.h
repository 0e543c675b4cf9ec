// SPDX-License-Identifier: MIT
/*
 * verdict — what happened to one sandboxed execution, in the manner of
 * isolate's meta file: a status, the signal or exit code, and the exact
 * accounting (wall time, cpu time, peak memory, truncated output).
 */
#ifndef SANDBOXD_EXEC_VERDICT_H
#define SANDBOXD_EXEC_VERDICT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

enum verdict_status {
    VERDICT_OK,           /* the runtime answered */
    VERDICT_TIMEOUT,      /* wall-clock or cpu limit */
    VERDICT_MEMORY_LIMIT, /* out of memory: MemoryError, or the cgroup OOM killer */
    VERDICT_OUTPUT_LIMIT, /* stdout+stderr over the limit */
    VERDICT_KILLED,       /* died from a signal we did not send for a limit */
    VERDICT_EXITED,       /* exited without answering */
    VERDICT_PROTOCOL,     /* sent something that is not a valid frame (or a frame too large) */
    VERDICT_INTERNAL,     /* sandboxd could not run it (spawn/protocol failure) */
};

struct verdict {
    enum verdict_status status;
    int signal;    /* KILLED */
    int exit_code; /* EXITED */
    int64_t wall_us;
    uint64_t cpu_us;
    uint64_t memory_peak; /* bytes */
    bool cpu_limit;       /* TIMEOUT caused by the cpu limit rather than the wall clock */
    bool stdout_truncated;
    bool stderr_truncated;
    bool accounting_from_cgroup; /* cpu/memory measured by the kernel, not reported */
    bool memory_from_rusage;     /* ... but the peak from rusage (no cgroup v2 memory.peak) */
    bool reused;                 /* ran in a kept interpreter (warm reuse, CONTRACT §14) */
    bool have_faults;            /* minor_faults is known (the runtime reported it) */
    uint64_t minor_faults;       /* page faults of the sandbox from the job to the answer */
};

const char *verdict_status_name(enum verdict_status s);
/* {"status", "signal"?, "exitCode"?, "wallMs", "cpuMs", "memoryPeakBytes", "truncated",
 *  "accounting", "reused", "minorFaults"?} */
json_t *verdict_to_json(const struct verdict *v);

#endif
