#include "tessera/cluster/cluster_daemon.h"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>

#include "tessera/cluster/slurm_client.h"
#include "tessera/serve/http_server.h"

namespace tessera::cluster {
namespace cluster_daemon {

std::vector<std::string> split_commas(const std::string& g) {
  std::vector<std::string> names;
  size_t at = 0;
  while (at <= g.size()) {
    const size_t comma = std::min(g.find(',', at), g.size());
    names.push_back(g.substr(at, comma - at));
    at = comma + 1;
  }
  return names;
}

}  // namespace cluster_daemon

Result<ClusterOptions> cluster_options_from_args(const ClusterDaemonArgs& a) {
  ClusterOptions o;
  o.name = a.name;
  for (const std::string& m : a.models) {
    const auto eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size()) {
      return invalid_argument(fmt::format("--model '{}': expected NAME=PATH", m));
    }
    ClusterModelSpec spec;
    spec.name = m.substr(0, eq);
    spec.path = std::filesystem::absolute(m.substr(eq + 1)).string();
    if (!std::filesystem::exists(spec.path)) {
      return invalid_argument(fmt::format("--model {}: no file {}", spec.name, spec.path));
    }
    spec.max_replicas = a.max_replicas;
    spec.min_replicas = a.min_replicas;
    spec.cpus = a.cpus;
    spec.memory_mb = a.memory_mb;
    o.models.push_back(std::move(spec));
  }
  if (o.models.empty()) return invalid_argument("give at least one --model NAME=PATH");
  for (const std::string& g : a.colocate) o.colocate.push_back(cluster_daemon::split_commas(g));
  o.replica_port_base = a.replica_port_base;
  o.replica_cap = a.replica_cap;
  o.keep_alive_s = a.keep_alive_s;
  o.idle_policy = a.idle_policy;
  o.release_kept_after_s = a.release_kept_after_s;
  o.kept_memory_mb = a.kept_memory_mb;
  o.slo_window = a.slo_window;
  auto suspend = suspend_mode_from_name(a.suspend);
  if (!suspend.is_ok()) return suspend.status().with_context("--suspend");
  o.host.suspend = *suspend;
  o.host.keep_ratio = a.keep_ratio;
  o.request_deadline_s = a.deadline_s;
  o.ttft_slo_s = a.ttft_slo_s;
  auto routing = routing_policy_from_name(a.routing);
  if (!routing.is_ok()) return routing.status();
  o.routing = *routing;
  o.chart_js = a.chart_js;
  o.host.tessera_bin = a.tessera_bin;
  o.host.serve_args = a.serve_args;
  o.host.partition = a.partition;
  o.host.log_dir = a.log_dir.empty() ? std::string() : std::filesystem::absolute(a.log_dir).string();
  if (!o.host.log_dir.empty()) std::filesystem::create_directories(o.host.log_dir);
  return o;
}

Status run_cluster_daemon(const ClusterDaemonArgs& a, const Clock* clock,
                          const std::function<void(const std::string&)>& say) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto options = cluster_options_from_args(a);
  if (!options.is_ok()) return options.status();
  SlurmCliOptions so;
  so.bin_dir = a.slurm_bin;
  auto controller = ClusterController::create(std::move(options).value(), make_slurm_cli_client(so), clock);
  if (!controller.is_ok()) return controller.status();
  ClusterController* ctl = controller->get();
  if (Status st = ctl->start(); !st.is_ok()) return st.with_context("starting the cluster controller");

  serve::HttpServerOptions ho;
  ho.host = a.host;
  ho.port = a.port;
  ho.n_threads = a.io_threads;
  serve::HttpServer server(ho, [ctl](serve::HttpRequest&& req, std::shared_ptr<serve::ResponseWriter> w) {
    ctl->handle(std::move(req), std::move(w));
  });
  if (Status st = server.start(); !st.is_ok()) return st.with_context("starting the router");
  say(fmt::format("tessera cluster: routing on http://{}:{} ({} models, up to {} replicas each); "
                  "dashboard at /dashboard",
                  a.host, server.port(), a.models.size(), a.max_replicas));
  int sig = 0;
  sigwait(&signals, &sig);
  say(fmt::format("tessera cluster: {}, stopping{}", sig == SIGINT ? "SIGINT" : "SIGTERM",
                  a.release_on_exit ? " and releasing the replicas" : " (replica jobs keep running)"));
  server.stop(std::chrono::milliseconds(2000));
  ctl->stop(a.release_on_exit);
  return Status::ok();
}

}  // namespace tessera::cluster
