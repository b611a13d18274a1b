#include "operator/backend/kube/client/selector.h"

#include "gtest/gtest.h"

namespace coach::kubeclient {
namespace {

using nlohmann::json;

json Obj(json labels) {
  return {{"metadata", {{"name", "n1"}, {"labels", labels}}}, {"status", {{"phase", "Running"}}}};
}

TEST(SelectorTest, Labels) {
  json o = Obj({{"app", "x"}, {"tier", "web"}});
  auto m = [&](const std::string& s) {
    auto sel = Selector::ParseLabels(s);
    EXPECT_TRUE(sel.ok()) << s << ": " << sel.status();
    return sel.ok() && sel->Matches(o);
  };
  EXPECT_TRUE(m(""));
  EXPECT_TRUE(m("app=x"));
  EXPECT_TRUE(m("app==x,tier=web"));
  EXPECT_FALSE(m("app=y"));
  EXPECT_TRUE(m("app!=y"));
  EXPECT_TRUE(m("missing!=y"));
  EXPECT_TRUE(m("tier in (db, web)"));
  EXPECT_FALSE(m("tier notin (db,web)"));
  EXPECT_TRUE(m("app"));
  EXPECT_FALSE(m("!app"));
  EXPECT_TRUE(m("!missing"));
  for (const char* bad : {"a in (b", "a in ()", "=x", "a=b c", "a=b,,c"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(Selector::ParseLabels(bad).status())) << bad;
  }
}

TEST(SelectorTest, Fields) {
  json o = Obj(json::object());
  auto sel = Selector::ParseFields("metadata.name=n1,status.phase!=Failed");
  ASSERT_TRUE(sel.ok());
  EXPECT_TRUE(sel->Matches(o));
  EXPECT_FALSE(Selector::ParseFields("status.phase==Pending")->Matches(o));
  EXPECT_TRUE(Selector::ParseFields("spec.nodeName=")->Matches(o));
  EXPECT_TRUE(absl::IsInvalidArgument(Selector::ParseFields("status.phase").status()));
}

}  // namespace
}  // namespace coach::kubeclient
