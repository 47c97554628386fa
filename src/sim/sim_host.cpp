#include "tessera/sim/sim_host.h"

namespace tessera::sim {

void SimHost::begin_move(fleet::ModelIndex m, fleet::Move move) {
  const CostModel& c = *slot(m).cost;
  double seconds = 0.0;
  switch (move) {
    case fleet::Move::kLoad: seconds = c.load_s(); break;
    case fleet::Move::kResume: seconds = c.resume_s(); break;
    case fleet::Move::kSuspend: seconds = c.suspend_s(); break;
    case fleet::Move::kEvict: seconds = 0.0; break;
  }
  driver_->start_move(slot(m).global, move, seconds);
}

fleet::ModelIndex SimHost::add(const Slot& slot) {
  slots_.push_back(slot);
  fleet::ModelCosts c;
  c.host_bytes = slot.cost->weight_bytes();
  c.resume_estimate_s = slot.cost->resume_s();
  c.reload_estimate_s = slot.cost->load_s();
  costs_.push_back(c);
  return static_cast<fleet::ModelIndex>(slots_.size() - 1);
}

}  // namespace tessera::sim
