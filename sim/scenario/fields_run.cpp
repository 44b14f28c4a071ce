// The field table's rows for the run itself (sim/scenario/fields.hpp): name, seed and comment at
// the top level, then compute, stop and eval.
#include <limits>
#include <string>
#include <vector>

#include "sim/scenario/table.hpp"

namespace stalesim::scenario_detail {

// name, seed, comment.
std::vector<FieldInfo> top_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/name",
       .type = F::kString,
       .min_length = 1,
       .max_length = kMaxNameLength,
       .default_note = "the file name without .json (other characters than those allowed become _)",
       .doc = "Name of the run, used in outputs and as the default output folder results/<name>: letters, "
              "digits and . _ - + = , @ (not starting with .).",
       .check = check_scenario_name,
       .set = set_m<&Scenario::name>,
       .get = get_m<&Scenario::name>},
      {.path = "/seed",
       .type = F::kInteger,
       .minimum = 0,
       .maximum = std::numeric_limits<uint64_t>::max(),
       .maximum_is_limit = true,
       .default_value = d.seed,
       .doc = "Root seed of every random stream; --seed overrides it.",
       .set = set_m<&Scenario::seed>,
       .get = get_m<&Scenario::seed>},
      {.path = "/comment",
       .type = F::kString,
       .max_length = 65536,
       .default_value = d.comment,
       .doc = "Free text: paper, figure, what is scaled down.",
       .set = set_m<&Scenario::comment>,
       .get = get_m<&Scenario::comment>},
  };
}

// compute, stop, eval.
std::vector<FieldInfo> run_fields(const Scenario& d) {
  using F = FieldType;
  return {
      {.path = "/compute",
       .type = F::kObject,
       .applies_to = "softmax, mlp and cnn models",
       .applies_key = "/model/type",
       .doc = "Where the math runs and what times each iteration.",
       .applies = has_math},
      {.path = "/compute/backend",
       .type = F::kString,
       .allowed = enum_name_list<Backend>(),
       .default_value = to_json_value(d.compute.backend),
       .doc = "cpu: Eigen on this CPU; cuda: cuBLAS on the local NVIDIA GPU (a build with CUDA), whose "
              "results are bit-identical only on the same GPU model, driver and build.",
       .set = set_m<&Scenario::compute, &ComputeSpec::backend>,
       .get = get_m<&Scenario::compute, &ComputeSpec::backend>},
      {.path = "/compute/timing",
       .type = F::kString,
       .allowed = enum_name_list<Timing>(),
       .default_value = to_json_value(d.compute.timing),
       .doc = "modelled: an iteration takes the time the worker's device profile gives; measured: the "
              "time the latest gradient took on the local GPU (CUDA events), for every worker; needs "
              "backend cuda and makes the run not bit-reproducible.",
       .set = set_m<&Scenario::compute, &ComputeSpec::timing>,
       .get = get_m<&Scenario::compute, &ComputeSpec::timing>},

      {.path = "/stop",
       .type = F::kObject,
       .doc = "When the run ends: set virtual_time_s, max_updates, or target_accuracy with "
              "at_target; the first reached ends it."},
      {.path = "/stop/virtual_time_s",
       .type = F::kNumber,
       .unit = "s",
       .minimum = 0,
       .maximum = kMaxSeconds,
       .exclusive_minimum = true,
       .maximum_is_limit = true,
       .nullable = true,
       .default_note = "unset",
       .doc = "Stop at this virtual time.",
       .set = set_m<&Scenario::stop, &StopSpec::virtual_time_s>,
       .get = get_m<&Scenario::stop, &StopSpec::virtual_time_s>},
      {.path = "/stop/max_updates",
       .type = F::kInteger,
       .unit = "updates",
       .minimum = 1,
       .maximum = kMaxInt53,
       .maximum_is_limit = true,
       .nullable = true,
       .default_note = "unset",
       .doc = "Stop after this many server updates.",
       .set = set_m<&Scenario::stop, &StopSpec::max_updates>,
       .get = get_m<&Scenario::stop, &StopSpec::max_updates>},
      {.path = "/stop/target_accuracy",
       .type = F::kNumber,
       .minimum = 0,
       .maximum = 1,
       .exclusive_minimum = true,
       .nullable = true,
       .default_note = "unset",
       .applies_to = "softmax, mlp and cnn models",
       .applies_key = "/model/type",
       .doc = "Test accuracy whose first reaching time is recorded.",
       .applies = has_math,
       .set = set_m<&Scenario::stop, &StopSpec::target_accuracy>,
       .get = get_m<&Scenario::stop, &StopSpec::target_accuracy>},
      {.path = "/stop/at_target",
       .type = F::kBool,
       .default_value = d.stop.at_target,
       .doc = "Also stop when target_accuracy is reached.",
       .set = set_m<&Scenario::stop, &StopSpec::at_target>,
       .get = get_m<&Scenario::stop, &StopSpec::at_target>},

      {.path = "/eval", .type = F::kObject, .doc = "Evaluation of the server's parameters."},
      {.path = "/eval/every_s",
       .type = F::kNumber,
       .unit = "s",
       .minimum = 1e-9,
       .maximum = kMaxSeconds,
       .maximum_is_limit = true,
       .default_value = d.eval.every_s,
       .doc = "Evaluate every this many virtual seconds.",
       .set = set_m<&Scenario::eval, &EvalSpec::every_s>,
       .get = get_m<&Scenario::eval, &EvalSpec::every_s>},
      {.path = "/eval/test_samples",
       .type = F::kInteger,
       .unit = "samples",
       .minimum = 0,
       .maximum = kMaxInt32,
       .maximum_is_limit = true,
       .default_value = d.eval.test_samples,
       .applies_to = "the fashion-mnist and blobs datasets",
       .applies_key = "/data/dataset",
       .doc = "Evaluate on the first N test samples; 0 = all.",
       .applies = has_data,
       .set = set_m<&Scenario::eval, &EvalSpec::test_samples>,
       .get = get_m<&Scenario::eval, &EvalSpec::test_samples>},
  };
}

}  // namespace stalesim::scenario_detail
