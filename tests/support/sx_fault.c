/* sx_fault.c - fault injection for the tests: the library's hook, armed per kind */
#include "sx_fault.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The counts and 'fired' are atomic: the library's helper threads (the JSON profile's
 * read-ahead) allocate and read beside the caller's thread. Arming is done before an
 * export, on one thread. */
static atomic_long counts[SX_NFAULTS];
static enum sx_fault_kind armed_kind;
static long armed_nth;
static int armed_stage;
static atomic_bool fired;
static int count_rank = -1; /* SX_FAULT=count: the rank to print at exit */

static bool hook(enum sx_fault_kind kind, int stage) {
    if (kind == SX_FAULT_STAGE) {
        if (armed_stage != 0 && stage == armed_stage) {
            fired = true;
            return true;
        }
        return false;
    }
    const long n = atomic_fetch_add(&counts[kind], 1) + 1;
    if (armed_nth > 0 && kind == armed_kind && n == armed_nth) {
        fired = true;
        return true;
    }
    return false;
}

void sx_fault_arm(enum sx_fault_kind kind, long nth) {
    for (int k = 0; k < SX_NFAULTS; k++)
        atomic_store(&counts[k], 0);
    armed_kind = kind;
    armed_nth = nth;
    armed_stage = 0;
    fired = false;
    sx_fault_hook = hook;
}

void sx_fault_arm_stage(int stage) {
    sx_fault_arm(SX_FAULT_STAGE, 0);
    armed_stage = stage;
}

void sx_fault_off(void) {
    sx_fault_hook = NULL;
    armed_nth = 0;
    armed_stage = 0;
}

long sx_fault_count(enum sx_fault_kind kind) { return counts[kind]; }

bool sx_fault_fired(void) { return fired; }

void sx_alloc_fail_after(long n) {
    if (n > 0)
        sx_fault_arm(SX_FAULT_ALLOC, n);
    else
        sx_fault_off();
}

static void print_counts(void) {
    fprintf(stderr, "sx-fault-count rank %d alloc %ld read %ld write %ld\n", count_rank,
            counts[SX_FAULT_ALLOC], counts[SX_FAULT_READ], counts[SX_FAULT_WRITE]);
}

int sx_fault_from_env(int rank) {
    static const char *const kinds[] = {"alloc", "read", "write", "stage"};
    static const char *const stages[] = {"",         "open", "read", "format",
                                         "compress", "send", "write"};
    const char *v = getenv("SX_FAULT");
    char kind[16] = "", what[32] = "";
    int on = 0, k = -1, stage = 0;
    if (v == NULL || v[0] == '\0')
        return 0;
    if (strcmp(v, "count") == 0) {
        count_rank = rank;
        sx_fault_arm(SX_FAULT_ALLOC, 0);
        atexit(print_counts);
        return 0;
    }
    if (sscanf(v, "%15[a-z]:%31[a-z0-9]:%d", kind, what, &on) < 2)
        goto bad;
    for (int i = 0; i < 4; i++)
        if (strcmp(kind, kinds[i]) == 0)
            k = i;
    if (k < 0)
        goto bad;
    if (on != rank)
        return 0;
    if (k == SX_FAULT_STAGE) {
        for (int i = 1; i < 7; i++)
            if (strcmp(what, stages[i]) == 0)
                stage = i;
        if (stage == 0)
            goto bad;
        sx_fault_arm_stage(stage);
    } else {
        char *end = NULL;
        long n = strtol(what, &end, 10);
        if (*end != '\0' || n < 1)
            goto bad;
        sx_fault_arm((enum sx_fault_kind)k, n);
    }
    return 0;
bad:
    fprintf(stderr,
            "SX_FAULT=%s: want KIND:N[:RANK] (alloc, read, write, stage) or count\n", v);
    return -1;
}
