#include "sim/rules/learning_rule.hpp"

#include <stdexcept>

#include "sim/rules/sgd.hpp"

namespace stalesim {

std::unique_ptr<LearningRule> make_rule(const OptimizerSpec& spec, int32_t workers,
                                        int64_t parameters) {
  (void)parameters;  // stateful rules size their state from it
  if (spec.rule == "sgd") return std::make_unique<SgdRule>(spec.lr, spec.aggregate, workers);
  throw std::invalid_argument("unknown learning rule '" + spec.rule + "'");
}

}  // namespace stalesim
