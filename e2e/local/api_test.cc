// End to end on the local backend: bad manifests and bad requests get clear errors and
// store nothing; bearer-token auth on and off, through the SDK and the CLI.

#include <sys/stat.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "e2e/local/operator_fixture.h"
#include "gtest/gtest.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;

// Wrong in two fields: the name is no DNS-1035 label, and the Workers' count is negative.
std::string BadManifest() {
  return ShellManifest("Bad_Name", "echo never").Replica("Worker", -1).Image(kShellImage).Yaml();
}

std::string GoodManifest() { return ShellManifest("good", "echo good").Yaml(); }

class ApiTest : public OperatorTest {};

TEST_F(ApiTest, BadManifestsAndRequests) {
  StartOperator();
  ASSERT_TRUE(op_->running());
  sdk::TrainingClient& client = op_->client();

  // Every offending field named, nothing stored.
  absl::StatusOr<TrainingJob> bad = client.CreateJobFromManifest(BadManifest(), kNs);
  ASSERT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "metadata.name")) << bad.status();
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "spec.pytorchReplicaSpecs.Worker.replicas"))
      << bad.status();
  // Text the parser must refuse, so written out as it is.
  for (const char* broken :
       {"{{{ not yaml", "",
        "apiVersion: kubeflow.org/v1\nkind: NoSuchJob\nmetadata: {name: x}\n"}) {
    absl::StatusOr<TrainingJob> r = client.CreateJobFromManifest(broken, kNs);
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << "'" << broken << "': " << r.status();
  }
  absl::StatusOr<std::vector<TrainingJob>> all = client.ListAllJobs();
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->empty()) << all->size() << " job(s) stored from bad manifests";
  EXPECT_TRUE(absl::IsNotFound(client.GetJob(kNs, "Bad_Name").status()));

  // Unknown job.
  EXPECT_TRUE(absl::IsNotFound(client.GetJob(kNs, "nobody").status()));
  EXPECT_TRUE(absl::IsNotFound(client.DeleteJob(kNs, "nobody")));
  EXPECT_TRUE(absl::IsNotFound(client.DescribeJob(kNs, "nobody").status()));
  EXPECT_TRUE(absl::IsNotFound(client.SuspendJob(kNs, "nobody").status()));

  // Duplicate.
  absl::StatusOr<TrainingJob> first = client.CreateJobFromManifest(GoodManifest(), kNs);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->metadata().uid().empty());
  absl::StatusOr<TrainingJob> second = client.CreateJobFromManifest(GoodManifest(), kNs);
  EXPECT_TRUE(absl::IsAlreadyExists(second.status())) << second.status();
  // Same name in another namespace is another job.
  absl::StatusOr<TrainingJob> elsewhere = client.CreateJobFromManifest(GoodManifest(), "team-b");
  EXPECT_TRUE(elsewhere.ok()) << elsewhere.status();

  // Page sizes.
  for (int page_size : {-1, -1000}) {
    sdk::ListOptions list;
    list.page_size = page_size;
    absl::StatusOr<api::v1::ListJobsResponse> r = client.ListJobs(list);
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << page_size << ": " << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), "page_size")) << r.status();
  }
  // Over the maximum (1000) is clamped, as Kubernetes clamps `limit`.
  sdk::ListOptions huge;
  huge.page_size = 100000;
  absl::StatusOr<api::v1::ListJobsResponse> clamped = client.ListJobs(huge);
  ASSERT_TRUE(clamped.ok()) << clamped.status();
  EXPECT_EQ(clamped->jobs_size(), 2);
  sdk::ListOptions bad_token;
  bad_token.page_token = "not-a-token";
  EXPECT_TRUE(absl::IsInvalidArgument(client.ListJobs(bad_token).status()));
  sdk::ListOptions paged;
  paged.page_size = 1;
  absl::StatusOr<api::v1::ListJobsResponse> page = client.ListJobs(paged);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->jobs_size(), 1);
  EXPECT_FALSE(page->next_page_token().empty());
  absl::StatusOr<std::vector<TrainingJob>> both = client.ListAllJobs("", "", 1);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->size(), 2u);

  // The CLI: exit 1 naming the field; not found is 3.
  const std::string bad_file = op_->root() + "/bad.yaml";
  WriteFileOrDie(bad_file, BadManifest());
  CliResult submit = op_->Cli({"submit", "-f", bad_file});
  EXPECT_EQ(submit.exit_code, 1) << submit.out << submit.err;
  EXPECT_TRUE(
      absl::StrContains(submit.err + submit.out, "spec.pytorchReplicaSpecs.Worker.replicas"))
      << submit.err;
  EXPECT_TRUE(absl::StrContains(submit.err + submit.out, "metadata.name")) << submit.err;
  CliResult get = op_->Cli({"get", "nobody"});
  EXPECT_EQ(get.exit_code, 3) << get.out << get.err;
  CliResult dup_file = op_->Cli({"submit", "-f", "/nonexistent/job.yaml"});
  EXPECT_NE(dup_file.exit_code, 0);
  all = client.ListAllJobs();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
}

TEST_F(ApiTest, TokenRequiredWhenConfigured) {
  OperatorOptions options;
  options.token = "s3cret-e2e-token";
  StartOperator(options);
  ASSERT_TRUE(op_->running());

  // No token, wrong token.
  for (const char* token : {"", "wrong-token"}) {
    std::unique_ptr<sdk::TrainingClient> client = op_->NewClient(token);
    absl::StatusOr<std::vector<TrainingJob>> listed = client->ListAllJobs();
    EXPECT_TRUE(absl::IsUnauthenticated(listed.status()) ||
                absl::IsPermissionDenied(listed.status()))
        << "token '" << token << "': " << listed.status();
    EXPECT_FALSE(absl::StrContains(listed.status().message(), "s3cret")) << listed.status();
    absl::StatusOr<TrainingJob> created = client->CreateJobFromManifest(GoodManifest(), kNs);
    EXPECT_FALSE(created.ok());
  }
  CliResult no_token = op_->Cli({"list"}, /*with_token=*/false);
  EXPECT_EQ(no_token.exit_code, 7) << no_token.out << no_token.err;

  // The right token.
  absl::StatusOr<TrainingJob> created = op_->client().CreateJobFromManifest(GoodManifest(), kNs);
  ASSERT_TRUE(created.ok()) << created.status();
  CliResult with_token = op_->Cli({"list"});
  EXPECT_EQ(with_token.exit_code, 0) << with_token.out << with_token.err;
  EXPECT_TRUE(absl::StrContains(with_token.out, "good")) << with_token.out;
  CliResult wait = op_->Cli({"wait", "good", "--for", "Succeeded", "--timeout", "2m"});
  EXPECT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  // Nothing the unauthenticated calls did was stored.
  absl::StatusOr<std::vector<TrainingJob>> all = op_->client().ListAllJobs();
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 1u);
}

TEST_F(ApiTest, DefaultAuthenticatesWithTheOperatorsOwnToken) {
  StartOperator();
  ASSERT_TRUE(op_->running());
  // Made on first start, private to the operator's user.
  struct stat st;
  ASSERT_EQ(stat((op_->state_dir() + "/api-token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(stat(op_->state_dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u) << "state dir mode " << std::oct << (st.st_mode & 07777);
  EXPECT_EQ(op_->token().size(), 64u);
  EXPECT_FALSE(absl::StrContains(op_->OperatorLog(), op_->token()));

  // Anyone else (no token, or not this one) is refused, and nothing they sent is kept.
  for (const char* token : {"", "0123456789abcdef-not-it"}) {
    std::unique_ptr<sdk::TrainingClient> other = op_->NewClient(token);
    EXPECT_TRUE(absl::IsUnauthenticated(other->ListAllJobs().status())) << token;
    EXPECT_FALSE(other->CreateJobFromManifest(GoodManifest(), kNs).ok()) << token;
  }
  CliResult no_token = op_->Cli({"list"}, /*with_token=*/false);
  EXPECT_EQ(no_token.exit_code, 7) << no_token.out << no_token.err;

  // The operator's user: the CLI finds the token where the operator keeps it.
  const std::string manifest = op_->root() + "/good.yaml";
  WriteFileOrDie(manifest, GoodManifest());
  CliResult submit = op_->Cli({"submit", "-f", manifest, "-n", kNs});
  ASSERT_EQ(submit.exit_code, 0) << submit.out << submit.err;
  CliResult wait = op_->Cli({"wait", "good", "--for", "Succeeded", "--timeout", "2m"});
  EXPECT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  absl::StatusOr<std::vector<TrainingJob>> all = op_->client().ListAllJobs();
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 1u);

  // The same token after a restart: callers keep working.
  const std::string before = op_->token();
  ASSERT_TRUE(op_->Restart().ok());
  EXPECT_EQ(op_->token(), before);
  CliResult list = op_->Cli({"list"});
  EXPECT_EQ(list.exit_code, 0) << list.out << list.err;
  EXPECT_TRUE(absl::StrContains(list.out, "good")) << list.out;
}

TEST_F(ApiTest, NoTokenNeededWithApiAuthNone) {
  OperatorOptions options;
  options.extra_args = {"--api-auth=none"};
  StartOperator(options);
  ASSERT_TRUE(op_->running());
  EXPECT_TRUE(absl::StrContains(op_->OperatorLog(), "--api-auth=none: anyone who can reach"))
      << op_->OperatorLog();
  std::unique_ptr<sdk::TrainingClient> anonymous = op_->NewClient("");
  EXPECT_TRUE(anonymous->ListAllJobs().ok());
  absl::StatusOr<TrainingJob> created = anonymous->CreateJobFromManifest(GoodManifest(), kNs);
  EXPECT_TRUE(created.ok()) << created.status();
  CliResult list = op_->Cli({"list"}, /*with_token=*/false);
  EXPECT_EQ(list.exit_code, 0) << list.out << list.err;
  EXPECT_TRUE(absl::StrContains(list.out, "good")) << list.out;
  CliResult wait = op_->Cli({"wait", "good", "--for", "Succeeded", "--timeout", "2m"}, false);
  EXPECT_EQ(wait.exit_code, 0) << wait.out << wait.err;
}

}  // namespace
}  // namespace coach::e2e
