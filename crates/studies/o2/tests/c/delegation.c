/* Delegation through the C ABI: every object is owned by one worker; each worker runs
 * operations on all objects; each operation must run on its owner's CPU. Exit 0 = ok. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include "hetsched_o2.h"

#define OBJECTS 8
#define ROUNDS 500

struct counter { long ops; int wrong_cpu; int expected_cpu; };

static struct counter objects[OBJECTS];
static size_t cpus[2];

static void bump(void *object, void *arg) {
    struct counter *c = object;
    (void)arg;
    c->ops += 1; /* only the owner ever runs this: no lock needed */
    if (sched_getcpu() != c->expected_cpu) c->wrong_cpu += 1;
}

static void body(const o2_worker *w, void *arg) {
    int *failures = arg;
    for (int r = 0; r < ROUNDS; r++)
        for (uint32_t o = 0; o < OBJECTS; o++)
            if (o2_on(w, o, bump, NULL) != 0) __atomic_add_fetch(failures, 1, __ATOMIC_RELAXED);
    if (o2_on(w, OBJECTS + 5, bump, NULL) != -1) __atomic_add_fetch(failures, 1, __ATOMIC_RELAXED);
    (void)o2_worker_index(w);
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    cpus[0] = (size_t)atoi(argv[1]);
    cpus[1] = (size_t)atoi(argv[2]);
    o2_runtime *rt = o2_runtime_new(cpus, 2, 512 * 1024, 0, 0);
    if (!rt) { fprintf(stderr, "o2_runtime_new failed\n"); return 1; }
    for (uint32_t o = 0; o < OBJECTS; o++) {
        if (o2_add_object(rt, &objects[o], sizeof objects[o]) != o) return 1;
        int core = (int)(o % 2);
        objects[o].expected_cpu = (int)cpus[core];
        if (o2_assign(rt, o, core) != 0 || o2_owner(rt, o) != core) return 1;
    }
    if (o2_assign(rt, 0, 7) != -1) return 1;
    int failures = 0;
    if (o2_run(rt, body, &failures) != 0) { fprintf(stderr, "o2_run failed\n"); return 1; }
    long total = 0;
    int wrong = 0;
    for (int o = 0; o < OBJECTS; o++) { total += objects[o].ops; wrong += objects[o].wrong_cpu; }
    o2_runtime_free(rt);
    printf("ops=%ld wrong_cpu=%d failures=%d\n", total, wrong, failures);
    return (total == 2L * ROUNDS * OBJECTS && wrong == 0 && failures == 0) ? 0 : 1;
}
