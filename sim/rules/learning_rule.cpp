#include "sim/rules/learning_rule.hpp"

#include <array>

#include "sim/rules/bfasgd.hpp"
#include "sim/rules/dcasgd.hpp"
#include "sim/rules/fasgd.hpp"
#include "sim/rules/sasgd.hpp"
#include "sim/rules/sgd.hpp"

namespace stalesim {

// ---- Registered rules: one row each (sim/algorithms.hpp) -------------------------------------

namespace {

// One row per rule, in RuleType order. Server vectors: fasgd's moving averages of g, g^2 and
// sigma; dcasgd's MS plus one backup per worker. Gates: bfasgd decides each fetch and push.
constexpr auto kRules = std::to_array<RuleTraits>({
    {.type = RuleType::kSgd,
     .name = "sgd",
     .make = [](const OptimizerSpec& s, int32_t workers, int64_t) -> std::unique_ptr<LearningRule> {
       return std::make_unique<SgdRule>(s.lr, s.aggregate, workers);
     }},
    {.type = RuleType::kSasgd,
     .name = "sasgd",
     .make = [](const OptimizerSpec& s, int32_t workers, int64_t) -> std::unique_ptr<LearningRule> {
       return std::make_unique<SasgdRule>(s.lr, s.aggregate, workers);
     }},
    {.type = RuleType::kFasgd,
     .name = "fasgd",
     .server_vectors = 3,
     .fields = kRuleFasgd,
     .make = [](const OptimizerSpec& s, int32_t, int64_t parameters) -> std::unique_ptr<LearningRule> {
       return std::make_unique<FasgdRule>(s, parameters);
     }},
    {.type = RuleType::kBfasgd,
     .name = "bfasgd",
     .gates_transfers = true,
     .worker_vectors = 1,
     .server_vectors = 3,
     .fields = kRuleFasgd | kRuleBfasgd,
     .make = [](const OptimizerSpec& s, int32_t, int64_t parameters) -> std::unique_ptr<LearningRule> {
       return std::make_unique<BfasgdRule>(s, parameters);
     }},
    {.type = RuleType::kDcasgd,
     .name = "dcasgd",
     .reads_params = true,
     .server_vectors = 1,
     .server_vectors_per_worker = 1,
     .fields = kRuleDcasgd,
     .make = [](const OptimizerSpec& s, int32_t, int64_t parameters) -> std::unique_ptr<LearningRule> {
       return std::make_unique<DcasgdRule>(s, parameters);
     }},
});

static_assert(in_enum_order(kRules));
constexpr auto kRuleNames = names_of(kRules);

}  // namespace

std::span<const EnumName<RuleType>> enum_names(RuleType) { return kRuleNames; }
const RuleTraits& traits(RuleType t) { return kRules[static_cast<size_t>(t)]; }

std::unique_ptr<LearningRule> make_rule(const OptimizerSpec& spec, int32_t workers, int64_t parameters) {
  return traits(spec.rule).make(spec, workers, parameters);
}

}  // namespace stalesim
