#pragma once

// A small Prometheus registry: counter, gauge and histogram families with labels,
// rendered in the text exposition format 0.0.4 (what GET /metrics serves).
//
// Families are created once (at startup) and live as long as the Registry; series are
// created on first use. Label values are escaped on output. Thread-safe.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace coach::metrics {

using LabelValues = std::vector<std::string>;

class Family {
 public:
  enum class Type { kCounter, kGauge, kHistogram };

  // Counters: Add with a negative value is ignored (counters never go down).
  void Add(const LabelValues& labels, double value = 1);
  // Gauges.
  void Set(const LabelValues& labels, double value);
  // Histograms.
  void Observe(const LabelValues& labels, double value);
  // Drops every series (gauges recomputed from scratch).
  void Clear();

  // The series' value (counter/gauge) or observation count (histogram); 0 when unseen.
  double Value(const LabelValues& labels) const;

  const std::string& name() const { return name_; }
  void Render(std::string* out) const;

 private:
  friend class Registry;
  struct Series {
    double value = 0;               // counter, gauge; histogram: sum
    uint64_t count = 0;             // histogram
    std::vector<uint64_t> buckets;  // histogram, cumulative on output
  };
  Family(Type type, std::string name, std::string help, std::vector<std::string> label_names,
         std::vector<double> bounds);
  Series& SeriesLocked(const LabelValues& labels) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Type type_;
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;
  mutable absl::Mutex mu_;
  std::map<LabelValues, Series> series_ ABSL_GUARDED_BY(mu_);
};

class Registry {
 public:
  // The returned family is owned by the registry. Registering a name twice returns the
  // first family.
  Family* Counter(const std::string& name, const std::string& help,
                  std::vector<std::string> label_names = {});
  Family* Gauge(const std::string& name, const std::string& help,
                std::vector<std::string> label_names = {});
  Family* Histogram(const std::string& name, const std::string& help,
                    std::vector<double> bucket_bounds, std::vector<std::string> label_names = {});

  // Every family in registration order.
  std::string Render() const;

  static std::vector<double> ExponentialBuckets(double start, double factor, int count);

 private:
  Family* Register(Family::Type type, const std::string& name, const std::string& help,
                   std::vector<std::string> label_names, std::vector<double> bounds);
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Family>> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::metrics
