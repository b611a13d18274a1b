#include "launcher/line_splitter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace coach::launcher {
namespace {

using ::testing::ElementsAre;

struct Got {
  std::string bytes;
  bool starts_line;
  bool whole_line;
  bool operator==(const Got& o) const {
    return bytes == o.bytes && starts_line == o.starts_line && whole_line == o.whole_line;
  }
};

void PrintTo(const Got& g, std::ostream* os) {
  *os << "{\"" << g.bytes << "\", starts=" << g.starts_line << ", whole=" << g.whole_line << "}";
}

class Recorder {
 public:
  explicit Recorder(size_t max_piece = LineSplitter::kDefaultMaxPiece) : splitter_(max_piece) {}
  Recorder& Feed(const std::string& s) {
    splitter_.Feed(s, emit_);
    return *this;
  }
  Recorder& Flush() {
    splitter_.Flush(emit_);
    return *this;
  }
  std::vector<Got> got;
  size_t held() const { return splitter_.held(); }

 private:
  LineSplitter splitter_;
  LineSplitter::Emit emit_ = [this](const LinePiece& p) {
    got.push_back({std::string(p.bytes), p.starts_line, p.whole_line});
  };
};

TEST(LineSplitterTest, CompleteLinesComeOutWhole) {
  Recorder r;
  r.Feed("a\nbb\n");
  EXPECT_THAT(r.got, ElementsAre(Got{"a\n", true, true}, Got{"bb\n", true, true}));
}

TEST(LineSplitterTest, PartialWritesAreHeldUntilTheLineEnds) {
  // A worker that writes half a line, sleeps, then writes the rest.
  Recorder r;
  r.Feed("rank0 li");
  EXPECT_TRUE(r.got.empty());
  EXPECT_EQ(r.held(), 8u);
  r.Feed("ne 1\nrank0 ");
  r.Feed("line 2\n");
  EXPECT_THAT(r.got,
              ElementsAre(Got{"rank0 line 1\n", true, true}, Got{"rank0 line 2\n", true, true}));
  EXPECT_EQ(r.held(), 0u);
}

TEST(LineSplitterTest, FlushPassesOnTheUnterminatedTail) {
  Recorder r;
  r.Feed("x\nlast words").Flush();
  EXPECT_THAT(r.got, ElementsAre(Got{"x\n", true, true}, Got{"last words", true, false}));
  r.Flush();  // nothing held: nothing more
  EXPECT_EQ(r.got.size(), 2u);
}

TEST(LineSplitterTest, LongLinesArePassedOnInChunksOfMaxPiece) {
  Recorder r(4);
  r.Feed("abcdefghij\nk");
  EXPECT_THAT(r.got, ElementsAre(Got{"abcd", true, false}, Got{"efgh", false, false},
                                 Got{"ij\n", false, false}));
  EXPECT_EQ(r.held(), 1u);
}

TEST(LineSplitterTest, CarriageReturnRedrawsAreNotHeldButCrlfStaysTogether) {
  Recorder r;
  r.Feed("10%\r");  // the byte after '\r' is unknown yet: it may be '\n'
  EXPECT_TRUE(r.got.empty());
  r.Feed("20%\r");
  r.Feed("30%\r\n");
  EXPECT_THAT(r.got, ElementsAre(Got{"10%\r", true, false}, Got{"20%\r", false, false},
                                 Got{"30%\r\n", false, false}));
  r.Feed("ok\r\n");
  EXPECT_EQ(r.got.back(), (Got{"ok\r\n", true, true}));
}

TEST(LineSplitterTest, AnySplitOfTheInputGivesTheSamePiecesForLines) {
  std::string input;
  for (int i = 0; i < 200; ++i) input += "line " + std::to_string(i) + " of the test\n";
  Recorder whole;
  whole.Feed(input).Flush();
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    Recorder split;
    for (size_t off = 0; off < input.size();) {
      const size_t n = std::min<size_t>(input.size() - off, 1 + rng() % 40);
      split.Feed(input.substr(off, n));
      off += n;
    }
    split.Flush();
    EXPECT_EQ(split.got, whole.got) << "round " << round;
  }
  EXPECT_EQ(whole.got.size(), 200u);
}

TEST(LineSplitterTest, PiecesAreExactlyTheInputAndNeverLongerThanMaxPiece) {
  std::mt19937 rng(11);
  const std::string alphabet = "ab\n\r";
  for (int round = 0; round < 200; ++round) {
    std::string input;
    const size_t n = rng() % 300;
    for (size_t i = 0; i < n; ++i) input += alphabet[rng() % (i % 7 == 0 ? 4 : 2)];
    const size_t max_piece = 1 + rng() % 20;
    Recorder r(max_piece);
    for (size_t off = 0; off < input.size();) {
      const size_t k = std::min<size_t>(input.size() - off, 1 + rng() % 30);
      r.Feed(input.substr(off, k));
      off += k;
    }
    r.Flush();
    std::string joined;
    bool line_start = true;
    for (const Got& g : r.got) {
      EXPECT_LE(g.bytes.size(), max_piece);
      EXPECT_EQ(g.starts_line, line_start) << "round " << round;
      EXPECT_EQ(g.whole_line, g.starts_line && g.bytes.back() == '\n');
      line_start = g.bytes.back() == '\n';
      joined += g.bytes;
    }
    EXPECT_EQ(joined, input) << "round " << round;
  }
}

}  // namespace
}  // namespace coach::launcher
