// The field table's rows for the optimizer (sim/scenario/fields.hpp): the learning rule, its step,
// aggregation and momentum, and each rule's own parameters.
#include <string>
#include <vector>

#include "sim/scenario/table.hpp"

namespace stalesim::scenario_detail {

namespace {

// optimizer: the rule, learning rate, batch size, aggregation and momentum.
std::vector<FieldInfo> optimizer_common_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/optimizer", .type = F::kObject, .doc = "How gradients become updates."},
      {.path = "/optimizer/rule",
       .type = F::kString,
       .allowed = enum_name_list<RuleType>(),
       .default_value = to_json_value(d.optimizer.rule),
       .doc = "Learning rule applied by the server (see REFERENCE.md, Learning rules).",
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::rule>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::rule>},
      {.path = "/optimizer/lr",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .default_value = d.optimizer.lr,
       .doc = "Learning rate.",
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::lr>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::lr>},
      {.path = "/optimizer/batch_size",
       .type = F::kInteger,
       .unit = "samples",
       .minimum = 1,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.optimizer.batch_size,
       .doc = "Samples per worker iteration.",
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::batch_size>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::batch_size>},
      {.path = "/optimizer/aggregate",
       .type = F::kString,
       .allowed = enum_name_list<Aggregate>(),
       .default_value = "sum",
       .applies_to = "every policy but softsync (which averages its own way)",
       .applies_key = "/policy/type",
       .doc = "sum: each push applies lr * g, the parameter server's additive update (Ho et al. "
              "2013; MXNet's kvstore, behind the DSSP paper, sums too); mean: each push applies "
              "(lr / workers) * g (sgd and sasgd). The default is sum for every policy, BSP "
              "included (BSP used to default to mean: set mean for that).",
       .applies = [](const Scenario& s) { return !traits(s.policy.type).averages_pushes; },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::aggregate>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::aggregate>},
      {.path = "/optimizer/momentum",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_maximum = true,
       .default_value = d.optimizer.momentum,
       .doc = "Server-side heavy-ball momentum mu (v = mu v + u; w -= v), for every rule.",
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::momentum>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::momentum>},
      {.path = "/optimizer/momentum_step",
       .type = F::kString,
       .allowed = enum_name_list<MomentumStep>(),
       .default_value = to_json_value(d.optimizer.momentum_step),
       .applies_to = "lockstep policies that fetch every clock (bsp; ssp and dssp with no slack) with "
                     "momentum > 0",
       .applies_key = "/policy/type",
       .doc = "per_push: the server takes a momentum step for every received gradient; per_clock: "
              "one step of momentum SGD per clock on the clock's summed update (v = mu v + sum of "
              "the clock's u; MXNet's synchronous kvstore, the DSSP paper's BSP).",
       .applies =
           [](const Scenario& s) {
             return s.policy.lockstep() && s.policy.pulls_every_clock() && s.optimizer.momentum > 0;
           },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::momentum_step>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::momentum_step>},
  };
}

// optimizer: the parameters of fasgd, bfasgd and dcasgd.
std::vector<FieldInfo> rule_parameter_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/optimizer/gamma",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_minimum = true,
       .exclusive_maximum = true,
       .default_value = d.optimizer.gamma,
       .applies_to = rules_with(kRuleFasgd) + " (paper variant)",
       .applies_key = "/optimizer/rule",
       .doc = "Decay of FASGD's moving averages of g and g^2.",
       .applies =
           [](const Scenario& s) { return is_fasgd(s) && s.optimizer.variant == FasgdVariant::kPaper; },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::gamma>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::gamma>},
      {.path = "/optimizer/beta",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_minimum = true,
       .exclusive_maximum = true,
       .default_value = d.optimizer.beta,
       .applies_to = rules_with(kRuleFasgd) + " (paper variant)",
       .applies_key = "/optimizer/rule",
       .doc = "Decay of FASGD's moving average of sigma.",
       .applies =
           [](const Scenario& s) { return is_fasgd(s) && s.optimizer.variant == FasgdVariant::kPaper; },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::beta>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::beta>},
      {.path = "/optimizer/epsilon",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .default_value = d.optimizer.epsilon,
       .applies_to = rules_with(kRuleFasgd) + " (paper variant)",
       .applies_key = "/optimizer/rule",
       .doc = "Added to the averaged sigma in FASGD's denominator.",
       .applies =
           [](const Scenario& s) { return is_fasgd(s) && s.optimizer.variant == FasgdVariant::kPaper; },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::epsilon>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::epsilon>},
      {.path = "/optimizer/variant",
       .type = F::kString,
       .allowed = enum_name_list<FasgdVariant>(),
       .default_value = to_json_value(d.optimizer.variant),
       .applies_to = rules_with(kRuleFasgd),
       .applies_key = "/optimizer/rule",
       .doc = "paper: alpha g / (max(tau,1)(sigma_bar + epsilon)); fred: the paper's code, "
              "alpha g / ((tau+1)(EMA_0.9|g| + 0.001)).",
       .applies = [](const Scenario& s) { return is_fasgd(s); },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::variant>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::variant>},
      {.path = "/optimizer/c_fetch",
       .type = F::kNumber,
       .minimum = 0,
       .default_value = d.optimizer.c_fetch,
       .applies_to = rules_with(kRuleBfasgd),
       .applies_key = "/optimizer/rule",
       .doc = "B-FASGD: a worker fetches with probability 1 / (1 + c_fetch / (v_bar + 1e-4)).",
       .applies = [](const Scenario& s) { return rule_has(s, kRuleBfasgd); },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::c_fetch>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::c_fetch>},
      {.path = "/optimizer/c_push",
       .type = F::kNumber,
       .minimum = 0,
       .default_value = d.optimizer.c_push,
       .applies_to = rules_with(kRuleBfasgd),
       .applies_key = "/optimizer/rule",
       .doc = "B-FASGD: a worker pushes with probability 1 / (1 + c_push / (v_bar + 1e-4)).",
       .applies = [](const Scenario& s) { return rule_has(s, kRuleBfasgd); },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::c_push>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::c_push>},
      {.path = "/optimizer/lambda",
       .type = F::kNumber,
       .minimum = 0,
       .default_value = d.optimizer.lambda,
       .applies_to = rules_with(kRuleDcasgd),
       .applies_key = "/optimizer/rule",
       .doc = "DC-ASGD's lambda_0, the strength of the delay compensation.",
       .applies = [](const Scenario& s) { return rule_has(s, kRuleDcasgd); },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::lambda>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::lambda>},
      {.path = "/optimizer/adaptive",
       .type = F::kBool,
       .default_value = d.optimizer.adaptive,
       .applies_to = rules_with(kRuleDcasgd),
       .applies_key = "/optimizer/rule",
       .doc = "DC-ASGD-a: lambda_t = lambda_0 / sqrt(MS_t + 1e-7) per element; false: constant.",
       .applies = [](const Scenario& s) { return rule_has(s, kRuleDcasgd); },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::adaptive>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::adaptive>},
      {.path = "/optimizer/ms_decay",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_maximum = true,
       .default_value = d.optimizer.ms_decay,
       .applies_to = rules_with(kRuleDcasgd),
       .applies_key = "/optimizer/rule",
       .doc = "DC-ASGD-a: decay of the moving average MS of g^2.",
       .applies = [](const Scenario& s) { return rule_has(s, kRuleDcasgd); },
       .set = set_m<&Scenario::optimizer, &OptimizerSpec::ms_decay>,
       .get = get_m<&Scenario::optimizer, &OptimizerSpec::ms_decay>},
  };
}

}  // namespace

std::vector<FieldInfo> optimizer_fields(const Scenario& d) {
  std::vector<FieldInfo> t = optimizer_common_fields(d);
  append(t, rule_parameter_fields(d));
  return t;
}

}  // namespace stalesim::scenario_detail
