/*
 * hstrace: a QEMU user-mode TCG plugin that streams a program's data accesses to
 * hetsched as 64-bit binary words (crates/framework/sig/src/source/qemu.rs reads them).
 *
 * Why a plugin: valgrind lackey prints ~50 bytes of text per access through a pipe;
 * this plugin sends 8 bytes per block change in exact mode and, in sampled mode,
 * applies the sampling filter of crates/framework/sig/src/sampled.rs *here*, so only about 2R of
 * the accesses leave the traced process.
 *
 * Arguments (`-plugin hstrace.so,fd=3,rate=0.01,threshold=N`):
 *   fd=N         descriptor to write to (a pipe hetsched reads);
 *   rate=R       0 = exact (every block access is sent), else the time-sampling rate;
 *   threshold=N  spatial sampling: a block is sampled when mix(block) <= N, the same
 *                hash and threshold as sampled.rs, so both choose the same blocks.
 *
 * Words (little endian), tag in the top 4 bits, payload in the low 60:
 *   0  a block access (exact mode; the payload is the block number, addr >> 6)
 *   1  the previous block was accessed `payload` more times (exact mode)
 *   2  progress: `payload` block accesses so far (sent with every buffer flush)
 *   3  a sample (sampled mode): bit 0 timed, bit 1 spatial, bit 2 long (a time
 *      sample whose walk went to MID), bits 8..19 the time sample's distance (below
 *      the walk's limit, NEAR or MID; the limit itself = that far or more, or new);
 *      the next word is the block number
 *   4  summary at exit; five words follow: instructions, data-access records,
 *      block accesses, block changes, repeats (accesses to the previous block)
 *   5  a forked child is not traced; `payload` forks so far
 *   15 end of the trace (the program exited normally through QEMU)
 *
 * Conventions match crates/framework/sig/src/analysis.rs: 64-byte blocks; an access touching
 * several blocks counts once per block, in increasing address order; a
 * read-modify-write instruction reaches a plugin as a load and a store, i.e. two
 * accesses, like lackey's `M`.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The subset of QEMU's plugin API (version 1, QEMU 7.2; see QEMU's "TCG Plugins"
 * documentation) that this plugin calls, declared here from the documented API instead
 * of vendoring the GPL header `qemu-plugin.h` (the exception to "no hand-written
 * bindings": no Debian package ships that header). The types and enumerator values are
 * those of the documented API; `qemu_info_t` is only passed through, never read.
 */
typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_simple_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                                          uint64_t vaddr, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_simple_cb_t)(qemu_plugin_id_t id);
void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_simple_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb,
                                    void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
                                           qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
                                              void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
                                          qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_reset(qemu_plugin_id_t id, qemu_plugin_simple_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags,
                                      enum qemu_plugin_mem_rw rw, void *userdata);

#define EXPORT __attribute__((visibility("default")))
EXPORT int qemu_plugin_version = 1;

#define TAG(t) ((uint64_t)(t) << 60)
enum { T_BLOCK = 0, T_REPEAT = 1, T_PROGRESS = 2, T_SAMPLE = 3, T_SUMMARY = 4, T_FORK = 5, T_END = 15 };

/* As crates/framework/sig/src/near.rs and sampled.rs: walks measure distances below NEAR, long
 * ones (every LONG_EVERY-th time sample) below MID; HISTORY block changes kept. */
#define NEAR 64
#define MID 1024
#define LONG_EVERY 16
#define HISTORY (1u << 16)
#define SEEN_SLOTS 4096
#define EMPTY UINT64_MAX
#define BUF_WORDS (1u << 16)

static int out_fd = -1;
static bool sampled;
static double rate;
static uint64_t threshold;
/* A forked child clears this: its accesses are not part of the traced process. */
static bool enabled = true;
static uint64_t forks;

static uint64_t buf[BUF_WORDS];
static size_t used;

/* Instructions: bumped inline by translated code while the program has one thread (an
 * inline add is not atomic), by an atomic add per executed block once it has more (the
 * second vCPU resets the plugin, so that every block is translated again that way). */
static uint64_t instructions;
static _Atomic uint64_t threaded_instructions;
static uint64_t mem_ops, accesses, changes, repeats, pending_repeats;
static uint64_t prev = EMPTY;

/* Sampled mode: ring of block changes, time-sampling countdown, the walk's set. */
static uint64_t ring[HISTORY];
static uint64_t countdown, timed_count;
static uint64_t rng_state = 0x5ead5eedULL;
static uint64_t seen[SEEN_SLOTS];

/* With more than one guest thread, accesses are serialised by this lock. */
static atomic_uint vcpus;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void write_all(const void *p, size_t n)
{
    const char *c = p;
    while (n > 0 && out_fd >= 0) {
        ssize_t w = write(out_fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            /* hetsched went away: stop tracing, let the program finish. */
            out_fd = -1;
            return;
        }
        c += w;
        n -= (size_t)w;
    }
}

static void flush(void)
{
    write_all(buf, used * sizeof buf[0]);
    used = 0;
}

/* Make room for a record of `n` words; a full buffer is sent, then a progress word. */
static inline void room(size_t n)
{
    if (used + n > BUF_WORDS) {
        flush();
        buf[used++] = TAG(T_PROGRESS) | accesses;
    }
}

static inline void emit(uint64_t w)
{
    buf[used++] = w;
}

/* The spatial hash of sampled.rs (`mix`). */
static inline uint64_t mix(uint64_t z)
{
    return (z ^ (z >> 29)) * 0x9e3779b97f4a7c15ULL;
}

/* splitmix64: the time-sampling generator (a fixed seed: same run, same samples). */
static double next_unit(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* Block changes up to and including the next time sample: geometric, mean 1/R. */
static uint64_t next_skip(void)
{
    if (rate >= 1.0)
        return 1;
    double u = 1.0 - next_unit(); /* in (0, 1] */
    double k = floor(log(u) / log(1.0 - rate));
    return 1 + (uint64_t)fmin(k, 1e18);
}

static inline size_t slot_of(uint64_t b)
{
    return (size_t)((b * 0x9e3779b97f4a7c15ULL) >> 52) % SEEN_SLOTS;
}

/*
 * The reuse distance of the block change at ring position `at` (the block is not yet
 * pushed), if below `limit`: walk back counting distinct blocks (near.rs's walk).
 * Returns `limit` for that far or more, new, or history run out.
 */
static unsigned distance_below(uint64_t at, uint64_t block, unsigned limit)
{
    size_t filled[MID];
    unsigned distinct = 0, found = limit;
    uint64_t back = at < HISTORY ? at : HISTORY;
    for (uint64_t k = 1; k <= back; k++) {
        uint64_t b = ring[(at - k) % HISTORY];
        if (b == block) {
            found = distinct;
            break;
        }
        size_t i = slot_of(b);
        while (seen[i] != EMPTY && seen[i] != b)
            i = (i + 1) % SEEN_SLOTS;
        if (seen[i] == EMPTY) {
            seen[i] = b;
            filled[distinct++] = i;
            if (distinct == limit)
                break;
        }
    }
    for (unsigned j = 0; j < distinct; j++)
        seen[filled[j]] = EMPTY;
    return found;
}

static inline void block_access(uint64_t block)
{
    accesses++;
    if (block == prev) {
        repeats++;
        pending_repeats += !sampled;
        return;
    }
    prev = block;
    if (!sampled) {
        room(2);
        if (pending_repeats) {
            emit(TAG(T_REPEAT) | pending_repeats);
            pending_repeats = 0;
        }
        changes++;
        emit(block);
        return;
    }
    uint64_t at = changes++;
    bool timed = --countdown == 0;
    bool spatial = mix(block) <= threshold;
    if (timed | spatial) {
        /* A spatial sample needs no walk: hetsched measures its distance among the
         * sampled blocks. */
        unsigned d = 0;
        bool long_walk = false;
        if (timed) {
            /* At R = 1 every walk is long, as in sampled.rs. */
            long_walk = rate >= 1.0 || timed_count++ % LONG_EVERY == 0;
            d = distance_below(at, block, long_walk ? MID : NEAR);
            countdown = next_skip();
        }
        room(2);
        emit(TAG(T_SAMPLE) | (uint64_t)d << 8 | (uint64_t)long_walk << 2 | (uint64_t)spatial << 1 |
             (uint64_t)timed);
        emit(block);
    }
    ring[at % HISTORY] = block;
}

static void access_locked(uint64_t vaddr, unsigned size)
{
    mem_ops++;
    uint64_t first = vaddr >> 6, last = (vaddr + size - 1) >> 6;
    if (last < first) /* wrapped at the top of the address space */
        last = first;
    for (uint64_t b = first; b <= last; b++)
        block_access(b);
}

static void on_access(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *ud)
{
    (void)vcpu;
    (void)ud;
    if (!enabled)
        return;
    unsigned size = 1u << qemu_plugin_mem_size_shift(info);
    if (atomic_load_explicit(&vcpus, memory_order_relaxed) > 1) {
        pthread_mutex_lock(&lock);
        access_locked(vaddr, size);
        pthread_mutex_unlock(&lock);
    } else {
        access_locked(vaddr, size);
    }
}

static void on_block(unsigned int vcpu, void *n)
{
    (void)vcpu;
    atomic_fetch_add_explicit(&threaded_instructions, (uintptr_t)n, memory_order_relaxed);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    if (atomic_load_explicit(&vcpus, memory_order_relaxed) > 1)
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS,
                                             (void *)(uintptr_t)n);
    else
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &instructions,
                                                 n);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        qemu_plugin_register_vcpu_mem_cb(insn, on_access, QEMU_PLUGIN_CB_NO_REGS,
                                         QEMU_PLUGIN_MEM_RW, NULL);
    }
}

static void install(qemu_plugin_id_t id);

static void on_vcpu_init(qemu_plugin_id_t id, unsigned int vcpu)
{
    (void)vcpu;
    /* The second thread: blocks translated so far count inline, which two threads would
     * race on; the reset drops them (and every callback, installed again). */
    if (atomic_fetch_add(&vcpus, 1) == 1)
        qemu_plugin_reset(id, install);
}

static void on_guest_exit(qemu_plugin_id_t id, void *ud)
{
    (void)id;
    (void)ud;
    pthread_mutex_lock(&lock);
    if (enabled) {
        room(8);
        if (pending_repeats)
            emit(TAG(T_REPEAT) | pending_repeats);
        pending_repeats = 0;
        emit(TAG(T_SUMMARY));
        emit(instructions + atomic_load(&threaded_instructions));
        emit(mem_ops);
        emit(accesses);
        emit(changes);
        emit(repeats);
        emit(TAG(T_END));
        flush();
        enabled = false;
    }
    pthread_mutex_unlock(&lock);
}

static void after_fork_parent(void)
{
    if (enabled) {
        room(1);
        emit(TAG(T_FORK) | ++forks);
    }
}

static void after_fork_child(void)
{
    /* The child shares the pipe: it must not write, and its buffer is the parent's. */
    enabled = false;
    out_fd = -1;
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                               char **argv)
{
    (void)info;
    bool have_threshold = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        char *end = NULL;
        if (strncmp(a, "fd=", 3) == 0) {
            out_fd = (int)strtol(a + 3, &end, 10);
        } else if (strncmp(a, "rate=", 5) == 0) {
            rate = strtod(a + 5, &end);
        } else if (strncmp(a, "threshold=", 10) == 0) {
            threshold = strtoull(a + 10, &end, 10);
            have_threshold = true;
        }
        if (end == NULL || *end != '\0') {
            fprintf(stderr, "hstrace: bad argument `%s` (expected fd=N, rate=R, threshold=N)\n",
                    a);
            return -1;
        }
    }
    if (out_fd < 0 || !(rate >= 0.0 && rate <= 1.0) || (rate > 0.0 && !have_threshold)) {
        fprintf(stderr, "hstrace: need fd=N (>= 0), rate=R in [0, 1] and, if R > 0, threshold=N\n");
        return -1;
    }
    sampled = rate > 0.0;
    for (size_t i = 0; i < SEEN_SLOTS; i++)
        seen[i] = EMPTY;
    if (sampled)
        countdown = next_skip();
    pthread_atfork(NULL, after_fork_parent, after_fork_child);
    install(id);
    return 0;
}

static void install(qemu_plugin_id_t id)
{
    qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_guest_exit, NULL);
}
