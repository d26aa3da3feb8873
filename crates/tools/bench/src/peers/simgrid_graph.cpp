// `hetsched bench graph`: a task graph in SimGrid's S4U API (SimGrid 3.32, Debian's
// libsimgrid-dev), as a SimGrid user writes a DAG scheduler (examples/cpp/dag-scheduling):
// one Exec activity per task, its dependencies added with add_successor, each left without
// a host until the scheduler gives it one. SimGrid starts an exec once its dependencies are
// solved and it has a host; one whose dependencies are solved and that has none is vetoed
// (Activity::on_veto), which is how the scheduler learns that it is ready. No actor runs:
// the scheduler works between Engine::run() calls and in the activities' callbacks.
//
// One host per unit, at 1 Gflop/s, so that a flop is a nanosecond: a task's exec gets, when
// it is given a host, the flops of its duration on that host's class of units.
//
// When the activities are made: all before the run, as SimGrid's DAG loaders
// (create_DAG_from_dot, create_DAG_from_DAX) do, or with the second argument "frontier"
// each once all its predecessors started (they all exist then, and one at least has not
// finished, so its dependencies are whole). Why the second: SimGrid 3.32 keeps every
// activity that maestro makes in maestro's std::list of activities (ExecImpl's
// constructor) and takes it out with std::list::remove as it ends (ExecImpl::post), which
// walks the whole list: the time goes with the activities alive squared, 100,000 made up
// front costing 15 to 26 s here; made as the graph is reached, those alive are the frontier.
//
// The scheduler is eager (StarPU's, hetsched's `eager` and `fcfs`): one central FIFO of
// ready tasks; a host whose task completes takes the oldest ready task it can run; a task
// that becomes ready goes to the lowest-numbered idle host that can run it, else to the
// FIFO's tail. Where several tasks complete at one instant, they are taken in hetsched's
// order (by end, then by the order they started), each host picking before the successors
// its task released are placed, in task order; SimGrid's own order of simultaneous
// completions is its action heap's. So run() must return after every instant at which a
// task completed or became ready: the set of vetoed activities SimGrid stops on
// (Engine::track_vetoed_activities) is also given each completed exec.
//
// Input (the file the bench writes): "hetsched-graph 1", "classes C", "units U" and U
// class numbers, "tasks N", then a line per task: its duration in integer nanoseconds on
// each class (0: it cannot run there), its number of predecessors and their indices (each
// an earlier task). Output, one line: the library's version, when the activities were
// made (upfront or frontier), tasks, completed, makespan
// (SimGrid's clock at the last completion), a hash of the schedule (each task's host and
// start, in task order: FNV-1a 64), the CPU and wall seconds of the simulation (creating
// the activities and their dependencies, and running; reading the file excluded), the CPU
// seconds of reading, the run() calls, peak RSS in KiB.
#include <simgrid/s4u.hpp>
#include <simgrid/version.h>

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {
size_t classes = 0;
std::vector<uint32_t> unit_class;
std::vector<uint64_t> duration_ns; // task * classes + class
std::vector<size_t> pred_start;    // task's predecessors: preds[pred_start[t] .. pred_start[t + 1]]
std::vector<uint32_t> preds;
std::vector<size_t> succ_start;    // and its successors, in task order
std::vector<uint32_t> succs;
// Activities made as the graph is reached (the second argument "frontier"), not all
// before the run.
bool frontier = false;
std::vector<uint32_t> unstarted_preds;
std::vector<char> finished;

std::vector<sg4::ExecPtr> execs;
std::vector<sg4::Host*> hosts;
std::set<sg4::Activity*> vetoed;
std::set<uint32_t> idle;
std::deque<uint32_t> fifo;
std::vector<uint32_t> unit_of;
std::vector<uint64_t> start_ns, end_ns, start_seq;
uint64_t started = 0;
size_t running = 0, completed = 0;
double makespan = 0;
// What the callbacks saw since the scheduler last ran.
std::vector<uint32_t> done_now, ready_now;
// Per task, the round in which it completed and its place among that round's completions.
std::vector<uint64_t> done_round;
std::vector<uint32_t> done_place;
uint64_t round = 0;

long peak_rss_kib()
{
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::stol(line.substr(6));
  return -1;
}

double seconds(clockid_t clock)
{
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint32_t index_of(const sg4::Activity& a)
{
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(a.get_data<void>()));
}

uint64_t duration(uint32_t t, uint32_t u)
{
  return duration_ns[t * classes + unit_class[u]];
}

// Task `t`'s activity.
void create(uint32_t t)
{
  execs[t] = sg4::Exec::init();
  execs[t]->set_data(reinterpret_cast<void*>(static_cast<uintptr_t>(t)));
}

// Its dependencies on its predecessors not finished yet, then its start, vetoed: it has no
// host yet (and its dependencies are unsolved unless it is a source).
void link(uint32_t t)
{
  for (size_t i = pred_start[t]; i < pred_start[t + 1]; i++)
    if (not finished[preds[i]])
      execs[preds[i]]->add_successor(execs[t]);
}

void create_and_start(uint32_t t)
{
  create(t);
  link(t);
  execs[t]->vetoable_start();
}

void start(uint32_t t, uint32_t u)
{
  idle.erase(u);
  unit_of[t]   = u;
  start_seq[t] = ++started;
  start_ns[t]  = std::llround(sg4::Engine::get_clock() * 1e9);
  end_ns[t]    = start_ns[t] + duration(t, u);
  running++;
  execs[t]->set_flops_amount(static_cast<double>(duration(t, u)));
  execs[t]->set_host(hosts[u]); // assigned, its dependencies solved: SimGrid starts it
  // In frontier mode, a task's activity is made once all its predecessors started (so
  // that they all exist, and one at least is not finished).
  if (frontier)
    for (size_t i = succ_start[t]; i < succ_start[t + 1]; i++)
      if (--unstarted_preds[succs[i]] == 0)
        create_and_start(succs[i]);
}

// Idle host `u` takes the oldest ready task it can run.
void pick(uint32_t u)
{
  auto it = std::find_if(fifo.begin(), fifo.end(), [u](uint32_t t) { return duration(t, u) > 0; });
  if (it == fifo.end())
    return;
  uint32_t t = *it;
  fifo.erase(it);
  start(t, u);
}

// Ready task `t` goes to the lowest-numbered idle host that can run it, else waits.
void offer(uint32_t t)
{
  for (uint32_t u : idle)
    if (duration(t, u) > 0) {
      start(t, u);
      return;
    }
  fifo.push_back(t);
}

// Handles what happened at the instant SimGrid stopped at.
void schedule()
{
  round++;
  std::sort(done_now.begin(), done_now.end(), [](uint32_t a, uint32_t b) {
    return std::make_pair(end_ns[a], start_seq[a]) < std::make_pair(end_ns[b], start_seq[b]);
  });
  for (uint32_t i = 0; i < done_now.size(); i++) {
    done_round[done_now[i]] = round;
    done_place[done_now[i]] = i;
  }
  // Each released task after the completion that released it in hetsched's order: its
  // predecessor that completed last now.
  std::vector<std::pair<uint32_t, uint32_t>> released;
  released.reserve(ready_now.size());
  for (uint32_t t : ready_now) {
    uint32_t by = 0;
    for (size_t i = pred_start[t]; i < pred_start[t + 1]; i++)
      if (done_round[preds[i]] == round)
        by = std::max(by, done_place[preds[i]] + 1);
    released.emplace_back(by, t);
  }
  std::sort(released.begin(), released.end());
  auto next = released.begin();
  auto place_released_by = [&next, &released](uint32_t by) {
    for (; next != released.end() && next->first == by; ++next)
      offer(next->second);
  };
  place_released_by(0); // the tasks without predecessors, at the start
  for (uint32_t i = 0; i < done_now.size(); i++) {
    uint32_t u = unit_of[done_now[i]];
    idle.insert(u);
    pick(u);
    place_released_by(i + 1);
  }
  done_now.clear();
  ready_now.clear();
}
} // namespace

int main(int argc, char** argv)
{
  sg4::Engine e(&argc, argv);
  if (argc < 2 || argc > 3 || (argc == 3 && std::string(argv[2]) != "frontier")) {
    std::fprintf(stderr, "usage: %s GRAPH_FILE [frontier]\n", argv[0]);
    return 2;
  }
  frontier = argc == 3;
  double read0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
  std::ifstream in(argv[1]);
  std::string magic, word;
  int format = 0;
  size_t units = 0, tasks = 0;
  auto bad = [&argv](const char* what) {
    std::fprintf(stderr, "%s: %s\n", argv[1], what);
    return 2;
  };
  if (!(in >> magic >> format) || magic != "hetsched-graph" || format != 1)
    return bad("expected \"hetsched-graph 1\"");
  if (!(in >> word >> classes) || word != "classes" || classes == 0)
    return bad("expected \"classes C\" with C >= 1");
  if (!(in >> word >> units) || word != "units" || units == 0)
    return bad("expected \"units U\" with U >= 1");
  unit_class.resize(units);
  for (auto& c : unit_class)
    if (!(in >> c) || c >= classes)
      return bad("a unit's class is not one of the classes");
  if (!(in >> word >> tasks) || word != "tasks" || tasks >= (1u << 31))
    return bad("expected \"tasks N\"");
  duration_ns.resize(tasks * classes);
  pred_start.push_back(0);
  for (size_t t = 0; t < tasks; t++) {
    for (size_t c = 0; c < classes; c++)
      if (!(in >> duration_ns[t * classes + c]))
        return bad("a task's durations are missing");
    size_t n;
    if (!(in >> n))
      return bad("a task's predecessor count is missing");
    for (size_t i = 0; i < n; i++) {
      uint32_t p;
      if (!(in >> p) || p >= t)
        return bad("a predecessor is not an earlier task");
      preds.push_back(p);
    }
    pred_start.push_back(preds.size());
  }
  // Successors from predecessors, in task order.
  succ_start.assign(tasks + 1, 0);
  for (uint32_t p : preds)
    succ_start[p + 1]++;
  for (size_t t = 0; t < tasks; t++)
    succ_start[t + 1] += succ_start[t];
  succs.resize(preds.size());
  {
    std::vector<size_t> fill(succ_start.begin(), succ_start.end() - 1);
    for (size_t t = 0; t < tasks; t++)
      for (size_t i = pred_start[t]; i < pred_start[t + 1]; i++)
        succs[fill[preds[i]]++] = t;
  }
  double read_s = seconds(CLOCK_PROCESS_CPUTIME_ID) - read0;

  double cpu0 = seconds(CLOCK_PROCESS_CPUTIME_ID), wall0 = seconds(CLOCK_MONOTONIC);
  auto* zone = sg4::create_full_zone("units");
  for (size_t u = 0; u < units; u++) {
    hosts.push_back(zone->create_host("unit-" + std::to_string(u), 1e9));
    idle.insert(u);
  }
  zone->seal();
  unit_of.assign(tasks, 0);
  start_ns.assign(tasks, 0);
  end_ns.assign(tasks, 0);
  start_seq.assign(tasks, 0);
  done_round.assign(tasks, 0);
  done_place.assign(tasks, 0);
  sg4::Activity::on_veto_cb([](sg4::Activity& a) {
    if (a.dependencies_solved() && not a.is_assigned())
      ready_now.push_back(index_of(a));
  });
  sg4::Activity::on_completion_cb([](sg4::Activity const& a) {
    if (a.get_state() != sg4::Activity::State::FINISHED)
      return;
    finished[index_of(a)] = 1;
    done_now.push_back(index_of(a));
    vetoed.insert(const_cast<sg4::Activity*>(&a)); // run() returns after this instant
    running--;
    completed++;
    makespan = std::max(makespan, sg4::Engine::get_clock());
  });
  e.track_vetoed_activities(&vetoed);
  execs.resize(tasks);
  finished.assign(tasks, 0);
  unstarted_preds.resize(tasks);
  for (size_t t = 0; t < tasks; t++)
    unstarted_preds[t] = pred_start[t + 1] - pred_start[t];
  if (frontier) {
    for (size_t t = 0; t < tasks; t++)
      if (unstarted_preds[t] == 0)
        create_and_start(t);
  } else {
    // All the activities first, then the dependencies, then the starts: 5 times as fast
    // as task by task here (SimGrid walks a list of the activities, which then lie
    // together in memory).
    for (size_t t = 0; t < tasks; t++)
      create(t);
    for (size_t t = 0; t < tasks; t++)
      link(t);
    for (auto& x : execs)
      x->vetoable_start();
  }
  schedule();
  uint64_t runs = 0;
  while (running > 0) {
    vetoed.clear();
    e.run();
    runs++;
    schedule();
  }
  double sim_s = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0, wall_s = seconds(CLOCK_MONOTONIC) - wall0;

  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&hash](uint64_t v) {
    for (int i = 0; i < 8; i++) {
      hash ^= (v >> (8 * i)) & 0xff;
      hash *= 0x100000001b3ull;
    }
  };
  for (size_t t = 0; t < tasks; t++) {
    mix(unit_of[t]);
    mix(start_ns[t]);
  }
  int major, minor, patch;
  sg_version_get(&major, &minor, &patch);
  std::printf("version=%d.%d.%d created=%s tasks=%zu completed=%zu makespan_s=%.9f schedule_hash=%016llx cpu_s=%.6f "
              "wall_s=%.6f read_s=%.6f runs=%llu peak_rss_kib=%ld\n",
              major, minor, patch, frontier ? "frontier" : "upfront", tasks, completed, makespan, static_cast<unsigned long long>(hash), sim_s, wall_s,
              read_s, static_cast<unsigned long long>(runs), peak_rss_kib());
  if (completed != tasks) {
    std::fprintf(stderr, "%zu of %zu tasks completed: the others could run on no host\n", completed, tasks);
    return 1;
  }
  return 0;
}
