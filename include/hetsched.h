/* hetsched client library: C ABI.
 *
 * A worker thread connects once, then per task: hetsched_alloc (blocks until a unit is
 * granted), hetsched_rerequest at each checkpoint (no system call while the daemon has
 * nothing to say), hetsched_free when done or when told to give the unit up.
 * Functions returning int give 0 (or a verdict >= 0) on success and -1 on error;
 * hetsched_last_error() then describes it (thread-local, valid until the next call).
 * A client that runs many small tasks may send many requests in one message instead
 * (hetsched_batch): one round trip for all of them.
 * Link with -lhetsched.
 */
#ifndef HETSCHED_H
#define HETSCHED_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hetsched_client hetsched_client;

/* Affinity per unit type: 0 = no implementation; higher = better. */
typedef struct {
    double cpu;
    double gpu;
    double opencl;
    double coprocessor;
} hetsched_affinity;

enum hetsched_unit_type {
    HETSCHED_CPU = 0,
    HETSCHED_GPU = 1,
    HETSCHED_OPENCL = 2,
    HETSCHED_COPROCESSOR = 3,
};

/* A task's meta information (hetsched_alloc_meta). */
typedef struct {
    const char *kind;           /* task type name; NULL: "task" */
    hetsched_affinity affinity;
    uint64_t bytes_in;          /* copied to an accelerator before a run there */
    uint64_t bytes_out;         /* copied back after it completes there */
    uint64_t checkpoint_ns[4];  /* by enum hetsched_unit_type: time between checkpoints,
                                   0 = none there; at most one day (86400e9) */
    int32_t numa_home;          /* OS index of the NUMA node holding its memory; -1: unknown */
    uint32_t weight;            /* CFS weight; 0: 1024 (nice 0) */
} hetsched_meta;

#define HETSCHED_MAX_CPUS 256

typedef struct {
    uint32_t unit;      /* unit id */
    int32_t type;       /* enum hetsched_unit_type */
    int32_t device;     /* OpenCL device index / CUDA ordinal, -1 for CPUs */
    uint32_t ncpus;     /* PUs to pin to for a CPU unit */
    uint32_t cpus[HETSCHED_MAX_CPUS];
} hetsched_grant;

enum hetsched_verdict {
    HETSCHED_KEEP = 0,    /* keep the unit until the next checkpoint */
    HETSCHED_YIELD = 1,   /* write the checkpoint back, free, alloc again */
    HETSCHED_MIGRATE = 2, /* as YIELD; the next grant is the unit in *migrate_to */
};

/* Batched submission (hetsched_batch): up to HETSCHED_MAX_BATCH requests in one message,
 * handled by the daemon in order as if sent one by one (a client still holds at most one
 * unit at a time, so a batch of tasks alternates ALLOC and FREE; an ALLOC that must wait
 * holds the rest of the batch back until it is granted). */
#define HETSCHED_MAX_BATCH 1024

enum hetsched_op_kind {
    HETSCHED_OP_ALLOC = 0,
    HETSCHED_OP_REREQUEST = 1,
    HETSCHED_OP_FREE = 2,
};

typedef struct {
    int32_t op;                /* enum hetsched_op_kind */
    int32_t finished;          /* HETSCHED_OP_FREE: the task is done */
    const hetsched_meta *meta; /* HETSCHED_OP_ALLOC: the task's meta information */
} hetsched_op;

typedef struct {
    int32_t status;      /* 0: granted / freed / kept; 1, 2: the hetsched_verdict of a
                            rerequest; -1: refused (hetsched_last_error) or not answered */
    uint32_t migrate_to; /* status HETSCHED_MIGRATE: the unit to move to */
    hetsched_grant grant; /* HETSCHED_OP_ALLOC answered 0: the unit granted */
} hetsched_result;

/* socket_path NULL: the default ($HETSCHED_SOCKET, $XDG_RUNTIME_DIR/hetsched/daemon.sock,
 * /tmp/hetsched-$UID/daemon.sock). Returns NULL on error. */
hetsched_client *hetsched_connect(const char *socket_path, const char *name);
int hetsched_alloc(hetsched_client *c, const char *kind, const hetsched_affinity *affinity,
                   uint64_t memory_to_copy, hetsched_grant *grant);
/* As hetsched_alloc, with all of the task's meta information. */
int hetsched_alloc_meta(hetsched_client *c, const hetsched_meta *meta, hetsched_grant *grant);
/* Returns a hetsched_verdict, or -1. */
int hetsched_rerequest(hetsched_client *c, uint32_t *migrate_to);
int hetsched_free(hetsched_client *c, int finished);
/* Sends ops[0..n) (1 <= n <= HETSCHED_MAX_BATCH; the whole message at most 64 KiB) in
 * one message and fills results[0..n). Returns how many requests were answered: n, or
 * fewer when the daemon refused one (its status is -1 and the connection is closed);
 * -1 when the batch was not sent (bad arguments, each named in hetsched_last_error). */
int hetsched_batch(hetsched_client *c, const hetsched_op *ops, uint32_t n,
                   hetsched_result *results);
void hetsched_disconnect(hetsched_client *c);
const char *hetsched_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
