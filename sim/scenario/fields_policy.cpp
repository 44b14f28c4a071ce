// The field table's rows for the synchronization policy (sim/scenario/fields.hpp): its type and
// each policy's own parameters.
#include <string>
#include <vector>

#include "sim/scenario/table.hpp"

namespace stalesim::scenario_detail {

// policy: the type, staleness, dssp's range and grant, the cache, softsync's n, vap's bound.
std::vector<FieldInfo> policy_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/policy", .type = F::kObject, .doc = "When a worker may start its next clock."},
      {.path = "/policy/type",
       .type = F::kString,
       .allowed = enum_name_list<PolicyType>(),
       .default_value = to_json_value(d.policy.type),
       .doc = "Bulk synchronous, asynchronous, stale synchronous, eager SSP, dynamic SSP, "
              "value-bounded parallel, or n-softsync on the parameter server; or no server: ring "
              "all-reduce, or hierarchical all-reduce (racks only), BSP's math with the gradients "
              "summed among the workers (see REFERENCE.md, Policies).",
       .set = set_m<&Scenario::policy, &PolicySpec::type>,
       .get = get_m<&Scenario::policy, &PolicySpec::type>},
      {.path = "/policy/staleness",
       .type = F::kInteger,
       .unit = "clocks",
       .minimum = 0,
       .maximum = kMaxInt53,
       .maximum_is_limit = true,
       .default_value = d.policy.staleness,
       .applies_to = policies_with(kPolicyStaleness),
       .applies_key = "/policy/type",
       .doc = "SSP/ESSP bound s (a worker runs at most s clocks ahead of the slowest); DSSP's "
              "lower bound s_L. 0 for the other policies.",
       .applies = [](const Scenario& s) { return s.policy.uses_staleness(); },
       .set = set_m<&Scenario::policy, &PolicySpec::staleness>,
       .get = get_m<&Scenario::policy, &PolicySpec::staleness>,
       .resolve =
           [](Scenario& s) { s.policy.staleness = s.policy.uses_staleness() ? s.policy.staleness : 0; }},
      {.path = "/policy/range",
       .type = F::kInteger,
       .unit = "clocks",
       .minimum = 0,
       .maximum = 1000000,
       .default_value = d.policy.range,
       .applies_to = policies_with(kPolicyRange),
       .applies_key = "/policy/type",
       .doc = "DSSP's r_max: the most extra clocks the synchronization controller grants beyond s_L.",
       .applies = [](const Scenario& s) { return policy_has(s, kPolicyRange); },
       .set = set_m<&Scenario::policy, &PolicySpec::range>,
       .get = get_m<&Scenario::policy, &PolicySpec::range>},
      {.path = "/policy/dssp_grant",
       .type = F::kString,
       .allowed = enum_name_list<DsspGrant>(),
       .default_value = to_json_value(d.policy.dssp_grant),
       .applies_to = policies_with(kPolicyRange),
       .applies_key = "/policy/type",
       .doc = "bounded: a grant counts as the first extra clock (gap <= s_L + r_max); literal: the "
              "paper's literal reading (gap <= s_L + r_max + 1); unbounded: the paper's pseudo-code "
              "read literally (the controller asked again after each grant, no cumulative cap): gives up "
              "SSP's staleness bound.",
       .applies = [](const Scenario& s) { return policy_has(s, kPolicyRange); },
       .set = set_m<&Scenario::policy, &PolicySpec::dssp_grant>,
       .get = get_m<&Scenario::policy, &PolicySpec::dssp_grant>},
      {.path = "/policy/cache",
       .type = F::kString,
       .allowed = enum_name_list<CacheMode>(),
       .default_value = to_json_value(d.policy.cache),
       .applies_to = policies_with(kPolicyCache),
       .applies_key = "/policy/type",
       .doc = "pull-every-iteration: fetch parameters before every clock (MXNet style); lazy: read "
              "the cached copy while it is fresh enough and fetch only when not (Bosen).",
       .applies = [](const Scenario& s) { return policy_has(s, kPolicyCache); },
       .set = set_m<&Scenario::policy, &PolicySpec::cache>,
       .get = get_m<&Scenario::policy, &PolicySpec::cache>},
      {.path = "/policy/n",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = 1000000,
       .default_value = d.policy.n,
       .applies_to = policies_with(kPolicyN),
       .applies_key = "/policy/type",
       .doc = "n-softsync: the server applies the mean of every floor(workers / n) gradients; "
              "1 <= n <= workers.",
       .applies = [](const Scenario& s) { return policy_has(s, kPolicyN); },
       .set = set_m<&Scenario::policy, &PolicySpec::n>,
       .get = get_m<&Scenario::policy, &PolicySpec::n>},
      {.path = "/policy/value_bound",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .required = true,
       .applies_to = policies_with(kPolicyValueBound),
       .applies_key = "/policy/type",
       .doc = "VAP's v: the infinity norm a worker's updates not yet seen by every worker may reach.",
       .applies = [](const Scenario& s) { return policy_has(s, kPolicyValueBound); },
       .set = set_m<&Scenario::policy, &PolicySpec::value_bound>,
       .get = get_m<&Scenario::policy, &PolicySpec::value_bound>},
  };
}

}  // namespace stalesim::scenario_detail
