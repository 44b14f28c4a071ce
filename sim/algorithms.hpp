#pragma once
// The algorithm families a scenario names, as enum classes, and one traits table per family.
// The scenario loader parses each name once (sim/scenario/); everything after it switches on
// the enum or reads the traits, never compares names. tests/layers/check_layers.sh fails the build's
// tests when an algorithm name is compared as a string outside the loader.
//
// Each policy and each rule is registered by one row (PolicyTraits, RuleTraits below): its name,
// what it needs of the rest of the run, its fields and its factory; the names tables
// (enum_names), make_policy and make_rule, and a policy's name() are read from the rows.
// Adding a policy: a line in STALESIM_POLICIES here, its own header in sim/policies/, and its row
// in sim/policies/sync_policy.cpp; a policy with its own data flow names its protocol on that line
// and adds the protocol's file in sim/worker/. Adding a rule: a value here,
// its own header (and .cpp) in sim/rules/, and its row in sim/rules/learning_rule.cpp.
// CONTRIBUTING.md shows a whole example of each.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/enum_names.hpp"

namespace stalesim {

// ---- Policies (policy.type): when a worker may start its next clock -------------------------

// One line per policy, in the order of its registration rows: its value and its worker protocol,
// the data flow between its workers and the server (sim/worker/protocol.hpp). `ps` is the
// parameter server's own flows, chosen by the cache mode and cluster.order; a policy with its own
// flow names it here, and sim/worker/ defines its factory make_NAME_protocol (make_protocol()
// calls it). The policy layer so never calls the worker layer, which sits above it. The
// backslashes stand where a new line does not move them (clang-format would align them to the
// longest line).
// clang-format off
#define STALESIM_POLICIES(X)                \
  X(kBsp, ps)                               \
  X(kAsp, ps)                               \
  X(kSsp, ps)                               \
  X(kEssp, ps)                              \
  X(kDssp, ps)                              \
  X(kVap, vap)                              \
  X(kSoftsync, ps)                          \
  X(kAllreduceRing, allreduce)              \
  X(kAllreduceHierarchical, allreduce)
// clang-format on

enum class PolicyType {
#define STALESIM_POLICY_VALUE(value, protocol) value,
  STALESIM_POLICIES(STALESIM_POLICY_VALUE)
#undef STALESIM_POLICY_VALUE
};
std::span<const EnumName<PolicyType>> enum_names(PolicyType);  // sim/policies/sync_policy.cpp

// All-reduce instead of a parameter server (sim/policies/allreduce.hpp): the collective's shape.
enum class AllReduce { kRing, kHierarchical };

// How workers get parameters (DESIGN.md section 6). policy.cache names the first two (ssp only).
enum class CacheMode {
  kPullEveryIteration,  // each clock starts with a fetch that rides on the previous push (MXNet)
  kLazy,                // read the cached copy while its server clock >= c - s; fetch only when not (Bosen)
  kEager,               // the server pushes parameters to every worker whenever its clock advances (ESSP)
};
std::span<const EnumName<CacheMode>> enum_names(CacheMode);  // kEager has no name: not a setting

// The policy.* fields besides type, as bits of PolicyTraits::fields.
enum PolicyField : uint32_t {
  kPolicyStaleness = 1u << 0,   // policy.staleness
  kPolicyRange = 1u << 1,       // policy.range, policy.dssp_grant
  kPolicyCache = 1u << 2,       // policy.cache
  kPolicyValueBound = 1u << 3,  // policy.value_bound
  kPolicyN = 1u << 4,           // policy.n
};

class SyncPolicy;
struct PolicySpec;
// Builds the policy a spec names; `workers` sizes per-worker state.
using PolicyFactory = std::unique_ptr<SyncPolicy> (*)(const PolicySpec& spec, int32_t workers);

// A policy's registration row (sim/policies/sync_policy.cpp): one per policy, in PolicyType order.
struct PolicyTraits {
  PolicyType type;
  std::string_view name;  // policy.type's value in scenario files
  // The cache mode of the policy; for a policy with kPolicyCache, policy.cache chooses instead.
  CacheMode cache = CacheMode::kPullEveryIteration;
  // Workers fetch the parameters at every clock (pull mode) and never hold an update back:
  // what uniform order, bfasgd and crash events need. False for a cache mode other than
  // pull-every-iteration (see pulls_every_clock) and for vap, which holds updates.
  bool pull_mode = false;
  // The server averages a batch of pushes itself (softsync): optimizer.aggregate does not apply.
  bool averages_pushes = false;
  // Parameter-sized vectors the policy keeps per worker (vap: the copy it checks reads against,
  // the in-transit sum and the held update) and at the server (softsync: the running sum), for
  // the memory estimate. Cache modes count their own (sim/estimate/memory_estimate.cpp).
  double worker_vectors = 0;
  double server_vectors = 0;
  uint32_t fields = 0;           // PolicyField bits: the policy.* fields that apply
  PolicyFactory make = nullptr;  // make_policy() calls it
};
const PolicyTraits& traits(PolicyType t);  // defined in sim/policies/sync_policy.cpp

// ---- Learning rules (optimizer.rule): how far a step goes ------------------------------------

enum class RuleType { kSgd, kSasgd, kFasgd, kBfasgd, kDcasgd };
std::span<const EnumName<RuleType>> enum_names(RuleType);  // sim/rules/learning_rule.cpp

enum RuleField : uint32_t {
  kRuleFasgd = 1u << 0,   // optimizer.gamma, beta, epsilon, variant
  kRuleBfasgd = 1u << 1,  // optimizer.c_fetch, c_push
  kRuleDcasgd = 1u << 2,  // optimizer.lambda, adaptive, ms_decay
};

class LearningRule;
struct OptimizerSpec;
// Builds the rule a spec names for `workers` workers and a model of `parameters` parameters.
using RuleFactory = std::unique_ptr<LearningRule> (*)(const OptimizerSpec& spec, int32_t workers,
                                                      int64_t parameters);

// A rule's registration row (sim/rules/learning_rule.cpp): one per rule, in RuleType order.
struct RuleTraits {
  RuleType type;
  std::string_view name;  // optimizer.rule's value in scenario files
  // The rule decides each fetch and push itself (a gate): needs a pull-mode policy.
  bool gates_transfers = false;
  // The rule reads the parameters a gradient was computed at (a snapshot per worker): workers
  // cannot drop their copy early by deferring the gradient.
  bool reads_params = false;
  // Parameter-sized vectors the rule keeps, for the memory estimate: per worker (bfasgd: the
  // copy it last fetched), at the server, and at the server per worker (dcasgd's backups).
  double worker_vectors = 0;
  double server_vectors = 0;
  double server_vectors_per_worker = 0;
  uint32_t fields = 0;         // RuleField bits
  RuleFactory make = nullptr;  // make_rule() calls it
};
const RuleTraits& traits(RuleType t);  // defined in sim/rules/learning_rule.cpp

// ---- Cluster order (cluster.order) ------------------------------------------------------------

enum class Order { kTimed, kUniform };
std::span<const EnumName<Order>> enum_names(Order);

// ---- Names ------------------------------------------------------------------------------------

// Whether a traits table lists its family in enum order, so that traits() can index it.
template <class Table>
constexpr bool in_enum_order(const Table& t) {
  for (size_t i = 0; i < t.size(); ++i)
    if (static_cast<size_t>(t[i].type) != i) return false;
  return true;
}

// The names table (enum_names) of a family, read from its registration rows.
template <class Row, size_t N>
constexpr auto names_of(const std::array<Row, N>& rows) {
  std::array<EnumName<decltype(Row::type)>, N> names{};
  for (size_t i = 0; i < N; ++i) names[i] = {rows[i].type, rows[i].name};
  return names;
}

inline std::string_view to_string(PolicyType t) { return enum_name(t); }
inline std::string_view to_string(CacheMode c) { return enum_name(c); }
inline std::string_view to_string(RuleType t) { return enum_name(t); }
inline std::string_view to_string(Order o) { return enum_name(o); }

// "ssp, essp and dssp": the policies whose PolicyTraits::fields have all of `field`'s bits, in
// words for messages and the field reference. The same for rules.
std::string policies_with(uint32_t field);
std::string rules_with(uint32_t field);

}  // namespace stalesim
