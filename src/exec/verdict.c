// SPDX-License-Identifier: MIT
/*
 * verdict — see verdict.h.
 */
#include "exec/verdict.h"

#include <signal.h>
#include <string.h>

const char *verdict_status_name(enum verdict_status s)
{
    switch (s) {
    case VERDICT_OK:
        return "OK";
    case VERDICT_TIMEOUT:
        return "TIMEOUT";
    case VERDICT_MEMORY_LIMIT:
        return "MEMORY_LIMIT";
    case VERDICT_OUTPUT_LIMIT:
        return "OUTPUT_LIMIT";
    case VERDICT_KILLED:
        return "KILLED";
    case VERDICT_EXITED:
        return "EXITED";
    case VERDICT_PROTOCOL:
        return "PROTOCOL_ERROR";
    case VERDICT_INTERNAL:
        return "INTERNAL";
    }
    return "INTERNAL";
}

json_t *verdict_to_json(const struct verdict *v)
{
    json_t *o = json_pack(
        "{s:s, s:f, s:f, s:I, s:b, s:s, s:b}", "status", verdict_status_name(v->status), "wallMs",
        (double)v->wall_us / 1000.0, "cpuMs", (double)v->cpu_us / 1000.0, "memoryPeakBytes",
        (json_int_t)v->memory_peak, "truncated", v->stdout_truncated || v->stderr_truncated,
        "accounting", v->accounting_from_cgroup ? "cgroup" : "rusage", "reused", v->reused);
    if (!o)
        return NULL;
    if (v->have_faults)
        json_object_set_new(o, "minorFaults", json_integer((json_int_t)v->minor_faults));
    if (v->accounting_from_cgroup && v->memory_from_rusage)
        json_object_set_new(o, "memoryAccounting", json_string("rusage"));
    if (v->status == VERDICT_KILLED) {
        json_object_set_new(o, "signal", json_integer(v->signal));
        const char *abbrev = sigabbrev_np(v->signal);
        if (abbrev) {
            char name[32] = "SIG";
            strncat(name, abbrev, sizeof(name) - 4);
            json_object_set_new(o, "signalName", json_string(name));
        }
    }
    if (v->status == VERDICT_EXITED)
        json_object_set_new(o, "exitCode", json_integer(v->exit_code));
    if (v->status == VERDICT_TIMEOUT)
        json_object_set_new(o, "limit", json_string(v->cpu_limit ? "cpu" : "wall"));
    return o;
}
