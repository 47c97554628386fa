// DeviceScheduler: the one owner of the compute threads when several engines (one per model)
// share a machine. Each engine asks for the device before each iteration (forward + sampling)
// and gives it back after; the scheduler grants it to one engine at a time, choosing among the
// waiting ones with pick_next_device_user (device_policy.h: starvation guard, then earliest
// deadline among the urgent, then least weighted service). So N models use the pool's
// n_threads cores, never N x n_threads threads fighting over them.
//
//   engine A ──acquire(deadline)──┐                    ┌── Lease: pool() for one iteration
//   engine B ──acquire(deadline)──┼─> [waiters] ─pick─>┤
//   engine C ──acquire(deadline)──┘                    └── ~Lease: charge time, hand off
//
// Service is charged as device nanoseconds / weight (a client's virtual time); a client that
// comes back from idleness starts at the virtual time of the latest grant, so idleness earns
// no credit (start-time fair queuing).
// Thread-safety: every method is thread-safe. A client holds at most one lease at a time and
// acquires from one thread at a time (its engine's scheduler thread).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/base/clock.h"
#include "tessera/base/thread_pool.h"
#include "tessera/engine/device_policy.h"

namespace tessera::engine {

struct DeviceSchedulerOptions {
  int32_t n_threads = 0;  // compute threads of the shared pool; 0 = hardware concurrency
  DevicePolicyOptions policy;
  const Clock* clock = nullptr;  // null: the real clock
  // Keep every iteration's timeline (iterations(); about 56 bytes each), for comparing a live
  // run iteration by iteration with a simulation of it (`tessera bench fleet --iterations-out`).
  bool record_iterations = false;
  // Pin the pool's threads (ThreadPool's pinning: workers to their CPUs, each lease's holder to
  // the first while it holds the device) - when n_threads equals the CPUs the process may use.
  // Measured on the fleet replay: decode iterations right after another engine's had a p90 of
  // 12.7 ms unpinned against 5.1 ms pinned, TTFT p99 1087
  // against 729 ms (docs/SIMULATOR.md). Off when other work shares the cores.
  bool pin_threads = true;
};

// One lease as the device saw it (DeviceSchedulerOptions::record_iterations). Clock times.
struct DeviceIteration {
  int32_t client = -1;      // the ClientId
  int64_t asked_ns = 0;     // acquire() called
  int64_t granted_ns = 0;   // the scheduler picked it (the previous holder's release)
  int64_t acquired_ns = 0;  // acquire() returned: its thread ran again
  int64_t released_ns = 0;  // release() returned, the next holder granted
  int64_t prefill_rows = 0, decode_rows = 0;  // Lease::note_rows (0, 0 when not noted)
};

// Per client, since it was added.
struct DeviceClientStats {
  std::string name;
  double weight = 1.0;
  int64_t grants = 0;          // iterations run
  int64_t busy_ns = 0;         // device time held
  int64_t wait_ns = 0;         // time spent waiting for the device
  int64_t late_grants = 0;     // grants that came after the batch's deadline
  // By what the iteration ran (Lease::note_rows; grants without a note are in neither): those
  // with prompt rows (their rows all counted) and those with decode rows only, and the time each
  // took as its engine saw it: from acquire() returning to release() returning, the hand-off to
  // the next holder included (so one engine alone runs an iteration per held time; busy_ns
  // starts at the grant instead and ends before the hand-off). What a simulator fits its step
  // costs to (scripts/sim-validate.sh).
  int64_t prefill_grants = 0, prefill_rows = 0, prefill_held_ns = 0;
  int64_t decode_grants = 0, decode_rows = 0, decode_held_ns = 0;
};

class DeviceScheduler {
 public:
  using ClientId = int32_t;

  explicit DeviceScheduler(const DeviceSchedulerOptions& options = {});
  ~DeviceScheduler();  // precondition: no lease is outstanding
  DeviceScheduler(const DeviceScheduler&) = delete;
  DeviceScheduler& operator=(const DeviceScheduler&) = delete;

  // Registers a client (an engine) by name. `weight` > 0 scales its fair share (checked). A name
  // added before and removed since gets its old id back, with its stats and virtual time (a
  // model's engine is re-created on every resume). Precondition: the name is not registered now.
  ClientId add_client(std::string name, double weight = 1.0);
  // Deregisters a client; its stats stay. Precondition: it holds no lease and is not waiting.
  void remove_client(ClientId id);

  // The right to run one iteration on the pool; releasing it (destruction) charges the time held
  // and hands the device to the next waiter.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    ~Lease();
    ThreadPool* pool() const;
    // What this iteration runs, for the stats: prompt rows and decode rows (draft rows included).
    void note_rows(int64_t prefill_rows, int64_t decode_rows) {
      prefill_rows_ = prefill_rows;
      decode_rows_ = decode_rows;
    }
    void release();

   private:
    friend class DeviceScheduler;
    Lease(DeviceScheduler* s, ClientId id) : s_(s), id_(id) {}
    DeviceScheduler* s_ = nullptr;
    ClientId id_ = -1;
    int64_t prefill_rows_ = 0, decode_rows_ = 0;
    int64_t asked_ns_ = 0;     // when acquire() was called
    int64_t acquired_ns_ = 0;  // when acquire() returned it
  };

  // Blocks until `id` may run. `deadline_ns` is the earliest deadline of the batch it wants to run
  // (clock time; -1: none). Precondition: `id` is registered and holds no lease.
  Lease acquire(ClientId id, int64_t deadline_ns);

  // Every client ever added, in the order first added.
  std::vector<DeviceClientStats> stats() const;
  // Every iteration released so far, in release order, when record_iterations is set (else
  // empty).
  std::vector<DeviceIteration> iterations() const;
  int waiting() const;  // clients blocked in acquire()
  int n_threads() const { return pool_.size(); }
  const Clock& clock() const { return *clock_; }

 private:
  struct Client {
    DeviceClientStats stats;
    bool live = false;
    int64_t vtime_ns = 0;
    int64_t granted_ns = 0;
  };
  struct Waiter {
    ClientId id;
    int64_t deadline_ns;
    int64_t enqueued_ns;
    // Its own: a release wakes only the thread it grants (no herd of waiters waking to go back
    // to sleep while the new holder starts its iteration).
    std::condition_variable* cv;
  };
  void release(ClientId id);
  // Charges one iteration's held time by its noted rows and records it (Lease::release, after
  // the hand-off).
  void finish_iteration(ClientId id, const Lease& lease, int64_t released_ns);
  void grant_locked(ClientId id, int64_t deadline_ns, int64_t enqueued_ns, int64_t now_ns);

  DeviceSchedulerOptions options_;
  const Clock* clock_;
  ThreadPool pool_;
  mutable std::mutex mu_;
  std::vector<Client> clients_;  // indexed by ClientId
  std::vector<Waiter> waiters_;
  std::vector<DeviceIteration> iterations_;  // record_iterations only
  ClientId holder_ = -1;
  int64_t virtual_now_ns_ = 0;  // vtime of the latest grant
};

}  // namespace tessera::engine
