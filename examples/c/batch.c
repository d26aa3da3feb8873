/* Many empty tasks, submitted in batches: each batch carries BATCH tasks as ALLOC, FREE
 * pairs, and costs one round trip to the daemon.
 * Usage: batch SOCKET TASKS BATCH   (prints "done TASKS tasks in B batches" on success) */
#include <hetsched.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s SOCKET TASKS BATCH\n", argv[0]);
        return 2;
    }
    unsigned long tasks = strtoul(argv[2], NULL, 10), batch = strtoul(argv[3], NULL, 10);
    hetsched_client *c = hetsched_connect(argv[1], "c batch");
    if (!c) {
        fprintf(stderr, "connect: %s\n", hetsched_last_error());
        return 1;
    }
    /* The library checks the size: 2 * BATCH requests beyond HETSCHED_MAX_BATCH is an
     * error it names. */
    size_t slots = 2 * batch ? 2 * batch : 1;
    hetsched_op *ops = calloc(slots, sizeof *ops);
    hetsched_result *results = calloc(slots, sizeof *results);
    if (!ops || !results) return 1;
    hetsched_meta meta = {.kind = "empty", .affinity = {.cpu = 1.0}, .numa_home = -1};
    unsigned long done = 0, batches = 0;
    while (done < tasks) {
        unsigned long n = tasks - done < batch ? tasks - done : batch;
        for (unsigned long i = 0; i < n; i++) {
            ops[2 * i] = (hetsched_op){.op = HETSCHED_OP_ALLOC, .meta = &meta};
            ops[2 * i + 1] = (hetsched_op){.op = HETSCHED_OP_FREE, .finished = 1};
        }
        int answered = hetsched_batch(c, ops, (uint32_t)(2 * n), results);
        if (answered != (int)(2 * n)) {
            fprintf(stderr, "batch: %s\n", hetsched_last_error());
            return 1;
        }
        for (unsigned long i = 0; i < 2 * n; i++) {
            if (results[i].status != 0) {
                fprintf(stderr, "task %lu: status %d\n", done + i / 2, results[i].status);
                return 1;
            }
        }
        done += n;
        batches++;
    }
    printf("done %lu tasks in %lu batches\n", done, batches);
    free(ops);
    free(results);
    hetsched_disconnect(c);
    return 0;
}
