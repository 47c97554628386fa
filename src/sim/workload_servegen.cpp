#include "tessera/sim/workload_servegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <tuple>
#include <utility>

#include "tessera/base/rng.h"
#include "tessera/bench/servegen.h"

namespace tessera::sim {

namespace {

namespace fs = std::filesystem;

constexpr double kWindowS = 600.0;  // ServeGen's window
constexpr int64_t kWindowNs = 600'000'000'000;
constexpr int64_t kWindowsPerDay = 144;

struct Client {
  std::string source;  // "servegen/language/m-large/chunk-12"
  std::vector<bench::ServeGenWindow> windows;
};

struct ModelState {
  int32_t client = 0;
  int64_t first_window = 0;  // in the client's windows
  double rate_factor = 1.0;  // rate_scale, lowered by max_peak_rps
  Rng rng;
};

// One request of the window being handed out.
struct Pending {
  int64_t t_ns;
  int32_t model;
  RequestLengths lengths;
};

struct ClientFile {
  fs::path path;
  std::string folder;
  int64_t chunk = 0;
};

// chunk-N-trace.csv files under `root`, ordered by folder and then N.
Result<std::vector<ClientFile>> find_clients(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return not_found("servegen workload: " + root.string() + " is not a folder");
  }
  std::vector<ClientFile> out;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    constexpr std::string_view kPrefix = "chunk-", kSuffix = "-trace.csv";
    if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
        !name.ends_with(kSuffix)) {
      continue;
    }
    const std::string n =
        name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (n.empty() || n.size() > 9 || !std::all_of(n.begin(), n.end(), digit)) {
      continue;
    }
    out.push_back({it->path(), it->path().parent_path().string(), std::stoll(n)});
  }
  if (ec) return io_error("servegen workload: listing " + root.string() + ": " + ec.message());
  if (out.empty()) {
    return not_found("servegen workload: no chunk-N-trace.csv client files under " +
                     root.string() + " (expected a ServeGen root or one of its category folders)");
  }
  std::sort(out.begin(), out.end(), [](const ClientFile& a, const ClientFile& b) {
    return std::tie(a.folder, a.chunk) < std::tie(b.folder, b.chunk);
  });
  return out;
}

class ServeGenWorkload final : public Workload {
 public:
  ServeGenWorkload(ServeGenWorkloadOptions options, std::vector<Client> clients,
                   LengthSampler lengths)
      : options_(std::move(options)), clients_(std::move(clients)), lengths_(std::move(lengths)) {
    duration_ns_ = static_cast<int64_t>(std::llround(options_.duration_s * 1e9));
    n_span_windows_ = (duration_ns_ + kWindowNs - 1) / kWindowNs;
    plan_models();
  }

  const std::vector<WorkloadModel>& models() const override { return models_; }
  double duration_s() const override { return options_.duration_s; }
  std::string describe() const override { return description_; }

  bool next(SimRequest& out) override {
    while (pos_ == batch_.size()) {
      if (window_ >= n_span_windows_) return false;
      fill_window(window_++);
    }
    const Pending& p = batch_[pos_++];
    out.t_ns = p.t_ns;
    out.model = p.model;
    out.input_tokens = p.lengths.input_tokens;
    out.output_tokens = p.lengths.output_tokens;
    out.prefix_tokens = 0;
    return true;
  }

 private:
  // Days, scaling and the expected counts of every model, from the window statistics alone.
  void plan_models() {
    const auto n_clients = static_cast<int64_t>(clients_.size());
    models_.reserve(static_cast<size_t>(options_.n_models));
    state_.reserve(static_cast<size_t>(options_.n_models));
    double total_expected = 0.0;
    int64_t max_days = 1;
    for (int64_t i = 0; i < options_.n_models; ++i) {
      const int64_t c = i % n_clients;
      const Client& client = clients_[static_cast<size_t>(c)];
      const auto n_windows = static_cast<int64_t>(client.windows.size());
      // Whole days d whose span [d x 144, d x 144 + n_span_windows) lies in the client's trace.
      const int64_t n_days =
          n_windows >= n_span_windows_ ? (n_windows - n_span_windows_) / kWindowsPerDay + 1 : 1;
      max_days = std::max(max_days, n_days);
      const auto base = static_cast<int64_t>(stream_seed(options_.seed ^ 0x5eed'c11e'47ULL,
                                                         static_cast<uint64_t>(c)) %
                                             static_cast<uint64_t>(n_days));
      const int64_t day = (base + i / n_clients) % n_days;
      const int64_t first = day * kWindowsPerDay;
      double peak = 0.0, requests = 0.0;
      for (int64_t w = 0; w < n_span_windows_ && first + w < n_windows; ++w) {
        const double rate = client.windows[static_cast<size_t>(first + w)].rate_rps;
        peak = std::max(peak, rate);
        const double covered_s =
            static_cast<double>(std::min(kWindowNs, duration_ns_ - w * kWindowNs)) * 1e-9;
        requests += rate * covered_s;
      }
      double factor = options_.rate_scale;
      if (options_.max_peak_rps > 0.0 && peak * factor > options_.max_peak_rps) {
        factor = options_.max_peak_rps / peak;
      }
      WorkloadModel m;
      m.name = fmt::format("model-{}", i);
      m.source = fmt::format("{} day {}", client.source, day);
      m.peak_rps = peak * factor;
      m.expected_requests = requests * factor;
      m.mean_rps = m.expected_requests / options_.duration_s;
      total_expected += m.expected_requests;
      models_.push_back(std::move(m));
      state_.push_back({static_cast<int32_t>(c), first, factor,
                        Rng(stream_seed(options_.seed, static_cast<uint64_t>(i)))});
    }
    std::string cap = options_.max_peak_rps > 0.0
                          ? fmt::format(", peaks capped at {:g} req/s", options_.max_peak_rps)
                          : std::string();
    description_ = fmt::format(
        "servegen {}: {} models on {} clients ({} days each), {:g} s, rate x{:g}{}, seed {}, "
        "lengths {}; ~{:.0f} requests expected",
        options_.dir, options_.n_models, clients_.size(), max_days, options_.duration_s,
        options_.rate_scale, cap, options_.seed, lengths_.describe(), total_expected);
  }

  // Draws window `w` of every model (arrivals, then each arrival's lengths, from the model's own
  // generator) and sorts it into the order next() promises.
  void fill_window(int64_t w) {
    batch_.clear();
    pos_ = 0;
    const int64_t window_start_ns = w * kWindowNs;
    for (size_t m = 0; m < state_.size(); ++m) {
      ModelState& s = state_[m];
      const auto& windows = clients_[static_cast<size_t>(s.client)].windows;
      const int64_t index = s.first_window + w;
      if (index >= static_cast<int64_t>(windows.size())) continue;
      const bench::ServeGenWindow& win = windows[static_cast<size_t>(index)];
      times_.clear();
      bench::append_window_arrivals(win, win.rate_rps * s.rate_factor, 0.0, kWindowS, s.rng,
                                    times_);
      for (size_t k = 0; k < times_.size(); ++k) {
        const int64_t offset = std::min<int64_t>(std::llround(times_[k] * 1e9), kWindowNs - 1);
        const RequestLengths lengths = lengths_.draw(s.rng);
        // A cut-short last window still draws all its requests, so the stream up to the cut is
        // the same whatever the duration; those past it are dropped.
        if (window_start_ns + offset >= duration_ns_) continue;
        batch_.push_back({window_start_ns + offset, static_cast<int32_t>(m), lengths});
      }
    }
    sort_window(window_start_ns);
  }

  // Orders batch_ by time. batch_ was filled model by model, each model's requests in sequence,
  // so a stable sort by time alone gives the promised ties (model, then sequence). An LSD radix
  // sort of the offsets in the window (< 600 s = 2^39.2 ns, four 11-bit digits) is stable and
  // several times faster here than std::sort on (t_ns, model, seq), which was a third of the
  // generation time at 100,000 models.
  void sort_window(int64_t window_start_ns) {
    constexpr int kBits = 11;
    constexpr int kPasses = 4;
    constexpr size_t kBuckets = size_t{1} << kBits;
    static_assert(kBits * kPasses >= 40 && (int64_t{1} << 40) > kWindowNs);
    if (batch_.size() < 2) return;
    scratch_.resize(batch_.size());
    std::array<size_t, kBuckets> count;
    for (int pass = 0; pass < kPasses; ++pass) {
      const int shift = pass * kBits;
      const auto digit = [&](const Pending& p) {
        return static_cast<size_t>((p.t_ns - window_start_ns) >> shift) & (kBuckets - 1);
      };
      count.fill(0);
      for (const Pending& p : batch_) ++count[digit(p)];
      if (count[digit(batch_[0])] == batch_.size()) continue;  // one bucket: nothing moves
      size_t sum = 0;
      for (auto& c : count) sum += std::exchange(c, sum);
      for (const Pending& p : batch_) scratch_[count[digit(p)]++] = p;
      batch_.swap(scratch_);
    }
  }

  ServeGenWorkloadOptions options_;
  std::vector<Client> clients_;
  LengthSampler lengths_;
  std::vector<WorkloadModel> models_;
  std::vector<ModelState> state_;
  std::string description_;
  int64_t duration_ns_ = 0;
  int64_t n_span_windows_ = 0;
  int64_t window_ = 0;          // the next window to draw
  std::vector<Pending> batch_;    // the current window, sorted
  std::vector<Pending> scratch_;  // sort_window's other buffer
  size_t pos_ = 0;                // next of batch_ to hand out
  std::vector<double> times_;     // scratch: one model's arrivals in one window
};

}  // namespace

Result<std::unique_ptr<Workload>> make_servegen_workload(const ServeGenWorkloadOptions& o) {
  if (o.n_models < 1 || o.n_models > std::numeric_limits<int32_t>::max()) {
    return invalid_argument(fmt::format("servegen workload: n_models must be in [1, 2^31), got {}",
                                        o.n_models));
  }
  if (!(o.duration_s > 0.0) || !(o.duration_s < 9e9)) {  // t_ns must fit in int64
    return invalid_argument(fmt::format("servegen workload: duration_s must be in (0, 9e9), got {}",
                                        o.duration_s));
  }
  if (!(o.rate_scale >= 0.0) || !(o.max_peak_rps >= 0.0)) {
    return invalid_argument(fmt::format(
        "servegen workload: rate_scale and max_peak_rps must be >= 0, got {} and {}",
        o.rate_scale, o.max_peak_rps));
  }
  fs::path root = fs::path(o.dir).lexically_normal();
  if (!root.has_filename() && root.has_parent_path()) root = root.parent_path();  // "dir/"
  TS_ASSIGN_OR_RETURN(auto files, find_clients(root));
  // Only the clients some model replays are read.
  files.resize(std::min<size_t>(files.size(), static_cast<size_t>(o.n_models)));
  std::vector<Client> clients;
  clients.reserve(files.size());
  const fs::path base = root.parent_path();
  for (const auto& f : files) {
    auto windows = bench::load_servegen_client(f.path.string());
    if (!windows.is_ok()) return windows.status().with_context("servegen workload");
    std::string source = f.path.lexically_relative(base).generic_string();
    source.resize(source.size() - std::string_view("-trace.csv").size());
    clients.push_back({std::move(source), std::move(windows).value()});
  }
  auto lengths = LengthSampler::make(o.lengths);
  if (!lengths.is_ok()) return lengths.status().with_context("servegen workload");
  return std::unique_ptr<Workload>(
      new ServeGenWorkload(o, std::move(clients), std::move(lengths).value()));
}

}  // namespace tessera::sim
