/* hetsched_o2.h: C interface of the O² (CORETIME-style) runtime, crate hetsched-o2.
 *
 * Link with libhetsched_o2.a (plus -lpthread -ldl -lm) or libhetsched_o2.so.
 * A runtime has one worker per CPU given, each pinned with sched_setaffinity. Objects
 * are the program's own pointers; an object assigned to a worker has every operation
 * on it run by that worker (so its data stays in that core's cache); an unassigned
 * object's operations run on the calling worker.
 *
 * CORETIME's   ct_start(o); ...body...; ct_end();
 * is here      o2_on(worker, o, body_fn, arg);
 * because C cannot move a running stack to another thread.
 */
#ifndef HETSCHED_O2_H
#define HETSCHED_O2_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct O2Runtime o2_runtime;
typedef struct O2Worker o2_worker;

/* An operation: runs on the owner's core with the object pointer and caller's arg. */
typedef void (*o2_op_fn)(void *object, void *arg);
/* A worker's main function, run once on every worker by o2_run. */
typedef void (*o2_body_fn)(const o2_worker *worker, void *arg);

/* One worker per cpus[i]; each core has private_bytes of private cache and all share
 * shared_bytes; rebalance_ms > 0 turns on monitoring and automatic placement.
 * NULL on bad arguments. */
o2_runtime *o2_runtime_new(const size_t *cpus, size_t ncpus, uint64_t private_bytes,
                           uint64_t shared_bytes, uint32_t rebalance_ms);
void o2_runtime_free(o2_runtime *rt);

/* Registers an object occupying `bytes` in a cache; returns its id. Not inside o2_run. */
uint32_t o2_add_object(o2_runtime *rt, void *object, uint64_t bytes);
/* Owner of obj := worker `core` (core < 0: no owner). 0, or -1 on a bad object/core. */
int32_t o2_assign(const o2_runtime *rt, uint32_t obj, int32_t core);
/* Owner worker of obj, or -1. */
int32_t o2_owner(const o2_runtime *rt, uint32_t obj);

/* Runs body(worker, arg) on every worker; returns when all finished. 0, or -1 if a
 * worker could not be pinned. */
int32_t o2_run(o2_runtime *rt, o2_body_fn body, void *arg);
/* Runs op(object, arg) on the worker owning obj (here if none) and waits for it.
 * 0, or -1 for an unknown object. */
int32_t o2_on(const o2_worker *worker, uint32_t obj, o2_op_fn op, void *arg);
/* Index of this worker (0 .. ncpus-1). */
size_t o2_worker_index(const o2_worker *worker);

#ifdef __cplusplus
}
#endif
#endif
