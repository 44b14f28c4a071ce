// `stalesim profiles [FILE...]`: the device profiles, built in or given, with their calibration.

#include <iostream>

#include <fmt/format.h>

#include "base/file_read.hpp"
#include "models/device_profile.hpp"
#include "models/profile_calibration.hpp"
#include "sim/text.hpp"
#include "tools/cli.hpp"

namespace stalesim::cli {

int cmd_profiles(const std::vector<std::string>& args) {
  constexpr const char* kOwn =
      "\nYour own profile: a JSON file with the keys name, description, peak_fp32_tflops,\n"
      "memory_bandwidth_gbs, efficiency (0 < e <= 1), overhead_us, source (optional: peak_fp16_tflops,\n"
      "peak_bf16_tflops), as models/profiles/*.json or what `stalesim calibrate --out my-gpu.json` writes.\n"
      "A scenario uses it without rebuilding: \"profile\": \"my-gpu.json\" (relative to the scenario\n"
      "file's folder; to the working directory in --set), or \"profile\": \"my-gpu\" with my-gpu.json in $STALESIM_PROFILE_DIR.\n"
      "The manifest keeps the file's figures (cluster.workers[*].device). `stalesim profiles FILE...`\n"
      "checks files and lists them. An optional \"calibration\" array lists published training figures\n"
      "({\"source\", \"model\", \"forward_flops\", \"batch\", \"images_per_s\"}); the listing then shows "
      "the\n"
      "efficiency that fits them and the error of the profile's efficiency against each.\n";
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "Usage: stalesim profiles [FILE...]\n\nLists the built-in device profiles "
                 "(models/profiles/*.json), or checks and lists the profile files given.\n"
              << kOwn;
    return kExitOk;
  }
  std::vector<DeviceProfile> list;
  std::vector<std::vector<CalibrationFigure>> figures;  // published figures, per profile
  if (args.empty()) {
    list = builtin_profiles();
    for (const auto& p : list) figures.push_back(builtin_calibration(p.name));
  } else {
    for (const auto& a : args) {
      try {
        list.push_back(load_profile_file(a));
        std::string error;  // read and checked by load_profile_file just above
        const auto j = read_json_file(a, kMaxProfileBytes, error);
        if (!j) throw ScenarioError(fmt::format("{}: {}", escaped(a), error));
        figures.push_back(calibration_figures(*j));
      } catch (const ProfileError& e) {
        throw ScenarioError(e.what());  // bad input: exit 2
      }
    }
  }
  fmt::print("{:<12} {:>12} {:>12} {:>12} {:>12} {:>10} {:>12}  {}\n", "name", "fp32 TFLOP/s", "fp16 TFLOP/s",
             "bf16 TFLOP/s", "mem GB/s", "efficiency", "overhead us", "description");
  auto opt = [](double x) { return x > 0 ? fmt::format("{:g}", x) : std::string("-"); };
  for (const auto& pr : list)
    fmt::print("{:<12} {:>12g} {:>12} {:>12} {:>12g} {:>10g} {:>12g}  {}\n", escaped(pr.name),
               pr.peak_fp32_tflops, opt(pr.peak_fp16_tflops), opt(pr.peak_bf16_tflops),
               pr.memory_bandwidth_gbs, pr.efficiency, pr.overhead_us, escaped(pr.description));
  // Calibration (models/profile_calibration.hpp): the efficiency that fits the profile's published
  // figures, and the error of the predicted images/s against each at the profile's efficiency and
  // at the fitted one.
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& pr = list[i];
    const auto fit = fitted_efficiency(pr, figures[i]);
    if (!fit) continue;
    fmt::print("\n{}: efficiency {:g} (what runs use); fitted to {} published figure{}: {:.3f}\n",
               escaped(pr.name), pr.efficiency, figures[i].size(), figures[i].size() == 1 ? "" : "s", *fit);
    for (const auto& f : figures[i]) {
      const auto err = [&](double e) {
        return 100.0 * (predicted_images_per_s(pr, f, e) / f.images_per_s - 1.0);
      };
      fmt::print(
          "  {}, batch {}: published {:g} images/s; predicted at {:g}: {:+.1f}%, at {:.3f}: {:+.1f}%\n"
          "    source: {}\n",
          escaped(f.model), f.batch, f.images_per_s, pr.efficiency, err(pr.efficiency), *fit, err(*fit),
          escaped(f.source));
    }
  }
  if (args.empty()) std::cout << kOwn;
  return kExitOk;
}

}  // namespace stalesim::cli
