// LoRA adapters as fleet entries (FleetController's "Adapters" rules) over a scripted host on a
// FakeClock: an adapter request brings the base up, then the adapter, and is dispatched once both
// are Active; adapter bytes count in the active and host budgets; idle policies suspend idle
// adapters, and a busy adapter keeps its base up; suspending a base takes its adapters down first
// and only then the base; requests queued across an adapter's suspend and resume are all served;
// a base that fails refuses its adapters' queues. A random run checks the invariants throughout.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <random>
#include <set>

#include "tessera/fleet/fleet_controller.h"
#include "tessera/fleet/keep_alive_policy.h"

namespace tessera::fleet {
namespace fleet_adapter_test {

constexpr int64_t kSecond = 1'000'000'000;

class AdapterHost final : public ModelHost {
 public:
  void begin_move(ModelIndex m, Move move) override {
    log.push_back(fmt::format("{} {}", move_name(move), name(m)));
    moves.emplace_back(m, move);
  }
  Status dispatch(ModelIndex m, engine::RequestId id) override {
    // The rule the live host relies on: a request reaches an adapter only on an Active base.
    EXPECT_EQ((*c)->state(m), ModelState::kActive) << name(m);
    if (const ModelIndex p = (*c)->parent(m); p >= 0) {
      EXPECT_EQ((*c)->state(p), ModelState::kActive) << name(p);
    }
    log.push_back(fmt::format("dispatch {} {}", name(m), id));
    dispatched.insert(id);
    return Status();
  }
  void reject(ModelIndex m, engine::RequestId id, const Status& why) override {
    log.push_back(fmt::format("reject {} {} {}", name(m), id, error_code_name(why.code())));
    rejected[id] = why;
  }
  ModelCosts costs(ModelIndex m) const override {
    auto it = costs_by_model.find(m);
    return it != costs_by_model.end() ? it->second : ModelCosts{100, 1.0, 5.0};
  }
  std::string name(ModelIndex m) const { return (*c)->model(m).name; }

  std::unique_ptr<FleetController>* c = nullptr;
  std::map<ModelIndex, ModelCosts> costs_by_model;
  std::vector<std::pair<ModelIndex, Move>> moves;
  std::vector<std::string> log;
  std::set<engine::RequestId> dispatched;
  std::map<engine::RequestId, Status> rejected;
};

// Models: 0 "base" (100 bytes), 1 "base:a" and 2 "base:b" (10 bytes each, adapters of base),
// 3 "other" (100 bytes).
class FleetAdapterTest : public ::testing::Test {
 protected:
  void make(int64_t active_budget, int64_t host_budget = 0,
            std::shared_ptr<const IdlePolicy> policy = nullptr) {
    std::vector<ControlledModel> ms(4);
    ms[0].name = "base";
    ms[0].active_bytes = 100;
    ms[1].name = "base:a";
    ms[1].active_bytes = 10;
    ms[1].parent = "base";
    ms[2].name = "base:b";
    ms[2].active_bytes = 10;
    ms[2].parent = "base";
    ms[3].name = "other";
    ms[3].active_bytes = 100;
    ControllerOptions o;
    o.active_budget_bytes = active_budget;
    o.host_budget_bytes = host_budget;
    o.idle_policy = std::move(policy);
    o.request_deadline_ns = 30 * kSecond;
    host_.c = &c_;
    c_ = std::move(FleetController::create(std::move(ms), o, &host_, &clock_)).value();
  }
  void finish_moves() {
    while (!host_.moves.empty()) {
      auto moves = std::move(host_.moves);
      host_.moves.clear();
      for (const auto& [m, move] : moves) c_->move_done(m, Status());
    }
  }
  // Ticks and completes moves until nothing moves (the live fleet's timer does this).
  void settle() {
    for (int i = 0; i < 10; ++i) {
      c_->tick();
      if (host_.moves.empty()) return;
      finish_moves();
    }
  }
  size_t count(const std::string& line) const {
    return static_cast<size_t>(std::count(host_.log.begin(), host_.log.end(), line));
  }
  size_t index_of(const std::string& line) const {
    return static_cast<size_t>(std::find(host_.log.begin(), host_.log.end(), line) -
                               host_.log.begin());
  }

  static constexpr ModelIndex kBase = 0, kA = 1, kB = 2, kOther = 3;
  FakeClock clock_{1000 * kSecond};
  AdapterHost host_;
  std::unique_ptr<FleetController> c_;
};

TEST_F(FleetAdapterTest, TheControllerKnowsEachAdaptersBase) {
  make(0);
  EXPECT_EQ(c_->parent(kA), kBase);
  EXPECT_EQ(c_->parent(kBase), -1);
  EXPECT_EQ(c_->adapters(kBase), (std::vector<ModelIndex>{kA, kB}));
  EXPECT_TRUE(c_->adapters(kOther).empty());
}

TEST_F(FleetAdapterTest, AnAdapterOfAnUnknownBaseOrOfAnAdapterIsRefused) {
  for (const char* parent : {"nope", "base:a"}) {
    std::vector<ControlledModel> ms(3);
    ms[0].name = "base";
    ms[1].name = "base:a";
    ms[1].parent = "base";
    ms[2].name = "x";
    ms[2].parent = parent;
    auto c = FleetController::create(std::move(ms), {}, &host_, &clock_);
    ASSERT_FALSE(c.is_ok()) << parent;
    EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(parent), std::string::npos) << c.status().message();
  }
}

TEST_F(FleetAdapterTest, ARequestBringsUpTheBaseThenTheAdapterAndGoesWhenBothAreActive) {
  make(0);
  EXPECT_EQ(c_->submit(kA, 1), Admission::kQueued);
  c_->tick();
  EXPECT_EQ(c_->state(kBase), ModelState::kLoading);
  EXPECT_EQ(c_->state(kA), ModelState::kUnloaded);  // waits for its base
  finish_moves();
  EXPECT_EQ(c_->state(kBase), ModelState::kActive);
  EXPECT_EQ(c_->status(kA).queued, 1);
  c_->tick();
  EXPECT_EQ(c_->state(kA), ModelState::kLoading);
  EXPECT_EQ(c_->submit(kA, 2), Admission::kQueued);
  finish_moves();
  EXPECT_EQ(host_.log, (std::vector<std::string>{"load base", "load base:a", "dispatch base:a 1",
                                                 "dispatch base:a 2"}));
  EXPECT_EQ(c_->submit(kA, 3), Admission::kDispatched);
  EXPECT_EQ(c_->state(kB), ModelState::kUnloaded);  // the other adapter stays on disk
  EXPECT_EQ(c_->budget().used(), 110);
  // The adapter's requests are its own; the base counts them as activity only.
  EXPECT_EQ(c_->status(kA).in_flight, 3);
  EXPECT_EQ(c_->status(kBase).in_flight, 0);
  EXPECT_TRUE(c_->activity().find("base")->busy());
}

TEST_F(FleetAdapterTest, AdapterBytesCountInTheActiveBudget) {
  make(115);  // the base and one adapter
  EXPECT_EQ(c_->submit(kA, 1), Admission::kQueued);
  settle();
  ASSERT_EQ(c_->state(kA), ModelState::kActive);
  c_->finished(kA, 1, true);
  EXPECT_EQ(c_->budget().used(), 110);
  // b needs room: the idle adapter a makes it, never the base b needs.
  EXPECT_EQ(c_->submit(kB, 2), Admission::kQueued);
  c_->tick();
  EXPECT_EQ(c_->state(kA), ModelState::kSuspending);
  EXPECT_EQ(c_->state(kBase), ModelState::kActive);
  settle();
  EXPECT_EQ(c_->state(kA), ModelState::kSuspended);
  EXPECT_EQ(c_->state(kB), ModelState::kActive);
  EXPECT_EQ(host_.log.back(), "dispatch base:b 2");
  EXPECT_EQ(c_->budget().used(), 110);
}

TEST_F(FleetAdapterTest, AdapterBytesCountInTheHostBudget) {
  host_.costs_by_model[kA] = {60, 0.01, 0.1};  // a suspended adapter holds 60 host bytes
  host_.costs_by_model[kBase] = {0, 1.0, 5.0};
  make(0, 50);
  EXPECT_EQ(c_->submit(kA, 1), Admission::kQueued);
  settle();
  c_->finished(kA, 1, true);
  ASSERT_TRUE(c_->suspend(kA).is_ok());
  finish_moves();
  EXPECT_EQ(c_->state(kA), ModelState::kSuspended);
  c_->tick();  // 60 > 50 host bytes: the adapter goes to disk
  finish_moves();
  EXPECT_EQ(c_->state(kA), ModelState::kEvicted);
  EXPECT_EQ(c_->state(kBase), ModelState::kActive);
  // A request for it reloads it (cold) and is served.
  EXPECT_EQ(c_->submit(kA, 2), Admission::kQueued);
  settle();
  EXPECT_EQ(host_.log.back(), "dispatch base:a 2");
  EXPECT_EQ(c_->status(kA).loads, 2);
}

TEST_F(FleetAdapterTest, AnIdlePolicySuspendsIdleAdaptersAndABusyAdapterKeepsItsBaseUp) {
  make(0, 0, std::make_shared<FixedKeepAlivePolicy>(60 * kSecond));
  EXPECT_EQ(c_->submit(kA, 1), Admission::kQueued);
  EXPECT_EQ(c_->submit(kB, 2), Admission::kQueued);
  settle();
  ASSERT_EQ(c_->state(kA), ModelState::kActive);
  ASSERT_EQ(c_->state(kB), ModelState::kActive);
  c_->finished(kA, 1, true);  // a idle, b busy
  clock_.advance_ns(61 * kSecond);
  c_->tick();
  EXPECT_EQ(c_->state(kA), ModelState::kSuspending);
  EXPECT_EQ(c_->state(kB), ModelState::kActive);
  EXPECT_EQ(c_->state(kBase), ModelState::kActive);  // its adapter b is serving
  finish_moves();
  EXPECT_EQ(c_->state(kA), ModelState::kSuspended);
  EXPECT_EQ(c_->budget().used(), 110);
  // b finishes; a keep-alive later both b and the base go, b first.
  c_->finished(kB, 2, true);
  clock_.advance_ns(61 * kSecond);
  c_->tick();
  EXPECT_EQ(c_->state(kB), ModelState::kSuspending);
  EXPECT_EQ(c_->state(kBase), ModelState::kActive);  // waits for b
  EXPECT_EQ(count("suspend base"), 0u);
  finish_moves();
  EXPECT_EQ(c_->state(kBase), ModelState::kSuspended);
  EXPECT_LT(index_of("suspend base:b"), index_of("suspend base"));
  EXPECT_EQ(c_->budget().used(), 0);
}

TEST_F(FleetAdapterTest, SuspendingABaseDrainsItsAdaptersFirstAndLosesNoRequest) {
  make(0);
  EXPECT_EQ(c_->submit(kA, 1), Admission::kQueued);
  settle();
  ASSERT_EQ(c_->state(kA), ModelState::kActive);
  EXPECT_EQ(c_->submit(kBase, 2), Admission::kDispatched);
  ASSERT_TRUE(c_->suspend(kBase).is_ok());
  // a drains (request 1 still runs in the host); the base keeps serving meanwhile.
  EXPECT_EQ(c_->state(kA), ModelState::kSuspending);
  EXPECT_EQ(c_->state(kBase), ModelState::kActive);
  EXPECT_EQ(c_->submit(kBase, 3), Admission::kDispatched);
  EXPECT_EQ(c_->submit(kA, 4), Admission::kQueued);  // waits out the suspension
  EXPECT_EQ(c_->submit(kB, 5), Admission::kQueued);  // the base is on its way down
  c_->tick();
  EXPECT_EQ(c_->state(kB), ModelState::kUnloaded);
  c_->finished(kA, 1, true);
  c_->move_done(host_.moves.front().first, Status());  // a's suspension done
  host_.moves.erase(host_.moves.begin());
  EXPECT_EQ(c_->state(kA), ModelState::kSuspended);
  EXPECT_EQ(c_->state(kBase), ModelState::kSuspending);  // now the base goes
  EXPECT_EQ(count("suspend base"), 1u);
  c_->finished(kBase, 2, true);
  c_->finished(kBase, 3, true);
  finish_moves();
  EXPECT_EQ(c_->state(kBase), ModelState::kSuspended);
  // The queued adapter requests bring the base back, then their adapters, and are served.
  settle();
  EXPECT_EQ(c_->state(kBase), ModelState::kActive);
  EXPECT_EQ(c_->state(kA), ModelState::kActive);
  EXPECT_EQ(c_->state(kB), ModelState::kActive);
  EXPECT_TRUE(host_.rejected.empty());
  EXPECT_EQ(host_.dispatched, (std::set<engine::RequestId>{1, 2, 3, 4, 5}));
  EXPECT_LT(index_of("resume base"), index_of("resume base:a"));
}

TEST_F(FleetAdapterTest, RequestsQueuedAcrossAnAdapterSuspendAndResumeAreAllServed) {
  make(0);
  EXPECT_EQ(c_->submit(kA, 1), Admission::kQueued);
  settle();
  ASSERT_TRUE(c_->suspend(kA).is_ok());  // request 1 drains
  EXPECT_EQ(c_->submit(kA, 2), Admission::kQueued);
  EXPECT_EQ(c_->submit(kA, 3), Admission::kQueued);
  c_->finished(kA, 1, true);
  finish_moves();
  EXPECT_EQ(c_->state(kA), ModelState::kSuspended);
  c_->tick();
  EXPECT_EQ(c_->state(kA), ModelState::kResuming);
  EXPECT_EQ(c_->state(kBase), ModelState::kActive);  // the base never left
  finish_moves();
  EXPECT_EQ(host_.dispatched, (std::set<engine::RequestId>{1, 2, 3}));
  EXPECT_TRUE(host_.rejected.empty());
  EXPECT_EQ(c_->status(kA).resumes_done, 1);
}

TEST_F(FleetAdapterTest, ABaseThatFailsRefusesItsAdaptersQueues) {
  make(0);
  EXPECT_EQ(c_->submit(kA, 1), Admission::kQueued);
  c_->tick();
  ASSERT_EQ(c_->state(kBase), ModelState::kLoading);
  host_.moves.clear();
  c_->move_done(kBase, Status(ErrorCode::kCorruptData, "base.gguf: truncated"));
  EXPECT_EQ(host_.log.back(), "reject base:a 1 unavailable");
  EXPECT_NE(host_.rejected[1].message().find("truncated"), std::string::npos);
  Status why;
  EXPECT_EQ(c_->submit(kA, 2, &why), Admission::kRefused);  // while the base backs off
  EXPECT_NE(why.message().find("truncated"), std::string::npos) << why.message();
  EXPECT_EQ(c_->state(kA), ModelState::kUnloaded);
}

// A random run of requests, finishes, ticks, moves and time over two bases (one with two
// adapters) under a tight budget and a short keep-alive: after every step no adapter holds active
// memory while its base is not Active, the budget holds, and the view is current; at the end
// every request was dispatched or (only by its deadline) refused, exactly once.
TEST_F(FleetAdapterTest, ARandomRunKeepsTheAdapterInvariantsAndLosesNoRequest) {
  make(230, 0, std::make_shared<FixedKeepAlivePolicy>(3 * kSecond));
  std::mt19937 rng(11);
  std::vector<std::vector<engine::RequestId>> running(4);
  std::set<engine::RequestId> seen_dispatched;
  engine::RequestId next_id = 1;
  for (int step = 0; step < 4000; ++step) {
    const auto m = static_cast<ModelIndex>(rng() % 4);
    switch (rng() % 8) {
      case 0:
      case 1: (void)c_->submit(m, next_id++); break;
      case 2:
        for (engine::RequestId id : running[m]) c_->finished(m, id, true);
        running[m].clear();
        break;
      case 3: c_->tick(); break;
      case 4:
      case 5:
        if (!host_.moves.empty()) {
          const auto [mm, move] = host_.moves.front();
          host_.moves.erase(host_.moves.begin());
          c_->move_done(mm, Status());
        }
        break;
      case 6: clock_.advance_ns(static_cast<int64_t>(rng() % 3000) * 1'000'000); break;
      case 7:
        if (rng() % 4 == 0) (void)c_->suspend(m);
        break;
    }
    for (engine::RequestId id : host_.dispatched) {
      if (seen_dispatched.insert(id).second) {
        // Which model: the log's last dispatch line for it.
        for (auto it = host_.log.rbegin(); it != host_.log.rend(); ++it) {
          unsigned long long got = 0;
          char name[32] = {};
          if (std::sscanf(it->c_str(), "dispatch %31s %llu", name, &got) == 2 && got == id) {
            running[c_->find(name)].push_back(id);
            break;
          }
        }
      }
    }
    for (ModelIndex a : {kA, kB}) {
      if (holds_active_memory(c_->state(a))) {
        ASSERT_EQ(c_->state(kBase), ModelState::kActive) << "step " << step << " adapter " << a;
      }
    }
    ASSERT_LE(c_->budget().used(), 230) << "step " << step;
    ASSERT_TRUE(c_->view_is_current()) << "step " << step;
  }
  // Drain: finish everything, complete moves and tick until quiet (deadlines pass).
  for (int round = 0; round < 50; ++round) {
    for (ModelIndex mm = 0; mm < 4; ++mm) {
      for (engine::RequestId id : running[mm]) c_->finished(mm, id, true);
      running[mm].clear();
    }
    finish_moves();
    c_->tick();
    clock_.advance_ns(kSecond);
    for (engine::RequestId id : host_.dispatched) {
      if (seen_dispatched.insert(id).second) {
        for (auto it = host_.log.rbegin(); it != host_.log.rend(); ++it) {
          unsigned long long got = 0;
          char name[32] = {};
          if (std::sscanf(it->c_str(), "dispatch %31s %llu", name, &got) == 2 && got == id) {
            running[c_->find(name)].push_back(id);
            break;
          }
        }
      }
    }
  }
  int64_t dispatched = 0, refused_by_deadline = 0;
  for (engine::RequestId id = 1; id < next_id; ++id) {
    const bool d = host_.dispatched.count(id) > 0;
    const auto r = host_.rejected.find(id);
    ASSERT_NE(d, r != host_.rejected.end()) << "request " << id << " lost or served twice";
    if (d) ++dispatched;
    if (r != host_.rejected.end()) {
      EXPECT_NE(r->second.message().find("did not become ready"), std::string::npos)
          << r->second.message();
      ++refused_by_deadline;
    }
  }
  EXPECT_GT(dispatched, 100);
  std::map<std::string, int> kinds;
  for (const std::string& line : host_.log) {
    const size_t sp = line.find(' ');
    const std::string name = line.substr(sp + 1, line.find(' ', sp + 1) - sp - 1);
    if (name.rfind("base:", 0) == 0) ++kinds[line.substr(0, sp)];
  }
  for (const char* k : {"load", "suspend", "resume", "dispatch"}) EXPECT_GT(kinds[k], 0) << k;
}

}  // namespace fleet_adapter_test
}  // namespace tessera::fleet
