#include "e2e/local/rank_results.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

namespace coach::e2e {
namespace {

TEST(RankResults, ReadsTheFieldsBehindAPrefix) {
  const std::vector<ResultFields> lines = ResultLines(
      "epoch 1\n[default0]:coach-result rank=0 status=ok params_checksum=ab\nnoise x=y\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], (ResultFields{{"rank", "0"}, {"status", "ok"}, {"params_checksum", "ab"}}));
}

TEST(RankResults, AgreeingRanksPass) {
  ExpectRanksAgree(
      "coach-result rank=1 world_size=2 status=ok params_checksum=c\n"
      "coach-result rank=0 world_size=2 status=ok params_checksum=c\n",
      2);
}

TEST(RankResults, EachWayOfDisagreeingFails) {
  EXPECT_NONFATAL_FAILURE(ExpectRanksAgree("coach-result rank=0 world_size=2 status=ok "
                                           "params_checksum=c\n"
                                           "coach-result rank=1 world_size=2 status=ok "
                                           "params_checksum=d\n",
                                           2),
                          "differ");
  EXPECT_NONFATAL_FAILURE(
      ExpectRanksAgree("coach-result rank=0 world_size=1 status=failed params_checksum=c\n", 1),
      "ok");
  EXPECT_NONFATAL_FAILURE(
      ExpectRanksAgree("coach-result rank=0 world_size=2 status=ok params_checksum=c\n", 2),
      "ranks");
  EXPECT_NONFATAL_FAILURE(ExpectRanksAgree("coach-result rank=0 world_size=1 status=ok\n", 1),
                          "params_checksum");
  EXPECT_NONFATAL_FAILURE(
      ExpectRanksAgree("coach-result rank=5 world_size=1 status=ok params_checksum=c\n", 1),
      "ranks");
}

}  // namespace
}  // namespace coach::e2e
