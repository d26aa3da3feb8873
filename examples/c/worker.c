/* A C worker: allocate a unit, count to N in checkpointed steps, re-request at each
 * checkpoint, give the unit up when told and resume where it stopped.
 * Usage: worker SOCKET N STEP [CHECKPOINT_NS]   (prints "done N grants G" on success;
 * CHECKPOINT_NS: the time between its checkpoints on a CPU, declared to the daemon) */
#include <hetsched.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s SOCKET N STEP [CHECKPOINT_NS]\n", argv[0]);
        return 2;
    }
    unsigned long n = strtoul(argv[2], NULL, 10), step = strtoul(argv[3], NULL, 10);
    hetsched_client *c = hetsched_connect(argv[1], "c worker");
    if (!c) {
        fprintf(stderr, "connect: %s\n", hetsched_last_error());
        return 1;
    }
    hetsched_meta meta = {.kind = "count", .affinity = {.cpu = 1.0}, .numa_home = -1};
    if (argc == 5) meta.checkpoint_ns[HETSCHED_CPU] = strtoull(argv[4], NULL, 10);
    hetsched_grant g;
    unsigned long checkpoint = 0; /* the whole state of this worker */
    int grants = 0;
    while (checkpoint < n) {
        if (hetsched_alloc_meta(c, &meta, &g) != 0) {
            fprintf(stderr, "alloc: %s\n", hetsched_last_error());
            return 1;
        }
        grants++;
        for (;;) {
            volatile unsigned long x = checkpoint;
            for (unsigned long i = 0; i < step && x < n; i++) x++;
            checkpoint = x;
            if (checkpoint >= n) break;
            int v = hetsched_rerequest(c, NULL);
            if (v < 0) {
                fprintf(stderr, "rerequest: %s\n", hetsched_last_error());
                return 1;
            }
            if (v != HETSCHED_KEEP) break;
        }
        if (hetsched_free(c, checkpoint >= n) != 0) {
            fprintf(stderr, "free: %s\n", hetsched_last_error());
            return 1;
        }
    }
    printf("done %lu grants %d\n", checkpoint, grants);
    hetsched_disconnect(c);
    return 0;
}
