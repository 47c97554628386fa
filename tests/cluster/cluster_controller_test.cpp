// ClusterController over a fake Slurm whose "jobs" are in-process HTTP replicas: scaling from
// zero and back, scaling up under load, prefix-affine and round-robin routing, a lost replica's
// requests re-routed (answered once), a restarted controller adopting running jobs. The real
// Slurm runs in the cluster_* integration tests.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "tessera/cluster/cluster_controller.h"
#include "tessera/serve/http_server.h"
#include "serve/http_test_client.h"

namespace tessera::cluster {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// A free run of `n` consecutive ports on 127.0.0.1 (probed by binding them).
int free_port_run(int n) {
  for (int base = 21000 + static_cast<int>(getpid() % 2000) * 8; base < 60000; base += 97) {
    bool ok = true;
    for (int p = base; p < base + n && ok; ++p) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(p));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      close(fd);
    }
    if (ok) return base;
  }
  return 0;
}

// Fake Slurm: submit() starts an in-process replica on the port in the job's argv.
class FakeSlurm final : public SlurmClient {
 public:
  struct Replica {
    std::unique_ptr<serve::HttpServer> server;
    SlurmJob job;
    int port = 0;
  };
  std::atomic<int> submits{0};
  std::atomic<int> answered{0};
  std::atomic<int> response_delay_ms{0};
  std::atomic<int> start_delay_ms{0};  // /health answers 503 this long after a submit
  std::atomic<int> admin_moves{0};     // suspends and resumes asked of fleet-mode replicas
  // A request whose prompt is "hold" is answered only once this is true (no timing assumption).
  std::atomic<bool> hold_open{true};
  std::mutex mu;
  std::map<int, int> answers_by_port;  // port -> requests answered

  ~FakeSlurm() override {
    hold_open = true;  // a held request, if a test stopped early, goes on
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [id, r] : replicas_) {
      if (r->server) r->server->stop(0ms);
    }
  }

  Result<int64_t> submit(const SlurmJobSpec& spec) override {
    int port = 0;
    // A fleet-mode replica (--config): its models, each in a state the admin calls move.
    auto model_state = std::make_shared<std::map<std::string, std::string>>();
    for (size_t i = 0; i + 1 < spec.argv.size(); ++i) {
      if (spec.argv[i] == "--port") port = std::stoi(spec.argv[i + 1]);
      if (spec.argv[i] == "--config") {
        std::ifstream in(spec.argv[i + 1]);
        const json config = json::parse(in);
        for (const auto& m : config["models"]) (*model_state)[m["name"].get<std::string>()] = "active";
      }
    }
    auto r = std::make_unique<Replica>();
    r->port = port;
    serve::HttpServerOptions ho;
    ho.port = port;
    const auto ready_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(start_delay_ms.load());
    r->server = std::make_unique<serve::HttpServer>(
        ho, [this, port, ready_at, model_state](serve::HttpRequest&& req,
                                                std::shared_ptr<serve::ResponseWriter> w) {
          if (req.path == "/health") {
            const bool ready = std::chrono::steady_clock::now() >= ready_at;
            w->respond({ready ? 200 : 503, "application/json", {}, "{}"});
            return;
          }
          if (req.path.rfind("/admin/models", 0) == 0) {
            std::lock_guard<std::mutex> lock(mu);
            if (model_state->empty()) {
              w->respond({400, "application/json", {}, "{}"});
            } else if (req.method == "GET") {
              json data = json::array();
              for (const auto& [name, state] : *model_state) data.push_back({{"id", name}, {"state", state}});
              w->respond({200, "application/json", {}, json{{"data", data}}.dump()});
            } else {
              // /admin/models/{name}/{action}
              const size_t slash = req.path.rfind('/');
              const std::string action = req.path.substr(slash + 1);
              const std::string name = req.path.substr(14, slash - 14);
              (*model_state)[name] = action == "suspend" ? "suspended" : action == "evict" ? "evicted" : "active";
              ++admin_moves;
              w->respond({200, "application/json", {}, json{{"id", name}, {"state", (*model_state)[name]}}.dump()});
            }
            return;
          }
          const int delay = response_delay_ms.load();
          std::thread([this, port, delay, w, body = req.body] {
            std::this_thread::sleep_for(std::chrono::milliseconds(delay));
            json in = json::parse(body);
            if (in.contains("prompt") && in["prompt"] == "hold") {
              while (!hold_open.load()) std::this_thread::sleep_for(1ms);
            }
            // Counted before the answer leaves, so a client that has its answer sees the count.
            ++answered;
            {
              std::lock_guard<std::mutex> lock(mu);
              ++answers_by_port[port];
            }
            if (in.value("stream", false)) {
              w->begin_stream(200, "text/event-stream");
              for (int i = 0; i < 3; ++i) w->write(fmt::format("data: {{\"i\":{}}}\n\n", i));
              w->write("data: [DONE]\n\n");
              w->end_stream();
            } else {
              w->respond({200, "application/json", {}, json{{"port", port}, {"model", in.value("model", "")}}.dump()});
            }
          }).detach();
        });
    if (Status st = r->server->start(); !st.is_ok()) return st;
    std::lock_guard<std::mutex> lock(mu);
    const int64_t id = next_id_++;
    r->job = SlurmJob{id, spec.name, SlurmJobState::kRunning, "", ""};
    replicas_[id] = std::move(r);
    ++submits;
    return id;
  }
  Status cancel(int64_t id) override {
    std::unique_ptr<Replica> r;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = replicas_.find(id);
      if (it == replicas_.end()) return Status::ok();
      r = std::move(it->second);
      replicas_.erase(it);
    }
    r->server->stop(2000ms);
    return Status::ok();
  }
  Result<std::vector<SlurmJob>> jobs(std::string_view prefix) override {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<SlurmJob> out;
    for (auto& [id, r] : replicas_) {
      if (r->job.name.rfind(prefix, 0) == 0) out.push_back(r->job);
    }
    return out;
  }
  // The replica dies without Slurm being asked (kill -9 of the process; the job ends).
  void kill_port(int port) {
    std::unique_ptr<Replica> r;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto it = replicas_.begin(); it != replicas_.end(); ++it) {
        if (it->second->port == port) {
          r = std::move(it->second);
          replicas_.erase(it);
          break;
        }
      }
    }
    if (r) r->server->stop(0ms);
  }
  size_t running() {
    std::lock_guard<std::mutex> lock(mu);
    return replicas_.size();
  }
  int answers_on(int port) {
    std::lock_guard<std::mutex> lock(mu);
    return answers_by_port[port];
  }

 private:
  int64_t next_id_ = 100;
  std::map<int64_t, std::unique_ptr<Replica>> replicas_;
};

// Forwards a shared FakeSlurm (so a test can restart the controller over the same "cluster").
class SharedSlurm final : public SlurmClient {
 public:
  explicit SharedSlurm(FakeSlurm* f) : f_(f) {}
  Result<int64_t> submit(const SlurmJobSpec& s) override { return f_->submit(s); }
  Status cancel(int64_t id) override { return f_->cancel(id); }
  Result<std::vector<SlurmJob>> jobs(std::string_view p) override { return f_->jobs(p); }

 private:
  FakeSlurm* f_;
};

struct Router {
  std::unique_ptr<ClusterController> ctl;
  std::unique_ptr<serve::HttpServer> http;
  int port = 0;
  ~Router() {
    if (http) http->stop(1000ms);
    if (ctl) ctl->stop(false);
  }
};

std::unique_ptr<Router> start_router(FakeSlurm* slurm, ClusterOptions o, const Clock* clock = real_clock()) {
  auto r = std::make_unique<Router>();
  auto ctl = ClusterController::create(std::move(o), std::make_unique<SharedSlurm>(slurm), clock);
  EXPECT_TRUE(ctl.is_ok()) << ctl.status().to_string();
  if (!ctl.is_ok()) return nullptr;
  r->ctl = std::move(*ctl);
  EXPECT_TRUE(r->ctl->start().is_ok());
  ClusterController* c = r->ctl.get();
  r->http = std::make_unique<serve::HttpServer>(
      serve::HttpServerOptions{}, [c](serve::HttpRequest&& q, std::shared_ptr<serve::ResponseWriter> w) {
        c->handle(std::move(q), std::move(w));
      });
  EXPECT_TRUE(r->http->start().is_ok());
  r->port = r->http->port();
  return r;
}

ClusterOptions options(int port_base, int replicas) {
  ClusterOptions o;
  o.name = "t";
  ClusterModelSpec m;
  m.name = "m";
  m.path = "/nonexistent.gguf";
  m.max_replicas = replicas;
  m.memory_mb = 64;
  o.models.push_back(m);
  o.replica_port_base = port_base;
  o.replica_cap = 1;
  o.keep_alive_s = 60;
  o.request_deadline_s = 10;
  o.slurm_poll_s = 0.05;
  o.host.poll_s = 0.01;
  o.host.ready_timeout_s = 5;
  return o;
}

serve::testing::ClientResponse complete(int port, const json& prompt, bool stream = false) {
  serve::testing::TestClient c(port);
  return c.request("POST", "/v1/completions",
                   json{{"model", "m"}, {"prompt", prompt}, {"stream", stream}}.dump());
}

// A prompt of token ids: 40 shared ids, then `tail`.
json ids_prompt(int tail) {
  json ids = json::array();
  for (int t = 0; t < 40; ++t) ids.push_back(7 + t % 5);
  ids.push_back(tail);
  return ids;
}

json status(Router& r) { return r.ctl->status_json(); }

template <typename F>
bool eventually(F f, std::chrono::milliseconds within = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return f();
}

TEST(ClusterController, ScalesFromZeroAndBackToZero) {
  const int base = free_port_run(2);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  auto o = options(base, 2);
  o.keep_alive_s = 0.3;
  auto r = start_router(&slurm, o);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(slurm.running(), 0u);
  auto res = complete(r->port, "hello");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(json::parse(res.body)["port"], base);  // the first slot came up for it
  EXPECT_EQ(slurm.submits.load(), 1);
  // Idle past the keep-alive: the replica's job is released.
  EXPECT_TRUE(eventually([&] { return slurm.running() == 0; }));
  EXPECT_TRUE(eventually([&] { return status(*r)["models"][0]["replicas_up"] == 0; }));
  const json s = status(*r)["models"][0];
  EXPECT_EQ(s["answered"], 1);
  EXPECT_EQ(s["scale_ups"], 1);
  EXPECT_EQ(s["scale_downs"], 1);
  EXPECT_GT(s["replica_seconds"].get<double>(), 0.2);
  // And back up for the next request.
  res = complete(r->port, "again");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(slurm.submits.load(), 2);
}

// A clock only the test moves, safe to read from the controller's threads.
class SteppedClock final : public Clock {
 public:
  int64_t now_ns() const override { return now_.load(); }
  void advance_s(int64_t s) { now_ += s * 1'000'000'000; }

 private:
  std::atomic<int64_t> now_{1'000'000'000};
};

TEST(ClusterController, UsageIsTimedByTheInjectedClock) {
  const int base = free_port_run(1);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  auto o = options(base, 1);
  o.models[0].min_replicas = 1;  // up from start(), never scaled down
  SteppedClock clock;
  auto r = start_router(&slurm, o, &clock);
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(eventually([&] { return status(*r)["models"][0]["replicas"][0]["state"] == "active"; }));
  // However long the start took in real time, no injected time passed.
  EXPECT_EQ(status(*r)["models"][0]["replica_seconds"].get<double>(), 0.0);
  clock.advance_s(100);
  EXPECT_TRUE(eventually([&] { return status(*r)["models"][0]["replica_seconds"].get<double>() > 99.0; }));
  const json s = status(*r)["models"][0];
  EXPECT_NEAR(s["replica_seconds"].get<double>(), 100.0, 1e-6);
  EXPECT_NEAR(s["idle_replica_seconds"].get<double>(), 100.0, 1e-6);
}

TEST(ClusterController, ReadinessTimesOutOnTheInjectedClock) {
  const int base = free_port_run(1);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  slurm.start_delay_ms = 600'000;  // /health would answer 503 for ten real minutes
  auto o = options(base, 1);
  o.models[0].min_replicas = 1;
  SteppedClock clock;
  auto r = start_router(&slurm, o, &clock);
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(eventually([&] { return slurm.submits.load() == 1; }));
  EXPECT_EQ(status(*r)["models"][0]["replicas"][0]["state"], "loading");
  clock.advance_s(6);  // past ready_timeout_s (5)
  EXPECT_TRUE(eventually([&] { return status(*r)["models"][0]["replicas"][0]["state"] == "failed"; }));
  EXPECT_NE(status(*r)["models"][0]["replicas"][0]["last_error"].get<std::string>().find("not ready after 5 s"),
            std::string::npos);
}

TEST(ClusterController, ScalesUpWhenReplicasAreFull) {
  const int base = free_port_run(3);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  slurm.response_delay_ms = 300;
  auto r = start_router(&slurm, options(base, 3));
  ASSERT_NE(r, nullptr);
  std::vector<std::thread> clients;
  std::vector<int> codes(3, 0);
  std::set<int> ports;
  std::mutex mu;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&, i] {
      auto res = complete(r->port, fmt::format("request {}", i));
      std::lock_guard<std::mutex> lock(mu);
      codes[static_cast<size_t>(i)] = res.status;
      if (res.status == 200) ports.insert(json::parse(res.body)["port"].get<int>());
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(codes, std::vector<int>({200, 200, 200}));
  EXPECT_EQ(ports.size(), 3u);  // cap 1: each concurrent request brought its own replica up
  EXPECT_EQ(slurm.submits.load(), 3);
  EXPECT_EQ(slurm.answered.load(), 3);
}

// Both replicas up from the start (min replicas), waited for.
std::unique_ptr<Router> start_two_up(FakeSlurm* slurm, ClusterOptions o) {
  o.models[0].min_replicas = 2;
  auto r = start_router(slurm, o);
  if (r != nullptr) {
    EXPECT_TRUE(eventually([&] {
      const json reps = status(*r)["models"][0]["replicas"];
      return reps[0]["state"] == "active" && reps[1]["state"] == "active";
    }));
  }
  return r;
}

int port_of(const serve::testing::ClientResponse& res) {
  return res.status == 200 ? json::parse(res.body)["port"].get<int>() : -1;
}

TEST(ClusterController, PrefixAffinityKeepsASharedPrefixOnOneReplica) {
  const int base = free_port_run(2);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  auto o = options(base, 2);
  o.replica_cap = 8;
  auto r = start_two_up(&slurm, o);
  ASSERT_NE(r, nullptr);
  // While slot 0 holds a slow request, prefix a's first request goes to the idle slot 1.
  const std::string doc_a(200, 'a');
  slurm.hold_open = false;
  std::thread hold([&] { EXPECT_EQ(port_of(complete(r->port, "hold")), base); });
  EXPECT_TRUE(eventually([&] { return status(*r)["models"][0]["replicas"][0]["in_flight"] == 1; }));
  // A client can have its answer before the router has counted the request done: wait for that,
  // so each request below sees the loads it is meant to.
  auto idle = [&](int slot) {
    return eventually([&] { return status(*r)["models"][0]["replicas"][slot]["in_flight"] == 0; });
  };
  EXPECT_EQ(port_of(complete(r->port, doc_a + " question 0")), base + 1);
  EXPECT_TRUE(idle(1));
  // The ids prefix's first request, to slot 1 by load; its affinity is checked below.
  EXPECT_EQ(port_of(complete(r->port, ids_prompt(100))), base + 1);
  slurm.hold_open = true;
  hold.join();
  EXPECT_TRUE(idle(0));
  EXPECT_TRUE(idle(1));
  // Both idle now: load alone would pick slot 0 (ties go to the earlier slot); affinity keeps
  // prefix a on slot 1, and a new prefix goes to slot 0.
  for (int i = 1; i < 6; ++i) {
    EXPECT_EQ(port_of(complete(r->port, doc_a + fmt::format(" question {}", i))), base + 1);
  }
  EXPECT_EQ(port_of(complete(r->port, std::string(200, 'b'))), base);
  // A prompt of token ids sharing the ids prefix: slot 1 too (equal id prefixes hash equally).
  EXPECT_EQ(port_of(complete(r->port, ids_prompt(101))), base + 1);
  // A batch of token-id prompts, keyed by its first: slot 1 as well.
  EXPECT_EQ(port_of(complete(r->port, json::array({ids_prompt(102), ids_prompt(103)}))), base + 1);
  EXPECT_GE(status(*r)["models"][0]["affinity_routed"].get<int>(), 7);
}

TEST(ClusterController, RoundRobinSpreadsOverActiveReplicas) {
  const int base = free_port_run(2);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  auto o = options(base, 2);
  o.routing = RoutingPolicy::kRoundRobin;
  o.replica_cap = 8;  // a finished request may still count in flight for a moment after its answer
  auto r = start_two_up(&slurm, o);
  ASSERT_NE(r, nullptr);
  std::map<int, int> ports;
  for (int i = 0; i < 6; ++i) ++ports[port_of(complete(r->port, std::string(200, 'a')))];
  EXPECT_EQ(ports, (std::map<int, int>{{base, 3}, {base + 1, 3}}));
}

TEST(ClusterController, ALostReplicaIsReplacedAndItsRequestAnsweredOnce) {
  const int base = free_port_run(2);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  auto r = start_router(&slurm, options(base, 2));
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(complete(r->port, "first").status, 200);
  slurm.kill_port(base);  // the replica dies (its job ends) without the router knowing
  auto res = complete(r->port, "second");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(slurm.answered.load(), 2);  // answered once, not lost
  EXPECT_TRUE(eventually([&] { return status(*r)["models"][0]["replicas_lost"] == 1; }));
  // Streamed requests pass through as SSE.
  res = complete(r->port, "stream me", true);
  ASSERT_EQ(res.status, 200);
  const auto events = serve::testing::sse_payloads(res.body);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
}

TEST(ClusterController, ARestartedControllerAdoptsRunningReplicas) {
  const int base = free_port_run(2);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  {
    auto r = start_router(&slurm, options(base, 2));
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(complete(r->port, "before").status, 200);
  }  // controller gone, job kept
  ASSERT_EQ(slurm.running(), 1u);
  auto r = start_router(&slurm, options(base, 2));
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(eventually([&] { return status(*r)["models"][0]["replicas_up"] == 1; }));
  ASSERT_EQ(complete(r->port, "after").status, 200);
  EXPECT_EQ(slurm.submits.load(), 1);  // adopted, not submitted again
}

// Fleet-mode replicas (suspend keep/auto) write their config under a private directory.
ClusterOptions fleet_options(int port_base, int replicas, SuspendMode mode) {
  ClusterOptions o = options(port_base, replicas);
  o.host.suspend = mode;
  o.host.config_dir = ::testing::TempDir() + fmt::format("cluster-cfg-{}", getpid());
  return o;
}

json replica(Router& r, int k) { return status(r)["models"][0]["replicas"][k]; }

TEST(ClusterController, KeepSuspendsInPlaceAndResumesWithoutANewJob) {
  const int base = free_port_run(1);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  auto o = fleet_options(base, 1, SuspendMode::kKeep);
  o.keep_alive_s = 0.2;
  o.release_kept_after_s = 60;
  auto r = start_router(&slurm, o);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(complete(r->port, "hello").status, 200);
  EXPECT_EQ(slurm.submits.load(), 1);
  // Idle past the keep-alive: the model is suspended inside the replica; the job stays.
  ASSERT_TRUE(eventually([&] { return replica(*r, 0)["state"] == "suspended"; }));
  EXPECT_EQ(replica(*r, 0)["job_kept"], true);
  EXPECT_EQ(slurm.running(), 1u);
  EXPECT_EQ(slurm.admin_moves.load(), 1);
  // The next request resumes it in place: no new job.
  auto res = complete(r->port, "again");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(slurm.submits.load(), 1);
  const json rep = replica(*r, 0);
  EXPECT_EQ(rep["resumes_in_place"], 1);
  EXPECT_EQ(rep["cold_starts"], 1);
  EXPECT_EQ(rep["kept_downs"], 1);
  EXPECT_GE(slurm.admin_moves.load(), 2);
  auto metrics = serve::testing::TestClient(r->port).request("GET", "/metrics");
  EXPECT_NE(metrics.body.find("tessera_cluster_replica_resume_in_place_seconds{model=\"m\",replica=\"0\"}"),
            std::string::npos);
}

TEST(ClusterController, AKeptJobIsReleasedAfterItsTimeAndTheNextStartIsCold) {
  const int base = free_port_run(1);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  auto o = fleet_options(base, 1, SuspendMode::kKeep);
  o.keep_alive_s = 0.1;
  o.release_kept_after_s = 0.3;
  auto r = start_router(&slurm, o);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(complete(r->port, "hello").status, 200);
  ASSERT_TRUE(eventually([&] { return replica(*r, 0)["job_kept"] == true; }));
  ASSERT_TRUE(eventually([&] { return slurm.running() == 0; }));
  EXPECT_TRUE(eventually([&] { return replica(*r, 0)["state"] == "evicted"; }));
  EXPECT_EQ(replica(*r, 0)["job_kept"], false);
  EXPECT_EQ(status(*r)["models"][0]["kept_released"], 1);
  EXPECT_GT(status(*r)["models"][0]["kept_replica_seconds"].get<double>(), 0.0);
  ASSERT_EQ(complete(r->port, "again").status, 200);
  EXPECT_EQ(slurm.submits.load(), 2);
  EXPECT_EQ(replica(*r, 0)["cold_starts"], 2);
}

TEST(ClusterController, AutoReleasesWhenAColdStartFitsTheSlo) {
  const int base = free_port_run(1);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;  // comes up in milliseconds: far within half the 2 s SLO
  auto o = fleet_options(base, 1, SuspendMode::kAuto);
  o.keep_alive_s = 0.1;
  o.ttft_slo_s = 2.0;
  auto r = start_router(&slurm, o);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(complete(r->port, "hello").status, 200);
  ASSERT_TRUE(eventually([&] { return slurm.running() == 0; }));
  const json rep = replica(*r, 0);
  EXPECT_EQ(rep["released_downs"], 1);
  EXPECT_NE(rep["last_down"].get<std::string>().find("release"), std::string::npos) << rep;
}

TEST(ClusterController, AutoKeepsWhenAColdStartWouldSpendTheSlo) {
  const int base = free_port_run(1);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  slurm.start_delay_ms = 400;  // a cold start takes > 0.4 s, above half the 0.5 s SLO
  auto o = fleet_options(base, 1, SuspendMode::kAuto);
  o.keep_alive_s = 0.1;
  o.ttft_slo_s = 0.5;
  o.release_kept_after_s = 60;
  auto r = start_router(&slurm, o);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(complete(r->port, "hello").status, 200);
  // First take-down: no in-place resume measured yet, so keep (and measure one).
  ASSERT_TRUE(eventually([&] { return replica(*r, 0)["job_kept"] == true; }));
  ASSERT_EQ(complete(r->port, "again").status, 200);
  EXPECT_EQ(slurm.submits.load(), 1);
  // Second: the measured resume (milliseconds) is far below half the cold start: keep again.
  ASSERT_TRUE(eventually([&] { return replica(*r, 0)["kept_downs"] == 2; }));
  const json rep = replica(*r, 0);
  EXPECT_EQ(rep["job_kept"], true);
  EXPECT_GT(rep["cold_start_s"].get<double>(), 0.4);
  EXPECT_LT(rep["resume_in_place_s"].get<double>(), 0.2);
  EXPECT_NE(rep["last_down"].get<std::string>().find("keep"), std::string::npos) << rep;
  EXPECT_EQ(slurm.running(), 1u);
}

// Kept jobs past --kept-memory: the fleet's eviction releases one (the budget counts a kept job's
// memory as its host bytes).
TEST(ClusterController, KeptJobsPastTheirMemoryBudgetAreReleased) {
  const int base = free_port_run(2);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  auto o = fleet_options(base, 1, SuspendMode::kKeep);
  o.models[0].name = "a";
  o.models.push_back(o.models[0]);
  o.models[1].name = "b";
  o.keep_alive_s = 0.1;
  o.release_kept_after_s = 60;
  o.kept_memory_mb = 100;  // one 64 MiB job fits, two do not
  auto r = start_router(&slurm, o);
  ASSERT_NE(r, nullptr);
  serve::testing::TestClient c(r->port);
  ASSERT_EQ(c.request("POST", "/v1/completions", R"({"model":"a","prompt":"x"})").status, 200);
  ASSERT_EQ(c.request("POST", "/v1/completions", R"({"model":"b","prompt":"y"})").status, 200);
  EXPECT_EQ(slurm.submits.load(), 2);
  // Both go idle and are kept; the second kept job passes the budget and one is released.
  ASSERT_TRUE(eventually([&] {
    const json s = status(*r);
    return s["models"][0]["replicas_up"] == 0 && s["models"][1]["replicas_up"] == 0 && slurm.running() == 1;
  }));
  const json s = status(*r);
  EXPECT_EQ(s["models"][0]["replicas"][0]["job_kept"].get<bool>() + s["models"][1]["replicas"][0]["job_kept"].get<bool>(), 1);
  EXPECT_EQ(s["models"][0]["kept_released"].get<int>() + s["models"][1]["kept_released"].get<int>(), 1);
}

// --idle-policy adaptive: with no history yet it falls back to the keep-alive (scale to zero);
// an unknown policy is refused.
TEST(ClusterController, AdaptiveIdlePolicyFallsBackToTheKeepAlive) {
  const int base = free_port_run(1);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  auto o = options(base, 1);
  o.idle_policy = "adaptive";
  o.keep_alive_s = 0.2;
  auto r = start_router(&slurm, o);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(status(*r)["idle_policy"], "adaptive");
  ASSERT_EQ(complete(r->port, "hello").status, 200);
  EXPECT_TRUE(eventually([&] { return slurm.running() == 0; }));
  o.idle_policy = "sometimes";
  EXPECT_FALSE(ClusterController::create(o, std::make_unique<SharedSlurm>(&slurm), real_clock()).is_ok());
}

// The TTFT SLO drives scale-out: after a late answer, a replica counts as full at half its cap.
TEST(ClusterController, SloMissesScaleOutSooner) {
  for (const int window : {0, 16}) {
    SCOPED_TRACE(fmt::format("slo window {}", window));
    const int base = free_port_run(2);
    ASSERT_GT(base, 0);
    FakeSlurm slurm;
    slurm.response_delay_ms = 150;  // every answer misses the 0.05 s SLO
    auto o = options(base, 2);
    o.replica_cap = 2;
    o.ttft_slo_s = 0.05;
    o.slo_window = window;
    auto r = start_router(&slurm, o);
    ASSERT_NE(r, nullptr);
    // The first request waits for the cold start: late, but not counted as load.
    ASSERT_EQ(complete(r->port, "first").status, 200);
    ASSERT_TRUE(eventually([&] { return status(*r)["models"][0]["replicas"][0]["in_flight"] == 0; }));
    EXPECT_EQ(status(*r)["models"][0]["slo_pressure"], false);
    ASSERT_EQ(complete(r->port, "second").status, 200);  // on the warm replica, and late
    ASSERT_TRUE(eventually([&] { return status(*r)["models"][0]["replicas"][0]["in_flight"] == 0; }));
    std::vector<std::thread> clients;
    for (int i = 0; i < 2; ++i) {
      clients.emplace_back([&, i] { EXPECT_EQ(complete(r->port, fmt::format("c{}", i)).status, 200); });
    }
    for (auto& t : clients) t.join();
    // Without the SLO signal both fit under cap 2 on one replica; with it, the second needs another.
    EXPECT_EQ(slurm.submits.load(), window == 0 ? 1 : 2);
    EXPECT_EQ(status(*r)["models"][0]["slo_pressure"], window != 0);
  }
}

// Two co-located models share one replica job: the second comes up in place, the job stays
// while either is up, and leaves with the last.
TEST(ClusterController, CoLocatedModelsShareAReplicaJob) {
  const int base = free_port_run(1);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  auto o = options(base, 1);
  o.models[0].name = "a";
  o.models.push_back(o.models[0]);
  o.models[1].name = "b";
  o.colocate = {{"a", "b"}};
  o.keep_alive_s = 0.3;
  o.host.config_dir = ::testing::TempDir() + fmt::format("cluster-cfg-{}", getpid());
  auto r = start_router(&slurm, o);
  ASSERT_NE(r, nullptr);
  serve::testing::TestClient c(r->port);
  auto ra = c.request("POST", "/v1/completions", R"({"model":"a","prompt":"x"})");
  ASSERT_EQ(ra.status, 200) << ra.body;
  auto rb = c.request("POST", "/v1/completions", R"({"model":"b","prompt":"y"})");
  ASSERT_EQ(rb.status, 200) << rb.body;
  EXPECT_EQ(json::parse(ra.body)["port"], base);
  EXPECT_EQ(json::parse(rb.body)["port"], base);  // one job, one port
  EXPECT_EQ(json::parse(rb.body)["model"], "b");
  EXPECT_EQ(slurm.submits.load(), 1);
  const json st = status(*r);
  EXPECT_EQ(st["models"][0]["replicas"][0]["job"], st["models"][1]["replicas"][0]["job"]);
  EXPECT_EQ(r->ctl->prometheus_targets().size(), 1u);  // the shared job is one target
  auto jobs = slurm.jobs("t-");
  ASSERT_TRUE(jobs.is_ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].name, "t-a+b-0");
  // Both idle: the first down is suspended in place (the job serves the other), the last
  // releases the job (suspend mode release).
  ASSERT_TRUE(eventually([&] { return slurm.running() == 0; }));
  EXPECT_TRUE(eventually([&] {
    const json s = status(*r);
    return s["models"][0]["replicas_up"] == 0 && s["models"][1]["replicas_up"] == 0;
  }));
  const json after = status(*r);
  EXPECT_EQ(after["models"][0]["replicas"][0]["kept_downs"].get<int>() +
                after["models"][1]["replicas"][0]["kept_downs"].get<int>(), 1);
  EXPECT_EQ(after["models"][0]["replicas"][0]["job_kept"], false);
  EXPECT_EQ(after["models"][1]["replicas"][0]["job_kept"], false);
  // And back: a request for either brings the shared job up again.
  ASSERT_EQ(c.request("POST", "/v1/completions", R"({"model":"b","prompt":"z"})").status, 200);
  EXPECT_EQ(slurm.submits.load(), 2);
}

TEST(ClusterControllerOptions, RejectsBadCoLocation) {
  FakeSlurm slurm;
  ClusterOptions o = options(20000, 1);
  o.models.push_back(o.models[0]);
  o.models[1].name = "n";
  o.colocate = {{"m", "nope"}};
  EXPECT_FALSE(ClusterController::create(o, std::make_unique<SharedSlurm>(&slurm), real_clock()).is_ok());
  o.colocate = {{"m"}};
  EXPECT_FALSE(ClusterController::create(o, std::make_unique<SharedSlurm>(&slurm), real_clock()).is_ok());
  o.colocate = {{"m", "n"}};
  o.models[1].max_replicas = 2;
  EXPECT_FALSE(ClusterController::create(o, std::make_unique<SharedSlurm>(&slurm), real_clock()).is_ok());
  o.models[1].max_replicas = 1;
  EXPECT_TRUE(ClusterController::create(o, std::make_unique<SharedSlurm>(&slurm), real_clock()).is_ok());
}

TEST(ClusterController, UnknownModelsAndBadBodiesAreClientErrors) {
  const int base = free_port_run(1);
  FakeSlurm slurm;
  auto r = start_router(&slurm, options(base, 1));
  ASSERT_NE(r, nullptr);
  serve::testing::TestClient c(r->port);
  EXPECT_EQ(c.request("POST", "/v1/completions", R"({"model":"nope","prompt":"x"})").status, 404);
  EXPECT_EQ(c.request("POST", "/v1/completions", "{not json").status, 400);
  EXPECT_EQ(c.request("GET", "/v1/models").status, 200);
  auto metrics = c.request("GET", "/metrics");
  EXPECT_NE(metrics.body.find("tessera_cluster_replicas{model=\"m\",state=\"unloaded\"} 1"), std::string::npos)
      << metrics.body;
  EXPECT_EQ(slurm.submits.load(), 0);
}

// A hostile prompt nesting arrays 1,000,000 deep is routed (keyed by one level at most), not a crash
// (keying every level overflows the stack here in the sanitizer builds, which run this test).
TEST(ClusterController, DeeplyNestedPromptsAreRoutedSafely) {
  const int base = free_port_run(1);
  ASSERT_GT(base, 0);
  FakeSlurm slurm;
  auto r = start_router(&slurm, options(base, 1));
  ASSERT_NE(r, nullptr);
  const std::string body = R"({"model":"m","prompt":)" + std::string(1000000, '[') + "1" +
                           std::string(1000000, ']') + "}";
  auto res = serve::testing::TestClient(r->port).request("POST", "/v1/completions", body);
  EXPECT_EQ(res.status, 200) << res.body.substr(0, 200);
}

TEST(ClusterControllerOptions, RejectsBadNames) {
  FakeSlurm slurm;
  ClusterOptions o = options(20000, 1);
  o.models[0].name = "bad name";
  EXPECT_FALSE(ClusterController::create(o, std::make_unique<SharedSlurm>(&slurm), real_clock()).is_ok());
  o = options(20000, 0);
  EXPECT_FALSE(ClusterController::create(o, std::make_unique<SharedSlurm>(&slurm), real_clock()).is_ok());
  o = options(20000, 1);
  o.models.push_back(o.models[0]);
  EXPECT_FALSE(ClusterController::create(o, std::make_unique<SharedSlurm>(&slurm), real_clock()).is_ok());
}

}  // namespace
}  // namespace tessera::cluster
