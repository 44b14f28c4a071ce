#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "sim/policies/sync_policy.hpp"

using namespace stalesim;

TEST_CASE("the clock table keeps min and max right under random pushes") {
  Rng r(9);
  ClockTable t(7);
  std::vector<int64_t> ref(7, 0);
  for (int i = 0; i < 5000; ++i) {
    const auto w = static_cast<int32_t>(r.below(7));
    const int64_t old_min = *std::min_element(ref.begin(), ref.end());
    ++ref[static_cast<size_t>(w)];
    const bool rose = t.advance(w);
    const int64_t new_min = *std::min_element(ref.begin(), ref.end());
    REQUIRE(rose == (new_min > old_min));
    REQUIRE(t.min_clock() == new_min);
    REQUIRE(t.max_clock() == *std::max_element(ref.begin(), ref.end()));
    REQUIRE(t.clock(w) == ref[static_cast<size_t>(w)]);
    REQUIRE(t.clock(t.slowest()) == new_min);
  }
}

TEST_CASE("BSP lets a worker start only when every worker has pushed its clock") {
  ClockTable t(3);
  auto p = make_policy(PolicySpec{PolicyType::kBsp, 0}, 3);
  CHECK(p->may_start(0, t));
  t.advance(0);
  CHECK_FALSE(p->may_start(0, t));
  t.advance(1);
  CHECK_FALSE(p->may_start(0, t));
  CHECK(p->may_start(2, t));
  t.advance(2);
  CHECK(p->may_start(0, t));
  CHECK(p->clock_bound() == 0);
}

TEST_CASE("SSP lets a worker run at most s clocks ahead of the slowest") {
  for (int64_t s : {0, 1, 3, 8}) {
    ClockTable t(2);
    auto p = make_policy(PolicySpec{PolicyType::kSsp, s}, 3);
    int64_t started = 0;
    while (p->may_start(0, t)) {
      t.advance(0);
      ++started;
    }
    CHECK(started == s + 1);  // clocks 0..s may start while worker 1 is at clock 0
    t.advance(1);
    CHECK(p->may_start(0, t));
    CHECK(p->clock_bound() == s);
  }
}

TEST_CASE("ASP never blocks and has no bound") {
  ClockTable t(2);
  auto p = make_policy(PolicySpec{PolicyType::kAsp, 0}, 3);
  for (int i = 0; i < 1000; ++i) {
    REQUIRE(p->may_start(0, t));
    t.advance(0);
  }
  CHECK_FALSE(p->clock_bound().has_value());
}

TEST_CASE("every policy type has one name, a traits row and a policy that calls itself by that name") {
  for (const auto& n : enum_names(PolicyType{})) {
    PolicySpec spec;
    spec.type = n.value;
    spec.value_bound = 1.0;
    CHECK(enum_from_name<PolicyType>(n.name) == n.value);
    CHECK(traits(n.value).type == n.value);
    CHECK(make_policy(spec, 3)->name() == n.name);
  }
  CHECK_FALSE(enum_from_name<PolicyType>("nope").has_value());  // the loader's "not one of" (test_scenario)
}

// Each registration row (issue 47 point 4) is a name users can write, so each is documented: the
// policies as `"NAME"` in REFERENCE.md's "Policies" and "Learning rules" sections (softsync is
// described among the rules), the rules as **`NAME`** items of "Learning rules". A row added
// without its docs fails here.
TEST_CASE("every registered policy and learning rule is documented in REFERENCE.md") {
  std::ifstream in(std::string(STALESIM_SOURCE_DIR) + "/REFERENCE.md");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t policies = doc.find("\n### Policies\n");
  const size_t rules = doc.find("\n### Learning rules\n");
  REQUIRE(policies != std::string::npos);
  REQUIRE(rules != std::string::npos);
  REQUIRE(rules > policies);
  const size_t rules_end = doc.find("\n### ", rules + 1);
  const std::string both = doc.substr(policies, rules_end - policies);
  const std::string rules_text = doc.substr(rules, rules_end - rules);
  for (const auto& n : enum_names(PolicyType{})) {
    INFO("policy ", n.name);
    CHECK(both.find("\"" + std::string(n.name) + "\"") != std::string::npos);
  }
  for (const auto& n : enum_names(RuleType{})) {
    INFO("rule ", n.name);
    CHECK(rules_text.find("**`" + std::string(n.name) + "`**") != std::string::npos);
  }
}

TEST_CASE("pull mode comes from the traits: softsync pulls every clock, lazy ssp, essp and vap do not") {
  const auto pulls = [](PolicyType t, CacheMode cache = CacheMode::kPullEveryIteration) {
    PolicySpec spec;
    spec.type = t;
    spec.cache = cache;
    return spec.pulls_every_clock();
  };
  for (const auto t :
       {PolicyType::kBsp, PolicyType::kAsp, PolicyType::kSsp, PolicyType::kDssp, PolicyType::kSoftsync})
    CHECK(pulls(t));
  CHECK_FALSE(pulls(PolicyType::kSsp, CacheMode::kLazy));
  CHECK_FALSE(pulls(PolicyType::kEssp));
  CHECK_FALSE(pulls(PolicyType::kVap));
  // policy.cache applies to ssp only: another policy's cache field does not change its mode.
  CHECK(pulls(PolicyType::kAsp, CacheMode::kLazy));
}
