#include "operator/backend/local/process/progress_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/test_dir.h"
#include "operator/backend/local/process/exit_record.h"

namespace coach::backend::local {
namespace {

ProgressRecord Sample() {
  ProgressRecord r;
  r.step = 1234567890123;
  r.metrics = {{"loss", 0.25},
               {"eval/accuracy", 0.875},
               {"diverged", std::numeric_limits<double>::quiet_NaN()},
               {"up", std::numeric_limits<double>::infinity()},
               {"down", -std::numeric_limits<double>::infinity()}};
  r.steps_per_second = 12.5;
  r.time = absl::FromUnixMicros(1700000000123456);
  return r;
}

TEST(ProgressFileTest, RoundTripsNonFiniteValuesToo) {
  const ProgressRecord r = Sample();
  const std::string json = ProgressToJson(r);
  EXPECT_NE(json.find("\"diverged\":\"nan\""), std::string::npos) << json;
  absl::StatusOr<ProgressRecord> back = ProgressFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);
  EXPECT_TRUE(std::isnan(back->metrics.at("diverged")));
  EXPECT_EQ(back->metrics.at("down"), -std::numeric_limits<double>::infinity());
}

TEST(ProgressFileTest, AnythingElseIsInvalid) {
  const std::string time = "\"time\":\"2026-11-27T10:00:00Z\"";
  for (const std::string& bad : std::vector<std::string>{
           "",
           "not json",
           "[]",
           "{\"step\":1,\"metrics\":{},\"steps_per_second\":0}",  // no time
           absl::StrCat("{\"metrics\":{},\"steps_per_second\":0,", time, "}"),
           absl::StrCat("{\"step\":1.5,\"metrics\":{},\"steps_per_second\":0,", time, "}"),
           absl::StrCat("{\"step\":\"1\",\"metrics\":{},\"steps_per_second\":0,", time, "}"),
           absl::StrCat("{\"step\":18446744073709551615,\"metrics\":{},\"steps_per_second\":0,",
                        time, "}"),
           absl::StrCat("{\"step\":1,\"metrics\":[],\"steps_per_second\":0,", time, "}"),
           absl::StrCat("{\"step\":1,\"metrics\":{\"a\":\"x\"},\"steps_per_second\":0,", time, "}"),
           absl::StrCat("{\"step\":1,\"metrics\":{\"\":1},\"steps_per_second\":0,", time, "}"),
           absl::StrCat("{\"step\":1,\"metrics\":{},\"steps_per_second\":-1,", time, "}"),
           absl::StrCat("{\"step\":1,\"metrics\":{},\"steps_per_second\":\"1\",", time, "}"),
           "{\"step\":1,\"metrics\":{},\"steps_per_second\":0,\"time\":\"yesterday\"}",
           "{\"step\":1,\"metrics\":{},\"steps_per_second\":0,\"time\":\"infinite-past\"}",
       }) {
    EXPECT_TRUE(absl::IsInvalidArgument(ProgressFromJson(bad).status())) << bad;
  }
  EXPECT_TRUE(ProgressFromJson(
                  absl::StrCat("{\"step\":-3,\"metrics\":{},\"steps_per_second\":0,", time, "}"))
                  .ok());
}

TEST(ProgressFileTest, SizeAndMetricCountAreBounded) {
  ProgressRecord r = Sample();
  r.metrics.clear();
  for (int i = 0; i < kMaxProgressMetrics; ++i) r.metrics[absl::StrCat("m", i)] = i;
  EXPECT_TRUE(ProgressFromJson(ProgressToJson(r)).ok());
  r.metrics["one-more"] = 1;
  EXPECT_TRUE(absl::IsInvalidArgument(ProgressFromJson(ProgressToJson(r)).status()));
  std::string huge = ProgressToJson(Sample());
  huge.insert(1, std::string(kMaxProgressFileBytes, ' '));
  EXPECT_TRUE(absl::IsInvalidArgument(ProgressFromJson(huge).status()));
}

TEST(ProgressFileTest, WrittenAndReadByTheReplicasFilesPrefix) {
  const std::string dir = ::coach::testing::FreshTestDir("progress_file");
  const std::string files = dir + "/pod.";
  EXPECT_TRUE(absl::IsNotFound(ReadProgressFile(files).status()));
  ASSERT_TRUE(WriteProgressFile(files, Sample()).ok());
  absl::StatusOr<ProgressRecord> read = ReadProgressFile(files);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, Sample());
  struct stat st;
  EXPECT_EQ(stat((dir + "/pod.progress").c_str(), &st), 0);
  EXPECT_NE(stat((dir + "/pod.progress.tmp").c_str(), &st), 0) << "renamed into place";
}

// The file is in a directory the replica can write to: whatever is there is refused, never
// waited on.
TEST(ProgressFileTest, AFileThatIsNotOneIsRefusedWithoutBlocking) {
  const std::string dir = ::coach::testing::FreshTestDir("progress_file_odd");
  const std::string path = ReplicaFile(dir + "/pod.", kProgressFileName);
  ASSERT_EQ(mkfifo(path.c_str(), 0644), 0);
  EXPECT_TRUE(absl::IsInvalidArgument(ReadProgressFile(dir + "/pod.").status()));
  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  EXPECT_TRUE(absl::IsInvalidArgument(ReadProgressFile(dir + "/pod.").status()));
  ASSERT_EQ(rmdir(path.c_str()), 0);
  std::ofstream(path) << std::string(kMaxProgressFileBytes + 10, '{');
  EXPECT_TRUE(absl::IsInvalidArgument(ReadProgressFile(dir + "/pod.").status()));
}

}  // namespace
}  // namespace coach::backend::local
