#include "sim/rules/learning_rule.hpp"

#include <stdexcept>

#include "sim/rules/bfasgd.hpp"
#include "sim/rules/dcasgd.hpp"
#include "sim/rules/fasgd.hpp"
#include "sim/rules/sasgd.hpp"
#include "sim/rules/sgd.hpp"

namespace stalesim {

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
