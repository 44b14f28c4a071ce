// The field table's rows for the model (sim/scenario/fields.hpp): its type, widths, cost
// architecture, declared sizes, and mf's and lda's parameters.
#include <string>
#include <vector>

#include "models/cost_arch.hpp"
#include "sim/scenario/table.hpp"

namespace stalesim::scenario_detail {

namespace {

// model: the type, the mlp's widths, initialization, cost and the time-only sizes.
std::vector<FieldInfo> model_common_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/model", .type = F::kObject, .doc = "The model that is trained (the math)."},
      {.path = "/model/type",
       .type = F::kString,
       .allowed = enum_name_list<ModelType>(),
       .default_value = to_json_value(d.model.type),
       .doc = "softmax regression, a ReLU MLP, a LeNet-5-style CNN for 28x28 images (see REFERENCE.md, "
              "Models), matrix "
              "factorization (mf), LDA by collapsed Gibbs sampling (lda), an ill-conditioned least-squares "
              "problem with exact gradients (lstsq), or a model that is only timed (no math).",
       .set = set_m<&Scenario::model, &ModelSpec::type>,
       .get = get_m<&Scenario::model, &ModelSpec::type>},
      {.path = "/model/hidden",
       .type = F::kIntegerArray,
       .unit = "units",
       .minimum = 1,
       .maximum = kMaxHiddenWidth,
       .min_items = 1,
       .max_items = kMaxHiddenLayers,
       .default_value = d.model.hidden,
       .applies_to = "mlp models",
       .applies_key = "/model/type",
       .doc = "Hidden layer widths.",
       .applies = [](const Scenario& s) { return s.model.type == ModelType::kMlp; },
       .set = set_m<&Scenario::model, &ModelSpec::hidden>,
       .get = get_m<&Scenario::model, &ModelSpec::hidden>},
      {.path = "/model/init",
       .type = F::kString,
       .allowed = enum_name_list<WeightInit>(),
       .default_value = to_json_value(d.model.init),
       .applies_to = "softmax, mlp and cnn models",
       .applies_key = "/model/type",
       .doc = "Weight initialization.",
       .applies = [](const Scenario& s) { return has_math(s) && !is_workload(s); },
       .set = set_m<&Scenario::model, &ModelSpec::init>,
       .get = get_m<&Scenario::model, &ModelSpec::init>},
      {.path = "/model/parameters",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = int64_t{1} << 40,
       .required = true,
       .applies_to = "time-only models",
       .applies_key = "/model/type",
       .doc = "Declared parameter count (sets message sizes: 4 bytes each).",
       .applies = [](const Scenario& s) { return !has_math(s); },
       .set = set_m<&Scenario::model, &ModelSpec::parameters>,
       .get = get_m<&Scenario::model, &ModelSpec::parameters>},
      {.path = "/model/flops_per_sample",
       .type = F::kNumber,
       .unit = "FLOP",
       .minimum = 0,
       .maximum = kMaxFlopsPerSample,
       .exclusive_minimum = true,
       .required = true,
       .applies_to = "time-only models",
       .applies_key = "/model/type",
       .doc = "Declared forward plus backward FLOPs per sample (sets compute time).",
       .applies = [](const Scenario& s) { return !has_math(s); },
       .set = set_m<&Scenario::model, &ModelSpec::flops_per_sample>,
       .get = get_m<&Scenario::model, &ModelSpec::flops_per_sample>},
      {.path = "/model/cost",
       .type = F::kString,
       .allowed =
           [] {
             std::vector<std::string> names{"derived"};
             for (const auto& a : cost_architectures()) names.push_back(a.name);
             return names;
           }(),
       .default_value = d.model.cost,
       .applies_to = "softmax, mlp and cnn models",
       .applies_key = "/model/type",
       .doc = "Time each iteration and size each message as this architecture would (FLOPs and "
              "parameters from its paper; see REFERENCE.md, Cost architectures) while the math model trains; "
              "\"derived\": "
              "from the math model.",
       .applies = [](const Scenario& s) { return has_math(s); },
       .set = set_m<&Scenario::model, &ModelSpec::cost>,
       .get = get_m<&Scenario::model, &ModelSpec::cost>},
  };
}

// model: mf's rank and l2, lda's topics and priors.
std::vector<FieldInfo> model_workload_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/model/rank",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = 4096,
       .default_value = d.model.rank,
       .applies_to = "mf models",
       .applies_key = "/model/type",
       .doc = "Rank of the learned factors.",
       .applies = [](const Scenario& s) { return s.model.type == ModelType::kMf; },
       .set = set_m<&Scenario::model, &ModelSpec::rank>,
       .get = get_m<&Scenario::model, &ModelSpec::rank>},
      {.path = "/model/l2",
       .type = F::kNumber,
       .minimum = 0,
       .default_value = d.model.l2,
       .applies_to = "mf models",
       .applies_key = "/model/type",
       .doc = "L2 strength lambda: each observation adds 0.5 lambda (|u_i|^2 + |v_j|^2) to its loss.",
       .applies = [](const Scenario& s) { return s.model.type == ModelType::kMf; },
       .set = set_m<&Scenario::model, &ModelSpec::l2>,
       .get = get_m<&Scenario::model, &ModelSpec::l2>},
      {.path = "/model/topics",
       .type = F::kInteger,
       .minimum = 1,
       .maximum = 65536,
       .default_value = d.model.topics,
       .applies_to = "lda models",
       .applies_key = "/model/type",
       .doc = "Number of topics K the sampler fits.",
       .applies = [](const Scenario& s) { return s.model.type == ModelType::kLda; },
       .set = set_m<&Scenario::model, &ModelSpec::topics>,
       .get = get_m<&Scenario::model, &ModelSpec::topics>},
      {.path = "/model/alpha",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .default_value = d.model.alpha,
       .applies_to = "lda models",
       .applies_key = "/model/type",
       .doc = "Sampler's symmetric document-topic Dirichlet prior.",
       .applies = [](const Scenario& s) { return s.model.type == ModelType::kLda; },
       .set = set_m<&Scenario::model, &ModelSpec::alpha>,
       .get = get_m<&Scenario::model, &ModelSpec::alpha>},
      {.path = "/model/beta",
       .type = F::kNumber,
       .minimum = 0,
       .exclusive_minimum = true,
       .default_value = d.model.beta,
       .applies_to = "lda models",
       .applies_key = "/model/type",
       .doc = "Sampler's symmetric topic-word Dirichlet prior.",
       .applies = [](const Scenario& s) { return s.model.type == ModelType::kLda; },
       .set = set_m<&Scenario::model, &ModelSpec::beta>,
       .get = get_m<&Scenario::model, &ModelSpec::beta>},
  };
}

}  // namespace

std::vector<FieldInfo> model_fields(const Scenario& d) {
  std::vector<FieldInfo> t = model_common_fields(d);
  append(t, model_workload_fields(d));
  return t;
}

}  // namespace stalesim::scenario_detail
