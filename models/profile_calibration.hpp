#pragma once
// Calibration of a device profile's efficiency against published training throughput (issue 29).
// A profile file may list under "calibration" figures measured on the real device, each with where
// it was published, the network, its forward FLOPs per sample (a multiply-add counts 2), the batch
// and the images per second. The cost model times an iteration as
//   t = 3 F b / (peak_fp32 x efficiency) + overhead
// (training FLOPs = 3 x forward: models/cost_arch.hpp; sim/estimate/estimate.cpp), so each figure fixes an
// efficiency. fitted_efficiency() is the one that minimizes the sum of squared relative errors of t
// over the figures; with x = 1 / efficiency the predicted t is linear in x, so the least-squares x is
// closed-form: x = sum(u_i v_i) / sum(u_i^2), u_i = 3 F_i b_i / (peak t_i), v_i = (t_i - overhead) / t_i.
// A run uses the profile's `efficiency`, which the loader holds to the fit at three significant
// digits (issue 44: devices as published); `stalesim profiles` prints the fit and the error of the
// prediction against every figure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/device_profile.hpp"

namespace stalesim {

struct CalibrationFigure {
  std::string source;          // where the figure was published (and how it was measured)
  std::string model;           // the network, e.g. "ResNet-50 (ImageNet, 224x224)"
  double forward_flops = 0.0;  // forward FLOPs per sample, > 0
  int64_t batch = 0;           // samples per iteration, >= 1
  double images_per_s = 0.0;   // published training throughput, > 0
  bool operator==(const CalibrationFigure&) const = default;
};

// The figures of a profile document's "calibration" array (none when the key is absent). Bad
// entries are ProfileErrors naming /calibration/<i>/<key>.
std::vector<CalibrationFigure> calibration_figures(const nlohmann::json& profile);
// The figures of the built-in profile `name` (models/profiles/NAME.json); none when it has none.
std::vector<CalibrationFigure> builtin_calibration(std::string_view name);
// The "derived_from" of a profile document, or of the built-in profile `name` ("" when none): the
// calibrated built-in whose efficiency and overhead it takes (models/device_profile.cpp checks them).
std::string derived_from(const nlohmann::json& profile);
std::string builtin_derived_from(std::string_view name);
// Images per second the cost model predicts for figure f on profile p at `efficiency`.
double predicted_images_per_s(const DeviceProfile& p, const CalibrationFigure& f, double efficiency);
// The least-squares efficiency over the figures (header comment); nullopt without figures.
std::optional<double> fitted_efficiency(const DeviceProfile& p,
                                        const std::vector<CalibrationFigure>& figures);

}  // namespace stalesim
