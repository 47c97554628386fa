#include "tessera/sim/workload_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <unordered_map>

#include "tessera/bench/trace.h"
#include "tessera/sim/workload_lengths.h"

namespace tessera::sim {

namespace {

constexpr int64_t kPeakWindowNs = 600'000'000'000;  // WorkloadModel::peak_rps's window

// Per model, a trie of the hash-id sequences seen so far: the leading blocks a new request shares
// with any earlier one are its longest path from the model's root. (Mooncake's ids already name
// whole prefixes, but the trie does not rely on that.)
class PrefixTrie {
 public:
  // Returns how many leading ids of `ids` an earlier call for `model` had, then records `ids`.
  int64_t match_and_insert(int32_t model, const std::vector<int64_t>& ids) {
    int64_t node = -1 - static_cast<int64_t>(model);  // the model's root
    int64_t matched = 0;
    bool matching = true;
    for (const int64_t id : ids) {
      auto [it, inserted] = children_.try_emplace(Key{node, id}, next_node_);
      if (inserted) {
        ++next_node_;
        matching = false;
      } else if (matching) {
        ++matched;
      }
      node = it->second;
    }
    return matched;
  }

 private:
  struct Key {
    int64_t parent;
    int64_t id;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<int64_t>()(k.parent * 0x9e3779b97f4a7c15LL ^ k.id);
    }
  };
  std::unordered_map<Key, int64_t, KeyHash> children_;
  int64_t next_node_ = 0;
};


Status validate(const TraceWorkloadOptions& o) {
  const auto bad = [](std::string why) { return invalid_argument("trace workload: " + why); };
  if (o.n_models < 1 || o.n_models > std::numeric_limits<int32_t>::max()) {
    return bad(fmt::format("n_models must be in [1, 2^31), got {}", o.n_models));
  }
  if (!(o.time_scale > 0.0) || !std::isfinite(o.time_scale)) {
    return bad(fmt::format("time_scale must be > 0, got {}", o.time_scale));
  }
  if (!(o.duration_s >= 0.0) || o.max_requests < 0 || o.max_input_tokens < 0 ||
      o.max_output_tokens < 0) {
    return bad("duration_s, max_requests and the length clips must be >= 0 (0: none)");
  }
  if (o.block_tokens <= 0) {
    return bad(fmt::format("block_tokens must be > 0, got {}", o.block_tokens));
  }
  return Status::ok();
}

// Per model: its count, and its peak over 10-minute windows (shorter when the span is).
std::vector<WorkloadModel> model_stats(const TraceWorkloadOptions& o,
                                       const std::vector<SimRequest>& requests, double duration_s,
                                       const std::string& source) {
  std::vector<WorkloadModel> models(static_cast<size_t>(o.n_models));
  std::vector<int64_t> window(models.size(), -1), in_window(models.size(), 0);
  const double window_s = std::min(600.0, duration_s);
  const auto close = [&](size_t m) {
    models[m].peak_rps = std::max(models[m].peak_rps, static_cast<double>(in_window[m]) / window_s);
  };
  for (const SimRequest& r : requests) {
    const auto m = static_cast<size_t>(r.model);
    models[m].expected_requests += 1.0;
    const int64_t w = r.t_ns / kPeakWindowNs;
    if (w != window[m]) {
      close(m);
      window[m] = w;
      in_window[m] = 0;
    }
    ++in_window[m];
  }
  const char* how = o.assignment == TraceAssignment::kRoundRobin ? "round-robin" : "seeded";
  for (size_t m = 0; m < models.size(); ++m) {
    close(m);
    models[m].name = fmt::format("model-{}", m);
    models[m].source = fmt::format("{} ({} of {} models, {})", source, m, o.n_models, how);
    models[m].mean_rps = models[m].expected_requests / duration_s;
  }
  return models;
}

}  // namespace

Result<std::unique_ptr<Workload>> make_trace_workload(const TraceWorkloadOptions& o) {
  TS_RETURN_IF_ERROR(validate(o));
  const std::string context = "trace workload " + o.path;
  auto format = o.format.empty() ? bench::detect_trace_format(o.path)
                                  : bench::parse_trace_format(o.format);
  if (!format.is_ok()) return format.status().with_context(context);
  auto loaded = bench::load_trace(o.path, *format, o.max_requests);
  if (!loaded.is_ok()) return loaded.status().with_context(context);
  std::vector<bench::TraceEntry> entries = std::move(loaded).value();
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.t_s < b.t_s; });

  const int64_t duration_ns =
      o.duration_s > 0.0 ? std::llround(o.duration_s * 1e9) : std::numeric_limits<int64_t>::max();
  std::vector<SimRequest> requests;
  std::vector<const bench::TraceEntry*> source_entry;
  requests.reserve(entries.size());
  for (const auto& e : entries) {
    const int64_t t_ns = std::llround(std::max(0.0, e.t_s) / o.time_scale * 1e9);
    if (t_ns >= duration_ns) break;
    const auto j = static_cast<uint64_t>(requests.size());
    const auto n = static_cast<uint64_t>(o.n_models);
    SimRequest r;
    r.t_ns = t_ns;
    r.model = static_cast<int32_t>(o.assignment == TraceAssignment::kRoundRobin
                                       ? j % n
                                       : stream_seed(o.seed, j) % n);
    const RequestLengths len =
        clip_lengths(e.input_tokens, e.output_tokens, o.max_input_tokens, o.max_output_tokens);
    r.input_tokens = len.input_tokens;
    r.output_tokens = len.output_tokens;
    requests.push_back(r);
    source_entry.push_back(&e);
  }
  // Time order, ties by model and then by the model's own order (its entries' file order).
  std::vector<size_t> order(requests.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(requests[a].t_ns, requests[a].model) <
           std::tie(requests[b].t_ns, requests[b].model);
  });
  std::vector<SimRequest> sorted;
  sorted.reserve(requests.size());
  PrefixTrie trie;
  for (const size_t i : order) {
    SimRequest r = requests[i];
    const auto& ids = source_entry[i]->hash_ids;
    if (!ids.empty()) {
      const int64_t blocks = trie.match_and_insert(r.model, ids);
      r.prefix_tokens = static_cast<int32_t>(
          std::min<int64_t>(blocks * o.block_tokens, r.input_tokens));
    }
    sorted.push_back(r);
  }

  const double duration_s =
      o.duration_s > 0.0
          ? o.duration_s
          : static_cast<double>((sorted.empty() ? 0 : sorted.back().t_ns) + 1) * 1e-9;
  const std::string source =
      fmt::format("{} {}", bench::trace_format_name(*format),
                  std::filesystem::path(o.path).filename().string());
  auto models = model_stats(o, sorted, duration_s, source);
  const std::string how = o.assignment == TraceAssignment::kRoundRobin
                              ? std::string("round-robin")
                              : fmt::format("seeded {}", o.seed);
  const std::string description = fmt::format(
      "trace {}: {} requests over {} models ({}), time /{:g}, {:g} s{}", o.path, sorted.size(),
      o.n_models, how, o.time_scale, duration_s,
      o.max_input_tokens > 0 || o.max_output_tokens > 0
          ? fmt::format(", lengths clipped to {}+{}", o.max_input_tokens, o.max_output_tokens)
          : std::string());
  return make_in_memory_workload(std::move(models), std::move(sorted), duration_s, description);
}

}  // namespace tessera::sim
