#include "common/http/url.h"

#include "gtest/gtest.h"

namespace coach::http {
namespace {

TEST(PercentEncodeTest, KeepsUnreservedEncodesTheRest) {
  EXPECT_EQ(PercentEncode("a=b,c in (d)"), "a%3Db%2Cc%20in%20%28d%29");
  EXPECT_EQ(PercentEncode("AZaz09-_.~"), "AZaz09-_.~");
  EXPECT_EQ(PercentEncode("a/b"), "a%2Fb");
  EXPECT_EQ(PercentEncode("\xff\x01"), "%FF%01");
  EXPECT_EQ(PercentEncode(""), "");
}

TEST(PercentEncodePathTest, KeepsSlashes) {
  EXPECT_EQ(PercentEncodePath("logs/worker 0.txt"), "logs/worker%200.txt");
  EXPECT_EQ(PercentEncodePath("a?b#c"), "a%3Fb%23c");
  EXPECT_EQ(PercentEncodePath("/abs/"), "/abs/");
}

TEST(QueryTest, EncodesInOrder) {
  EXPECT_EQ(QueryString({}), "");
  EXPECT_EQ(QueryString({{"watch", "1"}, {"labelSelector", "app=x,tier in (a)"}}),
            "watch=1&labelSelector=app%3Dx%2Ctier%20in%20%28a%29");
  EXPECT_EQ(QueryString({{"a b", ""}}), "a%20b=");
  EXPECT_EQ(WithQuery("http://h/p", {}), "http://h/p");
  EXPECT_EQ(WithQuery("http://h/p", {{"k", "v"}, {"k", "w"}}), "http://h/p?k=v&k=w");
}

}  // namespace
}  // namespace coach::http
