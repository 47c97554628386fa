// SimHost: the simulator's ModelHost - the same FleetController that runs the live server drives
// it, but a move takes the time the model's cost model says (cold load from storage, resume over
// the host link, suspend back to host memory; an eviction is instant) and a dispatched request
// runs on the model's simulated replica. The simulator (its Driver) owns time, replicas and
// accounting; the host maps the controller's model indices to the simulator's replica slots.
// Thread-safety: none (the simulator's one thread).
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/fleet/model_host.h"
#include "tessera/sim/cost_model.h"

namespace tessera::sim {

class SimHost final : public fleet::ModelHost {
 public:
  class Driver {
   public:
    virtual ~Driver() = default;
    // Completes the move of `slot` `seconds` from now (FleetController::move_done).
    virtual void start_move(int32_t slot, fleet::Move move, double seconds) = 0;
    virtual Status dispatch(int32_t slot, engine::RequestId id) = 0;
    virtual void reject(int32_t slot, engine::RequestId id, const Status& why) = 0;
  };
  struct Slot {
    int32_t global = 0;              // the simulator's slot index
    const CostModel* cost = nullptr;  // not owned
  };

  explicit SimHost(Driver* driver) : driver_(driver) {}
  // Returns the controller's index of the new slot.
  fleet::ModelIndex add(const Slot& slot);
  const Slot& slot(fleet::ModelIndex m) const { return slots_[static_cast<size_t>(m)]; }
  int32_t slots() const { return static_cast<int32_t>(slots_.size()); }

  void begin_move(fleet::ModelIndex m, fleet::Move move) override;
  Status dispatch(fleet::ModelIndex m, engine::RequestId id) override {
    return driver_->dispatch(slot(m).global, id);
  }
  void reject(fleet::ModelIndex m, engine::RequestId id, const Status& why) override {
    driver_->reject(slot(m).global, id, why);
  }
  // Constant per slot (computed once: policies ask on every tick).
  fleet::ModelCosts costs(fleet::ModelIndex m) const override { return costs_[static_cast<size_t>(m)]; }

 private:
  Driver* driver_;
  std::vector<Slot> slots_;
  std::vector<fleet::ModelCosts> costs_;
};

}  // namespace tessera::sim
