#include "operator/backend/local/testing/job_store_contract.h"

#include <cstdlib>
#include <set>

#include "absl/strings/str_cat.h"
#include "operator/backend/local/fs_util.h"

namespace coach::backend::local::testing {

void JobStoreContractTest::SetUp() {
  static int counter = 0;
  const char* tmp = getenv("TEST_TMPDIR");
  dir_ = absl::StrCat(tmp ? tmp : "/tmp", "/contract-", GetParam().name, "-", ++counter);
  ASSERT_TRUE(MakeDirs(dir_).ok());
  store_ = GetParam().make(dir_);
  ASSERT_NE(store_, nullptr);
}

namespace {

using api::v1::TrainingJob;

TEST_P(JobStoreContractTest, CreateAssignsIdentityAndGetReturnsIt) {
  auto created = store_->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(created.ok()) << created.status();
  const auto& md = created->metadata();
  EXPECT_EQ(md.uid().size(), 36u);
  EXPECT_EQ(md.uid()[14], '4');  // UUID version 4
  EXPECT_TRUE(std::string("89ab").find(md.uid()[19]) != std::string::npos);
  EXPECT_EQ(md.resource_version(), "1");
  EXPECT_EQ(md.generation(), 1);
  EXPECT_GT(md.creation_timestamp().seconds(), 0);
  auto got = store_->Get({"ns", "a"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->SerializeAsString(), created->SerializeAsString());
  EXPECT_EQ(got->spec().replica_specs().at("Worker").replicas(), 2);

  auto other = store_->Create(MakeJob("ns", "b"));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->metadata().uid(), md.uid());
}

TEST_P(JobStoreContractTest, CreateDuplicateIsAlreadyExists) {
  ASSERT_TRUE(store_->Create(MakeJob("ns", "a")).ok());
  EXPECT_EQ(store_->Create(MakeJob("ns", "a")).status().code(),
            absl::StatusCode::kAlreadyExists);
  // Same name in another namespace is another job.
  EXPECT_TRUE(store_->Create(MakeJob("other", "a")).ok());
}

TEST_P(JobStoreContractTest, CreateRequiresNameAndNamespace) {
  EXPECT_EQ(store_->Create(MakeJob("", "a")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Create(MakeJob("ns", "")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(JobStoreContractTest, GetMissingIsNotFound) {
  EXPECT_EQ(store_->Get({"ns", "nope"}).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(JobStoreContractTest, ListIsOrderedAndFiltersNamespace) {
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{
           {"b", "y"}, {"a", "z"}, {"b", "x"}, {"a", "a"}}) {
    ASSERT_TRUE(store_->Create(MakeJob(ns, name)).ok());
  }
  auto all = store_->List({});
  ASSERT_TRUE(all.ok());
  std::vector<std::string> names;
  for (const auto& j : all->jobs) {
    names.push_back(j.metadata().namespace_() + "/" + j.metadata().name());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a/a", "a/z", "b/x", "b/y"}));
  EXPECT_EQ(all->next_page_token, "");
  ListOptions only_b;
  only_b.namespace_ = "b";
  auto b = store_->List(only_b);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->jobs.size(), 2u);
  EXPECT_EQ(b->jobs[0].metadata().name(), "x");
}

TEST_P(JobStoreContractTest, ListPagesVisitEveryJobOnce) {
  std::set<std::string> want;
  for (int i = 0; i < 7; ++i) {
    std::string name = absl::StrCat("job-", i);
    ASSERT_TRUE(store_->Create(MakeJob(i % 2 ? "odd" : "even", name)).ok());
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

TEST_P(JobStoreContractTest, ListRejectsBadTokensAndSizes) {
  ListOptions opts;
  opts.page_token = "!!not a token!!";
  EXPECT_EQ(store_->List(opts).status().code(), absl::StatusCode::kInvalidArgument);
  opts = ListOptions();
  opts.page_size = -1;
  EXPECT_EQ(store_->List(opts).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(JobStoreContractTest, ListLabelSelectorFillsPagesWithMatchesOnly) {
  for (int i = 0; i < 6; ++i) {
    TrainingJob job = MakeJob("ns", absl::StrCat("j", i));
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

TEST_P(JobStoreContractTest, UpdateUsesOptimisticConcurrency) {
  auto v1 = store_->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(v1.ok());
  TrainingJob edit = *v1;
  (*edit.mutable_metadata()->mutable_labels())["k"] = "v";
  auto v2 = store_->Update(edit);
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->metadata().resource_version(), "2");
  EXPECT_EQ(v2->metadata().generation(), 1);  // Metadata only: same generation.
  EXPECT_EQ(v2->metadata().uid(), v1->metadata().uid());
  EXPECT_EQ(v2->metadata().labels().at("k"), "v");

  // A writer still holding version 1 loses.
  TrainingJob stale = *v1;
  (*stale.mutable_spec()->mutable_replica_specs())["Worker"].set_replicas(9);
  EXPECT_EQ(store_->Update(stale).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(store_->Get({"ns", "a"})->spec().replica_specs().at("Worker").replicas(), 2);

  TrainingJob spec_edit = *v2;
  (*spec_edit.mutable_spec()->mutable_replica_specs())["Worker"].set_replicas(4);
  // Update never writes status nor identity.
  spec_edit.mutable_status()->add_conditions()->set_type("Succeeded");
  spec_edit.mutable_metadata()->set_uid("forged");
  auto v3 = store_->Update(spec_edit);
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(v3->metadata().resource_version(), "3");
  EXPECT_EQ(v3->metadata().generation(), 2);
  EXPECT_EQ(v3->metadata().uid(), v1->metadata().uid());
  EXPECT_EQ(v3->status().conditions_size(), 0);
  EXPECT_EQ(store_->Get({"ns", "a"})->SerializeAsString(), v3->SerializeAsString());

  TrainingJob missing_rv = *v3;
  missing_rv.mutable_metadata()->clear_resource_version();
  EXPECT_EQ(store_->Update(missing_rv).status().code(), absl::StatusCode::kInvalidArgument);
  TrainingJob ghost = MakeJob("ns", "ghost");
  ghost.mutable_metadata()->set_resource_version("1");
  EXPECT_EQ(store_->Update(ghost).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(JobStoreContractTest, UpdateStatusWritesOnlyStatus) {
  auto v1 = store_->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(v1.ok());
  TrainingJob s = *v1;
  auto* c = s.mutable_status()->add_conditions();
  c->set_type("Running");
  c->set_status("True");
  (*s.mutable_spec()->mutable_replica_specs())["Worker"].set_replicas(100);
  auto v2 = store_->UpdateStatus(s);
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->metadata().resource_version(), "2");
  EXPECT_EQ(v2->status().conditions(0).type(), "Running");
  EXPECT_EQ(v2->spec().replica_specs().at("Worker").replicas(), 2);
  EXPECT_EQ(store_->UpdateStatus(s).status().code(), absl::StatusCode::kAborted);
  // Spec updates keep the status.
  auto v3 = store_->Update(*v2);
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(v3->status().conditions_size(), 1);
}

TEST_P(JobStoreContractTest, DeleteCascadesAndChecksVersion) {
  auto job = store_->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(job.ok());
  ReplicaRecord r;
  r.job = {"ns", "a"};
  r.name = "a-worker-0";
  ASSERT_TRUE(store_->PutReplica(r).ok());
  ASSERT_TRUE(store_->AppendEvent({"ns", "a"}, {"Normal", "Created", "m", absl::Now()}).ok());
  ASSERT_TRUE(store_->ReservePorts({{45001, {"ns", "a"}, "a-worker-0", "master"}}).ok());

  EXPECT_EQ(store_->Delete({"ns", "a"}, std::string("7")).code(), absl::StatusCode::kAborted);
  ASSERT_TRUE(store_->Delete({"ns", "a"}, std::string("1")).ok());
  EXPECT_EQ(store_->Get({"ns", "a"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Delete({"ns", "a"}, std::nullopt).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->ListReplicas({"ns", "a"})->empty());
  EXPECT_TRUE(store_->ListEvents({"ns", "a"})->empty());
  EXPECT_TRUE(store_->ListPortReservations()->empty());
  // The name can be reused, as a new job.
  auto again = store_->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->metadata().uid(), job->metadata().uid());
  EXPECT_TRUE(store_->ListReplicas({"ns", "a"})->empty());
}

TEST_P(JobStoreContractTest, ReplicaRecordsRoundTrip) {
  ASSERT_TRUE(store_->Create(MakeJob("ns", "a")).ok());
  ASSERT_TRUE(store_->Create(MakeJob("ns", "b")).ok());
  ReplicaRecord r;
  r.job = {"ns", "a"};
  r.name = "a-worker-1";
  r.replica_type = "Worker";
  r.index = 1;
  r.process = {1234, 1235, 987654321012ull, "/state/replicas/ns/a/a-worker-1"};
  r.log_path = "/state/logs/ns/a/a-worker-1.log";
  r.phase = model::PodPhase::kFailed;
  r.exit_code = 3;
  r.restart_count = 2;
  r.ports = {{"master", 40001}, {"rdzv", 40002}};
  r.gpus = {2, 3};
  r.started_at = absl::FromUnixMicros(1700000000123456);
  r.finished_at = absl::FromUnixMicros(1700000005000000);
  r.message = "exit 3";
  ASSERT_TRUE(store_->PutReplica(r).ok());
  ReplicaRecord r0;
  r0.job = {"ns", "a"};
  r0.name = "a-worker-0";
  ASSERT_TRUE(store_->PutReplica(r0).ok());
  ReplicaRecord rb;
  rb.job = {"ns", "b"};
  rb.name = "b-worker-0";
  ASSERT_TRUE(store_->PutReplica(rb).ok());

  auto list = store_->ListReplicas({"ns", "a"});
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "a-worker-0");
  EXPECT_FALSE((*list)[0].exit_code.has_value());
  EXPECT_EQ((*list)[0].started_at, absl::InfinitePast());
  const ReplicaRecord& got = (*list)[1];
  EXPECT_EQ(got.job, r.job);
  EXPECT_EQ(got.replica_type, "Worker");
  EXPECT_EQ(got.index, 1);
  EXPECT_EQ(got.process, r.process);
  EXPECT_EQ(got.log_path, r.log_path);
  EXPECT_EQ(got.phase, model::PodPhase::kFailed);
  EXPECT_EQ(got.exit_code, 3);
  EXPECT_EQ(got.restart_count, 2);
  EXPECT_EQ(got.ports, r.ports);
  EXPECT_EQ(got.gpus, r.gpus);
  EXPECT_EQ(got.started_at, r.started_at);
  EXPECT_EQ(got.finished_at, r.finished_at);
  EXPECT_EQ(got.message, "exit 3");

  // Put replaces.
  r.restart_count = 3;
  r.exit_code.reset();
  ASSERT_TRUE(store_->PutReplica(r).ok());
  list = store_->ListReplicas({"ns", "a"});
  EXPECT_EQ((*list)[1].restart_count, 3);
  EXPECT_FALSE((*list)[1].exit_code.has_value());

  EXPECT_EQ(store_->ListAllReplicas()->size(), 3u);
  ASSERT_TRUE(store_->DeleteReplica({"ns", "a"}, "a-worker-0").ok());
  EXPECT_EQ(store_->DeleteReplica({"ns", "a"}, "a-worker-0").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->ListReplicas({"ns", "a"})->size(), 1u);

  ReplicaRecord orphan;
  orphan.job = {"ns", "nojob"};
  orphan.name = "x";
  EXPECT_EQ(store_->PutReplica(orphan).code(), absl::StatusCode::kNotFound);
}

TEST_P(JobStoreContractTest, EventsAreBoundedPerJob) {
  ASSERT_TRUE(store_->Create(MakeJob("ns", "a")).ok());
  ASSERT_TRUE(store_->Create(MakeJob("ns", "b")).ok());
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(store_->AppendEvent({"ns", "a"}, {"Normal", "R", absl::StrCat("e", i),
                                                  absl::FromUnixSeconds(1000 + i)})
                    .ok());
  }
  ASSERT_TRUE(store_->AppendEvent({"ns", "b"}, {"Warning", "Bad", "b0", absl::Now()}).ok());
  auto events = store_->ListEvents({"ns", "a"});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 5u);  // max_events_per_job == 5
  EXPECT_EQ((*events)[0].message, "e3");
  EXPECT_EQ((*events)[4].message, "e7");
  EXPECT_EQ((*events)[4].time, absl::FromUnixSeconds(1007));
  EXPECT_EQ(store_->ListEvents({"ns", "b"})->size(), 1u);
  EXPECT_EQ(store_->AppendEvent({"ns", "zzz"}, {"Normal", "R", "m", absl::Now()}).code(),
            absl::StatusCode::kNotFound);
}

TEST_P(JobStoreContractTest, PortReservationsAreExclusiveAndAtomic) {
  ASSERT_TRUE(store_->Create(MakeJob("ns", "a")).ok());
  ASSERT_TRUE(store_->Create(MakeJob("ns", "b")).ok());
  ASSERT_TRUE(store_->ReservePorts({{41000, {"ns", "a"}, "a-0", "master"},
                                    {41001, {"ns", "a"}, "a-0", "rdzv"}})
                  .ok());
  // 41002 is free but 41001 is taken: nothing is reserved.
  EXPECT_EQ(store_->ReservePorts({{41002, {"ns", "b"}, "b-0", "master"},
                                  {41001, {"ns", "b"}, "b-0", "rdzv"}})
                .code(),
            absl::StatusCode::kAlreadyExists);
  auto all = store_->ListPortReservations();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].port, 41000);
  EXPECT_EQ((*all)[1].port_name, "rdzv");
  EXPECT_EQ((*all)[1].job, (JobKey{"ns", "a"}));
  EXPECT_EQ(store_->ReservePorts({{41005, {"ns", "none"}, "x", "m"}}).code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->ReleasePorts({"ns", "a"}).ok());
  EXPECT_TRUE(store_->ListPortReservations()->empty());
  EXPECT_TRUE(store_->ReservePorts({{41001, {"ns", "b"}, "b-0", "rdzv"}}).ok());
}

}  // namespace
}  // namespace coach::backend::local::testing
