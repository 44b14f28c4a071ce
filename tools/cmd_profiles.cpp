// `stalesim profiles [FILE...]`: the device profiles, built in or given, with their calibration.

#include <iostream>

#include <fmt/format.h>

#include "base/file_read.hpp"
#include "models/cost_arch.hpp"
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
      "file's folder; to the working directory in --set), or \"profile\": \"my-gpu\" with my-gpu.json in "
      "$STALESIM_PROFILE_DIR.\n"
      "The manifest keeps the file's figures (cluster.workers[*].device). `stalesim profiles FILE...`\n"
      "checks files and lists them. An optional \"calibration\" array lists published training figures\n"
      "({\"source\", \"model\", \"forward_flops\", \"batch\", \"images_per_s\"}); the profile's efficiency "
      "must\n"
      "then be their least-squares fit to three digits (runs use it), and the listing shows the error\n"
      "against each. \"derived_from\": \"NAME\" takes a calibrated built-in's efficiency and overhead_us\n"
      "(the file must state the same values; its source says why they carry over).\n";
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "Usage: stalesim profiles [FILE...]\n\nLists the built-in device profiles "
                 "(models/profiles/*.json), or checks and lists the profile files given.\n"
              << kOwn;
    return kExitOk;
  }
  std::vector<DeviceProfile> list;
  std::vector<std::vector<CalibrationFigure>> figures;  // published figures, per profile
  std::vector<std::string> derived;                     // derived_from, per profile
  if (args.empty()) {
    list = builtin_profiles();
    for (const auto& p : list) {
      figures.push_back(builtin_calibration(p.name));
      derived.push_back(builtin_derived_from(p.name));
    }
  } else {
    for (const auto& a : args) {
      try {
        list.push_back(load_profile_file(a));
        std::string error;  // read and checked by load_profile_file just above
        const auto j = read_json_file(a, kMaxProfileBytes, error);
        if (!j) throw ScenarioError(fmt::format("{}: {}", escaped(a), error));
        figures.push_back(calibration_figures(*j));
        derived.push_back(derived_from(*j));
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
  // figures, which runs use (the loader holds it to three digits), and the error of the prediction
  // against each figure; then the profiles derived from a calibrated one.
  bool any = false;
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& pr = list[i];
    const auto fit = fitted_efficiency(pr, figures[i]);
    if (!fit) continue;
    any = true;
    fmt::print(
        "\n{}: efficiency {:g}, what runs use, is the least-squares fit to {} published figure{} ({:.4f}):\n",
        escaped(pr.name), pr.efficiency, figures[i].size(), figures[i].size() == 1 ? "" : "s", *fit);
    for (const auto& f : figures[i])
      fmt::print("  {}, batch {}: published {:g} images/s; predicted {:+.1f}%\n    source: {}\n",
                 escaped(f.model), f.batch, f.images_per_s,
                 100.0 * (predicted_images_per_s(pr, f, pr.efficiency) / f.images_per_s - 1.0),
                 escaped(f.source));
  }
  for (size_t i = 0; i < list.size(); ++i)
    if (!derived[i].empty()) {
      any = true;
      fmt::print(
          "\n{}: efficiency {:g} and overhead {:g} us, what runs use, are {}'s (derived_from; its source "
          "says "
          "why)\n",
          escaped(list[i].name), list[i].efficiency, list[i].overhead_us, escaped(derived[i]));
    }
  // What the shipped scenarios' CIFAR ResNets cost on those profiles (issue 44).
  if (any) {
    fmt::print(
        "\nThe shipped scenarios' CIFAR ResNets on the calibrated and derived profiles, ms an iteration "
        "(training "
        "FLOPs\n/ (peak x efficiency) + overhead; the fits' figures are ImageNet ResNets at 224x224, these "
        "run "
        "at 32x32\nat the same efficiency: an assumption):\n");
    const auto resnet110 = find_cost_architecture("resnet110");
    const auto resnet50 = find_cost_architecture("resnet50-cifar");
    for (size_t i = 0; i < list.size(); ++i) {
      if (figures[i].empty() && derived[i].empty()) continue;
      const auto ms = [&](const CostArchitecture& a, int batch) {
        return (a.training_flops() * batch / (list[i].peak_fp32_tflops * 1e12 * list[i].efficiency) +
                list[i].overhead_us * 1e-6) *
               1e3;
      };
      fmt::print("  {:<10} resnet110 batch 32: {:.1f}, batch 128: {:.1f}; resnet50-cifar batch 128: {:.1f}\n",
                 escaped(list[i].name), ms(*resnet110, 32), ms(*resnet110, 128), ms(*resnet50, 128));
    }
  }
  if (args.empty()) std::cout << kOwn;
  return kExitOk;
}

}  // namespace stalesim::cli
