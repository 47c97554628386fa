#include "tessera/serve/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tessera/base/check.h"

namespace tessera::serve {

namespace {

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!(alpha || (i > 0 && digit))) return false;
  }
  return true;
}

// Label values escape backslash, double quote and newline; HELP text backslash and newline.
std::string escape(const std::string& s, bool quote) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// `{a="x",b="y"}` (sorted by name, so one label set has one key), or "" for no labels.
std::string render_labels(MetricLabels labels, const std::pair<std::string, std::string>* extra) {
  std::sort(labels.begin(), labels.end());
  if (extra) labels.push_back(*extra);
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ',';
    out += labels[i].first + "=\"" + escape(labels[i].second, true) + "\"";
  }
  return out + "}";
}

void atomic_add(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

}  // namespace

std::string format_metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

void Counter::inc(double v) {
  if (v > 0) atomic_add(value_, v);
}

void Gauge::add(double v) { atomic_add(value_, v); }

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 1; i < bounds_.size(); ++i) {
    TS_CHECK_MSG(bounds_[i - 1] < bounds_[i], "histogram bounds must increase");
  }
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void Histogram::observe(double v, uint64_t n) {
  if (std::isnan(v) || n == 0) return;
  const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                       bounds_.begin());  // first bound >= v: le is inclusive
  counts_[i].fetch_add(n, std::memory_order_relaxed);
  atomic_add(sum_, v * static_cast<double>(n));
}

std::vector<uint64_t> Histogram::bucket_counts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = counts_[i].load(std::memory_order_relaxed);
  return out;
}

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, const std::string& help,
                                                 Type type, const std::vector<double>& bounds,
                                                 const MetricLabels& labels, std::string* key) {
  TS_CHECK_MSG(valid_name(name), "bad metric name '" + name + "'");
  for (const auto& [k, v] : labels) TS_CHECK_MSG(valid_name(k), "bad label name '" + k + "'");
  auto [it, inserted] = families_.try_emplace(name);
  Family& f = it->second;
  if (inserted) {
    f.type = type;
    f.help = help;
    f.bounds = bounds;
  }
  TS_CHECK_MSG(f.type == type, "metric '" + name + "' registered with two types");
  TS_CHECK_MSG(f.bounds == bounds, "histogram '" + name + "' registered with two bucket sets");
  *key = render_labels(labels, nullptr);
  f.labels.try_emplace(*key, labels);
  return f;
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                  const MetricLabels& labels) {
  std::lock_guard lock(mu_);
  std::string key;
  auto& slot = family(name, help, Type::kCounter, {}, labels, &key).counters[key];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                              const MetricLabels& labels) {
  std::lock_guard lock(mu_);
  std::string key;
  auto& slot = family(name, help, Type::kGauge, {}, labels, &key).gauges[key];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      const std::vector<double>& bounds,
                                      const MetricLabels& labels) {
  std::lock_guard lock(mu_);
  std::string key;
  auto& slot = family(name, help, Type::kHistogram, bounds, labels, &key).histograms[key];
  if (!slot) slot = std::make_unique<Histogram>(bounds);
  return *slot;
}

void MetricsRegistry::add_collector(Collector c) {
  std::lock_guard lock(collectors_mu_);
  collectors_.push_back(std::move(c));
}

void MetricsRegistry::collect() {
  std::lock_guard lock(collectors_mu_);
  for (const Collector& c : collectors_) c(*this);
}

std::string MetricsRegistry::render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    const char* type = f.type == Type::kCounter ? "counter"
                       : f.type == Type::kGauge ? "gauge"
                                                : "histogram";
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escape(f.help, false), name, type);
    for (const auto& [key, labels] : f.labels) {
      if (f.type == Type::kCounter) {
        out += fmt::format("{}{} {}\n", name, key, format_metric_value(f.counters.at(key)->value()));
      } else if (f.type == Type::kGauge) {
        out += fmt::format("{}{} {}\n", name, key, format_metric_value(f.gauges.at(key)->value()));
      } else {
        const Histogram& h = *f.histograms.at(key);
        const auto counts = h.bucket_counts();
        // _count is the sum of the buckets read here, so it always equals the +Inf bucket.
        uint64_t cumulative = 0;
        for (size_t i = 0; i < counts.size(); ++i) {
          cumulative += counts[i];
          const std::pair<std::string, std::string> le{
              "le", i < h.bounds().size() ? format_metric_value(h.bounds()[i]) : "+Inf"};
          out += fmt::format("{}_bucket{} {}\n", name, render_labels(labels, &le), cumulative);
        }
        out += fmt::format("{}_sum{} {}\n", name, key, format_metric_value(h.sum()));
        out += fmt::format("{}_count{} {}\n", name, key, cumulative);
      }
    }
  }
  return out;
}

const std::vector<double>& latency_buckets_seconds() {
  static const std::vector<double> kBuckets = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.0025, 0.005, 0.0075, 0.01,
      0.025,   0.05,   0.1,     0.25,   0.5,     1.0,   2.5,    5.0,    10.0,  20.0,   30.0,
      60.0};
  return kBuckets;
}

}  // namespace tessera::serve
