// The lifecycle state machine: every legal and every illegal edge, time-in-state from a FakeClock,
// and listener events.
#include "tessera/fleet/lifecycle.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

namespace tessera::fleet {
namespace lifecycle_test {

using S = ModelState;

// The legal edges, written out independently of the implementation's switch.
const std::set<std::pair<S, S>>& legal_edges() {
  static const std::set<std::pair<S, S>> edges = {
      {S::kUnloaded, S::kLoading},   {S::kLoading, S::kActive},      {S::kLoading, S::kFailed},
      {S::kActive, S::kSuspending},  {S::kSuspending, S::kSuspended},
      {S::kSuspending, S::kFailed},  {S::kSuspended, S::kResuming},  {S::kResuming, S::kActive},
      {S::kResuming, S::kFailed},    {S::kSuspended, S::kEvicted},   {S::kEvicted, S::kLoading},
      {S::kFailed, S::kLoading},
  };
  return edges;
}

// A shortest legal path from Unloaded to `target` (breadth-first over the expected edges).
std::vector<S> path_to(S target) {
  std::vector<std::vector<S>> frontier = {{S::kUnloaded}};
  std::set<S> seen = {S::kUnloaded};
  while (!frontier.empty()) {
    std::vector<std::vector<S>> next;
    for (const auto& p : frontier) {
      if (p.back() == target) return p;
      for (const auto& [from, to] : legal_edges()) {
        if (from == p.back() && seen.insert(to).second) {
          auto q = p;
          q.push_back(to);
          next.push_back(q);
        }
      }
    }
    frontier = std::move(next);
  }
  ADD_FAILURE() << "no path to " << model_state_name(target);
  return {};
}

TEST(ModelStateTest, TableMatchesTheDocumentedEdges) {
  int n_legal = 0;
  for (S from : kAllModelStates) {
    for (S to : kAllModelStates) {
      const bool expected = legal_edges().count({from, to}) > 0;
      EXPECT_EQ(is_legal_transition(from, to), expected)
          << model_state_name(from) << " -> " << model_state_name(to);
      n_legal += expected;
    }
  }
  EXPECT_EQ(n_legal, 12);
}

TEST(ModelStateTest, NamesAreDistinctAndStable) {
  std::set<std::string_view> names;
  for (S s : kAllModelStates) names.insert(model_state_name(s));
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumModelStates));
  EXPECT_EQ(model_state_name(S::kSuspending), "suspending");
  EXPECT_EQ(model_state_name(S::kEvicted), "evicted");
}

TEST(ModelStateTest, ActiveMemoryStates) {
  EXPECT_TRUE(holds_active_memory(S::kLoading));
  EXPECT_TRUE(holds_active_memory(S::kActive));
  EXPECT_TRUE(holds_active_memory(S::kSuspending));
  EXPECT_TRUE(holds_active_memory(S::kResuming));
  EXPECT_FALSE(holds_active_memory(S::kUnloaded));
  EXPECT_FALSE(holds_active_memory(S::kSuspended));
  EXPECT_FALSE(holds_active_memory(S::kEvicted));
  EXPECT_FALSE(holds_active_memory(S::kFailed));
}

// Every (from, to) pair through the real ModelLifecycle: drive it to `from` along legal edges,
// then try `to`. Legal ones succeed and emit one event; illegal ones fail with kInvalidArgument,
// change nothing and emit nothing.
TEST(ModelLifecycleTest, EveryLegalAndIllegalTransition) {
  for (S from : kAllModelStates) {
    for (S to : kAllModelStates) {
      SCOPED_TRACE(std::string(model_state_name(from)) + " -> " + std::string(model_state_name(to)));
      FakeClock clock(1000);
      ModelLifecycle lc("m", &clock);
      std::vector<TransitionEvent> events;
      lc.add_listener([&](const TransitionEvent& e) { events.push_back(e); });
      const std::vector<S> path = path_to(from);
      ASSERT_FALSE(path.empty());
      for (size_t i = 1; i < path.size(); ++i) {
        clock.advance_ns(10);
        ASSERT_TRUE(lc.transition(path[i]).is_ok());
      }
      ASSERT_EQ(lc.state(), from);
      const size_t n_before = events.size();
      const int64_t since_before = lc.state_since_ns();
      clock.advance_ns(7);
      Status st = lc.transition(to, "test");
      if (legal_edges().count({from, to})) {
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        EXPECT_EQ(lc.state(), to);
        EXPECT_EQ(lc.state_since_ns(), clock.now_ns());
        ASSERT_EQ(events.size(), n_before + 1);
        EXPECT_EQ(events.back().from, from);
        EXPECT_EQ(events.back().to, to);
        EXPECT_EQ(events.back().at_ns, clock.now_ns());
        EXPECT_EQ(events.back().time_in_from_ns, 7);
        EXPECT_EQ(events.back().reason, "test");
        EXPECT_EQ(events.back().model, "m");
      } else {
        EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
        EXPECT_NE(st.message().find("illegal transition"), std::string::npos);
        EXPECT_NE(st.message().find(std::string(model_state_name(to))), std::string::npos);
        EXPECT_EQ(lc.state(), from);
        EXPECT_EQ(lc.state_since_ns(), since_before);
        EXPECT_EQ(events.size(), n_before);
      }
    }
  }
}

TEST(ModelLifecycleTest, TimeInStateAccumulatesOverVisits) {
  FakeClock clock(5'000);
  ModelLifecycle lc("m", &clock);
  EXPECT_EQ(lc.state(), S::kUnloaded);
  EXPECT_EQ(lc.state_since_ns(), 5'000);
  clock.advance_ns(100);
  EXPECT_EQ(lc.time_in_state_ns(S::kUnloaded), 100);  // the current stay counts
  ASSERT_TRUE(lc.transition(S::kLoading).is_ok());
  clock.advance_ns(50);
  ASSERT_TRUE(lc.transition(S::kActive).is_ok());
  clock.advance_ns(1'000);
  ASSERT_TRUE(lc.transition(S::kSuspending).is_ok());
  clock.advance_ns(3);
  ASSERT_TRUE(lc.transition(S::kSuspended).is_ok());
  clock.advance_ns(400);
  ASSERT_TRUE(lc.transition(S::kResuming).is_ok());
  clock.advance_ns(20);
  ASSERT_TRUE(lc.transition(S::kActive).is_ok());
  clock.advance_ns(2'000);
  EXPECT_EQ(lc.time_in_state_ns(S::kUnloaded), 100);
  EXPECT_EQ(lc.time_in_state_ns(S::kLoading), 50);
  EXPECT_EQ(lc.time_in_state_ns(S::kActive), 3'000);  // 1000 closed + 2000 current
  EXPECT_EQ(lc.time_in_state_ns(S::kSuspending), 3);
  EXPECT_EQ(lc.time_in_state_ns(S::kSuspended), 400);
  EXPECT_EQ(lc.time_in_state_ns(S::kResuming), 20);
  EXPECT_EQ(lc.time_in_state_ns(S::kEvicted), 0);
  EXPECT_EQ(lc.entries(S::kActive), 2);
  EXPECT_EQ(lc.entries(S::kResuming), 1);
  EXPECT_EQ(lc.entries(S::kLoading), 1);
  EXPECT_EQ(lc.entries(S::kUnloaded), 0);
}

TEST(ModelLifecycleTest, EvictedModelComesBackThroughLoading) {
  FakeClock clock;
  ModelLifecycle lc("m", &clock);
  for (S s : {S::kLoading, S::kActive, S::kSuspending, S::kSuspended, S::kEvicted}) {
    ASSERT_TRUE(lc.transition(s).is_ok());
  }
  EXPECT_FALSE(lc.transition(S::kResuming).is_ok());
  EXPECT_FALSE(lc.transition(S::kActive).is_ok());
  ASSERT_TRUE(lc.transition(S::kLoading, "request").is_ok());
  ASSERT_TRUE(lc.transition(S::kActive).is_ok());
  EXPECT_EQ(lc.entries(S::kLoading), 2);
}

TEST(ModelLifecycleTest, ListenersSeeEveryTransitionInOrder) {
  FakeClock clock;
  ModelLifecycle lc("alpha", &clock);
  std::vector<std::pair<S, S>> a, b;
  lc.add_listener([&](const TransitionEvent& e) { a.emplace_back(e.from, e.to); });
  lc.add_listener([&](const TransitionEvent& e) { b.emplace_back(e.from, e.to); });
  ASSERT_TRUE(lc.transition(S::kLoading).is_ok());
  ASSERT_TRUE(lc.transition(S::kFailed).is_ok());
  EXPECT_FALSE(lc.transition(S::kActive).is_ok());
  ASSERT_TRUE(lc.transition(S::kLoading).is_ok());
  const std::vector<std::pair<S, S>> want = {
      {S::kUnloaded, S::kLoading}, {S::kLoading, S::kFailed}, {S::kFailed, S::kLoading}};
  EXPECT_EQ(a, want);
  EXPECT_EQ(b, want);
}

}  // namespace lifecycle_test
}  // namespace tessera::fleet
