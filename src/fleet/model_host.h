// ModelHost: what a FleetController drives. The controller decides (which model moves where,
// which queued request goes when, what to refuse); a host carries it out: the live host
// (live_model_host.h) with engines, memory regions and threads, the simulator's host with a cost
// model and virtual time. Moves are asynchronous: begin_move() starts one and the host reports
// its outcome later with FleetController::move_done() (possibly from inside begin_move()).
// Thread-safety: a host is called only by its controller's owner, one call at a time.
#pragma once

#include <cstdint>
#include <string_view>

#include "tessera/base/status.h"
#include "tessera/engine/request.h"

namespace tessera::fleet {

using ModelIndex = int32_t;  // the model's position in the controller's list

enum class Move : uint8_t {
  kLoad,     // Loading: storage -> active memory (Unloaded, Evicted or Failed before)
  kResume,   // Resuming: host tier -> active memory
  kSuspend,  // Suspending: drain in-flight requests, active memory -> host tier
  kEvict,    // Suspended -> Evicted: host tier -> storage only
};
std::string_view move_name(Move m);  // "load", "resume", "suspend", "evict"

// What the policies weigh about one model, as the host knows it now.
struct ModelCosts {
  int64_t host_bytes = 0;        // held in the host tier while suspended (weights + kept KV)
  double resume_estimate_s = 0;  // host tier -> Active, before any resume was measured
  double reload_estimate_s = 0;  // storage -> Active (cold)
};

class ModelHost {
 public:
  virtual ~ModelHost() = default;
  // Starts `move` on model `m`; the controller has already moved the model's state (to Loading,
  // Resuming or Suspending; an evict starts from Suspended). The host must eventually call
  // FleetController::move_done(m, status) exactly once.
  virtual void begin_move(ModelIndex m, Move move) = 0;
  // Hands request `id` (submitted for `m`) to the now-Active model. Errors: the model's refusal
  // (queue full, bad request); the host keeps the request and the controller then rejects it.
  virtual Status dispatch(ModelIndex m, engine::RequestId id) = 0;
  // Request `id` of `m` will not be served: it finishes with `why` (kCancelled: cancelled;
  // otherwise an error). Called for queued requests and for refused dispatches.
  virtual void reject(ModelIndex m, engine::RequestId id, const Status& why) = 0;
  // The model's costs. The controller caches them and asks again only after one of the model's
  // moves completes (or it is resized): they must change only with its moves.
  virtual ModelCosts costs(ModelIndex m) const = 0;
};

// The injected timer (with the Clock, the LevelDB `Env` idea): the controller asks to be ticked
// again no later than `at_ns`; the live fleet wakes its control thread, the simulator schedules
// an event. Requests may be coalesced; ticking earlier is always allowed.
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void wake_at(int64_t at_ns) = 0;
};

}  // namespace tessera::fleet
