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

fleet::ModelCosts SimHost::costs(fleet::ModelIndex m) const {
  const CostModel& c = *slot(m).cost;
  fleet::ModelCosts out;
  out.host_bytes = c.weight_bytes();
  out.resume_estimate_s = c.resume_s();
  out.reload_estimate_s = c.load_s();
  return out;
}

}  // namespace tessera::sim
