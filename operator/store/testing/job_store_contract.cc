#include "operator/store/testing/job_store_contract.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace coach::store::testing {

using api::v1::TrainingJob;

const std::vector<std::string>& JobStoreContractTest::Namespaces() {
  static const std::vector<std::string>* const kNamespaces =
      new std::vector<std::string>{"a", "b", "even", "ns", "odd", "other"};
  return *kNamespaces;
}

void JobStoreContractTest::SetUp() {
  store_ = Init();
  ASSERT_NE(store_, nullptr);
}

void JobStoreContractTest::CreateAssignsIdentityAndGetReturnsIt() {
  auto created = store_->Create(MakeJob(Ns("ns"), "a"));
  ASSERT_TRUE(created.ok()) << created.status();
  const auto& md = created->metadata();
  EXPECT_EQ(md.uid().size(), 36u);
  EXPECT_EQ(md.uid()[14], '4');  // UUID version 4
  EXPECT_TRUE(std::string("89ab").find(md.uid()[19]) != std::string::npos);
  if (IsLocal()) {
    EXPECT_EQ(md.resource_version(), "1");
  }
  EXPECT_FALSE(md.resource_version().empty());
  EXPECT_EQ(md.generation(), 1);
  EXPECT_GT(md.creation_timestamp().seconds(), 0);
  auto got = store_->Get({Ns("ns"), "a"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->SerializeAsString(), created->SerializeAsString());
  EXPECT_EQ(got->spec().replica_specs().at("Worker").replicas(), 2);

  auto other = store_->Create(MakeJob(Ns("ns"), "b"));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->metadata().uid(), md.uid());
}

void JobStoreContractTest::CreateDuplicateIsAlreadyExists() {
  ASSERT_TRUE(store_->Create(MakeJob(Ns("ns"), "a")).ok());
  EXPECT_EQ(store_->Create(MakeJob(Ns("ns"), "a")).status().code(),
            absl::StatusCode::kAlreadyExists);
  // Same name in another namespace is another job.
  EXPECT_TRUE(store_->Create(MakeJob(Ns("other"), "a")).ok());
}

void JobStoreContractTest::CreateRequiresNameAndNamespace() {
  EXPECT_EQ(store_->Create(MakeJob("", "a")).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Create(MakeJob(Ns("ns"), "")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

void JobStoreContractTest::GetMissingIsNotFound() {
  EXPECT_EQ(store_->Get({Ns("ns"), "nope"}).status().code(), absl::StatusCode::kNotFound);
}

void JobStoreContractTest::ListIsOrderedAndFiltersNamespace() {
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{
           {"b", "y"}, {"a", "z"}, {"b", "x"}, {"a", "a"}}) {
    ASSERT_TRUE(store_->Create(MakeJob(Ns(ns), name)).ok());
  }
  auto all = store_->List({});
  ASSERT_TRUE(all.ok());
  std::vector<std::string> names;
  for (const auto& j : all->jobs) {
    names.push_back(j.metadata().namespace_() + "/" + j.metadata().name());
  }
  EXPECT_EQ(names, (std::vector<std::string>{Ns("a") + "/a", Ns("a") + "/z", Ns("b") + "/x",
                                             Ns("b") + "/y"}));
  EXPECT_EQ(all->next_page_token, "");
  ListOptions only_b;
  only_b.namespace_ = Ns("b");
  auto b = store_->List(only_b);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->jobs.size(), 2u);
  EXPECT_EQ(b->jobs[0].metadata().name(), "x");
}

void JobStoreContractTest::ListPagesVisitEveryJobOnce() {
  std::set<std::string> want;
  for (int i = 0; i < 7; ++i) {
    std::string name = absl::StrCat("job-", i);
    ASSERT_TRUE(store_->Create(MakeJob(Ns(i % 2 ? "odd" : "even"), name)).ok());
    want.insert(name);
  }
  ListOptions opts;
  opts.page_size = 3;
  std::set<std::string> seen;
  int pages = 0;
  do {
    auto page = store_->List(opts);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_LE(page->jobs.size(), 3u);
    for (const auto& j : page->jobs) EXPECT_TRUE(seen.insert(j.metadata().name()).second);
    opts.page_token = page->next_page_token;
    ++pages;
  } while (!opts.page_token.empty() && pages < 10);
  EXPECT_EQ(pages, 3);  // 3 + 3 + 1, and no empty trailing page.
  EXPECT_EQ(seen, want);

  ListOptions exact;
  exact.page_size = 7;
  auto one = store_->List(exact);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->jobs.size(), 7u);
  EXPECT_EQ(one->next_page_token, "");
}

void JobStoreContractTest::ListRejectsBadTokensAndSizes() {
  ListOptions opts;
  opts.page_token = "!!not a token!!";
  EXPECT_EQ(store_->List(opts).status().code(), absl::StatusCode::kInvalidArgument);
  opts = ListOptions();
  opts.page_size = -1;
  EXPECT_EQ(store_->List(opts).status().code(), absl::StatusCode::kInvalidArgument);
}

void JobStoreContractTest::ListLabelSelectorFillsPagesWithMatchesOnly() {
  for (int i = 0; i < 6; ++i) {
    TrainingJob job = MakeJob(Ns("ns"), absl::StrCat("j", i));
    (*job.mutable_metadata()->mutable_labels())["team"] = i % 3 == 0 ? "red" : "blue";
    ASSERT_TRUE(store_->Create(job).ok());
  }
  ListOptions opts;
  opts.label_selector = {{"team", "red"}};
  opts.page_size = 1;
  auto p1 = store_->List(opts);
  ASSERT_TRUE(p1.ok());
  ASSERT_EQ(p1->jobs.size(), 1u);
  EXPECT_EQ(p1->jobs[0].metadata().name(), "j0");
  ASSERT_FALSE(p1->next_page_token.empty());
  opts.page_token = p1->next_page_token;
  auto p2 = store_->List(opts);
  ASSERT_TRUE(p2.ok());
  ASSERT_EQ(p2->jobs.size(), 1u);
  EXPECT_EQ(p2->jobs[0].metadata().name(), "j3");
  EXPECT_EQ(p2->next_page_token, "");
  opts = ListOptions();
  opts.label_selector = {{"team", "green"}};
  EXPECT_TRUE(store_->List(opts)->jobs.empty());
}

void JobStoreContractTest::UpdateUsesOptimisticConcurrency() {
  auto v1 = store_->Create(MakeJob(Ns("ns"), "a"));
  ASSERT_TRUE(v1.ok());
  TrainingJob edit = *v1;
  (*edit.mutable_metadata()->mutable_labels())["k"] = "v";
  auto v2 = store_->Update(edit);
  ASSERT_TRUE(v2.ok()) << v2.status();
  if (IsLocal()) {
    EXPECT_EQ(v2->metadata().resource_version(), "2");
  }
  EXPECT_NE(v2->metadata().resource_version(), v1->metadata().resource_version());
  EXPECT_EQ(v2->metadata().generation(), 1);  // Metadata only: same generation.
  EXPECT_EQ(v2->metadata().uid(), v1->metadata().uid());
  EXPECT_EQ(v2->metadata().labels().at("k"), "v");

  // A writer still holding version 1 loses.
  TrainingJob stale = *v1;
  (*stale.mutable_spec()->mutable_replica_specs())["Worker"].set_replicas(9);
  EXPECT_EQ(store_->Update(stale).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(store_->Get({Ns("ns"), "a"})->spec().replica_specs().at("Worker").replicas(), 2);

  TrainingJob spec_edit = *v2;
  (*spec_edit.mutable_spec()->mutable_replica_specs())["Worker"].set_replicas(4);
  // Update never writes status nor identity.
  spec_edit.mutable_status()->add_conditions()->set_type("Succeeded");
  if (IsLocal()) spec_edit.mutable_metadata()->set_uid("forged");
  auto v3 = store_->Update(spec_edit);
  ASSERT_TRUE(v3.ok()) << v3.status();
  if (IsLocal()) {
    EXPECT_EQ(v3->metadata().resource_version(), "3");
  }
  EXPECT_NE(v3->metadata().resource_version(), v2->metadata().resource_version());
  EXPECT_EQ(v3->metadata().generation(), 2);
  EXPECT_EQ(v3->metadata().uid(), v1->metadata().uid());
  EXPECT_EQ(v3->status().conditions_size(), 0);
  EXPECT_EQ(store_->Get({Ns("ns"), "a"})->SerializeAsString(), v3->SerializeAsString());

  TrainingJob missing_rv = *v3;
  missing_rv.mutable_metadata()->clear_resource_version();
  EXPECT_EQ(store_->Update(missing_rv).status().code(), absl::StatusCode::kInvalidArgument);
  TrainingJob ghost = MakeJob(Ns("ns"), "ghost");
  ghost.mutable_metadata()->set_resource_version("1");
  EXPECT_EQ(store_->Update(ghost).status().code(), absl::StatusCode::kNotFound);
}

void JobStoreContractTest::UpdateStatusWritesOnlyStatus() {
  auto v1 = store_->Create(MakeJob(Ns("ns"), "a"));
  ASSERT_TRUE(v1.ok());
  TrainingJob s = *v1;
  auto* c = s.mutable_status()->add_conditions();
  c->set_type("Running");
  c->set_status("True");
  (*s.mutable_spec()->mutable_replica_specs())["Worker"].set_replicas(100);
  auto v2 = store_->UpdateStatus(s);
  ASSERT_TRUE(v2.ok()) << v2.status();
  if (IsLocal()) {
    EXPECT_EQ(v2->metadata().resource_version(), "2");
  }
  EXPECT_NE(v2->metadata().resource_version(), v1->metadata().resource_version());
  EXPECT_EQ(v2->status().conditions(0).type(), "Running");
  EXPECT_EQ(v2->spec().replica_specs().at("Worker").replicas(), 2);
  EXPECT_EQ(store_->UpdateStatus(s).status().code(), absl::StatusCode::kAborted);
  // Spec updates keep the status.
  auto v3 = store_->Update(*v2);
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(v3->status().conditions_size(), 1);
}

void JobStoreContractTest::DeleteChecksVersionAndDropsEvents() {
  auto job = store_->Create(MakeJob(Ns("ns"), "a"));
  ASSERT_TRUE(job.ok());
  const JobKey key{Ns("ns"), "a"};
  ASSERT_TRUE(store_->AppendEvent(key, {"Normal", "Created", "m", absl::Now()}).ok());
  FlushEvents();

  EXPECT_EQ(store_->Delete(key, std::string("7")).code(), absl::StatusCode::kAborted);
  ASSERT_TRUE(store_->Delete(key, job->metadata().resource_version()).ok());
  EXPECT_EQ(store_->Get(key).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Delete(key, std::nullopt).code(), absl::StatusCode::kNotFound);
  // The events went with the job: none listed, or no job to list them of.
  absl::StatusOr<std::vector<JobEvent>> gone = store_->ListEvents(key);
  EXPECT_TRUE(gone.ok() ? gone->empty() : absl::IsNotFound(gone.status())) << gone.status();
  // The name can be reused, as a new job, without the old one's events.
  auto again = store_->Create(MakeJob(Ns("ns"), "a"));
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->metadata().uid(), job->metadata().uid());
  auto events = store_->ListEvents(key);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_TRUE(events->empty());
}

void JobStoreContractTest::EventsAreBoundedPerJob() {
  ASSERT_TRUE(store_->Create(MakeJob(Ns("ns"), "a")).ok());
  ASSERT_TRUE(store_->Create(MakeJob(Ns("ns"), "b")).ok());
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(store_
                    ->AppendEvent({Ns("ns"), "a"}, {"Normal", "R", absl::StrCat("e", i),
                                                    absl::FromUnixSeconds(1000 + i)})
                    .ok());
  }
  ASSERT_TRUE(store_->AppendEvent({Ns("ns"), "b"}, {"Warning", "Bad", "b0", absl::Now()}).ok());
  FlushEvents();
  auto events = store_->ListEvents({Ns("ns"), "a"});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 5u);  // at most 5 listed (Init)
  EXPECT_EQ((*events)[0].message, "e3");
  EXPECT_EQ((*events)[4].message, "e7");
  EXPECT_EQ((*events)[4].time, absl::FromUnixSeconds(1007));
  EXPECT_EQ(store_->ListEvents({Ns("ns"), "b"})->size(), 1u);
  EXPECT_EQ(store_->AppendEvent({Ns("ns"), "zzz"}, {"Normal", "R", "m", absl::Now()}).code(),
            absl::StatusCode::kNotFound);
}

void JobStoreContractTest::AppendEventsKeepsTheirOrder() {
  ASSERT_TRUE(store_->Create(MakeJob(Ns("ns"), "a")).ok());
  const std::vector<JobEvent> batch = {
      {"Normal", "First", "one", absl::FromUnixSeconds(2000)},
      {"Warning", "Second", "two", absl::FromUnixSeconds(2001)},
  };
  ASSERT_TRUE(store_->AppendEvents({Ns("ns"), "a"}, batch).ok());
  FlushEvents();
  auto events = store_->ListEvents({Ns("ns"), "a"});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].reason, "First");
  EXPECT_EQ((*events)[1].type, "Warning");
  EXPECT_EQ((*events)[1].message, "two");
  EXPECT_EQ(store_->AppendEvents({Ns("ns"), "zzz"}, batch).code(), absl::StatusCode::kNotFound);
}

}  // namespace coach::store::testing
