// ReportProgress without gRPC: who may report (a pod, with its own token of audience "coach",
// for itself only), what is checked, and what reaches the backend.

#include "operator/server/progress_intake.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "common/testing/fake_clock.h"
#include "operator/server/pod_token_auth.h"
#include "operator/server/progress_token.h"
#include "operator/server/testing/token_reviewer.h"

namespace coach::server {
namespace {

using testing::kApiAudience;
using testing::MakeJwt;
using testing::TokenReviewer;

// Keeps what it is given; answers what the test says.
class RecordingReceiver : public backend::ProgressReceiver {
 public:
  absl::StatusOr<backend::ProgressReceipt> ReceiveProgress(
      const backend::PodReport& report) override {
    std::lock_guard<std::mutex> lock(mu);
    reports.push_back(report);
    return answer;
  }
  std::mutex mu;
  std::vector<backend::PodReport> reports;
  absl::StatusOr<backend::ProgressReceipt> answer = backend::ProgressReceipt{true, std::nullopt};
};

class ProgressIntakeTest : public ::testing::Test {
 protected:
  PodTokenAuthOptions Options() {
    PodTokenAuthOptions o;
    o.clock = &clock_;
    return o;
  }
  std::string PodToken(const std::string& ns, const std::string& pod, const std::string& uid,
                       std::vector<std::string> audiences = {kProgressAudience}) {
    return "Bearer " + reviewer_.Issue(ns, "trainer", pod, uid, std::move(audiences),
                                       clock_.Now() + absl::Hours(1));
  }
  static api::v1::ReportProgressRequest Request(const std::string& ns, const std::string& pod) {
    api::v1::ReportProgressRequest r;
    r.set_namespace_(ns);
    r.set_pod(pod);
    r.set_step(10);
    (*r.mutable_metrics())["loss"] = 0.75;
    r.set_steps_per_second(1.5);
    return r;
  }

  FakeClock clock_;
  TokenReviewer reviewer_;
  RecordingReceiver receiver_;
};

TEST_F(ProgressIntakeTest, APodReportsForItself) {
  PodTokenAuth auth(&reviewer_, Options());
  ProgressIntake intake(&auth, &receiver_);
  const std::string token = PodToken("team-a", "ddp-worker-0", "uid-w0");
  absl::StatusOr<api::v1::ReportProgressResponse> accepted =
      intake.Report(&token, Request("team-a", "ddp-worker-0"));
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_TRUE(accepted->accepted());
  EXPECT_FALSE(accepted->has_launch());
  ASSERT_EQ(receiver_.reports.size(), 1u);
  const backend::PodReport& r = receiver_.reports[0];
  EXPECT_EQ(r.namespace_, "team-a");
  EXPECT_EQ(r.pod, "ddp-worker-0");
  // The instance is the token's: the backend checks it against the pod it holds.
  EXPECT_EQ(r.pod_uid, "uid-w0");
  EXPECT_EQ(r.report.step, 10);
  EXPECT_EQ(r.report.metrics.at("loss"), 0.75);
  EXPECT_EQ(r.report.steps_per_second, 1.5);
  // The review named coach's audience, and the answer is remembered.
  ASSERT_EQ(reviewer_.review_bodies().size(), 1u);
  EXPECT_EQ(reviewer_.review_bodies()[0]["spec"]["audiences"], nlohmann::json::array({"coach"}));
  ASSERT_TRUE(intake.Report(&token, Request("team-a", "ddp-worker-0")).ok());
  EXPECT_EQ(reviewer_.reviews(), 1);
  // The receiver's answer is passed on (dropped within a second).
  receiver_.answer = backend::ProgressReceipt{false, std::nullopt};
  accepted = intake.Report(&token, Request("team-a", "ddp-worker-0"));
  ASSERT_TRUE(accepted.ok());
  EXPECT_FALSE(accepted->accepted());
  // A job that restarts in place: its directive reaches the pod, a dropped report's too.
  receiver_.answer = backend::ProgressReceipt{false, model::LaunchDirective{2, true, false}};
  api::v1::ReportProgressRequest launching = Request("team-a", "ddp-worker-0");
  launching.mutable_launch()->set_attempt(1);
  launching.mutable_launch()->set_phase(api::v1::LaunchState::STOPPED);
  accepted = intake.Report(&token, launching);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_EQ(accepted->launch().attempt(), 2);
  EXPECT_TRUE(accepted->launch().start());
  EXPECT_FALSE(accepted->launch().exit());
  ASSERT_TRUE(receiver_.reports.back().report.launch.has_value());
  EXPECT_EQ(receiver_.reports.back().report.launch->attempt, 1);
  EXPECT_EQ(receiver_.reports.back().report.launch->phase,
            model::ObservedPod::Launch::Phase::kStopped);
  EXPECT_FALSE(accepted->stopping());
  // A pod the operator deletes itself is told so, in a dropped report's answer too.
  backend::ProgressReceipt stopping{false, std::nullopt};
  stopping.stopping = true;
  receiver_.answer = stopping;
  accepted = intake.Report(&token, Request("team-a", "ddp-worker-0"));
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_TRUE(accepted->stopping());
}

TEST_F(ProgressIntakeTest, APodMayNotReportForAnotherPod) {
  PodTokenAuth auth(&reviewer_, Options());
  ProgressIntake intake(&auth, &receiver_);
  const std::string token = PodToken("team-a", "ddp-worker-0", "uid-w0");
  for (const auto& [ns, pod] : std::vector<std::pair<std::string, std::string>>{
           {"team-a", "ddp-worker-1"}, {"team-b", "ddp-worker-0"}, {"team-b", "other"}}) {
    absl::Status s = intake.Report(&token, Request(ns, pod)).status();
    EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
    EXPECT_EQ(s.message(),
              "pod team-a/ddp-worker-0 may report progress only for itself, not for pod " + ns +
                  "/" + pod);
  }
  EXPECT_TRUE(receiver_.reports.empty());
}

TEST_F(ProgressIntakeTest, OnlyAPodsOwnTokenForCoachIdentifiesIt) {
  PodTokenAuth auth(&reviewer_, Options());
  ProgressIntake intake(&auth, &receiver_);
  const api::v1::ReportProgressRequest request = Request("team-a", "ddp-worker-0");
  // The pod's ordinary token (the API server's audience): not for coach.
  std::string api_token = PodToken("team-a", "ddp-worker-0", "uid-w0", {kApiAudience});
  EXPECT_TRUE(absl::IsUnauthenticated(intake.Report(&api_token, request).status()));
  // A ServiceAccount token of audience coach that no pod is bound to.
  std::string account_token =
      "Bearer " + reviewer_.Issue("team-a", "trainer", "", "", {kProgressAudience},
                                  clock_.Now() + absl::Hours(1));
  absl::Status s = intake.Report(&account_token, request).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_NE(s.message().find("only a pod's own ServiceAccount token"), std::string::npos) << s;
  // No token, a token nobody issued.
  EXPECT_TRUE(absl::IsUnauthenticated(intake.Report(nullptr, request).status()));
  std::string forged = "Bearer " + MakeJwt(R"({"aud":["coach"]})");
  s = intake.Report(&forged, request).status();
  EXPECT_TRUE(absl::IsUnauthenticated(s)) << s;
  EXPECT_EQ(s.message().find(forged.substr(7)), std::string::npos);
  EXPECT_TRUE(receiver_.reports.empty());
}

TEST_F(ProgressIntakeTest, AnInvalidReportIsRefusedAfterTheCallerIsKnown) {
  PodTokenAuth auth(&reviewer_, Options());
  ProgressIntake intake(&auth, &receiver_);
  api::v1::ReportProgressRequest bad = Request("team-a", "ddp-worker-0");
  bad.set_step(-1);
  std::string nobody = "Bearer nobody-knows-this-token";
  EXPECT_TRUE(absl::IsUnauthenticated(intake.Report(&nobody, bad).status()));
  const std::string token = PodToken("team-a", "ddp-worker-0", "uid-w0");
  absl::Status s = intake.Report(&token, bad).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("step: must be >= 0"), std::string::npos) << s;
  EXPECT_TRUE(receiver_.reports.empty());
}

TEST_F(ProgressIntakeTest, IdentitiesAreRememberedUntilTheTokenExpiresAtMostTenMinutes) {
  PodTokenAuth auth(&reviewer_, Options());
  const std::string token =
      "Bearer " + reviewer_.Issue("team-a", "trainer", "p", "u", {kProgressAudience},
                                  clock_.Now() + absl::Minutes(3));
  ASSERT_TRUE(auth.Authenticate(&token).ok());
  clock_.Advance(absl::Minutes(2));
  ASSERT_TRUE(auth.Authenticate(&token).ok());
  EXPECT_EQ(auth.token_reviews(), 1);
  // Past its expiry the token is reviewed again (and the API server refuses it).
  clock_.Advance(absl::Minutes(1));
  reviewer_.Revoke(token.substr(7));
  EXPECT_TRUE(absl::IsUnauthenticated(auth.Authenticate(&token).status()));
  EXPECT_EQ(auth.token_reviews(), 2);
  // A refusal is remembered briefly.
  EXPECT_TRUE(absl::IsUnauthenticated(auth.Authenticate(&token).status()));
  EXPECT_EQ(auth.token_reviews(), 2);

  const std::string long_lived =
      "Bearer " + reviewer_.Issue("team-a", "trainer", "q", "v", {kProgressAudience},
                                  clock_.Now() + absl::Hours(1));
  ASSERT_TRUE(auth.Authenticate(&long_lived).ok());
  clock_.Advance(absl::Minutes(10));
  ASSERT_TRUE(auth.Authenticate(&long_lived).ok());
  EXPECT_EQ(auth.token_reviews(), 4);
}

TEST_F(ProgressIntakeTest, ReviewsBeyondTheLimitAreUnavailableAtOnce) {
  PodTokenAuthOptions options = Options();
  options.max_reviews_in_flight = 1;
  PodTokenAuth auth(&reviewer_, options);
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false;
  reviewer_.SetReviewHook([&] {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  });
  const std::string first = PodToken("team-a", "a", "ua");
  const std::string second = PodToken("team-a", "b", "ub");
  std::thread held([&] { EXPECT_TRUE(auth.Authenticate(&first).ok()); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
  absl::Status busy = auth.Authenticate(&second).status();
  EXPECT_TRUE(absl::IsUnavailable(busy)) << busy;
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  held.join();
  reviewer_.SetReviewHook(nullptr);
  EXPECT_TRUE(auth.Authenticate(&second).ok());
}

TEST_F(ProgressIntakeTest, TheOperatorWithoutReviewRightsIsUnavailableNeverAllowed) {
  PodTokenAuth auth(&reviewer_, Options());
  reviewer_.FailNextReview(absl::PermissionDeniedError("tokenreviews is forbidden"));
  const std::string token = PodToken("team-a", "a", "ua");
  absl::Status s = auth.Authenticate(&token).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  // Not remembered: the next call asks again.
  EXPECT_TRUE(auth.Authenticate(&token).ok());
}

api::v1::CheckpointReport Answered(int64_t id, bool saved, int64_t step,
                                   const std::string& message = "") {
  api::v1::CheckpointReport r;
  r.set_request_id(id);
  r.set_saved(saved);
  r.set_step(step);
  r.set_message(message);
  return r;
}

TEST_F(ProgressIntakeTest, APodOfAJobGetsItsCheckpointRequestAndItsAnswerIsKept) {
  PodTokenAuth auth(&reviewer_, Options());
  CheckpointBookOptions book_options;
  book_options.clock = &clock_;
  CheckpointBook book(book_options);
  ProgressIntake intake(&auth, &receiver_, &book);
  const std::string token = PodToken("team-a", "ddp-worker-0", "uid-w0");
  receiver_.answer = backend::ProgressReceipt{true, std::nullopt, "job-uid-1"};
  // No request yet: nothing in the answer.
  absl::StatusOr<api::v1::ReportProgressResponse> answer =
      intake.Report(&token, Request("team-a", "ddp-worker-0"));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_FALSE(answer->has_checkpoint());

  absl::StatusOr<int64_t> id = book.RequestCheckpoint("job-uid-1", absl::Seconds(90));
  ASSERT_TRUE(id.ok()) << id.status();
  // A dropped report's answer carries it too, and a job that does not restart in place gets it.
  receiver_.answer = backend::ProgressReceipt{false, std::nullopt, "job-uid-1"};
  answer = intake.Report(&token, Request("team-a", "ddp-worker-0"));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_FALSE(answer->accepted());
  EXPECT_FALSE(answer->has_launch());
  ASSERT_TRUE(answer->has_checkpoint());
  EXPECT_EQ(answer->checkpoint().id(), *id);
  EXPECT_EQ(absl::FromUnixSeconds(answer->checkpoint().deadline().seconds()) +
                absl::Nanoseconds(answer->checkpoint().deadline().nanos()),
            clock_.Now() + absl::Seconds(90));

  // The pod answers (in a dropped report): kept under the token's pod, not the request's words.
  api::v1::ReportProgressRequest saved = Request("team-a", "ddp-worker-0");
  *saved.mutable_checkpoint() = Answered(*id, true, 412);
  ASSERT_TRUE(intake.Report(&token, saved).ok());
  absl::StatusOr<backend::CheckpointState> state = book.GetCheckpointState("job-uid-1", *id);
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_EQ(state->answers.size(), 1u);
  EXPECT_TRUE(state->answers.at("ddp-worker-0").saved);
  EXPECT_EQ(state->answers.at("ddp-worker-0").step, 412);

  // A receiver that does not name the pod's job: no request, the answer is not kept.
  receiver_.answer = backend::ProgressReceipt{true, std::nullopt, ""};
  const std::string other = PodToken("team-a", "ddp-worker-1", "uid-w1");
  api::v1::ReportProgressRequest unknown = Request("team-a", "ddp-worker-1");
  *unknown.mutable_checkpoint() = Answered(*id, true, 412);
  answer = intake.Report(&other, unknown);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_FALSE(answer->has_checkpoint());
  EXPECT_EQ(book.GetCheckpointState("job-uid-1", *id)->answers.size(), 1u);

  // An intake without a book: as before.
  ProgressIntake plain(&auth, &receiver_);
  receiver_.answer = backend::ProgressReceipt{true, std::nullopt, "job-uid-1"};
  answer = plain.Report(&token, saved);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_FALSE(answer->has_checkpoint());
}

TEST_F(ProgressIntakeTest, ABadCheckpointAnswerIsRefusedNamingItsFields) {
  PodTokenAuth auth(&reviewer_, Options());
  CheckpointBook book;
  ProgressIntake intake(&auth, &receiver_, &book);
  const std::string token = PodToken("team-a", "ddp-worker-0", "uid-w0");
  api::v1::ReportProgressRequest bad = Request("team-a", "ddp-worker-0");
  *bad.mutable_checkpoint() = Answered(0, false, -1, std::string(257, 'x'));
  absl::Status s = intake.Report(&token, bad).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  for (const char* part :
       {"checkpoint.request_id: must be >= 1, got 0", "checkpoint.step: must be >= 0, got -1",
        "checkpoint.message: at most 256 bytes, got 257"}) {
    EXPECT_NE(s.message().find(part), std::string::npos) << s;
  }
  *bad.mutable_checkpoint() = Answered(3, false, 0, "no\nnewlines\n");
  s = intake.Report(&token, bad).status();
  EXPECT_NE(s.message().find("checkpoint.message: must be printable ASCII"), std::string::npos)
      << s;
  EXPECT_TRUE(receiver_.reports.empty());
  // The longest message passes.
  EXPECT_TRUE(ValidateCheckpointReport(Answered(3, false, 0, std::string(256, 'x'))).ok());
}

TEST(CheckpointBookTest, IdsIncreasePerJobAlsoAcrossForgettingAndARestartedOperator) {
  FakeClock clock;
  CheckpointBookOptions options;
  options.clock = &clock;
  CheckpointBook book(options);
  const int64_t now_ms = absl::ToUnixMillis(clock.Now());
  EXPECT_EQ(*book.RequestCheckpoint("a", absl::Seconds(30)), now_ms);
  // Within the same millisecond: one more; another job counts on its own.
  EXPECT_EQ(*book.RequestCheckpoint("a", absl::Seconds(30)), now_ms + 1);
  EXPECT_EQ(*book.RequestCheckpoint("b", absl::Seconds(30)), now_ms);
  // A new request replaces the older one and its answers.
  book.Answer("a", "p0", Answered(now_ms + 1, true, 7));
  clock.Advance(absl::Seconds(1));
  const int64_t third = *book.RequestCheckpoint("a", absl::Seconds(30));
  EXPECT_EQ(third, now_ms + 1000);
  EXPECT_TRUE(absl::IsNotFound(book.GetCheckpointState("a", now_ms + 1).status()));
  EXPECT_TRUE(book.GetCheckpointState("a", third)->answers.empty());
  // Forgotten, then asked again (or asked by a new operator process): still above.
  book.ForgetCheckpoints("a");
  book.ForgetCheckpoints("a");
  EXPECT_FALSE(book.Standing("a").has_value());
  clock.Advance(absl::Milliseconds(1));
  CheckpointBook restarted(options);
  EXPECT_GT(*restarted.RequestCheckpoint("a", absl::Seconds(30)), third);
  EXPECT_GT(*book.RequestCheckpoint("a", absl::Seconds(30)), third);

  EXPECT_TRUE(absl::IsInvalidArgument(book.RequestCheckpoint("", absl::Seconds(1)).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(book.RequestCheckpoint("a", absl::ZeroDuration()).status()));
  EXPECT_TRUE(absl::IsNotFound(book.GetCheckpointState("nobody", 1).status()));
}

TEST(CheckpointBookTest, KeepsAnswersToTheStandingRequestOnlyWithinItsBounds) {
  FakeClock clock;
  CheckpointBookOptions options;
  options.clock = &clock;
  options.max_jobs = 2;
  options.max_pods_per_job = 2;
  CheckpointBook book(options);
  book.Answer("a", "p0", Answered(1, true, 5));  // no request: ignored
  const int64_t id = *book.RequestCheckpoint("a", absl::Minutes(2));
  book.Answer("a", "p0", Answered(id - 1, true, 5));  // an earlier request's: ignored
  book.Answer("a", "p0", Answered(id, false, 0, "rank 1: disk full"));
  book.Answer("a", "p1", Answered(id, true, 9));
  book.Answer("a", "p2", Answered(id, true, 9));  // a third pod: beyond the bound
  book.Answer("a", "p0", Answered(id, true, 9));  // a pod that answers again: replaced
  backend::CheckpointState state = *book.GetCheckpointState("a", id);
  EXPECT_EQ(state.id, id);
  EXPECT_EQ(state.deadline, clock.Now() + absl::Minutes(2));
  ASSERT_EQ(state.answers.size(), 2u);
  EXPECT_TRUE(state.answers.at("p0").saved);
  EXPECT_EQ(state.answers.at("p0").step, 9);
  EXPECT_EQ(state.answers.at("p1").step, 9);
  // Requests of at most max_jobs jobs; a job that has one may ask again.
  ASSERT_TRUE(book.RequestCheckpoint("b", absl::Minutes(2)).ok());
  absl::Status full = book.RequestCheckpoint("c", absl::Minutes(2)).status();
  EXPECT_TRUE(absl::IsResourceExhausted(full)) << full;
  EXPECT_TRUE(book.RequestCheckpoint("a", absl::Minutes(2)).ok());
  book.ForgetCheckpoints("b");
  EXPECT_TRUE(book.RequestCheckpoint("c", absl::Minutes(2)).ok());
  EXPECT_EQ(book.jobs(), 2u);
}

TEST(ProgressTokenTest, OnlyATokenForCoachAloneIsAProgressToken) {
  EXPECT_TRUE(IsProgressToken(MakeJwt(R"({"aud":"coach"})")));
  EXPECT_TRUE(IsProgressToken(MakeJwt(R"({"aud":["coach"],"exp":1})")));
  EXPECT_FALSE(IsProgressToken(MakeJwt(R"({"aud":["coach","https://kubernetes.default.svc"]})")));
  EXPECT_FALSE(IsProgressToken(MakeJwt(R"({"aud":[]})")));
  EXPECT_FALSE(IsProgressToken(MakeJwt(R"({"sub":"x"})")));
  EXPECT_FALSE(IsProgressToken("a-shared-token-0123456789abcdef"));
  EXPECT_FALSE(IsProgressToken("a.b.c"));
  EXPECT_FALSE(IsProgressToken(""));
}

}  // namespace
}  // namespace coach::server
