// Figures for bench/mlflow/run.sh, one JSON line per mode:
//   mlflow_bench coach  URI POINTS SENDERS   coach's MetricLogger: delivered metrics/s and Log()
//   cost mlflow_bench ingest URI THREADS SECONDS  the server's log-batch ceiling: prebuilt
//   1000-metric
//                                            bodies POSTed in a tight loop straight on the
//                                            transport (common/http, no client logic: no retries,
//                                            no parsing)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/http/curl_transport.h"
#include "integrations/mlflow/metric_logger.h"
#include "integrations/mlflow/rest_tracking_client.h"
#include "nlohmann/json.hpp"

using namespace coach::mlflow;
using Clock = std::chrono::steady_clock;

namespace {

std::unique_ptr<RestTrackingClient> Client(const std::string& uri) {
  RestTrackingOptions o;
  o.tracking_uri = uri;
  o.retry.max_attempts = 3;
  o.retry.initial_backoff = absl::Milliseconds(50);
  auto c = RestTrackingClient::Create(o);
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*c);
}

std::string NewRun(RestTrackingClient& client, const std::string& name) {
  auto exp = client.GetOrCreateExperiment("bench");
  CreateRunRequest req;
  req.experiment_id = exp.value();
  req.run_name = name;
  return client.CreateRun(req).value().run_id;
}

int Coach(const std::string& uri, int64_t points, int senders) {
  auto client = Client(uri);
  std::string run_id = NewRun(*client, "coach");
  MetricLoggerOptions o;
  o.senders = senders;
  o.max_buffered_points = points + 1;
  auto logger = MetricLogger::Create(client.get(), run_id, o).value();
  // Log() cost: chunks of 1000 calls timed together (a clock read per call would dominate).
  std::vector<double> chunk_ns;
  const int64_t ts = 1700000000000;
  auto start = Clock::now();
  for (int64_t i = 0; i < points; i += 1000) {
    auto c0 = Clock::now();
    for (int64_t j = i; j < std::min(points, i + 1000); ++j)
      logger->Log("train/loss", 1.0 / (j + 1), j, ts + j);
    chunk_ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - c0).count() /
                       static_cast<double>(std::min<int64_t>(1000, points - i)));
  }
  auto logged = Clock::now();
  auto flushed = logger->Flush(absl::Seconds(600));
  auto end = Clock::now();
  MetricLoggerStats s = logger->Shutdown(absl::Seconds(5));
  std::sort(chunk_ns.begin(), chunk_ns.end());
  double total_s = std::chrono::duration<double>(end - start).count();
  double log_ns = std::chrono::duration<double, std::nano>(logged - start).count() / points;
  nlohmann::json out = {{"mode", "coach"},
                        {"points", points},
                        {"senders", senders},
                        {"delivered", s.delivered},
                        {"flush_ok", flushed.ok()},
                        {"seconds", total_s},
                        {"metrics_per_s", s.delivered / total_s},
                        {"log_ns_mean", log_ns},
                        {"log_ns_p50", chunk_ns[chunk_ns.size() / 2]},
                        {"log_ns_p99", chunk_ns[chunk_ns.size() * 99 / 100]},
                        {"requests", client->requests_sent()}};
  std::printf("%s\n", out.dump().c_str());
  return s.delivered == points ? 0 : 1;
}

int Ingest(const std::string& uri, int threads, double seconds) {
  auto client = Client(uri);
  std::string run_id = NewRun(*client, "ingest");
  // Distinct (timestamp, step) per point: MLflow's metrics table rejects exact duplicates and
  // falls back to a slow path, which would understate the ceiling.
  std::atomic<int64_t> next_step{0};
  auto make_body = [&] {
    int64_t base = next_step.fetch_add(kMaxMetricsPerBatch);
    std::string b = "{\"run_id\":\"" + run_id + "\",\"metrics\":[";
    for (int i = 0; i < kMaxMetricsPerBatch; ++i) {
      if (i > 0) b += ',';
      b += "{\"key\":\"train/loss\",\"value\":" + std::to_string(1.0 / (base + i + 1)) +
           ",\"timestamp\":" + std::to_string(1700000000000 + base + i) +
           ",\"step\":" + std::to_string(base + i) + "}";
    }
    return b + "]}";
  };
  const std::string url = uri + "/api/2.0/mlflow/runs/log-batch";
  auto transport = coach::http::CurlTransport::Create().value();
  std::atomic<int64_t> ok{0}, failed{0};
  auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      coach::http::Request req;
      req.method = "POST";
      req.url = url;
      req.headers = {{"Content-Type", "application/json"}};
      while (Clock::now() < deadline) {
        req.body = make_body();  // ~0.2 ms; the server takes far longer per request
        if (transport->Send(req).success()) {
          ++ok;
        } else {
          ++failed;
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  double total_s = std::chrono::duration<double>(Clock::now() - start).count();
  nlohmann::json out = {
      {"mode", "ingest"},      {"threads", threads},
      {"requests", ok.load()}, {"failed", failed.load()},
      {"seconds", total_s},    {"metrics_per_s", ok.load() * kMaxMetricsPerBatch / total_s}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "coach")
    return Coach(argv[2], std::stoll(argv[3]), std::stoi(argv[4]));
  if (argc == 5 && std::string(argv[1]) == "ingest")
    return Ingest(argv[2], std::stoi(argv[3]), std::stod(argv[4]));
  std::fprintf(stderr,
               "usage: mlflow_bench coach URI POINTS SENDERS | ingest URI THREADS SECONDS\n");
  return 2;
}
