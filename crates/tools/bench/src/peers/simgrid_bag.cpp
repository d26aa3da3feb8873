// `hetsched bench peers`: the bag of tasks in SimGrid's S4U API (SimGrid 3.32, Debian's
// libsimgrid-dev), as a SimGrid user would write it: one host per unit (1 Gflop/s, so a
// flop is a reference nanosecond of work), one worker actor per host, and a dispatcher
// actor that releases each task at its arrival into a first-come first-served queue
// (a std::deque guarded by a counting semaphore, whose waiters SimGrid serves in order).
// A worker that takes a task executes its work, then takes the next; one stop mark per
// worker after the last task ends the run.
//
// Input (the file the bench writes): "units N", then "arrival_ns work_ns" per task in
// arrival order. Output, one line: the library's version, tasks, makespan, mean
// turnaround, CPU seconds of the simulation alone (reading the file excluded), CPU
// seconds of reading, peak RSS in KiB.
#include <simgrid/s4u.hpp>
#include <simgrid/version.h>

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {
struct Task {
  double arrival_s;
  double work_flops;
};

constexpr size_t STOP = std::numeric_limits<size_t>::max();

std::vector<Task> tasks;
std::deque<size_t> queue;
sg4::SemaphorePtr queued;
double turnaround_sum = 0;
double makespan = 0;
size_t completed = 0;

// Peak resident memory of this program in KiB: VmHWM, which starts afresh at exec (the
// rusage maximum does not: it keeps the parent's size at the fork).
long peak_rss_kib()
{
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::stol(line.substr(6));
  return -1;
}

double cpu_seconds()
{
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void dispatcher(size_t workers)
{
  for (size_t i = 0; i < tasks.size(); i++) {
    sg4::this_actor::sleep_until(tasks[i].arrival_s);
    queue.push_back(i);
    queued->release();
  }
  for (size_t w = 0; w < workers; w++) {
    queue.push_back(STOP);
    queued->release();
  }
}

void worker()
{
  for (;;) {
    queued->acquire();
    size_t i = queue.front();
    queue.pop_front();
    if (i == STOP)
      return;
    sg4::this_actor::execute(tasks[i].work_flops);
    double now = sg4::Engine::get_clock();
    turnaround_sum += now - tasks[i].arrival_s;
    makespan = std::max(makespan, now);
    completed++;
  }
}
} // namespace

int main(int argc, char** argv)
{
  sg4::Engine e(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TASK_FILE\n", argv[0]);
    return 2;
  }
  double read0 = cpu_seconds();
  std::ifstream in(argv[1]);
  std::string word;
  size_t units = 0;
  if (!(in >> word >> units) || word != "units" || units == 0) {
    std::fprintf(stderr, "%s: line 1: expected \"units N\" with N >= 1\n", argv[1]);
    return 2;
  }
  uint64_t arrival_ns, work_ns;
  while (in >> arrival_ns >> work_ns)
    tasks.push_back({arrival_ns * 1e-9, static_cast<double>(work_ns)});
  double read_s = cpu_seconds() - read0;

  double sim0 = cpu_seconds();
  auto* zone = sg4::create_full_zone("bag");
  std::vector<sg4::Host*> hosts;
  for (size_t u = 0; u < units; u++)
    hosts.push_back(zone->create_host("unit-" + std::to_string(u), 1e9));
  zone->seal();
  queued = sg4::Semaphore::create(0);
  sg4::Actor::create("dispatcher", hosts[0], dispatcher, units);
  for (auto* h : hosts)
    sg4::Actor::create("worker", h, worker);
  e.run();
  double sim_s = cpu_seconds() - sim0;

  int major, minor, patch;
  sg_version_get(&major, &minor, &patch);
  std::printf("version=%d.%d.%d tasks=%zu completed=%zu makespan_s=%.9f mean_turnaround_s=%.12f cpu_s=%.6f read_s=%.6f peak_rss_kib=%ld\n",
              major, minor, patch, tasks.size(), completed, makespan, completed ? turnaround_sum / completed : 0.0, sim_s, read_s,
              peak_rss_kib());
  return 0;
}
