#include "sim/algorithms.hpp"

// The cache modes' and orders' names, and the family lists in words. The policies' names and
// traits are in sim/policies/sync_policy.cpp beside make_policy(), the rules' in
// sim/rules/learning_rule.cpp beside make_rule(), so that each is registered in one file.

#include <array>
#include <vector>

namespace stalesim {

namespace {

constexpr std::array<EnumName<CacheMode>, 2> kCacheNames{{
    {CacheMode::kPullEveryIteration, "pull-every-iteration"},
    {CacheMode::kLazy, "lazy"},
}};

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

// The names of a family's members whose traits have all of `field`'s bits, in enum order.
template <class Type>
std::string with_fields(uint32_t field) {
  std::vector<std::string_view> names;
  for (const auto& [type, name] : enum_names(Type{}))
    if ((traits(type).fields & field) == field) names.push_back(name);
  return in_words(names);
}

}  // namespace

std::span<const EnumName<CacheMode>> enum_names(CacheMode) { return kCacheNames; }
std::span<const EnumName<Order>> enum_names(Order) { return kOrderNames; }

std::string policies_with(uint32_t field) { return with_fields<PolicyType>(field); }
std::string rules_with(uint32_t field) { return with_fields<RuleType>(field); }

}  // namespace stalesim
