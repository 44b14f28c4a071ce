#include "sim/algorithms.hpp"

// The rules', cache modes' and orders' names and traits. The policies' are in
// sim/policies/sync_policy.cpp, beside make_policy(), so that a policy is registered in one file.

#include <array>
#include <vector>

namespace stalesim {

namespace {

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

std::span<const EnumName<CacheMode>> enum_names(CacheMode) { return kCacheNames; }
std::span<const EnumName<RuleType>> enum_names(RuleType) { return kRuleNames; }
std::span<const EnumName<Order>> enum_names(Order) { return kOrderNames; }

const RuleTraits& traits(RuleType t) { return kRuleTraits[static_cast<size_t>(t)]; }

std::string policies_with(uint32_t field) {
  std::vector<std::string_view> names;
  for (const auto& [type, name] : enum_names(PolicyType{}))
    if ((traits(type).fields & field) == field) names.push_back(name);
  return in_words(names);
}

std::string rules_with(uint32_t field) {
  std::vector<std::string_view> names;
  for (const auto& t : kRuleTraits)
    if ((t.fields & field) == field) names.push_back(to_string(t.type));
  return in_words(names);
}

}  // namespace stalesim
