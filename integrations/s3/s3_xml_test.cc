#include "integrations/s3/s3_xml.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace coach::s3 {
namespace {

// The shape of AWS's ListObjectsV2 example, with a second object and entities in a key.
constexpr char kPage[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name>
  <Prefix/>
  <KeyCount>2</KeyCount>
  <MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents>
    <Key>ExampleObject.txt</Key>
    <LastModified>2013-09-17T18:07:53.000Z</LastModified>
    <ETag>"599bab3ed2c697f1d26842727561fd94"</ETag>
    <Size>857</Size>
    <StorageClass>REDUCED_REDUNDANCY</StorageClass>
  </Contents>
  <!-- a comment -->
  <Contents>
    <Key> logs/a &amp; b &lt;c&gt; &#233;&#x1F600;</Key>
    <LastModified>2013-09-17T18:07:54Z</LastModified>
    <Size>0</Size>
    <Owner><ID>x</ID><DisplayName>y</DisplayName></Owner>
  </Contents>
</ListBucketResult>
)";

TEST(S3XmlTest, ParsesAListObjectsV2Page) {
  absl::StatusOr<ListPage> page = ParseListObjectsV2(kPage);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_TRUE(page->is_truncated);
  EXPECT_EQ(page->next_continuation_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "ExampleObject.txt");
  EXPECT_EQ(page->objects[0].size, 857u);
  EXPECT_EQ(page->objects[0].last_modified,
            absl::FromCivil(absl::CivilSecond(2013, 9, 17, 18, 7, 53), absl::UTCTimeZone()));
  EXPECT_EQ(page->objects[1].key, " logs/a & b <c> \xC3\xA9\xF0\x9F\x98\x80");  // untrimmed
  EXPECT_EQ(page->objects[1].size, 0u);
}

TEST(S3XmlTest, AnEmptyLastPage) {
  absl::StatusOr<ListPage> page = ParseListObjectsV2(
      "<ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated>"
      "</ListBucketResult>");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_FALSE(page->is_truncated);
  EXPECT_TRUE(page->objects.empty());
}

TEST(S3XmlTest, RefusesWhatItDoesNotUnderstand) {
  const std::string ok_tail = "<IsTruncated>false</IsTruncated></ListBucketResult>";
  const std::vector<std::string> bad_documents = {
      std::string(""),
      std::string("<Error><Code>x</Code></Error>"),                  // another root
      "<ListBucketResult>" + ok_tail.substr(0, 20),                  // unclosed
      "<ListBucketResult><IsTruncated>false</IsTruncated></Other>",  // mismatched
      "<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
      "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",  // no token
      std::string("<ListBucketResult></ListBucketResult>"),                    // no IsTruncated
      "<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents>" + ok_tail,
      "<ListBucketResult><Contents><Key>a</Key><Size>-1</Size><LastModified>"
      "2013-09-17T18:07:53Z</LastModified></Contents>" +
          ok_tail,
      "<ListBucketResult><Contents><Key>a</Key><Size>1</Size><LastModified>yesterday"
      "</LastModified></Contents>" +
          ok_tail,
      "<!DOCTYPE x [<!ENTITY a \"b\">]><ListBucketResult>" + ok_tail,
      "<ListBucketResult><Name><![CDATA[x]]></Name>" + ok_tail,
      "<ListBucketResult><Name>&unknown;</Name>" + ok_tail,
      "<ListBucketResult><Name>&#0;</Name>" + ok_tail,
      "<ListBucketResult><Name>&#xD800;</Name>" + ok_tail,
      "<ListBucketResult><Name>a & b</Name>" + ok_tail,
      "<ListBucketResult>" + ok_tail + "<ListBucketResult>" + ok_tail,
      "<ListBucketResult>" + ok_tail + "junk",
      "<?pi x?><ListBucketResult>" + ok_tail,
  };
  for (const std::string& bad : bad_documents) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseListObjectsV2(bad).status())) << bad;
  }
}

TEST(S3XmlTest, BoundsDepthAndSize) {
  std::string deep;
  for (int i = 0; i < kMaxXmlDepth + 1; ++i) deep += "<a>";
  EXPECT_TRUE(absl::IsInvalidArgument(ParseListObjectsV2(deep).status()));
  const std::string big =
      absl::StrCat("<ListBucketResult><Name>", std::string(kMaxXmlBytes, 'x'),
                   "</Name><IsTruncated>false</IsTruncated></ListBucketResult>");
  absl::Status s = ParseListObjectsV2(big).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("bytes"), absl::string_view::npos) << s;
}

TEST(S3XmlTest, AttributesAreSkippedEvenWithAngleBrackets) {
  absl::StatusOr<ListPage> page = ParseListObjectsV2(
      "<ListBucketResult a='x>y' b=\"<\"><IsTruncated >false</IsTruncated ></ListBucketResult>");
  ASSERT_TRUE(page.ok()) << page.status();
}

TEST(S3XmlTest, ParsesErrorDocuments) {
  S3Error e = ParseS3Error(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code><Message>The "
      "specified key does not exist.</Message><Key>a</Key><RequestId>1</RequestId></Error>");
  EXPECT_EQ(e.code, "NoSuchKey");
  EXPECT_EQ(e.message, "The specified key does not exist.");

  e = ParseS3Error("<html>502 Bad Gateway</html>");
  EXPECT_EQ(e.code, "");
  EXPECT_EQ(e.message, "<html>502 Bad Gateway</html>");

  e = ParseS3Error(std::string(1000, 'z') + "\x01");
  EXPECT_EQ(e.code, "");
  EXPECT_LE(e.message.size(), 310u);

  e = ParseS3Error("");
  EXPECT_EQ(e.code, "");
  EXPECT_EQ(e.message, "");
}

}  // namespace
}  // namespace coach::s3
