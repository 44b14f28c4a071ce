#include "sim/rules/learning_rule.hpp"

#include <stdexcept>

#include "sim/rules/bfasgd.hpp"
#include "sim/rules/dcasgd.hpp"
#include "sim/rules/fasgd.hpp"
#include "sim/rules/sasgd.hpp"
#include "sim/rules/sgd.hpp"

namespace stalesim {

std::unique_ptr<LearningRule> make_rule(const OptimizerSpec& spec, int32_t workers, int64_t parameters) {
  if (spec.rule == "sgd") return std::make_unique<SgdRule>(spec.lr, spec.aggregate, workers);
  if (spec.rule == "sasgd") return std::make_unique<SasgdRule>(spec.lr, spec.aggregate, workers);
  if (spec.rule == "fasgd") return std::make_unique<FasgdRule>(spec, parameters);
  if (spec.rule == "bfasgd") return std::make_unique<BfasgdRule>(spec, parameters);
  if (spec.rule == "dcasgd") return std::make_unique<DcasgdRule>(spec, parameters);
  throw std::invalid_argument("unknown learning rule '" + spec.rule + "'");
}

}  // namespace stalesim
