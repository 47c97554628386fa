// Metrics: a small Prometheus registry - counters, gauges and fixed-bucket histograms, each in a
// labelled family - rendered in the text exposition format 0.0.4 (# HELP / # TYPE lines).
// Thread-safety: registration and render() take a lock; updating a metric is lock-free (atomics),
// so hot paths keep references obtained once. Metric references stay valid for the registry's life.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tessera::serve {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  // Adds `v` (>= 0; negative values are ignored: a counter never goes down).
  void inc(double v = 1.0);
  // Sets the value to `total`, a running total kept elsewhere and sampled at scrape time (a
  // collector's). A lower value than before reads as a counter reset (the owner restarted), which
  // Prometheus's rate() handles.
  void sync(double total) { value_.store(total, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double v);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, strictly increasing; +Inf is implicit.
  explicit Histogram(std::vector<double> bounds);
  void observe(double v) { observe(v, 1); }
  // `n` observations of the value `v`.
  void observe(double v, uint64_t n);

  const std::vector<double>& bounds() const { return bounds_; }
  // Per-bucket (not cumulative) counts, bounds().size() + 1 entries (the last is +Inf).
  std::vector<uint64_t> bucket_counts() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
};

class MetricsRegistry {
 public:
  // Returns the metric of family `name` with `labels`, creating the family (with `help`) and the
  // metric on first use. Preconditions (checked): `name` and label names match
  // [a-zA-Z_][a-zA-Z0-9_]*, and a name is used with one type (and, for histograms, one set of
  // bounds) only.
  Counter& counter(const std::string& name, const std::string& help, const MetricLabels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const MetricLabels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help,
                       const std::vector<double>& bounds, const MetricLabels& labels = {});

  // Every family in name order, metrics in label order, in exposition format 0.0.4.
  std::string render() const;

  // Collectors set metrics sampled at scrape time (state owned elsewhere); collect() runs them
  // all, in the order added. Call collect() before render() when scraping.
  using Collector = std::function<void(MetricsRegistry&)>;
  void add_collector(Collector c);
  void collect();

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Family {
    Type type;
    std::string help;
    std::vector<double> bounds;
    std::map<std::string, MetricLabels> labels;  // rendered label set -> labels
    std::map<std::string, std::unique_ptr<Counter>> counters;
    std::map<std::string, std::unique_ptr<Gauge>> gauges;
    std::map<std::string, std::unique_ptr<Histogram>> histograms;
  };
  Family& family(const std::string& name, const std::string& help, Type type,
                 const std::vector<double>& bounds, const MetricLabels& labels, std::string* key);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
  std::mutex collectors_mu_;  // held while collectors run; never with mu_ held
  std::vector<Collector> collectors_;
};

// Latency buckets in seconds, 50 us to 60 s, for TTFT / TPOT / end-to-end histograms (fine below
// a millisecond: small models decode a token in a fraction of one).
const std::vector<double>& latency_buckets_seconds();

// `v` formatted as Prometheus expects: shortest round-trip decimal, "+Inf", "-Inf", "NaN".
std::string format_metric_value(double v);

}  // namespace tessera::serve
