#include "sim/algorithms.hpp"

#include <array>
#include <vector>

namespace stalesim {

namespace {

constexpr std::array<EnumName<PolicyType>, 7> kPolicyNames{{
    {PolicyType::kBsp, "bsp"},
    {PolicyType::kAsp, "asp"},
    {PolicyType::kSsp, "ssp"},
    {PolicyType::kEssp, "essp"},
    {PolicyType::kDssp, "dssp"},
    {PolicyType::kVap, "vap"},
    {PolicyType::kSoftsync, "softsync"},
}};

using C = CacheMode;
// One row per policy, in PolicyType order. Pull mode: every policy that fetches at every clock.
// softsync is one (its workers never wait and pull with each push); earlier versions kept two
// lists here, and the crash-event check left softsync out while uniform order and bfasgd let it
// in: crash events now accept softsync as they accept asp.
constexpr std::array<PolicyTraits, 7> kPolicyTraits{{
    // type               cache mode               pull   averages  worker server  fields
    {PolicyType::kBsp, C::kPullEveryIteration, true, false, 0, 0, 0},
    {PolicyType::kAsp, C::kPullEveryIteration, true, false, 0, 0, 0},
    {PolicyType::kSsp, C::kPullEveryIteration, true, false, 0, 0, kPolicyStaleness | kPolicyCache},
    {PolicyType::kEssp, C::kEager, false, false, 0, 0, kPolicyStaleness},
    {PolicyType::kDssp, C::kPullEveryIteration, true, false, 0, 0, kPolicyStaleness | kPolicyRange},
    {PolicyType::kVap, C::kPullEveryIteration, false, false, 3, 0, kPolicyValueBound},
    {PolicyType::kSoftsync, C::kPullEveryIteration, true, true, 0, 1, kPolicyN},
}};

constexpr std::array<EnumName<CacheMode>, 2> kCacheNames{{
    {CacheMode::kPullEveryIteration, "pull-every-iteration"},
    {CacheMode::kLazy, "lazy"},
}};

constexpr std::array<EnumName<RuleType>, 5> kRuleNames{{
    {RuleType::kSgd, "sgd"},
    {RuleType::kSasgd, "sasgd"},
    {RuleType::kFasgd, "fasgd"},
    {RuleType::kBfasgd, "bfasgd"},
    {RuleType::kDcasgd, "dcasgd"},
}};

// One row per rule, in RuleType order. Server vectors: fasgd's moving averages of g, g^2 and
// sigma; dcasgd's MS plus one backup per worker. Gates: bfasgd decides each fetch and push.
constexpr std::array<RuleTraits, 5> kRuleTraits{{
    // type            gates  reads  worker server per-worker fields
    {RuleType::kSgd, false, false, 0, 0, 0, 0},
    {RuleType::kSasgd, false, false, 0, 0, 0, 0},
    {RuleType::kFasgd, false, false, 0, 3, 0, kRuleFasgd},
    {RuleType::kBfasgd, true, false, 1, 3, 0, kRuleFasgd | kRuleBfasgd},
    {RuleType::kDcasgd, false, true, 0, 1, 1, kRuleDcasgd},
}};

// Each table lists its family in enum order, so traits() can index it.
template <class Table>
constexpr bool in_enum_order(const Table& t) {
  for (size_t i = 0; i < t.size(); ++i)
    if (static_cast<size_t>(t[i].type) != i) return false;
  return true;
}
static_assert(in_enum_order(kPolicyTraits));
static_assert(in_enum_order(kRuleTraits));

constexpr std::array<EnumName<Order>, 2> kOrderNames{
    {{Order::kTimed, "timed"}, {Order::kUniform, "uniform"}}};

std::string in_words(const std::vector<std::string_view>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace

std::span<const EnumName<PolicyType>> enum_names(PolicyType) { return kPolicyNames; }
std::span<const EnumName<CacheMode>> enum_names(CacheMode) { return kCacheNames; }
std::span<const EnumName<RuleType>> enum_names(RuleType) { return kRuleNames; }
std::span<const EnumName<Order>> enum_names(Order) { return kOrderNames; }

const PolicyTraits& traits(PolicyType t) { return kPolicyTraits[static_cast<size_t>(t)]; }
const RuleTraits& traits(RuleType t) { return kRuleTraits[static_cast<size_t>(t)]; }

std::string policies_with(uint32_t field) {
  std::vector<std::string_view> names;
  for (const auto& t : kPolicyTraits)
    if ((t.fields & field) == field) names.push_back(to_string(t.type));
  return in_words(names);
}

std::string rules_with(uint32_t field) {
  std::vector<std::string_view> names;
  for (const auto& t : kRuleTraits)
    if ((t.fields & field) == field) names.push_back(to_string(t.type));
  return in_words(names);
}

}  // namespace stalesim
