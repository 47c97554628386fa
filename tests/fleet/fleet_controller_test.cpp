// FleetController alone, over a scripted host on a FakeClock: moves are asynchronous (the test
// completes them), requests queue while a model comes up and are dispatched when it is Active, a
// request waits while the room it needs is held by a busy model and goes when that model is
// idle, deadlines expire queued requests, a failed bring-up backs off.
#include "tessera/fleet/fleet_controller.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <deque>
#include <map>
#include <random>

#include "tessera/fleet/keep_alive_policy.h"

namespace tessera::fleet {
namespace fleet_controller_test {

constexpr int64_t kSecond = 1'000'000'000;

class ScriptedHost final : public ModelHost {
 public:
  void begin_move(ModelIndex m, Move move) override {
    log.push_back(fmt::format("{} {}", move_name(move), m));
    moves.emplace_back(m, move);
  }
  Status dispatch(ModelIndex m, engine::RequestId id) override {
    log.push_back(fmt::format("dispatch {} {}", m, id));
    return Status();
  }
  void reject(ModelIndex m, engine::RequestId id, const Status& why) override {
    log.push_back(fmt::format("reject {} {} {}", m, id, error_code_name(why.code())));
  }
  ModelCosts costs(ModelIndex) const override { return {100, 1.0, 5.0}; }

  std::vector<std::pair<ModelIndex, Move>> moves;
  std::vector<std::string> log;
};

class FleetControllerTest : public ::testing::Test {
 protected:
  void make(int64_t budget, std::shared_ptr<const IdlePolicy> policy = nullptr) {
    std::vector<ControlledModel> ms;
    for (int i = 0; i < 3; ++i) {
      ControlledModel m;
      m.name = fmt::format("m{}", i);
      m.active_bytes = 100;
      ms.push_back(m);
    }
    ControllerOptions o;
    o.active_budget_bytes = budget;
    o.idle_policy = std::move(policy);
    o.request_deadline_ns = 30 * kSecond;
    c_ = std::move(FleetController::create(std::move(ms), o, &host_, &clock_)).value();
  }
  // Completes every move begun so far, successfully.
  void finish_moves() {
    auto moves = std::move(host_.moves);
    host_.moves.clear();
    for (const auto& [m, move] : moves) c_->move_done(m, Status());
  }
  void bring_up(ModelIndex m) {
    ASSERT_TRUE(c_->load(m).is_ok());
    finish_moves();
    ASSERT_EQ(c_->state(m), ModelState::kActive);
  }

  FakeClock clock_{1000 * kSecond};
  ScriptedHost host_;
  std::unique_ptr<FleetController> c_;
};

TEST_F(FleetControllerTest, RequestsQueueWhileTheModelComesUpAndGoWhenActive) {
  make(0);
  EXPECT_EQ(c_->submit(0, 1), Admission::kQueued);
  EXPECT_EQ(c_->submit(0, 2), Admission::kQueued);
  EXPECT_EQ(c_->status(0).queued, 2);
  c_->tick();
  EXPECT_EQ(c_->state(0), ModelState::kLoading);
  EXPECT_EQ(c_->submit(0, 3), Admission::kQueued);  // still loading
  clock_.advance_ns(2 * kSecond);
  finish_moves();
  EXPECT_EQ(c_->state(0), ModelState::kActive);
  EXPECT_DOUBLE_EQ(c_->status(0).last_bring_up_s, 2.0);
  EXPECT_EQ(host_.log, (std::vector<std::string>{"load 0", "dispatch 0 1", "dispatch 0 2",
                                                 "dispatch 0 3"}));
  EXPECT_EQ(c_->submit(0, 4), Admission::kDispatched);
  EXPECT_EQ(c_->status(0).cold_starts, 3);
}

TEST_F(FleetControllerTest, ARequestWaitsForRoomHeldByABusyModel) {
  make(200);  // two of the three fit
  bring_up(0);
  bring_up(1);
  EXPECT_EQ(c_->submit(0, 1), Admission::kDispatched);  // m0 busy
  EXPECT_EQ(c_->submit(1, 2), Admission::kDispatched);  // m1 busy
  EXPECT_EQ(c_->submit(2, 3), Admission::kQueued);
  c_->tick();
  EXPECT_EQ(c_->state(2), ModelState::kUnloaded);  // nothing idle to suspend: it waits
  EXPECT_EQ(c_->status(2).queued, 1);
  clock_.advance_ns(kSecond);
  c_->finished(1, 2, true);  // m1 goes idle
  c_->tick();
  EXPECT_EQ(c_->state(1), ModelState::kSuspending);  // made room
  finish_moves();  // the suspension
  c_->tick();
  EXPECT_EQ(c_->state(2), ModelState::kLoading);
  finish_moves();
  EXPECT_EQ(c_->state(2), ModelState::kActive);
  EXPECT_EQ(host_.log.back(), "dispatch 2 3");
  EXPECT_LE(c_->budget().used(), 200);
}

TEST_F(FleetControllerTest, AModelLargerThanTheBudgetIsRefusedAtOnce) {
  std::vector<ControlledModel> ms(1);
  ms[0].name = "huge";
  ms[0].active_bytes = 1000;
  ControllerOptions o;
  o.active_budget_bytes = 500;
  c_ = std::move(FleetController::create(std::move(ms), o, &host_, &clock_)).value();
  EXPECT_EQ(c_->submit(0, 1), Admission::kQueued);
  c_->tick();
  EXPECT_EQ(host_.log, (std::vector<std::string>{"reject 0 1 unavailable"}));
}

TEST_F(FleetControllerTest, QueuedRequestsExpireAtTheirDeadline) {
  make(100);
  bring_up(0);
  EXPECT_EQ(c_->submit(0, 1), Admission::kDispatched);  // busy: m1 waits for room
  EXPECT_EQ(c_->submit(1, 2), Admission::kQueued);
  c_->tick();
  EXPECT_EQ(c_->next_tick_ns(), clock_.now_ns() + 30 * kSecond);  // its deadline
  clock_.advance_ns(31 * kSecond);
  c_->tick();
  EXPECT_EQ(host_.log.back(), "reject 1 2 unavailable");
  EXPECT_EQ(c_->status(1).queued, 0);
  EXPECT_EQ(c_->state(1), ModelState::kUnloaded);
}

TEST_F(FleetControllerTest, KeepAliveSuspendsAtItsNextDecisionTime) {
  make(0, std::make_shared<FixedKeepAlivePolicy>(60 * kSecond));
  bring_up(0);
  EXPECT_EQ(c_->submit(0, 1), Admission::kDispatched);
  clock_.advance_ns(5 * kSecond);
  c_->finished(0, 1, true);
  EXPECT_EQ(c_->next_tick_ns(), clock_.now_ns() + 60 * kSecond);
  clock_.advance_ns(59 * kSecond);
  c_->tick();
  EXPECT_EQ(c_->state(0), ModelState::kActive);
  clock_.advance_ns(kSecond);
  c_->tick();
  EXPECT_EQ(c_->state(0), ModelState::kSuspending);
  finish_moves();
  EXPECT_EQ(c_->state(0), ModelState::kSuspended);
  EXPECT_EQ(c_->next_tick_ns(), IdlePolicy::kNever);
}

// A benchmark's warm-up forgotten (forget_activity): the keep-alive counts from the forgetting,
// not from the warm-up's completion, and the warm-up taught no idle time.
TEST_F(FleetControllerTest, ForgottenActivityRestartsTheIdleClock) {
  make(0, std::make_shared<FixedKeepAlivePolicy>(60 * kSecond));
  bring_up(0);
  EXPECT_EQ(c_->submit(0, 1), Admission::kDispatched);  // the warm-up
  c_->finished(0, 1, true);
  clock_.advance_ns(30 * kSecond);
  c_->forget_activity();
  EXPECT_TRUE(c_->view_is_current());
  EXPECT_EQ(c_->next_tick_ns(), clock_.now_ns() + 60 * kSecond);  // not 30 s from now
  clock_.advance_ns(59 * kSecond);
  c_->tick();
  EXPECT_EQ(c_->state(0), ModelState::kActive);
  EXPECT_EQ(c_->submit(0, 2), Admission::kDispatched);
  const ModelActivity* a = c_->activity().find("m0");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->idle.total(), 0);  // the 89 s since the warm-up are not an idle time
  EXPECT_EQ(a->n_arrivals, 1);
}

// The view the policies read is kept current incrementally (sync_view): after every operation of
// a random run (requests, finishes, ticks, moves completing, time passing, resizes) it must equal
// one rebuilt from the models' state.
TEST_F(FleetControllerTest, TheIncrementalViewStaysCurrentThroughARandomRun) {
  make(200, std::make_shared<FixedKeepAlivePolicy>(3 * kSecond));  // two of the three fit
  std::mt19937 rng(7);
  std::vector<std::deque<engine::RequestId>> running(3);
  engine::RequestId next_id = 1;
  size_t log_seen = 0;
  for (int step = 0; step < 3000; ++step) {
    const auto m = static_cast<ModelIndex>(rng() % 3);
    switch (rng() % 7) {
      case 0: c_->submit(m, next_id++); break;
      case 1:
      case 2:
        while (!running[m].empty()) {
          c_->finished(m, running[m].front(), true);
          running[m].pop_front();
        }
        break;
      case 3: c_->tick(); break;
      case 4:
        if (!host_.moves.empty()) {
          const auto [mm, move] = host_.moves.front();
          host_.moves.erase(host_.moves.begin());
          c_->move_done(mm, Status());
        }
        break;
      case 5: clock_.advance_ns(static_cast<int64_t>(rng() % 5000) * 1'000'000); break;
      case 6: (void)c_->resize(m, 100, 50 + static_cast<int64_t>(rng() % 50)); break;
    }
    // Requests the host was handed run until a later finish.
    for (; log_seen < host_.log.size(); ++log_seen) {
      unsigned mi = 0;
      unsigned long long id = 0;
      if (std::sscanf(host_.log[log_seen].c_str(), "dispatch %u %llu", &mi, &id) == 2) {
        running[mi].push_back(id);
      }
    }
    ASSERT_TRUE(c_->view_is_current()) << "after step " << step;
  }
  // The run went through every kind of move.
  std::map<std::string, int> kinds;
  for (const std::string& line : host_.log) ++kinds[line.substr(0, line.find(' '))];
  for (const char* k : {"load", "suspend", "resume", "dispatch"}) EXPECT_GT(kinds[k], 0) << k;
}

TEST_F(FleetControllerTest, TimesTheResumesAndSuspensionsItCompletes) {
  make(0, std::make_shared<FixedKeepAlivePolicy>(10 * kSecond));
  bring_up(0);  // a load: not a resume
  for (int64_t i = 0; i < 2; ++i) {
    clock_.advance_ns(10 * kSecond);
    c_->tick();
    ASSERT_EQ(c_->state(0), ModelState::kSuspending);
    clock_.advance_ns((i + 1) * kSecond / 10);  // suspensions of 0.1 s and 0.2 s
    finish_moves();
    EXPECT_EQ(c_->submit(0, 10 + i), Admission::kQueued);
    c_->tick();
    ASSERT_EQ(c_->state(0), ModelState::kResuming);
    clock_.advance_ns((i + 1) * kSecond);  // resumes of 1 s and 2 s
    finish_moves();
    ASSERT_EQ(c_->state(0), ModelState::kActive);
    c_->finished(0, 10 + i, true);
  }
  const ControlledStatus s = c_->status(0);
  EXPECT_EQ(s.resumes_done, 2);
  EXPECT_EQ(s.suspends_done, 2);
  EXPECT_DOUBLE_EQ(s.resume_seconds, 3.0);
  EXPECT_NEAR(s.suspend_seconds, 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(s.last_bring_up_s, 2.0);
}

TEST_F(FleetControllerTest, AFailedBringUpRefusesItsQueueAndBacksOff) {
  make(0);
  EXPECT_EQ(c_->submit(0, 1), Admission::kQueued);
  c_->tick();
  c_->move_done(0, Status(ErrorCode::kCorruptData, "m0.gguf: truncated"));
  host_.moves.clear();
  EXPECT_EQ(c_->state(0), ModelState::kFailed);
  EXPECT_EQ(host_.log.back(), "reject 0 1 unavailable");
  Status why;
  EXPECT_EQ(c_->submit(0, 2, &why), Admission::kRefused);
  EXPECT_NE(why.message().find("truncated"), std::string::npos) << why.message();
  clock_.advance_ns(5 * kSecond);
  EXPECT_EQ(c_->submit(0, 3), Admission::kQueued);  // the back-off is over: retried
  c_->tick();
  EXPECT_EQ(c_->state(0), ModelState::kLoading);
  c_->move_done(0, Status(ErrorCode::kCorruptData, "still truncated"));
  EXPECT_EQ(c_->status(0).retry_at_ns, clock_.now_ns() + 10 * kSecond);  // doubled
}

// Models on a device count against that device's budget, not the active one: making room for a
// device model suspends an idle model on the same device and never a CPU model (or the reverse).
TEST_F(FleetControllerTest, DeviceModelsShareTheirDevicesBudgetOnly) {
  std::vector<ControlledModel> ms(3);
  for (int i = 0; i < 3; ++i) {
    ms[i].name = fmt::format("m{}", i);
    ms[i].active_bytes = 100;
    ms[i].device = i < 2 ? 0 : -1;  // m0, m1 on opencl:0; m2 on the CPU
  }
  ControllerOptions o;
  o.active_budget_bytes = 100;  // the CPU model alone
  o.device_budget_bytes = 150;  // one device model at a time
  c_ = std::move(FleetController::create(std::move(ms), o, &host_, &clock_)).value();
  ASSERT_NE(c_->device_budget(0), nullptr);
  EXPECT_EQ(c_->device_budget(1), nullptr);
  EXPECT_EQ(c_->device_budget(0)->capacity(), 150);
  bring_up(0);
  EXPECT_EQ(c_->device_budget(0)->used(), 100);
  EXPECT_EQ(c_->budget().used(), 0);
  bring_up(2);  // the CPU's budget is its own: m0 stays up
  EXPECT_EQ(c_->state(0), ModelState::kActive);
  EXPECT_EQ(c_->budget().used(), 100);

  EXPECT_EQ(c_->submit(1, 1), Admission::kQueued);
  c_->tick();
  EXPECT_EQ(c_->state(0), ModelState::kSuspending);  // the idle model on the same device
  EXPECT_EQ(c_->state(2), ModelState::kActive);      // not the CPU's, idle as it is
  finish_moves();
  c_->tick();
  finish_moves();
  EXPECT_EQ(c_->state(1), ModelState::kActive);
  EXPECT_EQ(host_.log.back(), "dispatch 1 1");
  EXPECT_EQ(c_->device_budget(0)->used(), 100);
  EXPECT_EQ(c_->budget().used(), 100);
  // Negative budgets are refused.
  std::vector<ControlledModel> one(1);
  one[0].name = "x";
  ControllerOptions bad;
  bad.device_budget_bytes = -1;
  EXPECT_FALSE(FleetController::create(std::move(one), bad, &host_, &clock_).is_ok());
}

}  // namespace fleet_controller_test
}  // namespace tessera::fleet
