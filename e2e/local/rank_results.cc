#include "e2e/local/rank_results.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace coach::e2e {

std::vector<ResultFields> ResultLines(absl::string_view logs) {
  constexpr absl::string_view kTag = "coach-result ";
  std::vector<ResultFields> out;
  for (absl::string_view line : absl::StrSplit(logs, '\n')) {
    const size_t at = line.find(kTag);
    if (at == absl::string_view::npos) continue;
    ResultFields fields;
    for (absl::string_view field :
         absl::StrSplit(line.substr(at + kTag.size()), ' ', absl::SkipEmpty())) {
      const size_t eq = field.find('=');
      if (eq == absl::string_view::npos) continue;
      fields[std::string(field.substr(0, eq))] = std::string(field.substr(eq + 1));
    }
    out.push_back(std::move(fields));
  }
  return out;
}

void ExpectRanksAgree(absl::string_view logs, int world_size, const std::string& checksum_key) {
  std::set<int> ranks;
  std::set<std::string> checksums;
  for (ResultFields& f : ResultLines(logs)) {
    EXPECT_EQ(f["status"], "ok") << f["rank"] << "\n" << logs;
    EXPECT_EQ(f["world_size"], absl::StrCat(world_size)) << f["rank"];
    int rank = -1;
    EXPECT_TRUE(absl::SimpleAtoi(f["rank"], &rank)) << "rank \"" << f["rank"] << "\"";
    EXPECT_TRUE(ranks.insert(rank).second) << "rank " << rank << " reported twice";
    EXPECT_FALSE(f[checksum_key].empty()) << "rank " << rank << " has no " << checksum_key;
    checksums.insert(f[checksum_key]);
  }
  std::set<int> want;
  for (int r = 0; r < world_size; ++r) want.insert(r);
  EXPECT_EQ(ranks, want) << logs;
  EXPECT_EQ(checksums.size(), 1u) << checksum_key << " differ:\n" << logs;
}

}  // namespace coach::e2e
