#include "tessera/cluster/job_planner.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <utility>

#include "tessera/cluster/prefix_affinity.h"

namespace tessera::cluster {
namespace job_planner {

Status validate_models(std::span<const ClusterModelSpec> models) {
  for (size_t mi = 0; mi < models.size(); ++mi) {
    const ClusterModelSpec& spec = models[mi];
    if (!valid_cluster_name(spec.name)) {
      return invalid_argument(fmt::format("model name '{}': use 1-64 of [A-Za-z0-9._-]", spec.name));
    }
    for (size_t mj = 0; mj < mi; ++mj) {
      if (models[mj].name == spec.name) return invalid_argument(fmt::format("model '{}' given twice", spec.name));
    }
    if (spec.max_replicas < 1 || spec.max_replicas > PrefixAffinity::kMaxReplicas) {
      return invalid_argument(fmt::format("model '{}': max replicas {} outside 1..{}", spec.name,
                                          spec.max_replicas, PrefixAffinity::kMaxReplicas));
    }
    if (spec.min_replicas < 0 || spec.min_replicas > spec.max_replicas) {
      return invalid_argument(fmt::format("model '{}': min replicas {} outside 0..{}", spec.name,
                                          spec.min_replicas, spec.max_replicas));
    }
  }
  return Status::ok();
}

// group[mi]: the first model of mi's co-located group (mi itself when alone).
Result<std::vector<size_t>> colocation_groups(std::span<const ClusterModelSpec> models,
                                              std::span<const std::vector<std::string>> colocate) {
  std::vector<size_t> group(models.size());
  for (size_t mi = 0; mi < group.size(); ++mi) group[mi] = mi;
  std::vector<bool> grouped(models.size(), false);
  for (const auto& names : colocate) {
    if (names.size() < 2) return invalid_argument("a co-located group needs at least two models");
    std::vector<size_t> members;
    for (const std::string& name : names) {
      size_t found = models.size();
      for (size_t mi = 0; mi < models.size(); ++mi) {
        if (models[mi].name == name) found = mi;
      }
      if (found == models.size()) {
        return invalid_argument(fmt::format("co-located model '{}' is not one of the cluster's models", name));
      }
      if (grouped[found]) return invalid_argument(fmt::format("model '{}' is in two co-located groups", name));
      grouped[found] = true;
      members.push_back(found);
    }
    const size_t first = *std::min_element(members.begin(), members.end());
    for (size_t mi : members) {
      if (models[mi].max_replicas != models[first].max_replicas) {
        return invalid_argument(fmt::format("co-located models '{}' and '{}' need equal max replicas",
                                            models[first].name, models[mi].name));
      }
      group[mi] = first;
    }
  }
  return group;
}

}  // namespace job_planner

bool valid_cluster_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

std::vector<int64_t> model_file_bytes(std::span<const ClusterModelSpec> models) {
  std::vector<int64_t> bytes(models.size(), 0);
  for (size_t mi = 0; mi < models.size(); ++mi) {
    struct stat st {};
    if (::stat(models[mi].path.c_str(), &st) == 0) bytes[mi] = static_cast<int64_t>(st.st_size);
  }
  return bytes;
}

Result<JobPlan> plan_jobs(const JobPlanInput& in) {
  const auto& models = in.models;
  if (models.empty()) return invalid_argument("a cluster needs at least one model");
  if (!valid_cluster_name(in.cluster_name)) {
    return invalid_argument(fmt::format("cluster name '{}': use 1-64 of [A-Za-z0-9._-]", in.cluster_name));
  }
  if (Status st = job_planner::validate_models(models); !st.is_ok()) return st;
  auto grouped = job_planner::colocation_groups(models, in.colocate);
  if (!grouped.is_ok()) return grouped.status();
  const std::vector<size_t>& group = *grouped;
  auto file_bytes = [&](size_t mi) { return mi < in.file_bytes.size() ? in.file_bytes[mi] : 0; };
  auto memory_mb = [&](size_t mi) {
    const int64_t given = models[mi].memory_mb;
    return given > 0 ? given : (2 * file_bytes(mi) >> 20) + 256;
  };
  // A job's port, name, CPUs (its members' most) and memory (their sum), per (group, replica).
  struct JobSpec {
    int port = 0;
    std::string name;
    int cpus = 1;
    int64_t memory_mb = 0;
  };
  std::map<std::pair<size_t, int32_t>, JobSpec> jobs;
  int port = in.port_base;
  for (size_t mi = 0; mi < models.size(); ++mi) {
    for (int32_t k = 0; k < models[mi].max_replicas; ++k) {
      JobSpec& js = jobs[{group[mi], k}];
      if (js.port == 0) {
        js.port = port++;
        std::string members;
        for (size_t mj = 0; mj < models.size(); ++mj) {
          if (group[mj] == group[mi]) members += (members.empty() ? "" : "+") + models[mj].name;
        }
        js.name = fmt::format("{}-{}-{}", in.cluster_name, members, k);
      }
      js.cpus = std::max(js.cpus, models[mi].cpus);
      js.memory_mb += memory_mb(mi);
    }
  }
  JobPlan plan;
  plan.jobs = static_cast<int32_t>(jobs.size());
  for (size_t mi = 0; mi < models.size(); ++mi) {
    const ClusterModelSpec& spec = models[mi];
    plan.model_slots.emplace_back();
    for (int32_t k = 0; k < spec.max_replicas; ++k) {
      const JobSpec& js = jobs.at({group[mi], k});
      if (js.port < 1 || js.port > 65535) {
        return invalid_argument(fmt::format("replica port {} outside 1..65535", js.port));
      }
      ReplicaSlot s;
      s.model = spec.name;
      s.path = spec.path;
      s.replica = k;
      s.port = js.port;
      s.cpus = std::max(1, js.cpus);
      s.memory_mb = js.memory_mb;
      s.job_name = js.name;
      plan.model_slots.back().push_back(static_cast<int32_t>(plan.slots.size()));
      plan.slot_model.push_back(static_cast<int32_t>(mi));
      plan.pinned.push_back(k < spec.min_replicas);
      plan.slots.push_back(std::move(s));
    }
  }
  return plan;
}

}  // namespace tessera::cluster
