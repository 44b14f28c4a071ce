#include "sim/rules/learning_rule.hpp"

#include <array>
#include <stdexcept>

#include "sim/rules/bfasgd.hpp"
#include "sim/rules/dcasgd.hpp"
#include "sim/rules/fasgd.hpp"
#include "sim/rules/sasgd.hpp"
#include "sim/rules/sgd.hpp"

namespace stalesim {

// ---- Registered rules: names, traits (sim/algorithms.hpp) and make_rule -----------------------

namespace {

constexpr auto kRuleNames = std::to_array<EnumName<RuleType>>({
    {RuleType::kSgd, "sgd"},
    {RuleType::kSasgd, "sasgd"},
    {RuleType::kFasgd, "fasgd"},
    {RuleType::kBfasgd, "bfasgd"},
    {RuleType::kDcasgd, "dcasgd"},
});

// One row per rule, in RuleType order. Server vectors: fasgd's moving averages of g, g^2 and
// sigma; dcasgd's MS plus one backup per worker. Gates: bfasgd decides each fetch and push.
constexpr auto kRuleTraits = std::to_array<RuleTraits>({
    // type            gates  reads  worker server per-worker fields
    {RuleType::kSgd, false, false, 0, 0, 0, 0},
    {RuleType::kSasgd, false, false, 0, 0, 0, 0},
    {RuleType::kFasgd, false, false, 0, 3, 0, kRuleFasgd},
    {RuleType::kBfasgd, true, false, 1, 3, 0, kRuleFasgd | kRuleBfasgd},
    {RuleType::kDcasgd, false, true, 0, 1, 1, kRuleDcasgd},
});

static_assert(in_enum_order(kRuleTraits));

}  // namespace

std::span<const EnumName<RuleType>> enum_names(RuleType) { return kRuleNames; }
const RuleTraits& traits(RuleType t) { return kRuleTraits[static_cast<size_t>(t)]; }

std::unique_ptr<LearningRule> make_rule(const OptimizerSpec& spec, int32_t workers, int64_t parameters) {
  switch (spec.rule) {
    case RuleType::kSgd:
      return std::make_unique<SgdRule>(spec.lr, spec.aggregate, workers);
    case RuleType::kSasgd:
      return std::make_unique<SasgdRule>(spec.lr, spec.aggregate, workers);
    case RuleType::kFasgd:
      return std::make_unique<FasgdRule>(spec, parameters);
    case RuleType::kBfasgd:
      return std::make_unique<BfasgdRule>(spec, parameters);
    case RuleType::kDcasgd:
      return std::make_unique<DcasgdRule>(spec, parameters);
  }
  throw std::invalid_argument("unknown learning rule");
}

}  // namespace stalesim
