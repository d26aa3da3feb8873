"""`hetsched bench peers`: the bag of tasks in SimPy 4, as a SimPy user would write it:
the units are one `simpy.Resource` (its requests are served first come, first served),
a source process starts a process per task at its arrival, and that process holds a
unit for the task's work (seconds of a reference unit).

Input (the file the bench writes): "units N", then "arrival_ns work_ns" per task in
arrival order. Output, one line: SimPy's version, tasks, makespan, mean turnaround, CPU
seconds of the simulation alone (reading the file excluded), CPU seconds of reading,
peak RSS in KiB.
"""

import sys
import time

import simpy


def peak_rss_kib():
    """VmHWM, which starts afresh at exec (the rusage maximum keeps the parent's size at
    the fork)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def main(path):
    read0 = time.process_time()
    with open(path) as f:
        head = f.readline().split()
        if len(head) != 2 or head[0] != "units" or not head[1].isdigit() or int(head[1]) < 1:
            sys.exit(f'{path}: line 1: expected "units N" with N >= 1')
        units = int(head[1])
        tasks = [(int(a) * 1e-9, int(w) * 1e-9) for a, w in (line.split() for line in f)]
    read_s = time.process_time() - read0

    sim0 = time.process_time()
    env = simpy.Environment()
    pool = simpy.Resource(env, capacity=units)
    done = {"completed": 0, "turnaround": 0.0, "makespan": 0.0}

    def task(arrival, work):
        with pool.request() as req:
            yield req
            yield env.timeout(work)
        now = env.now
        done["completed"] += 1
        done["turnaround"] += now - arrival
        done["makespan"] = max(done["makespan"], now)

    def source():
        for arrival, work in tasks:
            yield env.timeout(arrival - env.now)
            env.process(task(arrival, work))

    env.process(source())
    env.run()
    sim_s = time.process_time() - sim0
    n = done["completed"]
    print(
        f"version={simpy.__version__} tasks={len(tasks)} completed={n} makespan_s={done['makespan']:.9f} "
        f"mean_turnaround_s={done['turnaround'] / max(n, 1):.12f} cpu_s={sim_s:.6f} "
        f"read_s={read_s:.6f} peak_rss_kib={peak_rss_kib()}"
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} TASK_FILE")
    main(sys.argv[1])
