#include "operator/metrics/registry.h"

#include <gtest/gtest.h>

#include "operator/metrics/operator_metrics.h"

namespace coach::metrics {
namespace {

TEST(RegistryTest, CounterWithLabelsRendersAndEscapes) {
  Registry r;
  Family* c = r.Counter("x_total", "Some help", {"ns", "fw"});
  c->Add({"default", "pytorch"});
  c->Add({"default", "pytorch"}, 2);
  c->Add({"we\"ird\\", "tf"});
  c->Add({"default", "pytorch"}, -5);  // ignored
  const std::string text = r.Render();
  EXPECT_NE(text.find("# HELP x_total Some help\n# TYPE x_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("x_total{ns=\"default\",fw=\"pytorch\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("x_total{ns=\"we\\\"ird\\\\\",fw=\"tf\"} 1\n"), std::string::npos) << text;
  EXPECT_EQ(c->Value({"default", "pytorch"}), 3);
}

TEST(RegistryTest, GaugeWithoutLabelsShowsZeroBeforeUse) {
  Registry r;
  Family* g = r.Gauge("depth", "Depth");
  EXPECT_NE(r.Render().find("depth 0\n"), std::string::npos);
  g->Set({}, 4);
  EXPECT_NE(r.Render().find("depth 4\n"), std::string::npos);
}

TEST(RegistryTest, HistogramBucketsAreCumulative) {
  Registry r;
  Family* h = r.Histogram("lat_seconds", "Latency", {0.1, 1});
  h->Observe({}, 0.05);
  h->Observe({}, 0.5);
  h->Observe({}, 5);
  const std::string text = r.Render();
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"0.10000000000000001\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"1\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_seconds_count 3\n"), std::string::npos) << text;
  EXPECT_EQ(h->Value({}), 3);
}

TEST(RegistryTest, OperatorMetricsHasUpstreamNames) {
  Registry r;
  OperatorMetrics m(&r);
  m.jobs_created->Add({"default", "pytorch"});
  const std::string text = r.Render();
  for (const char* name :
       {"training_operator_jobs_created_total", "training_operator_jobs_deleted_total",
        "training_operator_jobs_successful_total", "training_operator_jobs_failed_total",
        "training_operator_jobs_restarted_total", "coach_reconcile_duration_seconds",
        "coach_workqueue_depth", "coach_replicas"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + name), std::string::npos) << name;
  }
  EXPECT_NE(text.find("training_operator_jobs_created_total{job_namespace=\"default\","
                      "framework=\"pytorch\"} 1"),
            std::string::npos);
}

}  // namespace
}  // namespace coach::metrics
